"""Search at monorepo scale: latency, abstention and duplicates on a tree
of vendored copies.

The tree is ``--copies`` copies of the interpreter's standard library (``.py``
files, no tests) under distinct paths (``c1/...``, ``c2/...``), as vendored
copies sit in a monorepo; with ``--headers`` each copy also holds the system
headers (``/usr/include``'s regular files: 7,900 files, 113 MB), so 27 copies are
a 3.3 GB tree of 231,000 files. One stdlib copy is about 11 MB and 6,600 chunks;
the default is small. The tree is ingested end to end by the user's command,
``memoryd ingest TREE --wait --json`` in its own process (from its start to the
run's last job committed, pack and vectors included; CPU seconds of the command,
its supervisor and workers; peak RSS of that process tree and the largest WAL,
sampled every 50 ms), then with ``--raw`` the same files by raw single-writer FTS5
(``bench_ingest.raw_insert``, stored content: the baseline, its time over
memoryd's printed as ``of_raw``); the whole home after a checkpoint over the
source is the store ratio. Then, in this process:

* the **first query** right after the ingest (cold per-generation statistics: it
  reads its own terms' postings and FTS5's one-row averages, nothing per chunk);
* the **first pass** over the other answerable questions (each seen once: its
  candidates' texts are read and encoded for the first time);
* **warm p50/p95** over three more passes of the answerable questions;
* **abstention** on absent-subject questions written for this bench (nothing in
  the standard library is about them);
* **duplicates**: no two items of one answer with identical text (copies fold
  into one item with ``also_at``).

    .venv/bin/python ops/bench/bench_scale.py [--copies N] [--headers] [--raw] [--json]
        [--home DIR]

``--home DIR`` keeps the ingested home there; when DIR already holds one, the tree
is neither built nor ingested again and only the searches are measured (a first
query then comes from a fresh process, not right after the ingest).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import corpus, ingest_once, raw_insert, store_report  # noqa: E402

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402

PROJECT = "mono"
HEADERS = Path("/usr/include")
_SKIP = {"test", "tests", "site-packages", "idlelib", "__pycache__", "dist-packages"}

ANSWERABLE = [
    "heap queue priority algorithm",
    "read and write ZIP archives",
    "send email over SMTP",
    "unified diff between two sequences of lines",
    "create temporary files and directories",
    "convert between RGB and HSV color systems",
    "parse command line options and arguments",
    "deep copy of compound objects",
    "shell-style wildcard matching of file names",
    "pretty-print data structures",
]
ABSENT = [
    "which kubernetes namespace hosts the billing service",
    "How is the Redis cache for user sessions configured?",
    "Which Stripe webhook handles refunds?",
    "What Terraform module provisions the load balancer?",
    "Where does the React dashboard fetch its GraphQL data?",
    "Which Kafka topic carries payment events?",
    "How many replicas does the Elasticsearch cluster run?",
    "What is the OAuth client id of the mobile app?",
    "Which S3 bucket stores the nightly database dumps?",
    "How does the Django admin export invoices to CSV?",
]


def build_tree(dest: Path, copies: int, headers: bool = False) -> int:
    """``copies`` copies of the stdlib's .py files under ``c<i>/`` (and of the system
    headers' regular files under ``c<i>/include/`` with ``headers``); returns bytes."""
    total = _copy_tree(Path(sysconfig.get_paths()["stdlib"]), dest, "", copies, ".py")
    if headers:
        total += _copy_tree(HEADERS, dest, "include", copies, "")
    return total


def _copy_tree(src: Path, dest: Path, under: str, copies: int, suffix: str) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(src):  # symlinked directories not followed
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        rel = Path(dirpath).relative_to(src)
        for name in filenames:
            path = Path(dirpath) / name
            if not name.endswith(suffix) or path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            for i in range(1, copies + 1):
                out = dest / f"c{i}" / under / rel / name
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
                total += len(data)
    return total


def _timed(md: Memoryd, q: str, cpu: list[float] | None = None) -> tuple[float, dict]:
    """Wall milliseconds of one search and its answer; the searching thread's CPU
    milliseconds appended to ``cpu`` when given."""
    t0, c0 = time.perf_counter(), time.thread_time()
    r = Search(md).search(q, PROJECT, limit=10)
    if cpu is not None:
        cpu.append((time.thread_time() - c0) * 1000)
    return (time.perf_counter() - t0) * 1000, r


def _chunk_hash(md: Memoryd, item: dict) -> bytes:
    """The stored content hash of the chunk an item cites (among its file's chunks, the
    id range the file's row keeps)."""
    first, count = md.reader.query(
        "SELECT chunk_first, chunk_count FROM files WHERE path = ? AND live = 1", (item["path"],)
    )[0]
    return md.reader.query(
        "SELECT content_hash FROM chunks WHERE id BETWEEN ? AND ? AND start_line = ?",
        (first, first + count - 1, item["start_line"]),
    )[0][0]


