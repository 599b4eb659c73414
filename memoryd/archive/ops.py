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

from memoryd.archive import spool
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.transcripts import doc_id
from memoryd.base import killpoints
from memoryd.base.errors import (
    FutureNow,
    MemorydError,
    PastClassAge,
    SpoolMissing,
    UsageError,
    corruption,
    error_answer,
    is_corruption,
)
from memoryd.base.times import utc_iso
from memoryd.retention import clockguard
from memoryd.retention.boundary import Migration
from memoryd.retention.maintenance import TickReport
from memoryd.retention.policy import RetentionPolicy
from memoryd.retention.waves import preview, purge_all
from memoryd.storage.archive import CLASSES as ARCHIVE_CLASSES
from memoryd.storage.archive import (
    WRITABLE_CLASSES,
    ArchiveBusy,
    ArchiveStore,
    LeaseGrant,
    LeaseRejected,
    LocatorNotFound,
    NewVersion,
    VersionInfo,
)
from memoryd.storage.corpus import UnknownProject, unknown_project_message

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
    try:
        answer = _add(owner, {**args, "now": a.get("now")})
    except (UsageError, UnknownProject):
        spool.remove(owner.home, a["spool"])  # refused: nothing to redo
        raise
    killpoints.reach("archive_add_applied")
    spool.remove(owner.home, a["spool"])
    killpoints.reach("archive_add_unspooled")
    return answer


def _add(owner: ArchiveOwner, a: dict) -> dict:
    """``imported``: history, each document's class age counted from now (the import)
    instead of its creation; without it, a document past its class age is refused,
    unless ``allow_expired`` (drills, tests: stored already due)."""
    cls = _writable(a.get("class") or "conversation")
    project, session, created_at = a["project"], a["session"], float(a["created_at"])
    _require_project(owner, project, a.get("known_projects"))
    now = _now(a)
    aged = now if a.get("imported") else None
    policy = owner.policy
    (session_doc, session_rid), *tool_docs = _documents(a)
    items = [
        NewVersion(
            project, cls, a["content"], created_at, _deadline(policy, cls, created_at, aged),
            session_doc, session, {"turns": a["turns"]}, session_rid, tuple(a.get("sources") or ()),
            aged,
        )
    ]  # fmt: skip
    for tool, (tool_doc, rid) in zip(a.get("tools", []), tool_docs, strict=True):
        stamp = float(tool["timestamp"] or created_at)
        items.append(
            NewVersion(
                project, "ephemeral", tool["content"], stamp,
                _deadline(policy, "ephemeral", stamp, aged), tool_doc, session,
                {"session_doc": session_doc}, rid, aged_from=aged,
            )
        )  # fmt: skip
    if not a.get("allow_expired"):
        _refuse_past_age(owner, items, now)
    results = owner.store.ledgers.append_many(items, now=now)
    return _add_answer(owner, [r.locator for r in results], [r.created for r in results])


def _require_project(owner: ArchiveOwner, project: str, known: list[str] | None) -> None:
    """An add from a user names a project that exists: ``known`` (the ingested ones, sent
    unless the user asked for a new project) or one the archive holds already."""
    if known is None:
        return
    archived = owner.store.postings.projects()
    if project not in archived:
        raise UnknownProject(unknown_project_message(project, sorted({*known, *archived})))


def _deadline(
    policy: RetentionPolicy, cls: str, created: float, aged: float | None
) -> float | None:
    """The class age from ``aged`` (imported) or else from ``created``."""
    return policy.expires_at(cls, created if aged is None else aged)


