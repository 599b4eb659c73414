"""The ``vectors.encode`` job kind: chunk codes off the ingest's critical path (issue 15).

An ingest batch commits its files and chunks without codes; its apply enqueues
one ``vectors.encode`` job for them (:func:`follow_up`) at the lowest priority,
so every queued scan, batch and finalize is claimed before it and the run is
searchable (lexically) as soon as it would be without the route. The job's
worker reads the chunks' texts from the authority and encodes them with the
configured encoder, loaded once per worker process; its apply writes the codes
in the supervisor's group commit (:func:`memoryd.storage.vectors.put`). A
SIGKILL while encoding loses nothing: the job is claimed again and its codes,
written by file id and content hash, are the same. Search skips files without
codes until then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.queue import ClaimedJob, JobSpec
from memoryd.storage import vectors
from memoryd.storage.corpus import FileRows
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

ENCODE = "vectors.encode"
PRIORITY = -2  # below every ingest job (finalize is -1): codes come after searchability


def follow_up(config, pid: int, project: str, files: Sequence[FileRows]) -> list[JobSpec]:
    """The vectors job of a committed batch's files (none when no encoder stores codes)."""
    if not vectors.stores(config) or not files:
        return []
    return [JobSpec(ENCODE, vectors.job_payload(pid, files), project=project, priority=PRIORITY)]


def _run(ctx: WorkContext, payload: Any) -> dict | None:
    return vectors.encode_job(ctx.authority(), ctx.config, payload)


def _apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, encoded in done:
        vectors.put(actx.tx, job.data["project_id"], actx.config, encoded)


KINDS = [JobKind(ENCODE, _run, _apply, doc="encode committed chunks, store their codes")]
