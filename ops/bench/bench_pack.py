"""What the pack pass after an ingest run costs when the run is small.

Corpus: a copy of the running interpreter's standard library, exactly the files
``memoryd ingest`` finds there (its scan decides, without test directories: about
770 files, 12.6 MB). For each checkout named by ``--tree`` (its memoryd package runs
the commands), on a fresh home:

* the first ingest, ``memoryd ingest SRC --wait --workers 2`` (``--workers``) in its
  own process, measured as each run below, then the home's bytes after a TRUNCATE
  checkpoint;
* ``--changes`` one-file runs: one file of the copy gets a new function appended and
  the same command runs again.

Each run goes while this process holds a read transaction open on the authority, so
no checkpoint can reset the WAL: its size after the run is every byte the run's
commits wrote (scan, batches, finalize and the pack jobs). Beside it: the run's wall
time, the pack jobs so far, the last one's apply (from its transaction's start, the
job's ``finished_at``, to the WAL file's last write: about 4 ms of resolution) and
the index's FTS5 segments after it.

After the runs: each home's bytes after a checkpoint, and the answers (this tree's
search, whole) to ``QUERIES`` docstring queries against the first tree's home.

The checkouts run one after the other for each step (first ingests, then each
change), so they share the machine's load; the load average is printed.

    .venv/bin/python ops/bench/bench_pack.py --tree /path/to/base --tree . [--changes N]
        [--copies N] [--batch-files N] [--json]

``--copies N`` ingests N copies of the library as one project (``copy_<i>/``), a larger
index for the same one-file change (in the first copy); ``--batch-files N`` sets the
homes' ``ingest_batch_files``: batches, and so blocks, of at most N files.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import apsw

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import EXCLUDES, queries_of  # noqa: E402

from memoryd.base.config import MiB  # noqa: E402
from memoryd.ingest.scan import scan  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402
from memoryd.storage.corpus import index_segments  # noqa: E402

CHANGED = "json/decoder.py"  # the file each one-file run changes
QUERIES = 100  # docstring queries asked of each home after the runs
PROJECT = "stdlib"


def copy_source(root: Path, dest: Path, copies: int) -> None:
    """Copy the files memoryd's scan finds under ``root`` to ``dest`` (``copies`` > 1:
    to ``dest/copy_<i>/``, a project that many times larger)."""
    found = scan(root, max_bytes=2 * MiB, excludes=EXCLUDES)
    for i in range(copies):
        base = dest / f"copy_{i}" if copies > 1 else dest
        for e in found.eligible:
            (base / e.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / e.path, base / e.path)


def cli(tree: Path, *args: str) -> str:
    """``memoryd ARGS`` with ``tree``'s package (``-m`` puts the working directory first
    on the path); its output."""
    cmd = [sys.executable, "-m", "memoryd.faces.cli.main", *args]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd=tree).stdout


def ingest(tree: Path, src: Path, home: Path, workers: int) -> float:
    """``memoryd ingest`` with ``tree``'s package; its wall seconds."""
    t0 = time.perf_counter()
    out = cli(tree, "ingest", str(src), "--home", str(home), "--project", PROJECT, "--wait",
              "--json", "--workers", str(workers))  # fmt: skip
    summary = json.loads(out.splitlines()[-1])
    if not summary["complete"] or summary["dead_jobs"]:
        raise SystemExit(f"ingest incomplete: {summary}")
    return time.perf_counter() - t0


def checkpointed_bytes(home: Path) -> int:
    """The home's file bytes after a TRUNCATE checkpoint."""
    conn = apsw.Connection(str(home / "authority.db"))
    conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    conn.close()
    return sum(p.stat().st_size for p in home.iterdir() if p.is_file())


def index_state(home: Path) -> dict:
    """The project's index segments, the pack jobs so far and when the last one's
    apply began."""
    conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        pid = conn.execute("SELECT id FROM projects WHERE name = ?", (PROJECT,)).fetchone()[0]
        segments = index_segments(conn, pid)
        job = conn.execute(  # the pack jobs so far, and when the last one's apply began
            "SELECT count(*) OVER (), finished_at FROM jobs"
            " WHERE kind = 'ingest.pack' ORDER BY id DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return {
        "segments": len(segments),
        "index_pages": sum(s.pages for s in segments),
        "dead_rows": sum(s.dead for s in segments),
        "last_pack_finished_at": job[1] if job else None,
        "pack_jobs": job[0] if job else 0,
    }


def change_run(tree: Path, src: Path, home: Path, n: int, workers: int) -> dict:
    """One file changed and ingested again (:func:`pinned_run`)."""
    path = min(src.glob(f"**/{CHANGED}"))  # the first copy's
    path.write_text(path.read_text() + f"\n\ndef _bench_added_{n}():\n    return {n}\n")
    return pinned_run(tree, src, home, workers)


