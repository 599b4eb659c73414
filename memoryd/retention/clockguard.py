"""The retention clock may not jump: a wall-clock step is refused until confirmed.

A retention pass on the wall clock (``retention run`` without ``--now``, and the
supervisor's periodic tick) expires what is past its deadline *now*. A wall clock
stepped forward (an NTP correction after a bad RTC, an operator's typo, a VM
restored from a snapshot) would expire and purge young data, and persist a
retention clock in the future. Each pass compares the wall time elapsed since
the last accepted pass with the time elapsed since boot (``CLOCK_BOOTTIME``,
which no clock step moves, suspend included); within one boot, a difference
beyond ``retention_max_clock_step_seconds`` refuses the pass (reported in its
answer, a warning log line, ``retention status`` and ``doctor``) until the
clock comes back within the bound or an operator confirms the new time with
``memoryd retention run --confirm-clock``. A new boot has nothing to compare
with: its first pass is the new baseline. A wall clock behind the persisted
retention clock is reported too (nothing expires by it meanwhile).

The state is a small JSON file in the home (``doctor`` reads it without opening
the archive); an explicit ``--now`` is the operator's own clock and bypasses it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from memoryd.base import logs
from memoryd.base.durable import write_atomic
from memoryd.base.times import iso_time

STATE_FILE = "retention-clock.json"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Reading:
    wall: float
    boot: float  # seconds since boot, clock steps excluded
    boot_id: str


def read_clocks(wall: float | None = None) -> Reading:
    try:
        boot_id = BOOT_ID.read_text().strip()
    except OSError:
        boot_id = ""
    wall = time.time() if wall is None else wall
    return Reading(wall, time.clock_gettime(time.CLOCK_BOOTTIME), boot_id)


def state(home: Path) -> dict:
    """The guard's state: ``baseline`` (the last accepted reading), ``refused`` (the
    step refused since, or None) and ``behind`` (seconds the wall clock is behind the
    retention clock, or None)."""
    try:
        return orjson.loads((Path(home) / STATE_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {"baseline": None, "refused": None, "behind": None}


def _save(home: Path, value: dict) -> None:
    write_atomic(Path(home) / STATE_FILE, orjson.dumps(value), durable=False)


def step_seconds(baseline: dict | None, now: Reading) -> float:
    """Wall time elapsed beyond the time elapsed since the baseline (0: same boot
    unknown, a new boot, or no baseline)."""
    if not baseline or not now.boot_id or baseline.get("boot_id") != now.boot_id:
        return 0.0
    return (now.wall - baseline["wall"]) - (now.boot - baseline["boot"])


def check(home: Path, bound: float, retention_clock: float, *, confirm: bool = False) -> str | None:
    """Why a wall-clock pass must not run now, or None (and the baseline moves on)."""
    current = state(home)
    now = read_clocks()
    step = step_seconds(current.get("baseline"), now)
    behind = retention_clock - now.wall if retention_clock > now.wall else None
    if confirm or abs(step) <= bound:
        if confirm and current.get("refused"):
            logs.event("retention_clock_confirmed", "retention clock step confirmed by operator")
        _save(home, {"baseline": asdict(now), "refused": None, "behind": behind})
        if behind:
            logs.event(
                "retention_clock_behind",
                f"the wall clock is {behind:,.0f} s behind the retention clock "
                f"({iso_time(retention_clock)}): nothing expires by it until time catches up",
                level=logging.WARNING,
            )
        return None
    why = (
        f"CLOCK_STEP: the wall clock moved {step:+,.0f} s more than the time elapsed since "
        f"the last pass ({iso_time(current['baseline']['wall'])}); retention passes on the "
        "wall clock are refused (nothing expires) until it comes back, or confirm the new "
        "time with `memoryd retention run --confirm-clock`"
    )
    since = (current.get("refused") or {}).get("since") or now.wall
    with contextlib.suppress(OSError):  # the refusal stands even if it cannot be kept
        refused = {"since": since, "step_seconds": round(step, 3)}
        _save(home, {**current, "refused": refused, "behind": behind})
    logs.event("retention_clock_step", why, level=logging.WARNING, step_seconds=round(step, 3))
    return why
