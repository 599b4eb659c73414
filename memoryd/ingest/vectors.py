"""The ``vectors.encode`` job kind: chunk codes off the ingest's critical path.

Ingest batches commit their files and chunks without codes; the commit that
finishes the run (searchable) enqueues ``vectors.encode`` jobs for the
project's files still without codes (:func:`follow_up`), at the lowest
priority: encoding never competes with the run it follows, and a later run's
scan, batches and finalize are claimed before it. The job's worker reads the
chunks' texts from the authority and encodes them with the configured encoder,
loaded once per worker process; its apply writes the codes in the supervisor's
group commit (:func:`memoryd.storage.vectors.put`). A SIGKILL while encoding
loses nothing: the job is claimed again and its codes, written by file id and
content hash, are the same. Search skips files without codes until then.

Memory records get their codes by the same job kind with ``"source": "records"``
in its payload (:mod:`memoryd.storage.record_vectors`): the commit that applies a
consolidation run enqueues one (:func:`records_follow_up`) for the project's
active records without a code, so consolidation never waits for an encoder.
"""

from __future__ import annotations

import hashlib
from typing import Any

import apsw
import orjson

from memoryd.queue import ClaimedJob, JobSpec
from memoryd.storage import record_vectors, vectors
from memoryd.text.dense import encoder_name, job_bytes
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

ENCODE = "vectors.encode"
PRIORITY = -2  # below every ingest job (finalize is -1): codes come after searchability


def follow_up(tx: apsw.Connection, config, pid: int, project: str) -> list[JobSpec]:
    """The vectors jobs of a finished ingest run: the project's live files with chunks
    and no codes, in jobs of about ``vectors_job_bytes`` of source each, less for a
    slow encoder (:func:`memoryd.text.dense.job_bytes`; none when no encoder stores
    codes)."""
    if not vectors.stores(config):
        return []
    groups = _groups(vectors.uncoded(tx, pid), job_bytes(config.encoder, config.vectors_job_bytes))
    return [_job(pid, project, vectors.job_payload(pid, group)) for group in groups]


def records_follow_up(tx: apsw.Connection, config, pid: int, project: str) -> list[JobSpec]:
    """The vectors jobs of an applied consolidation run: the project's active records
    without a code, ``JOB_RECORDS`` a job (none when no encoder stores codes, or the
    stored codes are another encoder's: search refuses those until a rebuild)."""
    if not vectors.stores(config) or vectors.stored_encoder(tx) not in (
        None,
        encoder_name(config.encoder),
    ):
        return []
    recs = record_vectors.uncoded(tx, pid)
    step = record_vectors.JOB_RECORDS
    return [
        _job(pid, project, record_vectors.job_payload(pid, recs[i : i + step]))
        for i in range(0, len(recs), step)
    ]


def _job(pid: int, project: str, payload: dict) -> JobSpec:
    """One job. Its dedupe key keeps one live job per set of files or records: a run
    that finishes while an earlier run's jobs for the same ones still wait adds none."""
    digest = hashlib.sha256(orjson.dumps(payload)).hexdigest()[:32]
    key = f"{ENCODE}:{pid}:{digest}"
    return JobSpec(ENCODE, payload, project=project, priority=PRIORITY, dedupe_key=key)


def _groups(files: list[tuple[str, bytes, int]], budget: int) -> list[list[tuple[str, bytes]]]:
    """(path, content hash) groups of about ``budget`` bytes, in order."""
    groups: list[list[tuple[str, bytes]]] = []
    size = budget
    for path, content_hash, nbytes in files:
        if size >= budget:
            groups.append([])
            size = 0
        groups[-1].append((path, content_hash))
        size += nbytes
    return groups


def _store(payload: dict):
    """The module that codes the payload's source (chunks unless it says records)."""
    return record_vectors if payload.get("source") == record_vectors.SOURCE else vectors


def _run(ctx: WorkContext, payload: Any) -> dict | None:
    return _store(payload).encode_job(ctx.authority(), ctx.config, payload)


def _apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, encoded in done:
        p = job.data
        _store(p).put(actx.tx, p["project_id"], actx.config, encoded)
        actx.queue.settle_payload_in(actx.tx, job, p, ["files", "records"])  # the codes say it


KINDS = [
    JobKind(ENCODE, _run, _apply, doc="encode committed chunks or memory records, store codes")
]
