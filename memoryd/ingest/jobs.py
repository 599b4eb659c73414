"""The ingestion job kinds.

``ingest.scan`` walks the repository in a worker and compares content hashes
with the stored ones; its apply enqueues bounded ``ingest.batch`` jobs for new
and changed files and one ``ingest.finalize`` that retires vanished files, in
the same commit. ``ingest.batch`` reads, decodes, chunks, hashes and
compresses in a worker; its apply stores the prepared rows. The commit that
finishes a run enqueues, when an encoder stores codes, the low-priority
``vectors.encode`` jobs of its chunks (:mod:`memoryd.workers.vectors`), and an
``ingest.pack`` job: its worker compresses the project's new body blocks again at
``body_pack_level`` and makes their chunks' index text (:mod:`memoryd.storage.
unsearched`), its apply stores both, and the last one merges the project's index.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import orjson

from memoryd import killpoints
from memoryd.config import PACK_TEXT_BYTES, SETTINGS
from memoryd.ingest import progress
from memoryd.ingest.chunking import prepare_batch
from memoryd.ingest.progress import ScanProgress
from memoryd.ingest.scan import Eligible, read_file, scan
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.queue.jobs import ENQUEUE_SQL
from memoryd.storage import runs, vectors
from memoryd.storage.corpus import (
    Packed,
    UnknownProject,
    drop_unnamed_dictionaries,
    live_hashes,
    merge_index,
    pack_blocks,
    put_files,
    reclaim_free_pages,
    retire_files,
    store_packed,
)
from memoryd.workers import vectors as vectors_job
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

SCAN, BATCH, FINALIZE = "ingest.scan", "ingest.batch", "ingest.finalize"
PACK = "ingest.pack"
FINALIZE_PRIORITY = -1  # after the batches, though it does not depend on them
PACK_PRIORITY = -3  # after the vectors jobs (-2): searchable first, then smaller


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


def project_root(ctx: WorkContext, p: dict) -> Path:
    """The repository a job may read: its project's root as the authority records it,
    never a root a (crafted) payload names."""
    root = ctx.authority().query("SELECT root FROM projects WHERE id = ?", (p["project_id"],))
    if not root or not root[0][0]:
        raise UnknownProject(f"no project with id {p['project_id']} and a repository root")
    return Path(root[0][0])


# -- scan -----------------------------------------------------------------------


def _run_scan(ctx: WorkContext, p: dict) -> dict:
    stored = live_hashes(ctx.authority(), p["project_id"])
    root = project_root(ctx, p)
    result = scan(
        root,
        max_bytes=int(ctx.config.max_file_bytes),
        excludes=p["excludes"],
        hashes=bool(stored),  # nothing to compare with: batches hash what they read
        include_hidden=bool(p.get("include_hidden")),
        include_secrets=bool(p.get("include_secrets")),
        on_eligible=ScanProgress(ctx.home, p["run"], float(ctx.config.scan_progress_seconds)),
    )
    todo = [e for e in result.eligible if stored.get(e.path) != e.content_hash]
    present = {e.path for e in result.eligible}
    cfg = ctx.config
    target = min(int(cfg.ingest_batch_target_bytes), int(cfg.ingest_batch_bytes))
    batches = bounded_batches(todo, int(cfg.ingest_batch_files), target)
    return {
        "batches": [[[e.path, e.size] for e in b] for b in batches],
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
            JobSpec(
                BATCH,
                {**common, "files": files},
                project=p["project"],
            )
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
        # the home is the authority's directory (an apply gets no home of its own)
        progress.clear(Path(actx.tx.db_filename("main")).parent, p["run"])


# -- batch ----------------------------------------------------------------------


def _run_batch(ctx: WorkContext, p: dict) -> dict:
    skipped: Counter = Counter()
    read = []
    nbytes = 0
    root = project_root(ctx, p)
    for rel, size, *_ in p["files"]:
        raw = read_file(root, rel, int(ctx.config.max_file_bytes), skipped)
        nbytes += size
        if raw is not None:
            read.append((rel, raw))
    files, blocks = prepare_batch(read)
    return {"files": files, "blocks": blocks, "count": len(p["files"]), "bytes": nbytes,
            "skipped": skipped}  # fmt: skip


def _apply_batch(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, out in done:
        p = job.data
        vectors.check(actx.tx, actx.config)  # files of another encoder's store would mix
        put_files(actx.tx, p["project_id"], out["files"], job.id, out.get("blocks", ()))
        # the files it wrote are in history (a file.put row each, with its id), the
        # rest counted in its run: the list need not stay in the queue
        actx.queue.settle_payload_in(actx.tx, job, p, ["files"])
        runs.record_batch(
            actx.tx,
            p["run"],
            files=out["count"],
            nbytes=out["bytes"],
            skipped=out["skipped"],
            on_finish=_on_finish(actx, p),
        )


def _on_finish(actx: ApplyContext, p: dict) -> Callable[[apsw.Connection], None]:
    """What the commit that finishes a run also does: give free pages back, and
    enqueue the vectors jobs of the files left without codes (searchable first)."""

    def finish(tx: apsw.Connection) -> None:
        reclaim_free_pages(tx)
        follow = vectors_job.follow_up(tx, actx.config, p["project_id"], p["project"])
        actx.queue.enqueue_in(tx, [*follow, pack_job(p["project_id"], p["project"])])

    return finish


# -- pack -----------------------------------------------------------------------


def pack_job(pid: int, project: str, since: int | None = None) -> JobSpec:
    """The next ingest.pack job of the project. One live job per project: a run
    finishing while one waits adds none. ``since``: the lowest chunk rowid the pass's
    earlier jobs indexed, whose sizes the last job writes again
    (:func:`~memoryd.storage.corpus.merge_index`)."""
    payload = {"project_id": pid, "project": project, "since": since}
    key = f"{PACK}:{pid}"
    return JobSpec(PACK, payload, project=project, priority=PACK_PRIORITY, dedupe_key=key)


def enqueue_pack_jobs(tx: apsw.Connection) -> None:
    """An ingest.pack job for each project with unpacked blocks (migration 13: an
    older home's blocks, packed by the next supervisor)."""
    rows = tx.execute(
        "SELECT DISTINCT p.id, p.name FROM projects p JOIN body_blocks b ON b.project_id = p.id"
        " WHERE b.packed = 0 ORDER BY p.id"
    ).fetchall()
    now, attempts = time.time(), int(SETTINGS["max_attempts"].default)
    for pid, name in rows:
        s = pack_job(pid, name)
        tx.execute(ENQUEUE_SQL, (s.project, s.kind, orjson.dumps(s.payload), s.priority,
                                 attempts, 0.0, now, now, s.dedupe_key))  # fmt: skip


def _run_pack(ctx: WorkContext, p: dict) -> dict:
    """Compress up to PACK_TEXT_BYTES of the project's blocks again at body_pack_level
    and make their chunks' index text (the CPU-heavy part, here in a worker); ``more``
    when others wait."""
    db, level = ctx.authority(), int(ctx.config.body_pack_level)
    packed, more = pack_blocks(db, p["project_id"], level, PACK_TEXT_BYTES)
    return {"packed": packed, "more": more}


def _apply_pack(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    """Store the packed blocks and index their chunks as index text; then the next
    job, or, once every block is packed, the project's index merged as far as the
    pass wrote of it (:func:`~memoryd.storage.corpus.merge_index`), an older home's
    dictionaries no frame names any more deleted and the freed pages given back. A
    kill anywhere leaves each block, with its chunks' index rows, old or new."""
    for job, out in done:
        p = job.data
        packed = [Packed(*b) for b in out["packed"]]
        store_packed(actx.tx, p["project_id"], packed)
        killpoints.reach("pack_mid_apply")  # drills: the pass killed before its commit
        earlier = [] if p.get("since") is None else [p["since"]]
        since = min([r[0] for b in packed for r in b.rows] + earlier, default=None)
        if out["more"]:
            actx.queue.enqueue_in(actx.tx, [pack_job(p["project_id"], p["project"], since)])
            continue
        merge_index(actx.tx, p["project_id"], since)
        drop_unnamed_dictionaries(actx.tx, p["project_id"])
        reclaim_free_pages(actx.tx)


# -- finalize -------------------------------------------------------------------


def _apply_finalize(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, _ in done:
        p = job.data
        retired = retire_files(actx.tx, p["project_id"], p["retire"], job.id)
        actx.queue.settle_payload_in(actx.tx, job, p, ["retire"])  # file.retire history rows
        runs.record_finalize(actx.tx, p["run"], retired, on_finish=_on_finish(actx, p))


KINDS = [
    JobKind(SCAN, _run_scan, _apply_scan, doc="walk a repository, enqueue batches"),
    JobKind(BATCH, _run_batch, _apply_batch, doc="read, chunk, compress files"),
    JobKind(FINALIZE, lambda ctx, p: None, _apply_finalize, doc="retire vanished files"),
    JobKind(PACK, _run_pack, _apply_pack, doc="compress a project's body blocks again"),
]
