"""Built-in job kinds for drills, tests and benchmarks.

- ``noop``: writes one effect row carrying its job id and its attempt (the lease
  token it ran under, its result).
- ``sleep``: payload ``{"seconds": float}``; sleeps, then writes one effect row, as
  ``noop`` does.
- ``fail``: payload ``{"message": str, "retryable": bool}``; always raises, to exercise
  retry and dead-lettering; a retryable failure (``DRILL_BUSY``) is waited for instead.
- ``echo``: returns its payload as its result (big payloads and results cross the
  pipes both ways) and writes one effect row; a payload ``{"fail_apply": str}`` makes
  its apply raise, to show one job's failed apply is that job's alone.
- ``poison``: its apply SIGKILLs the supervisor, to show a job that kills its
  supervisor is dead-lettered after ``supervisor_death_cap`` deaths.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from memoryd.base import faults
from memoryd.base.errors import BadPayload, MemorydError
from memoryd.queue import ClaimedJob
from memoryd.storage.effects import record_effects
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext


def _effects(kind: str, *, attempts: bool = True):
    """The apply writing one effect row per job; with ``attempts``, each row keeps the
    job's result: the lease token of the attempt that produced it."""

    def apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
        ids = [job.id for job, _ in done]
        tokens = [out for _, out in done] if attempts else ()
        record_effects(actx.tx, ids, kind, tokens)
        if faults.active("double_effect"):
            record_effects(actx.tx, ids, kind, tokens)

    return apply


def attempt_result(job: ClaimedJob | None) -> str | None:
    """What a ``noop`` or ``sleep`` returns: the lease token of the attempt that ran it.
    Its effect row keeps it, so the drill tells which attempt's result was applied."""
    return job.token if job else None


def _noop(ctx: WorkContext, payload: Any) -> str | None:
    return attempt_result(ctx.job)


def _validate_sleep(payload: Any) -> None:
    seconds = payload.get("seconds") if isinstance(payload, dict) else None
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise BadPayload('sleep needs a payload like {"seconds": 1.5}')


def _sleep(ctx: WorkContext, payload: Any) -> str | None:
    _validate_sleep(payload)
    time.sleep(float(payload["seconds"]))
    return attempt_result(ctx.job)


class DrillFailure(RuntimeError):
    """Raised on purpose by the ``fail`` job kind."""


class DrillBusy(MemorydError):
    """Raised on purpose by a retryable ``fail`` job: a condition to wait out."""

    code = "DRILL_BUSY"
    retryable = True


def _fail(ctx: WorkContext, payload: Any) -> None:
    payload = payload if isinstance(payload, dict) else {}
    message = payload.get("message") or "the fail job always raises"
    if payload.get("retryable"):
        raise DrillBusy(f"{message} (a retryable drill condition: the job waits, uncharged)")
    raise DrillFailure(message)


def _echo(ctx: WorkContext, payload: Any) -> Any:
    return payload


def _apply_echo(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    for job, value in done:
        if isinstance(value, dict) and "fail_apply" in value:
            raise DrillFailure(f"job {job.id}: {value['fail_apply']}")
    _effects("echo", attempts=False)(actx, done)


def _apply_poison(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


KINDS = [
    JobKind("noop", _noop, _effects("noop"), doc="does nothing; writes one effect row"),
    JobKind(
        "sleep",
        _sleep,
        _effects("sleep"),
        validate=_validate_sleep,
        doc='sleeps {"seconds": s}, then writes one effect row',
    ),
    JobKind("fail", _fail, doc="always raises (retry and dead-letter drills)"),
    JobKind("echo", _echo, _apply_echo, doc="returns its payload; writes one effect row"),
    JobKind("poison", _noop, _apply_poison, doc="its apply SIGKILLs the supervisor (drills)"),
]
