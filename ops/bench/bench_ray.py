"""`make bench-ray`: ingest the system headers with local workers and on Ray, one run.

Both ingest the same tree into fresh homes with the same number of workers and a
draining supervisor; the Ray run starts a local Ray cluster first (its start-up
is reported apart and not counted in its MB/s). Prints MB/s of each and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402

TREE = "/usr/include"


def ingest(home: Path, tree: str, workers: int, executor: str) -> dict:
    md = Memoryd(home)
    md.init()
    Projects(md).ingest(tree, "headers")
    md.close()
    start = time.perf_counter()
    stats = Memoryd(home).run(workers=workers, drain=True, executor=executor)
    seconds = time.perf_counter() - start
    md = Memoryd(home)
    [(files, size)] = md.reader.query("SELECT count(*), coalesce(sum(size), 0) FROM files")
    md.close()
    return {"seconds": seconds, "files": files, "bytes": size, "jobs": stats["done"]}


def fts_ceiling(tree: str, home: Path) -> float:
    """The single writer's ceiling: MB/s of raw FTS5 inserts of the tree's text (one
    connection, WAL, synchronous=FULL, 500 rows per commit; no reading, chunking,
    compression or bookkeeping), what no number of Ray workers can pass."""
    import apsw

    texts = []
    for dirpath, _, files in os.walk(tree):
        for name in files:
            try:
                texts.append(Path(dirpath, name).read_bytes().decode("utf-8", "replace"))
            except OSError:
                continue
    home.mkdir()
    conn = apsw.Connection(str(home / "fts.db"))
    conn.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    start = time.perf_counter()
    for i in range(0, len(texts), 500):
        with conn:
            conn.executemany("INSERT INTO t (body) VALUES (?)", [(x,) for x in texts[i : i + 500]])
    seconds = time.perf_counter() - start
    conn.close()
    return sum(len(x.encode()) for x in texts) / 1e6 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=TREE)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import ray

    t = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        local = ingest(Path(tmp) / "local", args.tree, args.workers, "local")
        on_ray = ingest(Path(tmp) / "ray", args.tree, args.workers, "ray")
        ceiling = fts_ceiling(args.tree, Path(tmp) / "fts")
    ray.shutdown()
    table = Table(title=f"ingest of {args.tree}, {args.workers} workers, draining supervisor")
    for col in ("executor", "files", "MB", "seconds", "MB/s"):
        table.add_column(col, justify="right")
    for name, r in (("local processes", local), ("Ray tasks", on_ray)):
        mbs = r["bytes"] / 1e6 / r["seconds"]
        table.add_row(name, f"{r['files']:,}", f"{r['bytes'] / 1e6:.1f}", f"{r['seconds']:.1f}",
                      f"{mbs:.1f}")  # fmt: skip
    out = Console()
    out.print(table)
    ratio = (on_ray["bytes"] / on_ray["seconds"]) / (local["bytes"] / local["seconds"])
    out.print(f"Ray / local: {ratio:.2f}x (Ray cluster start {ray_start:.1f}s, not counted)")
    out.print(f"single-writer ceiling, raw FTS5 inserts of the same text: {ceiling:.1f} MB/s")
    out.print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}")


if __name__ == "__main__":
    main()
