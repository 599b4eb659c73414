"""What the memory kind's start sweep costs a supervisor start, on a home with many projects.

At every start the supervisor asks the memory kind for consolidation runs a crash left
unenqueued (``memoryd.consolidation.jobs.stranded``: a ``memory add`` killed between its
staging file and its enqueue). It lists ``staging/`` and looks into each project
directory there; a run that leaves none of its project's staging files removes the
directory. Measured, best of three calls each, on one home holding N projects:

* ``idle``: nothing staged (every project's runs removed their directories);
* ``stranded``: one project in a hundred holds a stranded staging file;
* ``legacy``: as ``stranded``, plus an empty directory for every project (a home from
  before directories were removed, where each project once staged).

And what removing directories costs an add: the staging write (fsynced, with its
directory) into a kept directory and into one the last run removed (made again, its
parent fsynced too), interleaved, median of ``--writes`` each.

    .venv/bin/python ops/bench/bench_memory_start.py [--projects N] [--writes N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memoryd.consolidation import jobs, staging  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402

ITEM = [("c0", {"kind": "lesson", "text": "x"})]


def sweep_ms(md: Memoryd) -> tuple[float, int]:
    """(best of three, in ms; the runs it would enqueue)."""
    best, found = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        found = len(jobs.stranded(md.home, md.config, md.db.conn))
        best = min(best, time.perf_counter() - start)
    return round(best * 1000, 3), found


def sweeps(md: Memoryd, projects: int) -> dict:
    md.db.write(
        lambda tx: tx.executemany(
            "INSERT INTO projects (name, root, created_at) VALUES (?, ?, 0)",
            [(f"p{i}", f"/nowhere/p{i}") for i in range(projects)],
        )
    )
    out = {"idle": sweep_ms(md)}
    for i in range(0, projects, 100):
        staging.stage(md.home, f"p{i}", ITEM)
    out["stranded"] = sweep_ms(md)
    for i in range(projects):
        staging.staging_dir(md.home, f"p{i}").mkdir(parents=True, exist_ok=True)
    out["legacy"] = sweep_ms(md)
    return {k: {"ms": ms, "runs": runs} for k, (ms, runs) in out.items()}


def writes(home: Path, n: int) -> dict:
    times: dict[bool, list[float]] = {True: [], False: []}
    folder = staging.staging_dir(home, "w")
    for i in range(2 * n):
        removed = i % 2 == 1
        if removed:
            staging.prune(folder)
        start = time.perf_counter()
        path = staging.stage(home, "w", ITEM)
        times[removed].append(time.perf_counter() - start)
        staging.remove(path)
    return {
        "kept_median_ms": round(statistics.median(times[False]) * 1000, 3),
        "removed_median_ms": round(statistics.median(times[True]) * 1000, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", type=int, default=10_000)
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        md = Memoryd(Path(tmp) / "home")
        md.ensure_home()
        try:
            result = {
                "projects": args.projects,
                "load_average": os.getloadavg()[0],
                "sweep": sweeps(md, args.projects),
                "staging_write": writes(md.home, args.writes),
            }
        finally:
            md.close()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.projects:,} projects (load average {result['load_average']:.2f})")
    for name, r in result["sweep"].items():
        print(f"  start sweep, {name:<8} {r['ms']:>9.3f} ms  ({r['runs']} runs)")
    w = result["staging_write"]
    print(
        f"  staging write: {w['kept_median_ms']:.3f} ms into a kept directory,"
        f" {w['removed_median_ms']:.3f} ms into a removed one (medians)"
    )


if __name__ == "__main__":
    main()
