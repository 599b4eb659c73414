"""LongMemEval session recall and abstention of memoryd search.

All 940 distinct sessions of ../shared/data/longmemeval_oracle.json.gz go into
one project, one file per session, one line per turn prefixed by its speaker
(``user: ...`` / ``assistant: ...``; a turn's own newlines become spaces), so
the line chunker makes chunks of about one exchange and the gate can tell who
said what. File names are neutral (``s/0001.txt``): the session ids, which
contain the word "answer", never reach the index.

Every question is asked against the whole project. Session recall@k
(LongMemEval's recall_any, the measure published results report): the
share of answerable questions with at least one answer session among the
first k distinct sessions of the result list (a session with text identical
to an answer session counts as it: the data's ``_abs`` twins); an abstention
counts as nothing retrieved. ``all@10``: every answer session in the first 10;
``share@10``: the mean share of a question's answer sessions in the first 10.
``_abs`` questions: abstained when ``items == []``.

Compared in one run on the same index: plain FTS5 BM25 without any gate (the
query's words OR-ed), the literal gate (DESIGN.md's rules as written, lexical
only) and memoryd's default search. Questions are split by position: even
indices were used for tuning, odd ones are held out; both and the total are
reported.

    .venv/bin/python ops/bench/bench_longmemeval.py [--quick] [--json]
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
sys.path.insert(0, str(ROOT / "ops" / "bench"))

# data, rendering and scoring shared with bench_archive.py (tests use them from here)
from lme_data import (  # noqa: E402, F401
    DATA,
    DATA_SOURCE,
    evaluate,
    load,
    print_table,
    splits,
    text_digest,
)

from memoryd.base.config import load_config  # noqa: E402
from memoryd.ingest.chunking import prepare_file  # noqa: E402
from memoryd.search import search  # noqa: E402
from memoryd.search.fts_query import any_of  # noqa: E402
from memoryd.search.gate import LITERAL  # noqa: E402
from memoryd.storage import open_authority  # noqa: E402
from memoryd.storage.corpus import ensure_project, fts_table, project_id, put_files  # noqa: E402
from memoryd.storage.fts import prepare  # noqa: E402
from memoryd.text.terms import STOPWORDS, words  # noqa: E402

PROJECT = "longmemeval"
DEPTH = 50  # result items requested; recall counts distinct sessions among them


def build(home: Path, sessions: dict[str, str]) -> tuple[object, dict[str, str]]:
    """The store (reused when already built) and file path -> text digest."""
    cfg = load_config(home)
    db = open_authority(home, cfg)
    order = sorted(sessions)
    paths = {sid: f"s/{i:04d}.txt" for i, sid in enumerate(order, 1)}
    have = db.query(
        "SELECT count(*) FROM files f JOIN projects p ON p.id = f.project_id WHERE p.name = ?",
        (PROJECT,),
    )[0][0]
    if have != len(order):
        pid = db.write(lambda tx: ensure_project(tx, PROJECT, None))
        rows = [prepare_file(paths[sid], sessions[sid].encode("utf-8")) for sid in order]
        db.write(lambda tx: put_files(tx, pid, rows))
    digest = {paths[sid]: text_digest(sessions[sid]) for sid in order}
    return db, digest, {sid: digest[paths[sid]] for sid in order}


def bm25_plain(db, pid: int, question: str, limit: int) -> dict:
    """Ungated FTS5 BM25: the question's words (stopwords dropped) OR-ed."""
    match = any_of(w for w in words(question) if w not in STOPWORDS)
    if match is None:
        return {"status": "abstained", "items": []}
    t = fts_table(pid)
    rows = db.query(
        f"SELECT c.start_line, f.path, {t}.rank FROM {t} JOIN chunks c ON c.id = {t}.rowid"
        f" JOIN files f ON f.id = c.file_id WHERE {t} MATCH ? ORDER BY rank LIMIT ?",
        (match, limit),
    )
    items = [{"path": r[1], "score": -r[2]} for r in rows]  # FTS5's rank: lower is better
    return {"status": "ok" if items else "abstained", "items": items}


def docstring_queries(files: list[Path], limit: int) -> list[str]:
    """Natural-language queries: the first docstring line (3+ words) of each module."""
    import ast

    texts = []
    for f in files:
        if not f.name.endswith(".py"):
            continue
        try:
            doc = ast.get_docstring(ast.parse(f.read_bytes()))
        except (SyntaxError, ValueError):
            continue
        line = (doc or "").strip().split("\n")[0].strip()
        if len(line.split()) >= 3:
            texts.append(line)
        if len(texts) >= limit:
            break
    return texts


