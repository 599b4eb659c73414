"""Archive operations, each run by the archive's owner (:class:`ArchiveOwner`).

Every operation takes the owner and a JSON-able argument dict and returns a
JSON-able dict. :func:`run_op` turns a user-facing error into an answer
(``{"ok": false, "error": CODE, ...}``) so a rejected request is an outcome,
not a job to retry; an archive held by another process (``ArchiveBusy``)
still raises, so the job is retried once the holder lets go.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.transcripts import doc_id
from memoryd.errors import MemorydError, UsageError
from memoryd.retention.boundary import Migration
from memoryd.storage.archive import CLASSES as ARCHIVE_CLASSES
from memoryd.storage.archive import ArchiveBusy, LeaseRejected, NewVersion

Op = Callable[[ArchiveOwner, dict], dict]


def _now(args: dict) -> float:
    return float(args["now"]) if args.get("now") is not None else time.time()


def add(owner: ArchiveOwner, a: dict) -> dict:
    """Store one transcript: the session document first, then its tool outputs."""
    project, session, created_at = a["project"], a["session"], float(a["created_at"])
    cls = a.get("class") or "conversation"
    if cls not in ARCHIVE_CLASSES:
        raise UsageError(f"unknown class {cls!r}; one of {', '.join(ARCHIVE_CLASSES)}")
    policy = owner.policy
    session_doc = doc_id("s", project, session)
    items = [
        NewVersion(
            project, cls, a["content"], created_at, policy.expires_at(cls, created_at),
            session_doc, session, {"turns": a["turns"]}, _request_id(project, session_doc, a),
        )
    ]  # fmt: skip
    for i, tool in enumerate(a.get("tools", [])):
        tool_doc = doc_id("t", project, f"{session}#{i}")
        stamp = float(tool["timestamp"] or created_at)
        items.append(
            NewVersion(
                project, "ephemeral", tool["content"], stamp,
                policy.expires_at("ephemeral", stamp), tool_doc, session,
                {"session_doc": session_doc}, _request_id(project, tool_doc, tool),
            )
        )  # fmt: skip
    results = owner.store.append_many(items, now=_now(a))
    return _add_answer(owner, [r.locator for r in results], [r.created for r in results])


def _add_answer(owner: ArchiveOwner, locators: list[str], created: list[bool]) -> dict:
    """Each locator with whether this request created it and its status now: a redone
    add of expired content answers "expired" (its request record outlives the purge)."""
    status = [owner.store.version_info(loc).status for loc in locators]
    return {"locators": locators, "created": created, "status": status}


def _request_id(project: str, doc: str, body: dict) -> str:
    """The same content for the same document is the same request: appends are idempotent."""
    h = hashlib.blake2b(digest_size=12)
    for part in (project, doc, body.get("content", ""), str(body.get("created_at", ""))):
        h.update(part.encode() + b"\0")
    return "r-" + h.hexdigest()


def get(owner: ArchiveOwner, a: dict) -> dict:
    return owner.store.get(a["locator"])


def pin(owner: ArchiveOwner, a: dict) -> dict:
    return owner.store.pin(a["locator"], now=_now(a), note=a.get("note"))


def unpin(owner: ArchiveOwner, a: dict) -> dict:
    return {"unpinned": owner.store.unpin(a["locator"])}


def lease(owner: ArchiveOwner, a: dict) -> dict:
    store, action, client = owner.store, a["action"], a["client"]
    ttl = float(a.get("ttl") or owner.config.retention_active_lease_seconds)
    if action == "acquire":
        try:
            grant = store.acquire_leases(client, a["project"], a["locators"], ttl=ttl, now=_now(a))
        except LeaseRejected as exc:
            exc.details = {"rejected": exc.rejected}
            raise
        return {"client": grant.client, "epoch": grant.epoch, "expires_at": grant.expires_at,
                "locators": list(grant.locators)}  # fmt: skip
    if action == "renew":
        return {"client": client, **store.renew_leases(client, ttl=ttl, now=_now(a))}
    if action == "release":
        return {"client": client, "released": store.release_leases(client, a.get("locators"))}
    raise UsageError(f"unknown lease action {action!r}")


def search(owner: ArchiveOwner, a: dict) -> dict:
    from memoryd.archive.search import search_archive

    return search_archive(owner, a["project"], a["query"], int(a.get("limit") or 10), _now(a))


def retention_run(owner: ArchiveOwner, a: dict) -> dict:
    return owner.maintenance.tick(now=_now(a), force=bool(a.get("force"))).as_dict()


def retention_status(owner: ArchiveOwner, a: dict) -> dict:
    return owner.maintenance.status(now=_now(a))


def migrate(owner: ArchiveOwner, a: dict) -> dict:
    """A migration step runs on the closed archive, then the owner reopens it."""
    migration = Migration(owner.path)
    step = a.get("step", "status")
    if step == "status":
        return migration.state()
    steps = {
        "copy": lambda: migration.copy(int(a.get("format") or 2)),
        "verify": migration.verify,
        "commit": migration.commit,
        "rollback": migration.rollback,
    }
    if step not in steps:
        raise UsageError(f"unknown migration step {step!r}; one of status, {', '.join(steps)}")
    with owner.closed():
        return steps[step]()


OPS: dict[str, Op] = {
    "add": add,
    "get": get,
    "pin": pin,
    "unpin": unpin,
    "lease": lease,
    "search": search,
    "retention_run": retention_run,
    "retention_status": retention_status,
    "migrate": migrate,
}


def run_op(owner: ArchiveOwner, op: str, args: dict) -> dict:
    """Run one operation; a user-facing error becomes an answer, not an exception."""
    if op not in OPS:
        return _error(UsageError(f"unknown archive operation {op!r}"))
    try:
        return {"ok": True, "result": OPS[op](owner, args)}
    except ArchiveBusy:
        raise  # another process holds the archive: retry the job later
    except MemorydError as exc:
        return _error(exc)


def _error(exc: MemorydError) -> dict:
    return {
        "ok": False,
        "error": exc.code,
        "message": str(exc),
        "retryable": exc.retryable,
        "exit_code": exc.exit_code,
        "details": getattr(exc, "details", None),
    }


class ArchiveOpError(MemorydError):
    """An archive operation's error, carried back from the archive's owner."""

    def __init__(self, answer: dict) -> None:
        super().__init__(answer["message"])
        self.code = answer["error"]
        self.retryable = answer["retryable"]
        self.exit_code = answer["exit_code"]
        self.details = answer.get("details")


def unwrap(answer: dict) -> Any:
    if not answer["ok"]:
        raise ArchiveOpError(answer)
    return answer["result"]