def pinned_run(tree: Path, src: Path, home: Path, workers: int) -> dict:
    """An ingest while a reader pins the WAL: its wall time, the WAL's bytes after it,
    the last pack job's apply and the index after it."""
    pin = apsw.Connection(str(home / "authority.db"))
    pin.execute("BEGIN")
    pin.execute("SELECT count(*) FROM projects").fetchall()
    try:
        wall = ingest(tree, src, home, workers)
        wal = (home / "authority.db-wal").stat()
    finally:
        pin.execute("COMMIT")
        pin.close()
    state = index_state(home)
    # the last pack job's apply: from its transaction's start (the job's finished_at) to
    # the WAL's last write (its commit; the supervisor commits nothing after it)
    apply_s = wal.st_mtime - state.pop("last_pack_finished_at")
    return {"wall_s": wall, "wal_bytes": wal.st_size, "last_pack_apply_s": apply_s, **state}


def answers(home: Path, texts: list[str]) -> list[dict]:
    """Search's whole answer to each of ``texts`` on the home (this tree's search: the
    trees' indexes are compared)."""
    md = Memoryd(home)
    try:
        return [Search(md).search(q, PROJECT, limit=5) for q in texts]
    finally:
        md.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, action="append", required=True,
                    help="a checkout whose memoryd runs (repeat: measured in turn)")  # fmt: skip
    ap.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--changes", type=int, default=5, help="one-file runs after the first")
    ap.add_argument("--copies", type=int, default=1, help="the project: this many copies")
    ap.add_argument("--batch-files", type=int, help="ingest_batch_files: smaller blocks")
    ap.add_argument("--workers", type=int, default=2,
                    help="of each ingest (1: batches commit in order, ids match)")  # fmt: skip
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="memoryd-bench-pack-"))
    try:
        results = measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results.update(vars(args) | {"tree": [str(t) for t in args.tree], "root": str(args.root)})
    results["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    return 0


def measure(args: argparse.Namespace, work: Path) -> dict:
    """The first ingest on each tree's home, then each change on each, in turn."""
    sides = []
    for i, tree in enumerate(args.tree):
        side = {"tree": tree, "src": work / f"src{i}" / "python-stdlib", "home": work / f"home{i}"}
        copy_source(args.root, side["src"], args.copies)
        side["home"].mkdir()
        # a pinned WAL must not pause the run's claims
        config = f"wal_pause_bytes = {1024 * MiB}\n"
        if args.batch_files:
            config += f"ingest_batch_files = {args.batch_files}\n"
        (side["home"] / "memoryd.toml").write_text(config)
        cli(tree, "checkpoint-wal", "--home", str(side["home"]))  # the authority, created
        sides.append(side)
    for side in sides:
        side["first"] = pinned_run(side["tree"], side["src"], side["home"], args.workers)
        side["first_store_bytes"] = checkpointed_bytes(side["home"])
        side["changes"] = []
    for n in range(args.changes):
        for side in sides:
            run = change_run(side["tree"], side["src"], side["home"], n, args.workers)
            side["changes"].append(run)
    texts = queries_of(args.root, QUERIES // 2)  # it returns twice the count: QUERIES
    for side in sides:
        side["store_bytes_after"] = checkpointed_bytes(side["home"])
        side["answers"] = answers(side["home"], texts)
    for side in sides:
        side["answers_as_first"] = sum(map(operator.eq, side["answers"], sides[0]["answers"]))
    keep = ("first", "first_store_bytes", "changes", "store_bytes_after",
            "answers_as_first")  # fmt: skip
    return {"trees": {str(s["tree"]): {k: s[k] for k in keep} for s in sides}}


def report(results: dict) -> None:
    for tree, side in results["trees"].items():
        first, runs = side["first"], side["changes"]
        print(f"{tree}: first ingest {first['wall_s']:.2f} s, WAL {first['wal_bytes']:,} B,"
              f" {first['pack_jobs']} pack jobs, store {side['first_store_bytes']:,} B,"
              f" segments {first['segments']}")  # fmt: skip
        for c in runs:
            print(f"  one-file run: WAL {c['wal_bytes']:,} B, wall {c['wall_s']:.2f} s, last pack"
                  f" apply {c['last_pack_apply_s']:.3f} s, segments {c['segments']},"
                  f" pages {c['index_pages']}, dead rows {c['dead_rows']}")  # fmt: skip
        if runs:
            print(f"  median WAL of a one-file run {_median_wal(side):,.0f} B")
        print(f"  store after the runs: {side['store_bytes_after']:,} B; answers equal to the"
              f" first tree's: {side['answers_as_first']}/{QUERIES}")  # fmt: skip
    sides = list(results["trees"].values())
    if len(sides) > 1 and sides[0]["changes"]:
        base, last = sides[0], sides[-1]
        print(f"last tree / first: one-file run's WAL {_median_wal(last) / _median_wal(base):.3f}x,"
              f" store after the first ingest"
              f" {last['first_store_bytes'] / base['first_store_bytes']:.3f}x")  # fmt: skip
    print(f"load average {results['load']}")


def _median_wal(side: dict) -> float:
    return statistics.median(c["wal_bytes"] for c in side["changes"])


if __name__ == "__main__":
    raise SystemExit(main())