class TreeSampler:
    """Peak RSS of this process's descendants (the ingest command, its supervisor and
    workers; not this bench process) and the largest WAL with when it was seen, sampled
    every 50 ms from a thread while the ingest runs (memory and WAL stay bounded)."""

    def __init__(self, home: Path) -> None:
        import threading

        self.wal = home / "authority.db-wal"
        self.peak_rss = self.max_wal = 0
        self.max_wal_at = 0.0  # seconds after the sampler started
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(0.05):
            rss = 0
            for proc in me.children(recursive=True):
                try:
                    rss += proc.memory_info().rss
                except psutil.Error:
                    continue
            self.peak_rss = max(self.peak_rss, rss)
            with contextlib.suppress(FileNotFoundError):  # before the home exists
                size = self.wal.stat().st_size
                if size > self.max_wal:
                    self.max_wal, self.max_wal_at = size, time.monotonic() - self.t0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _ingest(home: Path, tree: Path, copies: int, headers: bool, raw: bool) -> dict:
    """Build the tree and ingest it into ``home`` (measured), unless ``home`` holds
    one already (then nothing is measured)."""
    if (home / "authority.db").exists():
        return {}
    size = build_tree(tree, copies, headers)
    home.mkdir(parents=True, exist_ok=True)
    sampler = TreeSampler(home)
    run = ingest_once(tree, None, home, project=PROJECT)  # the default workers
    sampler.stop()
    store = store_report(run["md"], size)
    run["md"].close()
    report = {
        "source_bytes": size,
        "files": run["files"],
        "ingest_seconds": round(run["seconds"], 1),  # the command's start to its last job
        "ingest_mb_per_s": round(size / 1e6 / run["seconds"], 1),
        "ingest_cpu_seconds": run["cpu_seconds"],  # the command, supervisor, workers
        "searchable_seconds": run["searchable_seconds"],
        "peak_rss_process_tree_mib": round(sampler.peak_rss / 2**20, 1),
        "largest_wal_mib": round(sampler.max_wal / 2**20, 1),
        "largest_wal_at_seconds": round(sampler.max_wal_at, 1),  # beside searchable_seconds
        "whole_home_over_source": round(store["ratio"], 3),
    }
    if raw:
        base = raw_insert(tree, corpus(tree), contentless=False)
        report |= {
            "raw_fts5_seconds": round(base["seconds"], 1),
            "raw_fts5_cpu_seconds": round(base["cpu_seconds"], 1),
            "of_raw": round(base["seconds"] / run["seconds"], 3),
        }
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=3, help="copies of the stdlib (default 3)")
    ap.add_argument("--headers", action="store_true", help="each copy holds /usr/include too")
    ap.add_argument("--raw", action="store_true", help="raw single-writer FTS5 beside it")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--home", type=Path, help="keep (or reuse) the ingested home here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memoryd-scale-") as tmp:
        home = args.home or Path(tmp) / "home"
        ingest = _ingest(home, Path(tmp) / "tree", args.copies, args.headers, args.raw)
        md = Memoryd(home)
        first_cpu: list[float] = []
        first_ms, _ = _timed(md, ANSWERABLE[0], first_cpu)
        cold_cpu: list[float] = []
        cold = sorted(_timed(md, q, cold_cpu)[0] for q in ANSWERABLE[1:])  # first sight of each
        cold_cpu.sort()
        lat, cpu, dup_answers = [], [], 0
        for _ in range(3):
            for q in ANSWERABLE:
                ms, r = _timed(md, q, cpu)
                lat.append(ms)
                hashes = [_chunk_hash(md, i) for i in r["items"]]
                dup_answers += len(hashes) != len(set(hashes))
        abst = [q for q in ABSENT if _timed(md, q)[1]["status"] == "abstained"]
        chunks = Projects(md).listing()[0].get("chunks")
        md.close()
    lat.sort()
    cpu.sort()
    report = {
        "copies": args.copies,
        "headers": args.headers,
        "chunks": chunks,
        **ingest,
        "first_query_ms": round(first_ms, 1),
        "first_pass_p50_ms": round(statistics.median(cold), 2),
        "first_pass_max_ms": round(cold[-1], 2),
        # the searching thread's CPU: what a busy machine's waits (and disk reads) leave
        "first_query_cpu_ms": round(first_cpu[0], 1),
        "first_pass_p50_cpu_ms": round(statistics.median(cold_cpu), 2),
        "first_pass_max_cpu_ms": round(cold_cpu[-1], 2),
        "warm_p50_ms": round(statistics.median(lat), 2),
        "warm_p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
        # CPU time of the searching thread: the same work without a busy machine's waits
        "warm_p50_cpu_ms": round(statistics.median(cpu), 2),
        "warm_p95_cpu_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "absent_abstained": f"{len(abst)}/{len(ABSENT)}",
        "answers_with_duplicate_text": dup_answers,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in report.items():
            print(f"{k:>28}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
