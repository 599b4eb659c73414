"""Built-in job kinds for drills, tests and benchmarks.

- ``noop``: writes one effect row carrying its job id.
- ``sleep``: payload ``{"seconds": float}``; sleeps, then writes one effect row.
- ``fail``: payload ``{"message": str}``; always raises, to exercise retry and dead-lettering.
"""

from __future__ import annotations

import time
from typing import Any

from memoryd import faults
from memoryd.errors import BadPayload
from memoryd.queue import ClaimedJob
from memoryd.storage.effects import record_effects
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext, register


def _effects(kind: str):
    def apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
        record_effects(actx.tx, (job.id for job, _ in done), kind)
        if faults.active("double_effect"):
            record_effects(actx.tx, (job.id for job, _ in done), kind)

    return apply


def _noop(ctx: WorkContext, payload: Any) -> None:
    return None


def _validate_sleep(payload: Any) -> None:
    seconds = payload.get("seconds") if isinstance(payload, dict) else None
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise BadPayload('sleep needs a payload like {"seconds": 1.5}')


def _sleep(ctx: WorkContext, payload: Any) -> None:
    _validate_sleep(payload)
    time.sleep(float(payload["seconds"]))


class DrillFailure(RuntimeError):
    """Raised on purpose by the ``fail`` job kind."""


def _fail(ctx: WorkContext, payload: Any) -> None:
    message = payload.get("message") if isinstance(payload, dict) else None
    raise DrillFailure(message or "the fail job always raises")


register(JobKind("noop", _noop, _effects("noop"), doc="does nothing; writes one effect row"))
register(
    JobKind(
        "sleep",
        _sleep,
        _effects("sleep"),
        validate=_validate_sleep,
        doc='sleeps {"seconds": s}, then writes one effect row',
    )
)
register(JobKind("fail", _fail, doc="always raises (retry and dead-letter drills)"))
