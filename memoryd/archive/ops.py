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

from memoryd import killpoints
from memoryd.archive import spool
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.transcripts import doc_id
from memoryd.errors import FutureNow, MemorydError, SpoolMissing, UsageError
from memoryd.retention.boundary import Migration
from memoryd.retention.waves import preview, purge_all
from memoryd.storage.archive import CLASSES as ARCHIVE_CLASSES
from memoryd.storage.archive import (
    ArchiveBusy,
    ArchiveStore,
    LeaseGrant,
    LeaseRejected,
    LocatorNotFound,
    NewVersion,
)
from memoryd.times import utc_iso

Op = Callable[[ArchiveOwner, dict], dict]

#: Crash points of this module (``MEMORYD_KILL_AT``): a spooled add is durable, its
#: spool file still there; the file is gone, the answer not yet committed.
KILL_POINTS = ("archive_add_applied", "archive_add_unspooled")

#: A retention ``now`` this far past the wall clock is still "now" (clock skew).
FUTURE_SLACK_SECONDS = 60.0


def _now(args: dict) -> float:
    return float(args["now"]) if args.get("now") is not None else time.time()


def add(owner: ArchiveOwner, a: dict) -> dict:
    """Store one transcript: the session document first, then its tool outputs.

    Through a supervisor the arguments come as a spool reference (see
    :mod:`memoryd.archive.spool`): read, applied, then the file is deleted.
    """
    if "spool" not in a:
        return _add(owner, a)
    args = spool.load(owner.home, a)
    if args is None:  # applied before (the file goes only once the append is durable)
        return _answer_from_requests(owner, a)
    answer = _add(owner, {**args, "now": a.get("now")})
    killpoints.reach("archive_add_applied")
    spool.remove(owner.home, a["spool"])
    killpoints.reach("archive_add_unspooled")
    return answer


def _add(owner: ArchiveOwner, a: dict) -> dict:
    cls = a.get("class") or "conversation"
    if cls not in ARCHIVE_CLASSES:
        raise UsageError(f"unknown class {cls!r}; one of {', '.join(ARCHIVE_CLASSES)}")
    project, session, created_at = a["project"], a["session"], float(a["created_at"])
    policy = owner.policy
    (session_doc, session_rid), *tool_docs = _documents(a)
    items = [
        NewVersion(
            project, cls, a["content"], created_at, policy.expires_at(cls, created_at),
            session_doc, session, {"turns": a["turns"]}, session_rid, tuple(a.get("sources") or ()),
        )
    ]  # fmt: skip
    for tool, (tool_doc, rid) in zip(a.get("tools", []), tool_docs, strict=True):
        stamp = float(tool["timestamp"] or created_at)
        items.append(
            NewVersion(
                project, "ephemeral", tool["content"], stamp,
                policy.expires_at("ephemeral", stamp), tool_doc, session,
                {"session_doc": session_doc}, rid,
            )
        )  # fmt: skip
    results = owner.store.append_many(items, now=_now(a))
    return _add_answer(owner, [r.locator for r in results], [r.created for r in results])


def _documents(a: dict) -> list[tuple[str, str]]:
    """(document id, request id) of the session and of each tool output, in order."""
    project, session = a["project"], a["session"]
    session_doc = doc_id("s", project, session)
    docs = [(session_doc, _request_id(project, session_doc, a))]
    for i, tool in enumerate(a.get("tools", [])):
        tool_doc = doc_id("t", project, f"{session}#{i}")
        docs.append((tool_doc, _request_id(project, tool_doc, tool)))
    return docs


def request_ids(a: dict) -> list[str]:
    """The request ids an add of ``a`` applies (carried by a spooled add's job)."""
    return [rid for _, rid in _documents(a)]


def _answer_from_requests(owner: ArchiveOwner, ref: dict) -> dict:
    locators = [owner.store.request_locator(rid) for rid in ref["requests"]]
    if None in locators:
        raise SpoolMissing(
            f"spool file {ref['spool']} is gone and the transcript was never archived "
            "(an orphan cleaned by the maintenance tick?); add it again"
        )
    return _add_answer(owner, locators, [False] * len(locators))


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


