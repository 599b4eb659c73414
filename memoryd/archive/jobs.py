"""The ``archive.op`` job kind: one archive operation, run by the retention worker.

The worker keeps the archive open as its own resource for its lifetime (it is
the only process that opens ``archive/`` read-write while a supervisor runs),
applies the operation in one WriteBatch and sends the answer back; the
supervisor stores it with the job's completion and the waiting caller takes it
(clearing it). Operations are idempotent (appends carry request ids, kept after
a purge), so a crash between the two redoes harmlessly. An add's transcript
comes as a spool file (:mod:`memoryd.archive.spool`), never in the payload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.base.config import ARCHIVE_DIR, Config
from memoryd.base.errors import BadPayload
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.workers.contract import (
    ApplyContext,
    JobKind,
    Periodic,
    WorkContext,
)

ARCHIVE_OP = "archive.op"
RETENTION_POOL = "retention"


# The archive (RocksDB) is imported only where it is opened: the supervisor and
# the job workers know this kind but never touch the archive.


def _validate(payload: Any) -> None:
    from memoryd.archive.ops import OPS

    if not isinstance(payload, dict) or payload.get("op") not in OPS:
        raise BadPayload(f'archive.op needs {{"op": one of {sorted(OPS)}, "args": {{...}}}}')


def _run(ctx: WorkContext, payload: dict) -> dict:
    from memoryd.archive.ops import run_op
    from memoryd.archive.owner import ArchiveOwner

    owner = ctx.resource("archive", lambda: ArchiveOwner(ctx.home, ctx.config))
    return run_op(owner, payload["op"], payload.get("args") or {})


def _apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, answer in done:
        actx.queue.set_result_in(actx.tx, job, answer)


def _tick(home: Path, config: Config) -> JobSpec | None:
    """The retention maintenance tick, once the archive exists."""
    if not (home / ARCHIVE_DIR).exists():
        return None
    return JobSpec(ARCHIVE_OP, {"op": "retention_run", "args": {}}, dedupe_key="retention.tick")


PERIODIC = [Periodic("retention.tick", "retention_tick_seconds", _tick)]
KINDS = [
    JobKind(
        ARCHIVE_OP,
        _run,
        _apply,
        validate=_validate,
        doc="one archive operation (append, pin, lease, search, retention tick, ...)",
        pool=RETENTION_POOL,
    )
]