def _refuse_past_age(owner: ArchiveOwner, items: list[NewVersion], now: float) -> None:
    """Refuse (storing nothing) an add whose documents would be expired on arrival: older
    than their class's age, not imported, not added before."""
    late = [
        it for it in items
        if it.aged_from is None and it.expires_at is not None
        and it.expires_at <= now and owner.store.ledgers.request_locator(it.request_id) is None
    ]  # fmt: skip
    if not late:
        return
    ages = owner.policy.ages_days
    docs = [
        {"doc_id": it.doc_id, "class": it.cls, "created_at": utc_iso(it.created_at),
         "class_age_days": ages[it.cls], "would_have_expired_at": utc_iso(it.expires_at)}
        for it in late
    ]  # fmt: skip
    each = "; ".join(
        f"{d['doc_id']} ({d['class']}, created {d['created_at']}) is past its class age of "
        f"{d['class_age_days']:g} days: it would have expired {d['would_have_expired_at']}"
        for d in docs
    )
    exc = PastClassAge(
        f"nothing was stored: {each}; stored, the next retention run would purge "
        f"{'them' if len(docs) > 1 else 'it'}. To keep "
        "imported history, add it again with --imported (API and MCP: imported=true): "
        "its class age then counts from now, its created_at stays for search"
    )
    exc.details = {"now": utc_iso(now), "documents": docs}
    raise exc


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
    locators = [owner.store.ledgers.request_locator(rid) for rid in ref["requests"]]
    if None in locators:
        raise SpoolMissing(
            f"spool file {ref['spool']} is gone and the transcript was never archived "
            "(an orphan cleaned by the maintenance tick?); add it again"
        )
    return _add_answer(owner, locators, [False] * len(locators))


def _add_answer(owner: ArchiveOwner, locators: list[str], created: list[bool]) -> dict:
    """Each locator with whether this request created it, its status and deadline now
    (a redone add of expired content answers "expired": its request record outlives
    the purge) and, imported past its class age, when it would have expired."""
    infos = [owner.store.ledgers.version_info(loc) for loc in locators]
    return {
        "locators": locators,
        "created": created,
        "status": [i.status for i in infos],
        "expires_at": [utc_iso(i.expires_at) for i in infos],
        "would_have_expired_at": [utc_iso(_past_age(owner.policy, i)) for i in infos],
    }


def _past_age(policy: RetentionPolicy, info: VersionInfo) -> float | None:
    """An imported version's deadline by its class age from its creation, when that was
    before the import (None otherwise)."""
    if info.aged_from is None or info.override:
        return None
    deadline = policy.expires_at(info.cls, info.created_at)
    return deadline if deadline is not None and deadline <= info.aged_from else None


def _request_id(project: str, doc: str, body: dict) -> str:
    """The same content for the same document is the same request: appends are idempotent."""
    h = hashlib.blake2b(digest_size=12)
    for part in (project, doc, body.get("content", ""), str(body.get("created_at", ""))):
        h.update(part.encode() + b"\0")
    return "r-" + h.hexdigest()


def get(owner: ArchiveOwner, a: dict) -> dict:
    return owner.store.ledgers.get(a["locator"])


def renew(owner: ArchiveOwner, a: dict) -> dict:
    """A new explicit deadline for a live version: ``days`` from now, or ``until``
    (epoch seconds), or never (neither). A deadline not after now is refused: the next
    retention run would purge the version (``--until 2020`` typed for 2030)."""
    days, until = a.get("days"), a.get("until")
    if days is not None and until is not None:
        raise UsageError("renew takes --days or --until, not both")
    now = _now(a)
    if days is not None and float(days) <= 0:
        raise UsageError(
            f"--days {float(days):g} is not a deadline after now ({utc_iso(now)}): the next "
            f"retention run would purge {a['locator']}; give a number of days above 0, or "
            "neither --days nor --until to keep it for ever"
        )
    expires = now + float(days) * 86400 if days is not None else until
    if expires is not None and float(expires) <= now:
        raise UsageError(
            f"--until {utc_iso(float(expires))} is not after now ({utc_iso(now)}): the next "
            f"retention run would purge {a['locator']}; give a future time, or neither "
            "--days nor --until to keep it for ever"
        )
    generation = owner.store.expiry.renew(a["locator"], expires)
    return {"locator": a["locator"], "expires_at": utc_iso(expires), "generation": generation}