def renew(owner: ArchiveOwner, a: dict) -> dict:
    """A new explicit deadline for a live version: ``days`` from now, or ``until``
    (epoch seconds), or never (neither)."""
    days, until = a.get("days"), a.get("until")
    if days is not None and until is not None:
        raise UsageError("renew takes --days or --until, not both")
    expires = _now(a) + float(days) * 86400 if days is not None else until
    generation = owner.store.renew(a["locator"], expires)
    return {"locator": a["locator"], "expires_at": utc_iso(expires), "generation": generation}


def promote(owner: ArchiveOwner, a: dict) -> dict:
    """A derived document becomes ``class`` (default durable) with that class's age
    counted from its creation; it no longer follows its sources."""
    cls = a.get("class") or "durable"
    info = owner.store.version_info(a["locator"])
    expires = owner.policy.expires_at(cls, info.created_at)
    owner.store.promote(a["locator"], cls, expires)
    return {"locator": a["locator"], "class": cls, "expires_at": utc_iso(expires)}


def pin(owner: ArchiveOwner, a: dict) -> dict:
    return owner.store.pin(a["locator"], now=_now(a), note=a.get("note"))


def unpin(owner: ArchiveOwner, a: dict) -> dict:
    return {"unpinned": owner.store.unpin(a["locator"])}


def lease(owner: ArchiveOwner, a: dict) -> dict:
    store, action, client = owner.store, a["action"], a["client"]
    ttl = float(a.get("ttl") or owner.config.retention_active_lease_seconds)
    if action == "acquire":
        try:
            grant = store.acquire_leases(
                client,
                a["project"],
                a.get("locators") or [],
                ttl=ttl,
                now=_now(a),
                sessions=a.get("sessions") or (),
            )
        except LeaseRejected as exc:
            exc.details = {"rejected": exc.rejected}
            raise
        return {
            **_grant(grant),
            "locators": list(grant.locators),
            "sessions": list(grant.sessions),
            "unprotected": list(grant.unprotected),
        }
    if action == "renew":
        return _grant(store.renew_leases(client, ttl=ttl, now=_now(a)))
    if action == "release":
        return {"client": client, "released": store.release_leases(client, a.get("locators"))}
    raise UsageError(f"unknown lease action {action!r}")


def _grant(grant: LeaseGrant) -> dict:
    return {"client": grant.client, "epoch": grant.epoch, "expires_at": utc_iso(grant.expires_at)}


def search(owner: ArchiveOwner, a: dict) -> dict:
    from memoryd.archive.search import search_archive

    if isinstance(a.get("query"), str) and not a["query"].strip():
        raise UsageError("empty query: say what the evidence should contain")
    found = search_archive(owner, a["project"], a["query"], int(a.get("limit") or 10), _now(a))
    return narrowed(found, a.get("min_score"))


def narrowed(found: dict, min_score: float | None) -> dict:
    """``found`` without the items scoring below ``min_score`` (None: as it is); when
    none is left, an abstention that says why. Never adds an item."""
    if min_score is None or found["status"] != "ok":
        return found
    items = [item for item in found["items"] if item["score"] >= min_score]
    if items:
        return {**found, "items": items}
    gap = f"evidence was found but none reached the requested min_score {min_score:g}"
    return {**found, "status": "abstained", "items": [], "gap": gap}


def forget(owner: ArchiveOwner, a: dict) -> dict:
    """Remove a document (``locator``) or a whole session now, as retention would:
    tombstone, purge, then a full compaction so no file of the archive keeps it.

    Pins and leases do not stop it (the user's right to delete); a migration in
    progress does (its copy would keep the content): finish or roll it back first.
    """
    store = owner.store
    docs = _forget_targets(store, a)
    with owner.boundary.retention_wave():
        retired = store.forget(docs, now=_now(a))
        versions, keys = purge_all(store, owner.maintenance.bounds.purge_batch_keys)
    compaction = owner.maintenance.compact()
    return {"documents": docs, "forgotten": retired, "purged_versions": versions,
            "keys_deleted": keys, "compaction": compaction}  # fmt: skip