def search_latency(
    db, project: str, texts: list[str], queries: int, samples: bool = False, ask=search
) -> dict:
    """p50/p95 ms of ``search`` (gate included, in-process): the first ``queries``
    texts are measured, each once, after one warm-up pass over the rest. ``samples``
    adds each query's wall and CPU ms, in order (``wall_ms``, ``cpu_ms``); ``ask``
    replaces ``search`` (same arguments), e.g. with another encoder."""
    for text in texts[queries:]:
        ask(db, project, text)  # warm-up: caches, statistics
    lat, cpu, abstained = [], [], 0
    for text in texts[:queries]:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = ask(db, project, text)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
        abstained += r["status"] == "abstained"
    kept = {"wall_ms": [round(x, 3) for x in lat], "cpu_ms": [round(x, 3) for x in cpu]}
    lat.sort()
    cpu.sort()
    return {
        **(kept if samples else {}),
        "queries": len(lat),
        "abstained": abstained,
        "p50_ms": round(statistics.median(lat), 2),
        "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
        # CPU time of the searching thread: the same work without the waits that a
        # busy machine adds to wall-clock time (see load_avg_1m)
        "p50_cpu_ms": round(statistics.median(cpu), 2),
        "p95_cpu_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def stdlib_latency(home: Path, queries: int = 300) -> dict:
    """p50/p95 of search (gate included, in-process) over the stdlib corpus.

    The corpus is the interpreter's standard library without test directories
    and site-packages; queries are the first docstring lines of its modules
    (natural-language descriptions), each asked once after one warm-up pass
    over a different set.
    """
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "site-packages", "idlelib", "__pycache__", "dist-packages"}
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        files += [Path(dirpath) / n for n in sorted(filenames) if n.endswith(".py")]
    cfg = load_config(home)
    db = open_authority(home, cfg)
    pid = db.write(lambda tx: ensure_project(tx, "stdlib", None))
    rows = [prepare_file(f.relative_to(root).as_posix(), f.read_bytes()) for f in files]
    db.write(lambda tx: put_files(tx, pid, rows))
    texts = docstring_queries(files, queries * 2)
    return {
        "files": len(rows),
        "source_mb": round(sum(r.size for r in rows) / 1e6, 1),
        "chunks": sum(len(r.chunks) for r in rows),
        **search_latency(db, "stdlib", texts, queries),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--home", type=Path, help="store directory (default: a temporary one)")
    ap.add_argument("--quick", action="store_true", help="every 5th question (100 of 500)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--only", help="comma-separated runners (bm25,literal,lexical,memoryd)")
    ap.add_argument(
        "--limit",
        type=int,
        default=DEPTH,
        help="items requested per question (10 = `memoryd search --limit 10`, the CLI default)",
    )
    ap.add_argument("--no-latency", action="store_true", help="skip the stdlib latency run")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    data, sessions = load(args.data)
    tmp = None
    if args.home is None:
        tmp = tempfile.TemporaryDirectory(prefix="memoryd-lme-")
        args.home = Path(tmp.name)
    args.home.mkdir(parents=True, exist_ok=True)
    db, digest, sid_digest = build(args.home, sessions)
    pid = project_id(db, PROJECT)
    prepare(db)
    chunks = db.query(
        "SELECT coalesce(sum(chunk_count), 0) FROM files WHERE project_id = ?", (pid,)
    )[0][0]
    built = time.perf_counter() - t0

    runners = {
        "bm25": lambda text: bm25_plain(db, pid, text, args.limit),
        "literal": lambda text: search(
            db, PROJECT, text, args.limit, encoder=False, tuning=LITERAL
        ),
        "lexical": lambda text: search(db, PROJECT, text, args.limit, encoder=False),
        "memoryd": lambda text: search(db, PROJECT, text, args.limit),
    }
    if args.only:
        runners = {k: v for k, v in runners.items() if k in args.only.split(",")}
    parts = splits(len(data), args.quick)
    idx = parts["all"]
    report = {
        "sessions": len(sessions),
        "chunks": chunks,
        "questions": len(idx),
        "build_seconds": round(built, 1),
        "splits": {
            name: evaluate(data, runners, digest, sid_digest, ii) for name, ii in parts.items()
        },
    }
    if not args.no_latency:
        with tempfile.TemporaryDirectory(prefix="memoryd-stdlib-") as std_home:
            report["stdlib_latency"] = stdlib_latency(Path(std_home), 100 if args.quick else 300)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    lat = report.get("stdlib_latency")
    if lat:
        print(
            f"stdlib latency (gate included, in-process): {lat['files']} files,"
            f" {lat['source_mb']} MB, {lat['chunks']} chunks, {lat['queries']} queries"
            f" ({lat['abstained']} abstained):"
            f" p50 {lat['p50_ms']} ms, p95 {lat['p95_ms']} ms (CPU time p50 {lat['p50_cpu_ms']} ms,"
            f" p95 {lat['p95_cpu_ms']} ms; load average {lat['load_avg_1m']})"
        )
    print(
        f"LongMemEval oracle: {report['sessions']} sessions, {chunks} chunks,"
        f" {len(idx)} questions{' (--quick)' if args.quick else ''}; store built in {built:.1f}s"
    )
    print_table(report["splits"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
