"""Where a home should leave its rollback journal for WAL (``wal_from_bytes``).

For projects of growing size (standard-library packages, 48 KB to a few MB of
source), each ingested with ``ops/bench/bench_small.py``'s readings once per bound
(``MEMORYD_WAL_FROM_BYTES``; by default 0, WAL from the start, and a bound no home
reaches, the rollback journal throughout; ``--bounds`` adds switches). Per run: the
whole home at its peak while ingesting and closed, over the source; the authority's
size; the ingest's wall time; and the cost of a commit in that home afterwards (one
job enqueued per transaction, ``COMMITS`` of them: median and p95 milliseconds), the
cost every later write of the home pays in that layout.

The bound is where the WAL's own peak (its ``-shm`` and the frames between two
checkpoints) stops mattering against the home, weighed against what a rollback
journal costs each commit (journal, database and directory synced) and the readers
it makes commits wait for.

    PYTHONPATH=$PWD .venv/bin/python ops/bench/bench_wal_from.py [--json] [--roots DIR ...]
        [--bounds BYTES ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import sysconfig
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_small import ROOT, measure  # noqa: E402

sys.path.insert(0, str(ROOT))

from memoryd.base.config import load_config  # noqa: E402
from memoryd.queue import JobQueue, JobSpec  # noqa: E402
from memoryd.storage import open_authority  # noqa: E402

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# top-level .py bytes: 48 KB, 97 KB, 180 KB, 369 KB, 756 KB; whole: about 1.2 and 3 MB
ROOTS = ("json", "html", "logging", "email", "pydoc_data", "whole:asyncio", "whole:email")
NEVER = 1 << 40  # a bound no home reaches: the rollback journal throughout
BOUNDS = (0, NEVER)  # WAL from the start; never
COMMITS = 200
ENV = "MEMORYD_WAL_FROM_BYTES"


def commit_ms(home: Path) -> dict:
    """Milliseconds per one-job commit in ``home`` (its layout as the ingest left it)."""
    with open_authority(home, load_config(home)) as db:
        queue, took = JobQueue(db), []
        for i in range(COMMITS):
            start = time.perf_counter()
            queue.enqueue_many([JobSpec("noop", {"i": i})])
            took.append((time.perf_counter() - start) * 1000)
        mode = db.journal_mode()
    took.sort()
    return {
        "journal_mode": mode,
        "commit_ms_median": round(statistics.median(took), 3),
        "commit_ms_p95": round(took[int(0.95 * len(took))], 3),
    }


def layout(bound: int) -> str:
    return {0: "wal", NEVER: "rollback"}.get(bound, f"switch at {bound:,} B")


def run(spec: str, bound: int) -> dict:
    whole = spec.startswith("whole:")
    root = STDLIB / spec.removeprefix("whole:")  # an absolute path stays as it is
    os.environ[ENV] = str(bound)
    try:
        report = measure(root, whole, after=commit_ms)
    finally:
        del os.environ[ENV]
    keep = ("source_bytes", "home_closed_bytes", "home_peak_bytes", "closed_over_source",
            "peak_over_source", "ingest_wall_seconds", "journal_mode", "commit_ms_median",
            "commit_ms_p95")  # fmt: skip
    return {"root": spec, "layout": layout(bound), **{k: report[k] for k in keep}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--roots", nargs="+", default=list(ROOTS), help="NAME or whole:NAME (in the stdlib)"
    )
    ap.add_argument("--bounds", nargs="+", type=int, default=list(BOUNDS),
                    help=f"{ENV} values (0: WAL from the start; {NEVER}: never)")  # fmt: skip
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for spec in args.roots:
        for bound in args.bounds:  # alternating, so a slow stretch touches each
            row = run(spec, bound)
            print(json.dumps(row) if args.json else "  ".join(f"{v}" for v in row.values()),
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
