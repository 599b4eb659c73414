"""The ingestion job kinds.

``ingest.scan`` walks the repository in a worker and compares content hashes
with the stored ones; its apply enqueues bounded ``ingest.batch`` jobs for new
and changed files and one ``ingest.finalize`` that retires vanished files, in
the same commit. ``ingest.batch`` reads, decodes, chunks, hashes and
compresses in a worker; its apply stores the prepared rows.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from memoryd.ingest.chunking import prepare_file
from memoryd.ingest.scan import Eligible, read_file, scan
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.storage import runs
from memoryd.storage.corpus import live_hashes, put_files, retire_files
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext, register

SCAN, BATCH, FINALIZE = "ingest.scan", "ingest.batch", "ingest.finalize"
FINALIZE_PRIORITY = -1  # after the batches, though it does not depend on them


def bounded_batches(files: list[Eligible], max_files: int, max_bytes: int) -> list[list[Eligible]]:
    """Split files, in order, into batches of at most ``max_files`` files and about
    ``max_bytes`` bytes (a batch's first file may exceed it alone)."""
    batches: list[list[Eligible]] = []
    current: list[Eligible] = []
    size = 0
    for f in files:
        if current and (len(current) >= max_files or size + f.size > max_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        batches.append(current)
    return batches


# -- scan -----------------------------------------------------------------------


def _run_scan(ctx: WorkContext, p: dict) -> dict:
    result = scan(Path(p["root"]), max_bytes=int(ctx.config.max_file_bytes), excludes=p["excludes"])
    stored = live_hashes(ctx.authority(), p["project_id"])
    todo = [e for e in result.eligible if stored.get(e.path) != e.content_hash]
    present = {e.path for e in result.eligible}
    cfg = ctx.config
    target = min(int(cfg.ingest_batch_target_bytes), int(cfg.ingest_batch_bytes))
    batches = bounded_batches(todo, int(cfg.ingest_batch_files), target)
    return {
        "batches": [[[e.path, e.size, e.content_hash] for e in b] for b in batches],
        "retire": sorted(set(stored) - present),
        "unchanged": len(result.eligible) - len(todo),
        "files": len(todo),
        "bytes": sum(e.size for e in todo),
        "skipped": dict(result.skipped),
    }


def _apply_scan(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, out in done:
        p = job.data
        common = {"run": p["run"], "project_id": p["project_id"], "project": p["project"]}
        specs = [
            JobSpec(BATCH, {**common, "root": p["root"], "files": files}, project=p["project"])
            for files in out["batches"]
        ]
        specs.append(
            JobSpec(
                FINALIZE,
                {**common, "retire": out["retire"]},
                project=p["project"],
                priority=FINALIZE_PRIORITY,
            )
        )
        actx.queue.enqueue_in(actx.tx, specs)
        runs.record_scan(
            actx.tx,
            p["run"],
            files=out["files"],
            nbytes=out["bytes"],
            batches=len(out["batches"]),
            unchanged=out["unchanged"],
            skipped=out["skipped"],
        )


# -- batch ----------------------------------------------------------------------


def _run_batch(ctx: WorkContext, p: dict) -> dict:
    skipped: Counter = Counter()
    prepared = []
    nbytes = 0
    for rel, size, _hash in p["files"]:
        raw = read_file(Path(p["root"]), rel, int(ctx.config.max_file_bytes), skipped)
        nbytes += size
        if raw is not None:
            prepared.append(prepare_file(p["project"], rel, raw))
    return {"files": prepared, "count": len(p["files"]), "bytes": nbytes, "skipped": skipped}


def _apply_batch(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, out in done:
        p = job.data
        put_files(actx.tx, p["project_id"], out["files"], job.id)
        runs.record_batch(
            actx.tx, p["run"], files=out["count"], nbytes=out["bytes"], skipped=out["skipped"]
        )


# -- finalize -------------------------------------------------------------------


def _apply_finalize(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, _ in done:
        p = job.data
        retired = retire_files(actx.tx, p["project_id"], p["retire"], job.id)
        runs.record_finalize(actx.tx, p["run"], retired)


register(JobKind(SCAN, _run_scan, _apply_scan, doc="walk a repository, enqueue batches"))
register(JobKind(BATCH, _run_batch, _apply_batch, doc="read, chunk, compress files"))
register(JobKind(FINALIZE, lambda ctx, p: None, _apply_finalize, doc="retire vanished files"))
