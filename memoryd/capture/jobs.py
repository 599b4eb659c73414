"""The ``capture.drain`` kind: the hook spool into the archive, run by the retention
worker (the archive's one owner, as for ``archive.op``).

A running supervisor enqueues a drain every ``hook_drain_seconds`` while the spool
holds events (a directory listing when it is empty); any supervisor enqueues one as
it starts when events wait (a draining supervisor a hook started, or the daemon
after a crash). A drain that stops at its time budget with events left enqueues
the next one in its apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from memoryd.base import hooklog
from memoryd.base.config import Config
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.workers.contract import ApplyContext, JobKind, Periodic, WorkContext

CAPTURE_DRAIN = "capture.drain"
DEDUPE_KEY = "capture.drain"
MORE_KEY = "capture.drain.more"
RETENTION_POOL = "retention"  # the archive owner's pool (memoryd.archive.jobs)


def _waiting(home: Path) -> bool:
    return hooklog.waiting(str(home)) or bool(_pending_batches(home))


def _pending_batches(home: Path) -> list[str]:
    from memoryd.capture.drain import pending_batches

    return pending_batches(str(home))


def _spec() -> JobSpec:
    return JobSpec(CAPTURE_DRAIN, {}, dedupe_key=DEDUPE_KEY)


def _tick(home: Path, config: Config) -> JobSpec | None:
    return _spec() if _waiting(home) else None


def _at_start(home: Path, config: Config, conn: apsw.Connection) -> list[JobSpec]:
    return [_spec()] if _waiting(home) else []


def _run(ctx: WorkContext, payload: dict) -> dict:
    from memoryd.archive.owner import ArchiveOwner
    from memoryd.capture.drain import drain
    from memoryd.storage import projects

    owner = ctx.resource("archive", lambda: ArchiveOwner(ctx.home, ctx.config))
    roots: dict[str, str] = {}

    def known_roots() -> dict[str, str]:
        if not roots:
            roots.update({p["project"]: p["root"] for p in projects.listing(ctx.authority())})
        return roots

    return drain(
        str(ctx.home), owner.store, owner.policy, known_roots, ctx.config.hook_drain_budget_seconds
    )


def _apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    """A drain that left events (its budget spent) queues the next; its own dedupe key,
    since the finishing job still holds the first one."""
    if any(result.get("more") for _, result in done):
        actx.queue.enqueue_in(actx.tx, [JobSpec(CAPTURE_DRAIN, {}, dedupe_key=MORE_KEY)])


PERIODIC = [Periodic("capture.drain", "hook_drain_seconds", _tick)]
KINDS = [
    JobKind(
        CAPTURE_DRAIN,
        _run,
        _apply,
        doc="archive the events agents' hooks spooled (one document per session per batch)",
        pool=RETENTION_POOL,
        at_start=_at_start,
    )
]
