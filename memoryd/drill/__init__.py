"""Randomized crash drills: break the service on purpose, recover, verify.

Each cycle edits a generated repository and enqueues its ingest, a wave of
``noop`` and ``sleep`` jobs, two transcripts (one recent, one past its
retention age) and a forced retention pass. A scenario (:mod:`.scenarios`)
then breaks something while that work runs: SIGKILL of the supervisor at a
random moment or a named kill point (commit points drawn over the whole run),
of a job worker (the supervisor must survive), of the retention worker, of a
non-draining supervisor's periodic tick, of a CLI bulk writer; SIGTERM then
SIGKILL in the grace period; a stale result delivered after its lease was
reclaimed. A draining supervisor recovers, and :mod:`.checks` verifies the
crash contract against the drill's own record of what it did.

Scenarios rotate: every block of ``len(scenarios)`` cycles runs each once, in an
order drawn from the seed. The drill runs in a scratch home unless one is given
explicitly; it never touches ``MEMORYD_HOME`` or the default home.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memoryd.drill.checks import verify
from memoryd.drill.core import NOOPS_PER_CYCLE, SLEEPS_PER_CYCLE, Drill, DrillAborted
from memoryd.drill.scenarios import SCENARIOS
from memoryd.errors import MemorydError

__all__ = ["NOOPS_PER_CYCLE", "SCENARIOS", "SLEEPS_PER_CYCLE", "run_drill"]


def _cycle(d: Drill, n: int, name: str) -> None:
    d.cycle_no = n
    scenario = SCENARIOS[name]
    d.mark_cycle_start()
    d.edit_repo()
    d.enqueue(scenario.extra())
    done_before = scenario.run(d)
    d.drain()
    verify(d, done_before)


def _plan(d: Drill, cycles: int, names: Sequence[str]) -> list[str]:
    """Each block of ``len(names)`` cycles runs every scenario once, in a seeded order."""
    plan: list[str] = []
    while len(plan) < cycles:
        block = list(names)
        d.rng.shuffle(block)
        plan.extend(block)
    return plan[:cycles]


def run_drill(
    *,
    cycles: int,
    seed: int,
    workers: int = 2,
    home: Path | None = None,
    scenarios: Sequence[str] = (),
    on_cycle: Callable[[int, str, int], None] | None = None,
) -> dict:
    """Run ``cycles`` break-and-recover cycles in ``home``, else in a scratch home
    removed afterwards. ``on_cycle(n, scenario, violations so far)`` follows progress."""
    scratch = None if home else Path(tempfile.mkdtemp(prefix="memoryd-drill-"))
    d = Drill(Path(home) if home else scratch / "home", seed=seed, workers=workers)
    d.home.mkdir(parents=True, exist_ok=True)
    names = list(scenarios or SCENARIOS)
    start = time.monotonic()
    aborted = None
    try:
        for n, name in enumerate(_plan(d, cycles, names), 1):
            try:
                _cycle(d, n, name)
            except (DrillAborted, MemorydError) as exc:
                d.fail(f"{name}: {exc}; the drill stopped")
                aborted = n
            if on_cycle:
                on_cycle(n, name, len(d.violations))
            if aborted:
                break
        jobs, effects = d.read(lambda q: q.totals())
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return {
        "ok": not d.violations,
        "stopped_at": aborted,  # the cycle after which the drill could not go on, if any
        "home": str(d.home),
        "scratch": scratch is not None,
        "cycles": cycles,
        "cycles_run": aborted or cycles,
        "seed": seed,
        "workers": workers,
        "scenarios": names,
        "kills": dict(sorted(d.kills.items())),
        "violations": d.violations,
        "jobs": jobs,
        "effects": effects,
        "expected_effects": len(d.oracle.effect_jobs),
        "seconds": round(time.monotonic() - start, 1),
    }