def _writable(cls: str) -> str:
    """``cls`` when a version may be stored in it; else BAD_USAGE naming the classes
    (``active`` is a lease's protection over a class, not a class of its own)."""
    if cls == "active":
        raise UsageError(
            "class 'active' is no class to store in: active evidence is protected while a"
            " lease holds it (memoryd archive lease acquire), and then keeps its own class's"
            f" age; store it as one of {', '.join(WRITABLE_CLASSES)}"
        )
    if cls not in WRITABLE_CLASSES:
        raise UsageError(f"unknown class {cls!r}; one of {', '.join(WRITABLE_CLASSES)}")
    return cls


def promote(owner: ArchiveOwner, a: dict) -> dict:
    """A derived document becomes ``class`` (default durable) with that class's age
    counted from its creation; it no longer follows its sources."""
    cls = _writable(a.get("class") or "durable")
    info = owner.store.ledgers.version_info(a["locator"])
    expires = owner.policy.expires_at(cls, info.age_start)
    owner.store.expiry.promote(a["locator"], cls, expires)
    return {"locator": a["locator"], "class": cls, "expires_at": utc_iso(expires)}


def pin(owner: ArchiveOwner, a: dict) -> dict:
    record = owner.store.protections.pin(a["locator"], now=_now(a), note=a.get("note"))
    return {**record, "pinned_at": utc_iso(record["pinned_at"])}


def unpin(owner: ArchiveOwner, a: dict) -> dict:
    return {"unpinned": owner.store.protections.unpin(a["locator"])}


