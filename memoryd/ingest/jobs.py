"""The ingestion job kinds.

``ingest.scan`` walks the repository in a worker and compares content hashes
with the stored ones; its apply enqueues bounded ``ingest.batch`` jobs for new
and changed files and one ``ingest.finalize`` that retires vanished files, in
the same commit. ``ingest.batch`` reads, decodes, chunks, hashes and
compresses in a worker; its apply stores the prepared rows. The commit that
finishes a run enqueues, when an encoder stores codes, the low-priority
``vectors.encode`` jobs of its chunks (:mod:`memoryd.ingest.vectors`), and an
``ingest.pack`` job: its worker compresses the project's new body blocks again at
``body_pack_level`` and makes their chunks' index text (:mod:`memoryd.storage.
unsearched`), its apply stores both, and the last one merges the project's index.
A supervisor starting enqueues the pack job of a project whose blocks wait unpacked
with no job to pack them (an older home after migration 13).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from memoryd.base import killpoints
from memoryd.base.config import PACK_TEXT_BYTES, Config
from memoryd.consolidation import anchors
from memoryd.ingest import progress
from memoryd.ingest import vectors as vectors_job
from memoryd.ingest.chunking import prepare_batch
from memoryd.ingest.progress import ScanProgress
from memoryd.ingest.scan import Eligible, Skipped, read_files, scan
from memoryd.ingest.sensitive import SECRET_CONTENT, content_reason
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.storage import index_sizes, runs, vectors
from memoryd.storage.corpus import (
    MergeState,
    Packed,
    UnknownProject,
    drop_unnamed_dictionaries,
    live_hashes,
    merge_index,
    next_chunk_id,
    pack_blocks,
    put_files,
    reclaim_free_pages,
    retire_files,
    root_of,
    store_packed,
    stranded_unpacked,
)
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
    root = root_of(ctx.authority(), p["project_id"])
    if not root:
        raise UnknownProject(f"no project with id {p['project_id']} and a repository root")
    return Path(root)


# -- scan -----------------------------------------------------------------------


def _run_scan(ctx: WorkContext, p: dict) -> dict:
    stored = live_hashes(ctx.authority(), p["project_id"])
    root = project_root(ctx, p)
    result = scan(
        root,
        max_bytes=ctx.config.max_file_bytes,
        excludes=p["excludes"],
        hashes=bool(stored),  # nothing to compare with: batches hash what they read
        include_hidden=bool(p.get("include_hidden")),
        include_secrets=bool(p.get("include_secrets")),
        on_eligible=ScanProgress(ctx.home, p["run"], ctx.config.scan_progress_seconds),
    )
    todo = [e for e in result.eligible if stored.get(e.path) != e.content_hash]
    present = {e.path for e in result.eligible}
    cfg = ctx.config
    target = min(cfg.ingest_batch_target_bytes, cfg.ingest_batch_bytes)
    batches = bounded_batches(todo, cfg.ingest_batch_files, target)
    return {
        "batches": [[[e.path, e.size] for e in b] for b in batches],
        "retire": sorted(set(stored) - present),
        "unchanged": len(result.eligible) - len(todo),
        "files": len(todo),
        "bytes": sum(e.size for e in todo),
        "skipped": dict(result.skipped),
        "listed": result.skipped.listed,
    }


def _apply_scan(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, out in done:
        p = job.data
        common = {"run": p["run"], "project_id": p["project_id"], "project": p["project"],
                  "first_chunk": next_chunk_id(actx.tx)}  # fmt: skip
        content = {"include_secrets": True} if p.get("include_secrets") else {}
        specs = [
            JobSpec(
                BATCH,
                {**common, **content, "files": files},
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
            listed=out.get("listed", ()),
        )
        # the home is the authority's directory (an apply gets no home of its own)
        progress.clear(Path(actx.tx.db_filename("main")).parent, p["run"])


# -- batch ----------------------------------------------------------------------


def _run_batch(ctx: WorkContext, p: dict) -> dict:
    """Read, judge and prepare the batch's files. A file whose content holds a
    credential (:func:`~memoryd.ingest.sensitive.content_reason`) is skipped unless the
    run includes secrets; its stored version, if any, is retired with the batch."""
    skipped = Skipped()
    read = []
    root = project_root(ctx, p)
    judge = not p.get("include_secrets")
    rels = [rel for rel, *_ in p["files"]]
    for rel, raw in read_files(root, rels, ctx.config.max_file_bytes, skipped):
        if judge and (why := content_reason(raw)):
            skipped.note(SECRET_CONTENT, rel, why)
            continue
        read.append((rel, raw))
    nbytes = sum(size for _, size, *_ in p["files"])
    files, blocks = prepare_batch(read, level=ctx.config.body_pack_level)
    return {"files": files, "blocks": blocks, "packed": True, "count": len(p["files"]),
            "bytes": nbytes, "skipped": dict(skipped), "listed": skipped.listed}  # fmt: skip


def _apply_batch(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, out in done:
        p = job.data
        vectors.check(actx.tx, actx.config)  # files of another encoder's store would mix
        blocks, packed = out.get("blocks", ()), out.get("packed", False)
        put_files(actx.tx, p["project_id"], out["files"], job.id, blocks, packed)
        secret = [path for reason, path, *_ in out.get("listed", ()) if reason == SECRET_CONTENT]
        retired = retire_files(actx.tx, p["project_id"], secret, job.id)
        paths = [f.path for f in out["files"]] + secret
        anchors.reanchor_in(actx.tx, p["project_id"], paths, job.id)  # cited spans it moved
        # the files it wrote are in history (a file.put row each, with its id), the
        # rest counted in its run: the list need not stay in the queue
        actx.queue.settle_payload_in(actx.tx, job, p, ["files"])
        runs.record_batch(
            actx.tx,
            p["run"],
            files=out["count"],
            nbytes=out["bytes"],
            skipped=out["skipped"],
            listed=out.get("listed", ()),
            retired=retired,
            on_finish=_on_finish(actx, p),
        )


def _on_finish(actx: ApplyContext, p: dict) -> Callable[[apsw.Connection], None]:
    """What the commit that finishes a run also does: give free pages back, and
    enqueue the vectors jobs of the files left without codes (searchable first)."""

    def finish(tx: apsw.Connection) -> None:
        anchors.reanchor_in(tx, p["project_id"], None, None)  # every cited span, as it ends
        reclaim_free_pages(tx, actx.config.index_merge_step_pages)  # the pack pass goes on
        follow = vectors_job.follow_up(tx, actx.config, p["project_id"], p["project"])
        pack = pack_job(p["project_id"], p["project"], p.get("first_chunk"))
        actx.queue.enqueue_in(tx, [*follow, pack])

    return finish


# -- pack -----------------------------------------------------------------------


def pack_job(
    pid: int,
    project: str,
    since: int | None = None,
    merge: MergeState | None = None,
    reclaim: bool = False,
) -> JobSpec:
    """The next ingest.pack job of the project. One live job per project: a run
    finishing while one waits adds none. ``since``: the lowest chunk rowid the run and
    the pass's earlier jobs indexed, whose sizes the last job writes again; ``merge``:
    how far the pass's merge of the index has gone
    (:func:`~memoryd.storage.corpus.merge_index`); ``reclaim``: merged, free pages are
    still given back (a bounded number a step)."""
    payload = {"project_id": pid, "project": project, "since": since,
               "merge": list(merge) if merge else None, "reclaim": reclaim}  # fmt: skip
    key = f"{PACK}:{pid}"
    return JobSpec(PACK, payload, project=project, priority=PACK_PRIORITY, dedupe_key=key)


def sizes_job(pid: int, project: str) -> JobSpec:
    """The pass's last job: the project's chunk sizes stored as one array for the
    generation its worker reads (:mod:`memoryd.storage.index_sizes`). Its own dedupe
    key: a pack job a run enqueues meanwhile is not taken for it, nor it for one."""
    payload = {"project_id": pid, "project": project, "sizes": True}
    key = f"{PACK}:sizes:{pid}"
    return JobSpec(PACK, payload, project=project, priority=PACK_PRIORITY, dedupe_key=key)


def stranded_packs(home: Path, config: Config, conn: apsw.Connection) -> list[JobSpec]:
    """The pack jobs a supervisor enqueues as it starts: one per project whose blocks
    wait unpacked with no job to pack them (an older home after migration 13)."""
    return [pack_job(pid, name) for pid, name in stranded_unpacked(conn, PACK)]


def _run_pack(ctx: WorkContext, p: dict) -> dict:
    """Compress up to PACK_TEXT_BYTES of the project's blocks again at body_pack_level
    and make their chunks' index text (the CPU-heavy part, here in a worker); ``more``
    when others wait."""
    db, level = ctx.authority(), ctx.config.body_pack_level
    if p.get("sizes"):
        return {"sizes": index_sizes.snapshot(db, p["project_id"])}
    packed, more = pack_blocks(db, p["project_id"], level, PACK_TEXT_BYTES)
    return {"packed": packed, "more": more}


def _apply_pack(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    """Store the packed blocks and index their chunks as index text; then the next
    job, or, once every block is packed, the project's index merged as far as the
    pass wrote of it (:func:`~memoryd.storage.corpus.merge_index`), an older home's
    dictionaries no frame names any more deleted and the freed pages given back. A
    kill anywhere leaves each block, with its chunks' index rows, old or new. The
    pass ends with the project's chunk sizes stored for its generation (:func:`sizes_job`)."""
    for job, out in done:
        p = job.data
        if p.get("sizes"):
            if out["sizes"] is not None:  # else compact, empty or spread thin: none kept
                index_sizes.store_in(actx.tx, p["project_id"], out["sizes"])
            continue
        packed = [Packed(*b) for b in out["packed"]]
        store_packed(actx.tx, p["project_id"], packed)
        killpoints.reach("pack_mid_apply")  # drills: the pass killed before its commit
        earlier = [] if p.get("since") is None else [p["since"]]
        since = min([r[0] for b in packed for r in b.rows] + earlier, default=None)
        if out["more"]:
            actx.queue.enqueue_in(actx.tx, [pack_job(p["project_id"], p["project"], since)])
            continue
        step = actx.config.index_merge_step_pages
        merge = None
        if not p.get("reclaim"):
            merge = MergeState(*p["merge"]) if p.get("merge") else None
            merge = merge_index(actx.tx, p["project_id"], since, merge, step)
        left = reclaim_free_pages(actx.tx, step)  # a step's: all at once is one big commit
        if merge or left:
            follow = pack_job(p["project_id"], p["project"], since, merge, reclaim=not merge)
            actx.queue.enqueue_in(actx.tx, [follow])
            continue
        drop_unnamed_dictionaries(actx.tx, p["project_id"])
        actx.queue.enqueue_in(actx.tx, [sizes_job(p["project_id"], p["project"])])


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
    JobKind(
        PACK,
        _run_pack,
        _apply_pack,
        doc="compress a project's body blocks again",
        at_start=stranded_packs,
    ),
]
