"""Randomized crash drills: break the service on purpose, recover, verify.

Each cycle edits a generated repository and enqueues its ingest, a wave of
``noop`` and ``sleep`` jobs, two transcripts (one recent, one past its
retention age) and a forced retention pass. A scenario (:mod:`.scenarios`)
then breaks something while that work runs: SIGKILL of the supervisor at a
random moment or a named kill point (commit points drawn over the whole run),
of a job worker (the supervisor must survive), of the retention worker, of a
non-draining supervisor's periodic tick, of a CLI bulk writer, of a supervisor
applying a staging file's last consolidation run; SIGTERM then SIGKILL in the
grace period; a stale result delivered after its lease was reclaimed; jobs
longer than a short lease, which must not be reclaimed. A draining supervisor
recovers, and :mod:`.checks` verifies the crash contract against the drill's
own record of what it did.

The ``clients`` scenario (:mod:`.clients`) is not a cycle: it runs alone, for a
duration, many faces on one home at once while processes are killed.

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

from memoryd.base.errors import MemorydError
from memoryd.faces.drill import clients
from memoryd.faces.drill.checks import verify
from memoryd.faces.drill.core import NOOPS_PER_CYCLE, SLEEPS_PER_CYCLE, Drill, DrillAborted
from memoryd.faces.drill.scenarios import SCENARIOS

CLIENTS = "clients"  # the scenario that runs alone, for a duration (see :mod:`.clients`)

__all__ = [
    "CLIENTS",
    "NOOPS_PER_CYCLE",
    "SCENARIOS",
    "SLEEPS_PER_CYCLE",
    "run_clients_drill",
    "run_drill",
]


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
        "layouts": dict(d.layouts),  # cycles verified with the project compact / indexed
        "jobs": jobs,
        "effects": effects,
        "expected_effects": len(d.oracle.effect_jobs),
        "seconds": round(time.monotonic() - start, 1),
    }


def run_clients_drill(
    *,
    seed: int,
    workers: int = 2,
    home: Path | None = None,
    duration: float = clients.DURATION,
    mcp: int = clients.MCP_CLIENTS,
    writers: int = clients.CLI_WRITERS,
    readers: int = clients.SNAPSHOT_READERS,
    think: tuple[float, float] = clients.THINK,
) -> dict:
    """The clients scenario (:mod:`.clients`) for ``duration`` seconds in ``home``, else
    in a scratch home removed afterwards; its figures are under ``clients``."""
    scratch = None if home else Path(tempfile.mkdtemp(prefix="memoryd-drill-"))
    target = Path(home) if home else scratch / "home"
    target.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        figures = clients.run_clients(
            target,
            seed=seed,
            workers=workers,
            duration=duration,
            mcp=mcp,
            writers=writers,
            readers=readers,
            think=think,
        )
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    violations = figures.pop("violations")
    return {
        "ok": not violations,
        "home": str(target),
        "scratch": scratch is not None,
        "seed": seed,
        "workers": workers,
        "scenarios": [CLIENTS],
        "kills": figures["kills"],
        "violations": violations,
        "clients": figures,
        "seconds": round(time.monotonic() - start, 1),
    }