def lease(owner: ArchiveOwner, a: dict) -> dict:
    store, action, client = owner.store, a["action"], a["client"]
    ttl = float(a.get("ttl") or owner.config.retention_active_lease_seconds)
    if action == "acquire":
        try:
            grant = store.protections.acquire_leases(
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
        return _grant(store.protections.renew_leases(client, ttl=ttl, now=_now(a)))
    if action == "release":
        return {
            "client": client,
            "released": store.protections.release_leases(client, a.get("locators")),
        }
    raise UsageError(f"unknown lease action {action!r}")


def _grant(grant: LeaseGrant) -> dict:
    return {"client": grant.client, "epoch": grant.epoch, "expires_at": utc_iso(grant.expires_at)}


def search(owner: ArchiveOwner, a: dict) -> dict:
    from memoryd.archive.query import search_archive

    if isinstance(a.get("query"), str) and not a["query"].strip():
        raise UsageError("empty query: say what the evidence should contain")
    return search_archive(
        owner, a["project"], a["query"], int(a.get("limit") or 10), _now(a), a.get("min_score"),
        created_after=_created_after(a.get("created_after")), dense=a.get("dense") is not False,
        threshold=a.get("answer_threshold"), known=a.get("known_projects") or (),
    )  # fmt: skip


def _created_after(value: object) -> dict[str, float] | None:
    """A search's window: class -> the oldest creation time (epoch seconds) it may have;
    classes it does not name are not searched (None: every class, any age)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        c in ARCHIVE_CLASSES and isinstance(t, int | float) for c, t in value.items()
    ):
        raise UsageError(
            f"created_after maps classes ({', '.join(ARCHIVE_CLASSES)}) to epoch seconds, "
            f"got {value!r}"
        )
    return {c: float(t) for c, t in value.items()}


def forget(owner: ArchiveOwner, a: dict) -> dict:
    """Remove a document (``locator``) or a whole session now, as retention would:
    tombstone, purge, then a full compaction so no file of the archive keeps it.

    Pins and leases do not stop it (the user's right to delete); a migration in
    progress does (its copy would keep the content): finish or roll it back first.
    """
    store = owner.store
    docs = _forget_targets(store, a)
    with owner.boundary.retention_wave():
        retired = store.ledgers.forget(docs, now=_now(a))
        versions, keys = purge_all(store, owner.maintenance.bounds.purge_batch_keys)
    compaction = owner.maintenance.compact()
    return {"documents": docs, "forgotten": retired, "purged_versions": versions,
            "keys_deleted": keys, "compaction": compaction}  # fmt: skip


def _forget_targets(store: ArchiveStore, a: dict) -> list[str]:
    """The documents a forget removes: a locator's document, with the documents
    linked to it when it is its session's document (the session's tool outputs: what
    one transcript made); or every document of a session."""
    if a.get("locator"):
        info = store.ledgers.version_info(a["locator"])
        if info.session is None or info.doc_id != doc_id("s", info.project, info.session):
            return [info.doc_id]
        linked = store.ledgers.session_documents(info.project, info.session)
        return [info.doc_id, *(d for d in linked if d != info.doc_id)]
    project, session = a.get("project"), a.get("session")
    if not (project and session):
        raise UsageError("forget needs a locator, or a session with its project")
    docs = store.ledgers.session_documents(project, session)
    if not docs:
        raise LocatorNotFound(f"no archived session {session!r} in project {project!r}")
    return docs


def access(owner: ArchiveOwner, a: dict) -> dict:
    """Coarse access records for versions a recall showed (one per document per bucket;
    never extends a deadline)."""
    bucket = owner.config.retention_access_bucket_seconds
    n = owner.store.access.record_access(a["locators"], now=_now(a), bucket_seconds=bucket)
    return {"recorded": n}


def retrieval_lease(owner: ArchiveOwner, a: dict) -> dict:
    """A search's short lease on what it returned, when the search ran elsewhere (the
    control socket reads a secondary instance)."""
    taken = owner.store.protections.take_retrieval_leases(
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
        return {
            "now": utc_iso(now),
            "dry_run": True,
            **preview(owner.store, owner.policy, now=now),
        }
    _refuse_future(now, a)
    if (step := _clock_step(owner, a)) is not None:
        report = TickReport(now=now, refused=step).as_dict()
    else:
        with owner.maintenance.overridden(a.get("thresholds") or {}):
            report = owner.maintenance.tick(now=now, force=bool(a.get("force"))).as_dict()
    keep = owner.config.archive_spool_keep_seconds
    removed = spool.purge_orphans(owner.home, keep)
    return {**report, "now": utc_iso(report["now"]), "spool_orphans_removed": removed}


def _clock_step(owner: ArchiveOwner, a: dict) -> str | None:
    """Why a pass on the wall clock must not run (a clock step, see
    :mod:`memoryd.retention.clockguard`); an explicit ``now`` is the caller's clock."""
    if a.get("now") is not None:
        return None
    bound = owner.config.retention_max_clock_step_seconds
    return clockguard.check(
        owner.home, bound, owner.store.clock(), confirm=bool(a.get("confirm_clock"))
    )


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
    if project is not None and project not in owner.store.postings.projects():
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
    return {**owner.maintenance.status(now=_now(a)), "clock": clockguard.state(owner.home)}


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
    "projects": lambda owner, a: {"projects": owner.store.postings.projects()},
    "vectors_rebuild": lambda owner, a: {"versions": owner.store.vectors.rebuild_vectors()},
    "vectors_verify": lambda owner, a: owner.store.vectors.verify_vectors(),
}


def run_op(owner: ArchiveOwner, op: str, args: dict) -> dict:
    """Run one operation; a user-facing error becomes an answer, not an exception."""
    if op not in OPS:
        return error_answer(UsageError(f"unknown archive operation {op!r}"))
    try:
        return {"ok": True, "result": OPS[op](owner, args)}
    except ArchiveBusy:
        raise  # another process holds the archive: retry the job later
    except Exception as exc:
        if is_corruption(exc):  # the same typed answer embedded and supervised
            return error_answer(corruption(exc, str(owner.store.path)))
        if isinstance(exc, MemorydError):
            return error_answer(exc)
        raise
