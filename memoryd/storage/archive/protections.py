"""Protections: pins (until removed), active-context leases of a client (owner
record with an epoch plus forward and reverse references) and short retrieval
leases taken by searches."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from memoryd.base.errors import (
    BadArchiveInput,
    BadLocator,
    LeaseExpired,
    LeaseNotFound,
    LeaseRejected,
    NotLive,
)
from memoryd.base.times import utc_iso
from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.ledgers import Ledgers
from memoryd.storage.archive.records import (
    LeaseGrant,
    check_id,
    check_project,
    deadline_after,
    make_locator,
    ms,
    parse_locator,
)

#: Most exact versions one active-context lease request may name.
MAX_LEASE_TARGETS = 1000

#: A session's current version: ``(doc, version, deadline, live now)``.
SessionVersion = tuple[bytes, int, float | None, bool]


class Protections:
    """Pins, active-context leases and retrieval leases.

    Interface: pins (:meth:`pin`, :meth:`unpin`, :meth:`pins`, :meth:`is_pinned`),
    :meth:`protection`, active-context leases (:meth:`acquire_leases`,
    :meth:`renew_leases`, :meth:`release_leases`, :meth:`client_lease`,
    :meth:`cleanup_expired_leases`) and retrieval leases
    (:meth:`take_retrieval_leases`, :meth:`cleanup_retrieval_leases`). Receives the
    core (which reads what protects a version for every status) and
    :class:`~.ledgers.Ledgers` (a session's documents).
    """

    def __init__(self, core: StoreCore, ledgers: Ledgers) -> None:
        self._core = core
        self._ledgers = ledgers

    def pin(self, locator: str, *, now: float | None = None, note: str | None = None) -> dict:
        """Pin the document of a live version until :meth:`unpin` (idempotent).

        The document's expiry entry is withdrawn while pinned. Raises
        :class:`LocatorNotFound` or :class:`NotLive` (superseded/expired version).
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        with self._core._lock:
            doc, ver, ledger = self._core._version_ledger(locator)
            status = self._core._status(doc, ledger, ver)
            if status != "live":
                raise NotLive(f"{locator} is {status}; pin a live version")
            existing = self._core._get_json(keys.pin(doc))
            if existing is not None:
                return existing
            record = {"doc_id": doc.decode(), "locator": locator, "pinned_at": now, "note": note}
            batch = Batch()
            batch.put(keys.pin(doc), orjson.dumps(record))
            cur = ledger["current"]
            cv = ledger["versions"][cur - 1]
            if cv["status"] == "live" and cv["expires_at"] is not None and "b" not in cv:
                # held past its deadline: out of the per-version index while pinned
                batch.wb.delete(self._core._expiry_key(cv["expires_at"], ledger["class"], doc, cur))
                cv["gen"] += 1
                batch.ledgers[keys.doc(doc)] = ledger
            self._core._write(batch)
            return record

    def unpin(self, target: str) -> bool:
        """Remove the pin of a document (``target``: a locator or a document id).

        The live version goes back into the expiry index at its deadline
        (which may be due already). Returns False if it was not pinned.
        """
        self._core._need_primary()
        doc_id = parse_locator(target)[0] if "@" in target else target
        doc = check_id("document id", doc_id)
        with self._core._lock:
            if not self._core._is_pinned(doc):
                return False
            batch = Batch()
            batch.wb.delete(keys.pin(doc))
            ledger = self._core._ledger(doc)
            if ledger is not None:
                cur = ledger["current"]
                cv = ledger["versions"][cur - 1]
                if cv["status"] == "live" and cv["expires_at"] is not None and "b" not in cv:
                    cv["gen"] += 1  # held: back in the per-version index (may be due)
                    batch.put(
                        self._core._expiry_key(cv["expires_at"], ledger["class"], doc, cur),
                        keys.U32.pack(cv["gen"]),
                    )
                    batch.ledgers[keys.doc(doc)] = ledger
            self._core._write(batch)
            return True

    def pins(self, *, limit: int = 10_000) -> list[dict]:
        out = []
        for _, raw in self._core._prefix(keys.PIN):
            out.append(orjson.loads(raw))
            if len(out) >= limit:
                break
        return out

    def is_pinned(self, doc_id: str) -> bool:
        return self._core._is_pinned(doc_id.encode())

    # ---- leases

    def protection(self, locator: str, *, now: float | None = None) -> str | None:
        """What protects a version now: ``"pinned"``, ``"retrieval"``,
        ``"lease:<client>"`` or None."""
        now = time.time() if now is None else now
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        if self._core._is_pinned(doc):
            return "pinned"
        return self._core._protected_by_lease(doc, ver, now)

    def acquire_leases(
        self,
        client: str,
        project: str,
        locators: Sequence[str],
        *,
        ttl: float,
        now: float | None = None,
        sessions: Sequence[str] = (),
    ) -> LeaseGrant:
        """Protect exact versions for ``client`` (an active-context lease), all or nothing.

        At most :data:`MAX_LEASE_TARGETS` locators. Every target must exist,
        belong to ``project``, and be live and not past its deadline at the
        retention clock, like a session's versions (unless its document is
        pinned); otherwise :class:`LeaseRejected` names each bad target and its
        reason (``malformed``, ``missing``, ``foreign_project``, ``superseded``,
        ``expired``) and nothing is written. On success the client's owner
        record (created, or extended to ``now + ttl``) and every reference are
        published in one batch.
        A client whose lease had expired starts a new epoch: its old
        references never protect anything again.

        ``sessions`` names sessions of ``project`` whose *current* versions the
        lease protects, whichever they are when a wave looks (a version
        appended later is protected, a superseded one no longer); a session
        with no live document rejects the request (``session:NAME``:
        ``missing``). A session lease protects what is still live: never a
        version already past its deadline at the retention clock when this
        epoch of the lease first named the session (it reads ``expired``; a
        lease does not bring it back). Those current versions whose bytes are
        still stored (unless pinned) are returned as ``unprotected``.
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        cl = check_id("client id", client)
        check_project(project)
        _check_lease_request(locators, sessions, ttl)
        with self._core._lock:  # the authorization and its publication: one hold
            clock = ms(self._core.clock())
            targets, current = self._authorize(project, locators, sessions, clock)
            batch = Batch()
            epoch, expires = self._publish_owner(batch, cl, ttl, now)
            ep = keys.U32.pack(epoch)
            for doc, ver, _ in targets:
                dv = keys.dv(doc, ver)
                batch.put(keys.fwd(cl, dv), ep)
                batch.put(keys.rev(dv, cl), ep)
            unprotected = self._put_session_refs(batch, cl, ep, project, current, clock)
            self._core._write(batch)
            return LeaseGrant(
                client,
                epoch,
                expires,
                tuple(t[2] for t in targets),
                tuple(sessions),
                tuple(unprotected),
            )

    def _authorize(
        self, project: str, locators: Sequence[str], sessions: Sequence[str], clock: int
    ) -> tuple[list[tuple[bytes, int, str]], dict[str, list[SessionVersion]]]:
        """The leasable targets ``(doc, version, locator)`` and each session's current
        versions; raises :class:`LeaseRejected` naming every target that is not
        leasable (nothing is written then)."""
        rejected: dict[str, str] = {}
        targets: list[tuple[bytes, int, str]] = []
        for loc in dict.fromkeys(locators):
            found = self._leasable(project, loc, clock)
            if isinstance(found, str):
                rejected[str(loc)] = found
            else:
                targets.append((*found, loc))
        current: dict[str, list[SessionVersion]] = {}
        for session in dict.fromkeys(sessions):
            current[session] = self._session_current(project, session)
            if not current[session]:
                rejected[f"session:{session}"] = "missing"
        if rejected:
            named = ", ".join(f"{loc} ({why})" for loc, why in list(rejected.items())[:10])
            more = f" and {len(rejected) - 10} more" if len(rejected) > 10 else ""
            raise LeaseRejected(
                f"lease request rejected whole, nothing leased: {len(rejected)} of "
                f"{len(locators) + len(sessions)} targets are not leasable: {named}{more}",
                rejected,
            )
        return targets, current

    def _leasable(self, project: str, loc: str, clock: int) -> tuple[bytes, int] | str:
        """``(doc, version)`` of a leasable locator, or why it is not (``malformed``,
        ``missing``, ``foreign_project``, its status, ``expired``)."""
        try:
            doc_id, ver = parse_locator(loc)
        except BadLocator:
            return "malformed"
        doc = doc_id.encode()
        ledger = self._core._ledger(doc)
        if ledger is None or ver > len(ledger["versions"]):
            return "missing"
        if ledger["project"] != project:
            return "foreign_project"
        status = self._core._status(doc, ledger, ver)
        if status != "live":
            return status
        if not self._lease_reaches(doc, ledger["versions"][ver - 1]["expires_at"], clock):
            return "expired"
        return doc, ver

    def _publish_owner(self, batch: Batch, cl: bytes, ttl: float, now: float) -> tuple[int, float]:
        """The client's owner record, created or extended to ``now + ttl``, into
        ``batch``: ``(epoch, expires)``. A client whose lease had expired starts a new
        epoch (its old references never protect again)."""
        owner = self._core._owner(cl)
        if owner is not None and owner["expires_at"] > now:
            epoch = owner["epoch"]
        else:
            epoch = (owner["epoch"] + 1) if owner else 1
        expires = max(now + ttl, owner["expires_at"] if owner and owner["epoch"] == epoch else 0)
        self._put_owner(batch, cl, epoch, expires, ttl, now)
        return epoch, expires

    def _put_session_refs(
        self,
        batch: Batch,
        cl: bytes,
        ep: bytes,
        project: str,
        current: dict[str, list[SessionVersion]],
        clock: int,
    ) -> list[str]:
        """The client's session references (forward and by session, with the retention
        clock the epoch first named each) into ``batch``; returns the locators of the
        sessions' current versions the lease cannot protect (past their deadline then)."""
        p = project.encode()
        unprotected: list[str] = []
        for session, found in current.items():
            ref = keys.session_ref(p, session.encode(), cl)
            since = self._session_since(ref, ep, clock)
            batch.put(keys.session_fwd(cl, p, session.encode()), ep)
            batch.put(ref, keys.session_ref_value(ep, since))
            unprotected += [
                make_locator(doc.decode(), ver)
                for doc, ver, deadline, _ in found
                if not self._lease_reaches(doc, deadline, since)
            ]
        return unprotected

    def _lease_reaches(self, doc: bytes, deadline: float | None, since_ms: int) -> bool:
        """A lease naming a version at the retention clock ``since_ms`` protects it: its
        deadline is after that clock, or its document is pinned. Locator and session
        leases both ask this (a lease never brings back a version past its deadline)."""
        return deadline_after(deadline, since_ms) or self._core._is_pinned(doc)

    def _session_current(self, project: str, session: str) -> list[SessionVersion]:
        """``(doc, version, deadline, live)`` of each current version of ``session`` of
        ``project`` still in the store (a ledger scan), ``live`` its status now (False:
        past its deadline at the retention clock). No live one: the session is missing."""
        if not isinstance(session, str) or not session or "\x00" in session:
            return []
        out = []
        for doc_id in self._ledgers.session_documents(project, session):
            doc = doc_id.encode()
            ledger = self._core._ledger(doc)
            if ledger is None:
                continue
            cur = ledger["current"]
            v = ledger["versions"][cur - 1]
            if self._core._stored_live(ledger, v):
                out.append(
                    (doc, cur, v["expires_at"], self._core._status(doc, ledger, cur) == "live")
                )
        return out if any(found[3] for found in out) else []

    def _session_since(self, ref: bytes, epoch: bytes, clock: int) -> int:
        """The retention clock (ms) when this epoch of the client first named the session:
        kept when it names it again, so what it protected stays protected; ``clock``
        (the retention clock now) for a new epoch."""
        raw = self._core._db.get(ref)
        if raw is not None:
            old_epoch, since = keys.parse_session_ref_value(raw)
            if old_epoch == epoch:
                return since
        return clock

    def _drop_session_refs(self, batch: Batch, cl: bytes, limit: int | None = None) -> int:
        """Delete ``cl``'s session references (at most ``limit``); returns how many."""
        n = 0
        for key, _ in self._core._prefix(keys.session_fwd_prefix(cl), fill_cache=False):
            if limit is not None and n >= limit:
                break
            project, session = keys.parse_session_fwd(key, cl)
            batch.delete(key)
            batch.delete(keys.session_ref(project, session, cl))
            n += 1
        return n

    def _put_owner(
        self, batch: Batch, cl: bytes, epoch: int, expires: float, ttl: float, now: float
    ) -> None:
        batch.put(
            keys.owner(cl),
            orjson.dumps({"epoch": epoch, "expires_at": expires, "ttl": ttl, "renewed_at": now}),
        )
        batch.put(keys.owner_exp(ms(expires), cl), keys.U32.pack(epoch))

    def renew_leases(
        self, client: str, *, ttl: float | None = None, now: float | None = None
    ) -> LeaseGrant:
        """Heartbeat: extend the client's lease to ``now + ttl`` (default: its last ttl).

        Raises :class:`LeaseNotFound` (no lease) or :class:`LeaseExpired` (it
        lapsed: the protections are gone; acquire again).
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        cl = check_id("client id", client)
        with self._core._lock:
            owner = self._core._owner(cl)
            if owner is None:
                raise LeaseNotFound(f"client {client!r} holds no lease; acquire one")
            if owner["expires_at"] <= now:
                raise LeaseExpired(
                    f"client {client!r}'s lease expired at {utc_iso(owner['expires_at'])}; "
                    "its protections are gone: acquire the versions again"
                )
            ttl = owner["ttl"] if ttl is None else ttl
            expires = max(owner["expires_at"], now + ttl)
            batch = Batch()
            self._put_owner(batch, cl, owner["epoch"], expires, ttl, now)
            self._core._write(batch)
            return LeaseGrant(client, owner["epoch"], expires, ())

    def release_leases(self, client: str, locators: Sequence[str] | None = None) -> int:
        """Release this client's protection of ``locators`` (None: all of them).

        Never touches another client's references. Returns how many
        references were removed.
        """
        self._core._need_primary()
        cl = check_id("client id", client)
        with self._core._lock:
            batch = Batch()
            n = 0
            if locators is None:
                for key, _ in self._core._prefix(keys.fwd_prefix(cl)):
                    dv = keys.fwd_version(key, cl)
                    batch.delete(key)
                    batch.delete(keys.rev(dv, cl))
                    n += 1
                n += self._drop_session_refs(batch, cl)
                owner = self._core._owner(cl)
                if owner is not None:
                    batch.delete(keys.owner(cl))
                    batch.delete(keys.owner_exp(ms(owner["expires_at"]), cl))
            else:
                for loc in dict.fromkeys(locators):
                    doc_id, ver = parse_locator(loc)
                    dv = keys.dv(doc_id.encode(), ver)
                    if (keys.fwd(cl, dv)) in self._core._db:
                        batch.delete(keys.fwd(cl, dv))
                        batch.delete(keys.rev(dv, cl))
                        n += 1
            self._core._write(batch)
            return n

    def client_lease(self, client: str, *, now: float | None = None) -> dict[str, Any] | None:
        """``{"client", "epoch", "expires_at" (ISO), "live", "locators", "sessions"}``
        or None (sessions as ``"project/session"``)."""
        now = time.time() if now is None else now
        cl = check_id("client id", client)
        owner = self._core._owner(cl)
        if owner is None:
            return None
        locs = []
        for key, ep in self._core._prefix(keys.fwd_prefix(cl)):
            if keys.U32.unpack(ep)[0] == owner["epoch"]:
                locs.append(make_locator(*keys.split_dv(keys.fwd_version(key, cl))))
        sessions = [
            "/".join(part.decode() for part in keys.parse_session_fwd(key, cl))
            for key, ep in self._core._prefix(keys.session_fwd_prefix(cl))
            if keys.U32.unpack(ep)[0] == owner["epoch"]
        ]
        return {
            "client": client,
            "epoch": owner["epoch"],
            "expires_at": utc_iso(owner["expires_at"]),
            "live": owner["expires_at"] > now,
            "locators": locs,
            "sessions": sessions,
        }

    def cleanup_expired_leases(self, *, now: float | None = None, limit: int = 1000) -> int:
        """Remove references of lapsed client leases, at most ``limit`` protections.

        Returns how many records were removed; call again (next tick) while
        it returns ``limit``.
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        budget = limit
        with self._core._lock:
            end = keys.owner_exp_until(ms(now) + 1)
            for key, _ in list(self._core._scan(keys.OWNER_EXP, end)):
                if budget <= 0:
                    break
                expires_ms, cl = keys.parse_owner_exp(key)
                owner = self._core._owner(cl)
                batch = Batch()
                if owner is None or ms(owner["expires_at"]) != expires_ms:
                    batch.delete(key)  # stale index entry (renewed or released)
                    budget -= 1
                    self._core._write(batch)
                    continue
                if owner["expires_at"] > now:
                    continue
                refs = list(self._core._prefix(keys.fwd_prefix(cl), fill_cache=False))
                take = refs[:budget]
                for fkey, _ in take:
                    batch.delete(fkey)
                    batch.delete(keys.rev(keys.fwd_version(fkey, cl), cl))
                budget -= len(take)
                sessions = sum(1 for _ in self._core._prefix(keys.session_fwd_prefix(cl)))
                dropped = self._drop_session_refs(batch, cl, budget)
                budget -= dropped
                if len(take) == len(refs) and dropped == sessions:
                    batch.delete(key)
                    # keep a tombstone owner so a late heartbeat says expired, not unknown
                    batch.put(
                        keys.owner(cl),
                        orjson.dumps(
                            {
                                "epoch": owner["epoch"],
                                "expires_at": owner["expires_at"],
                                "ttl": owner["ttl"],
                                "renewed_at": owner.get("renewed_at"),
                                "lapsed": True,
                            }
                        ),
                    )
                self._core._write(batch)
        return limit - budget

    def take_retrieval_leases(
        self, locators: Iterable[str], *, seconds: float, now: float | None = None
    ) -> list[str]:
        """Protect the live ones of ``locators`` for ``seconds`` (searches call this).

        Returns the locators actually protected (live versions only).
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        until = ms(now + seconds)
        taken = []
        with self._core._lock:
            batch = Batch()
            for loc in dict.fromkeys(locators):
                doc_id, ver = parse_locator(loc)
                ledger = self._core._ledger(doc_id.encode())
                if ledger is None or ver > len(ledger["versions"]):
                    continue
                if self._core._status(doc_id.encode(), ledger, ver) != "live":
                    continue
                dv = keys.dv(doc_id.encode(), ver)
                raw = self._core._db.get(keys.rlease(dv))
                if raw is None or keys.U64.unpack(raw)[0] < until:
                    batch.put(keys.rlease(dv), keys.U64.pack(until))
                    batch.put(keys.rlease_exp(until, dv), b"")
                taken.append(loc)
            self._core._write(batch)
        return taken

    def cleanup_retrieval_leases(self, *, now: float | None = None, limit: int = 1000) -> int:
        """Drop lapsed retrieval leases (at most ``limit`` index entries)."""
        self._core._need_primary()
        now = time.time() if now is None else now
        n = 0
        with self._core._lock:
            batch = Batch()
            for key, _ in self._core._scan(keys.RLEASE_EXP, keys.rlease_exp_until(ms(now) + 1)):
                if n >= limit:
                    break
                dv = keys.parse_rlease_exp(key)[1]
                raw = self._core._db.get(keys.rlease(dv))
                if raw is not None and keys.U64.unpack(raw)[0] <= ms(now):
                    batch.delete(keys.rlease(dv))
                batch.delete(key)
                n += 1
            self._core._write(batch)
        return n


def _check_lease_request(locators: Sequence[str], sessions: Sequence[str], ttl: float) -> None:
    """Refuse a request that names nothing, too much, or a ttl that is not positive."""
    if not locators and not sessions:
        raise BadArchiveInput("a lease request names at least one locator or session")
    if len(locators) + len(sessions) > MAX_LEASE_TARGETS:
        raise BadArchiveInput(
            f"a lease request may name at most {MAX_LEASE_TARGETS} versions, "
            f"got {len(locators)}; split it"
        )
    if not ttl > 0:
        raise BadArchiveInput("lease ttl must be positive seconds")
