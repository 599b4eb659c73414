"""LongMemEval session recall and abstention of archive search.

All 940 distinct sessions of ../shared/data/longmemeval_oracle.json.gz are
archived as *conversation* documents of one project, each exactly as
``memoryd archive add`` stores it: the session becomes a JSONL transcript (one
``{"role", "content"}`` message per turn), parsed by
:func:`memoryd.archive.transcripts.parse_jsonl` and appended by the archive
owner's ``add`` operation, so it is rendered one line per turn (``role: text``)
with ``created_at`` from the session's haystack date. Session names are
neutral (``s0001``): the LongMemEval ids, which contain the word "answer",
are nowhere in the archive. The sessions are imported history (the 2023 dates
are past the conversation class's 90 days: aged from the import); no retention
pass runs (expiry is not what this measures).

Every question is asked against the whole project, scored as
``bench_longmemeval.py`` scores project search (shared in ``lme_data.py``):
session recall@5/@10 on the 470 answerable questions (identical-text twins
count), abstentions on the 30 ``_abs`` ones, even indices for tuning and odd
ones held out. Runners, same archive, same run:

* ``bm25``: the archive's own exact-term BM25 (``archive_bm25.search``) of the
  question's words without stopwords, top k, no gate;
* ``archive``: :func:`memoryd.archive.query.search_archive` (the gate).

Latency: wall-clock p50/p95 of each runner over the asked questions,
in-process, leases included for ``archive``.

    .venv/bin/python ops/bench/bench_archive.py [--quick] [--json] [--home DIR] [--store-bytes]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

from lme_data import (  # noqa: E402, F401
    DATA,
    DATA_SOURCE,
    evaluate,
    load_questions,
    print_table,
    splits,
    text_digest,
)

from memoryd.archive.ops import run_op  # noqa: E402
from memoryd.archive.owner import ArchiveOwner  # noqa: E402
from memoryd.archive.query import search_archive  # noqa: E402
from memoryd.archive.transcripts import parse_jsonl  # noqa: E402
from memoryd.base.config import load_config  # noqa: E402
from memoryd.operations.control_client import unwrap  # noqa: E402
from memoryd.search import archive_bm25  # noqa: E402
from memoryd.storage.archive import tokenize  # noqa: E402
from memoryd.text.terms import STOPWORDS  # noqa: E402

PROJECT = "longmemeval"
DEPTH = 50  # result items requested; recall counts distinct sessions among them
NOW = datetime(2024, 1, 1, tzinfo=UTC).timestamp()  # after every question date


def haystack_time(value: str) -> float:
    """``2023/05/20 (Sat) 02:21`` as epoch seconds (UTC)."""
    return datetime.strptime(value, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC).timestamp()


def transcripts(data: list[dict]) -> dict[str, tuple[bytes, float]]:
    """Distinct sessions: id -> (JSONL transcript, created_at of its first occurrence)."""
    out: dict[str, tuple[bytes, float]] = {}
    for q in data:
        for sid, date, sess in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            if sid not in out:
                lines = [json.dumps({"role": t["role"], "content": t["content"]}) for t in sess]
                out[sid] = ("\n".join(lines).encode(), haystack_time(date))
    return out


def add_args(name: str, jsonl: bytes, created_at: float) -> dict:
    """The ``add`` operation's arguments, as ``Archive.add`` builds them."""
    t = parse_jsonl(jsonl, source=name, session=name, created_at=created_at)
    return {
        "project": PROJECT,
        "class": None,
        "session": t.session,
        "created_at": t.created_at,
        "content": t.rendered(),
        "turns": len(t.turns),
        "tools": [{"content": m.content, "timestamp": m.timestamp} for m in t.tools],
        "now": NOW,
        "imported": True,
    }


def build(home: Path, data: list[dict]) -> tuple[ArchiveOwner, dict[str, str], dict[str, str]]:
    """The archive (reused when already built), session name -> text digest, and
    LongMemEval session id -> text digest."""
    owner = ArchiveOwner(home, load_config(home))
    sessions = transcripts(data)
    order = sorted(sessions)
    names = {sid: f"s{i:04d}" for i, sid in enumerate(order, 1)}
    digest: dict[str, str] = {}
    have = owner.store.postings.corpus_stats(PROJECT).versions
    for sid in order:
        args = add_args(names[sid], *sessions[sid])
        if have != len(order):
            unwrap(run_op(owner, "add", args))  # idempotent: same content, same request
        digest[names[sid]] = text_digest(args["content"])
    return owner, digest, {sid: digest[names[sid]] for sid in order}


def bm25_plain(owner: ArchiveOwner, question: str, limit: int) -> dict:
    """Ungated: the archive's exact-term BM25 of the question's words (no stopwords)."""
    words = [w for w in tokenize(question) if w not in STOPWORDS]
    hits = archive_bm25.search(owner.store.postings, PROJECT, words, limit=limit) if words else []
    items = [{"path": h.session} for h in hits]
    return {"status": "ok" if items else "abstained", "items": items}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--home", type=Path, help="memoryd home (default: a temporary one)")
    ap.add_argument("--quick", action="store_true", help="every 5th question (100 of 500)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--only", help="comma-separated runners (bm25,archive)")
    ap.add_argument(
        "--store-bytes",
        action="store_true",
        help="after the questions, flush and fully compact the archive and report its SST bytes",
    )
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    data = load_questions(args.data)
    tmp = None
    if args.home is None:
        tmp = tempfile.TemporaryDirectory(prefix="memoryd-lme-archive-")
        args.home = Path(tmp.name)
    args.home.mkdir(parents=True, exist_ok=True)
    owner, digest, sid_digest = build(args.home, data)
    built = time.perf_counter() - t0
    stats = owner.store.postings.corpus_stats(PROJECT)

    runners = {
        "bm25": lambda text: bm25_plain(owner, text, DEPTH),
        "archive": lambda text: search_archive(owner, PROJECT, text, DEPTH, NOW),
    }
    if args.only:
        runners = {k: v for k, v in runners.items() if k in args.only.split(",")}
    parts = splits(len(data), args.quick)
    report = {
        "sessions": len(digest),
        "versions": stats.versions,
        "tokens": stats.length,
        "questions": len(parts["all"]),
        "build_seconds": round(built, 1),
        "splits": {
            name: evaluate(data, runners, digest, sid_digest, ii) for name, ii in parts.items()
        },
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if args.store_bytes:  # after the questions: a full compaction would change their timings
        owner.store.maintenance.flush()
        owner.store.maintenance.compact_all()
        report["sst_bytes"] = owner.store.meta.properties()["sst_bytes"]
    owner.close()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"LongMemEval oracle in the archive: {report['sessions']} sessions,"
        f" {stats.versions} conversation versions, {stats.length} tokens,"
        f" {report['questions']} questions{' (--quick)' if args.quick else ''};"
        f" archived in {built:.1f}s; load average {report['load_avg_1m']}"
    )
    print_table(report["splits"])
    if args.store_bytes:
        print(f"archive after a full compaction: {report['sst_bytes']:,} SST bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