def _forget_targets(store: ArchiveStore, a: dict) -> list[str]:
    if a.get("locator"):
        info = store.version_info(a["locator"])
        return [info.doc_id]
    project, session = a.get("project"), a.get("session")
    if not (project and session):
        raise UsageError("forget needs a locator, or a session with its project")
    docs = store.session_documents(project, session)
    if not docs:
        raise LocatorNotFound(f"no archived session {session!r} in project {project!r}")
    return docs


def access(owner: ArchiveOwner, a: dict) -> dict:
    """Coarse access records for versions a recall showed (one per document per bucket;
    never extends a deadline)."""
    bucket = int(owner.config.retention_access_bucket_seconds)
    n = owner.store.record_access(a["locators"], now=_now(a), bucket_seconds=bucket)
    return {"recorded": n}


def retrieval_lease(owner: ArchiveOwner, a: dict) -> dict:
    """A search's short lease on what it returned, when the search ran elsewhere (the
    control socket reads a secondary instance)."""
    taken = owner.store.take_retrieval_leases(
        a["locators"], seconds=float(a["seconds"]), now=_now(a)
    )
    return {"leased": taken}


def retention_run(owner: ArchiveOwner, a: dict) -> dict:
    """A maintenance tick, then orphaned spool files (by the wall clock, never ``now``).

    ``dry_run``: what would expire at ``now`` (any time: nothing changes), by class
    and project.
    """
    now = _now(a)
    if a.get("dry_run"):
        return {"now": now, "dry_run": True, **preview(owner.store, owner.policy, now=now)}
    _refuse_future(now, a)
    with owner.maintenance.overridden(a.get("thresholds") or {}):
        report = owner.maintenance.tick(now=now, force=bool(a.get("force"))).as_dict()
    keep = float(owner.config.archive_spool_keep_seconds)
    return {**report, "spool_orphans_removed": spool.purge_orphans(owner.home, keep)}


def _refuse_future(now: float, a: dict) -> None:
    """A pass at a time past the wall clock only with ``allow_future_now``."""
    if now > time.time() + FUTURE_SLACK_SECONDS and not a.get("allow_future_now"):
        raise FutureNow(
            f"--now {utc_iso(now)} is in the future: a pass then expires versions whose "
            "deadlines, leases and pins have not lapsed yet, deleting live data. Leave "
            "--now out (or see what would expire with --dry-run); --allow-future-now is "
            "for scratch homes and drills only"
        )


def retention_compact(owner: ArchiveOwner, a: dict) -> dict:
    """Compact the ranges that held expired content now (all projects, or one),
    under the shared boundary like a wave; reports SST bytes before and after."""
    project = a.get("project")
    if project is not None and project not in owner.store.projects():
        raise UsageError(f"the archive holds no project {project!r}")
    with owner.boundary.retention_wave():
        r = owner.maintenance.compact(project=project, full=False)
    return {
        "project": project,
        "sst_before_bytes": r["sst_bytes_before"],
        "sst_after_bytes": r["sst_bytes_after"],
        "reclaimed_bytes": r["reclaimed_bytes"],
    }


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
    "renew": renew,
    "promote": promote,
    "unpin": unpin,
    "lease": lease,
    "search": search,
    "forget": forget,
    "retention_run": retention_run,
    "retention_status": retention_status,
    "retention_compact": retention_compact,
    "migrate": migrate,
    "access": access,
    "retrieval_lease": retrieval_lease,
    "vectors_rebuild": lambda owner, a: {"versions": owner.store.rebuild_vectors()},
    "vectors_verify": lambda owner, a: owner.store.verify_vectors(),
}


def run_op(owner: ArchiveOwner, op: str, args: dict) -> dict:
    """Run one operation; a user-facing error becomes an answer, not an exception."""
    if op not in OPS:
        return error_answer(UsageError(f"unknown archive operation {op!r}"))
    try:
        return {"ok": True, "result": OPS[op](owner, args)}
    except ArchiveBusy:
        raise  # another process holds the archive: retry the job later
    except MemorydError as exc:
        return error_answer(exc)


def error_answer(exc: MemorydError) -> dict:
    return {
        "ok": False,
        "error": exc.code,
        "message": str(exc),
        "retryable": exc.retryable,
        "exit_code": exc.exit_code,
        "details": getattr(exc, "details", None),
    }
