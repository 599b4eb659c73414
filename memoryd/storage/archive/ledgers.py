"""Document ledgers: reading versions, appending (superseding), retiring, forgetting,
and purging the canonical records of retired versions."""

from __future__ import annotations

import hashlib
import itertools
import secrets
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from memoryd.base.errors import ArchiveError, ForeignProject, LocatorNotFound, NotLive
from memoryd.base.times import utc_iso
from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.core import Batch, StoreCore, killpoint
from memoryd.storage.archive.keys import CLASSES
from memoryd.storage.archive.positions import posting_values
from memoryd.storage.archive.records import (
    STATUSES,
    AppendResult,
    BadArchiveInput,
    NewVersion,
    PurgeReport,
    VersionInfo,
    check_class,
    check_epoch,
    check_id,
    check_project,
    make_locator,
    ms,
    parse_locator,
)
from memoryd.storage.archive.removal import version_removal
from memoryd.storage.archive.vectors import Vectors

#: Most versions whose terms a process keeps between queueing and purging them.
QUEUED_TERMS_MAX = 100_000

#: Cursor of the purge queue's head (the queue key of the last version purged).
PURGE_HEAD = "archive.purge_head"

#: Queued versions whose ledgers and term lists a purge reads in one multi-get.
PURGE_READ_AHEAD = 128


class Ledgers:
    """Versions of documents: the ledger is kept forever, the content until purged.

    Interface: appends (:meth:`append`, :meth:`append_many`, idempotent by request id:
    :meth:`request_locator`), reads (:meth:`get`, :meth:`version_info`,
    :meth:`versions`, :meth:`documents`, :meth:`session_documents`, :meth:`counts`),
    :meth:`forget`, and the purge queue retirements fill (:meth:`pending_purge`,
    :meth:`purge_pending`). Receives the core and :class:`~.vectors.Vectors` (codes are
    written and dropped with their version).
    """

    def __init__(self, core: StoreCore, vectors: Vectors) -> None:
        self._core = core
        self._vectors = vectors

    def version_info(self, locator: str) -> VersionInfo:
        """Ledger metadata of one version; raises :class:`LocatorNotFound`."""
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        ledger = self._core._ledger(doc)
        if ledger is None or ver > len(ledger["versions"]):
            raise LocatorNotFound(f"no archived version {locator}")
        return self._core._info(doc_id, ledger, ver, self._core._is_pinned(doc))

    def versions(self, doc_id: str) -> list[VersionInfo]:
        """Every version of a document, oldest first; raises :class:`LocatorNotFound`."""
        doc = check_id("document id", doc_id)
        ledger = self._core._ledger(doc)
        if ledger is None:
            raise LocatorNotFound(f"no archived document {doc_id}")
        pinned = self._core._is_pinned(doc)
        return [
            self._core._info(doc_id, ledger, i + 1, pinned) for i in range(len(ledger["versions"]))
        ]

    def get(self, locator: str) -> dict[str, Any]:
        """What a locator holds now.

        Returns ``{"status": "live"|"superseded"|"expired", "locator", "doc_id",
        "version", "project", "class", "session", "created_at" (ISO)}`` plus
        ``"content"`` and ``"meta"`` only when live, ``"expired_at"`` when expired
        and ``"superseded_at"``/``"superseded_by"`` when superseded. A retired
        locator never answers with a newer version's content. Raises
        :class:`LocatorNotFound` for an unknown document or version and
        :class:`BadLocator` for a malformed one.
        """
        info = self.version_info(locator)
        out: dict[str, Any] = {
            "status": info.status,
            "locator": info.locator,
            "doc_id": info.doc_id,
            "version": info.version,
            "project": info.project,
            "class": info.cls,
            "session": info.session,
            "created_at": utc_iso(info.created_at),
        }
        if info.status == "live":
            ledger = self._core._ledger(info.doc_id.encode()) or {}
            seg = self._core._seg(ledger, ledger["versions"][info.version - 1])
            raw = self._core._db.get(
                keys.seg_payload(seg, keys.dv(info.doc_id.encode(), info.version))
            )
            if raw is None:  # cannot happen for a live version; never invent content
                raise ArchiveError(f"live version {locator} has no payload (corrupt archive)")
            record = codec.decode_payload(raw)
            out["content"] = record["content"]
            out["meta"] = record.get("meta") or {}
            out["expires_at"] = utc_iso(info.expires_at)
            out["pinned"] = info.pinned
        elif info.status == "expired":
            out["expired_at"] = utc_iso(info.retired_at)
            if info.forgotten:
                out["forgotten"] = True
        else:
            out["superseded_at"] = utc_iso(info.retired_at)
            out["superseded_by"] = make_locator(info.doc_id, info.version + 1)
        return out

    def documents(
        self, *, project: str | None = None, after: str | None = None, limit: int = 1000
    ) -> list[VersionInfo]:
        """Current version of each document in doc-id order (``after`` pages on)."""
        start = keys.doc_after(after.encode() if after else None)
        out: list[VersionInfo] = []
        for key, raw in self._core._scan(start, keys.prefix_end(keys.DOC)):
            ledger = codec.decode_ledger(raw)
            if project is not None and ledger["project"] != project:
                continue
            doc = keys.doc_of(key)
            out.append(
                self._core._info(
                    doc.decode(), ledger, ledger["current"], self._core._is_pinned(doc)
                )
            )
            if len(out) >= limit:
                break
        return out

    def counts(self) -> dict[str, Any]:
        """Version counts by status and class, live bytes, pins (a full ledger scan)."""
        by_status = Counter[str]()
        by_class = Counter[str]()
        docs = live_bytes = pending = 0
        clock = self._core.clock()
        for key, raw in self._core._prefix(keys.DOC, fill_cache=False):
            ledger = codec.decode_ledger(raw)
            docs += 1
            for ver, v in enumerate(ledger["versions"], 1):
                status = v["status"]
                if status == "live":
                    status = self._core._status(keys.doc_of(key), ledger, ver, clock=clock)
                by_status[status] += 1
                if status == "live":
                    by_class[ledger["class"]] += 1
                    live_bytes += v["size"]
        pending = sum(1 for _ in self._core._prefix(keys.PURGE, fill_cache=False))
        pins = sum(1 for _ in self._core._prefix(keys.PIN, fill_cache=False))
        return {
            "documents": docs,
            "versions": {s: by_status.get(s, 0) for s in STATUSES},
            "live_by_class": {c: by_class.get(c, 0) for c in CLASSES},
            "live_payload_bytes": live_bytes,
            "pending_purge": pending,
            "pins": pins,
        }

    # ---- appending

    def append(
        self,
        project: str,
        cls: str,
        content: str,
        *,
        created_at: float,
        expires_at: float | None,
        doc_id: str | None = None,
        session: str | None = None,
        meta: dict[str, Any] | None = None,
        request_id: str | None = None,
        now: float | None = None,
        sources: Sequence[str] = (),
    ) -> AppendResult:
        """Archive one version (one WriteBatch). See :meth:`append_many`."""
        item = NewVersion(
            project,
            cls,
            content,
            created_at,
            expires_at,
            doc_id,
            session,
            meta,
            request_id,
            tuple(sources),
        )
        return self.append_many([item], now=now)[0]

    def append_many(
        self, items: Sequence[NewVersion], *, now: float | None = None
    ) -> list[AppendResult]:
        """Archive several versions in one WriteBatch (all or nothing).

        ``doc_id`` None creates a new document with a generated id; an existing
        ``doc_id`` gets the next version, which supersedes the current one if
        it is live (its project and class must match). ``created_at`` is the
        source's creation time (retention counts from it); ``expires_at`` is
        the deadline the policy computed from it (``None``: never). A
        ``request_id`` already applied returns its first answer with
        ``created=False`` and writes nothing (idempotent jobs). Content equal to
        the document's current live version (same project and class, no new
        source) makes no version either, whenever it comes: it answers that
        version with ``created=False`` (and records the request).

        A derived document may name ``sources`` (live locators of its project):
        it keeps its own deadline and expires at the earlier of it and the moment
        its last source document has no live version left (:meth:`promote` ends
        the following).

        Raises :class:`BadArchiveInput`, :class:`ForeignProject`, and whatever
        :attr:`admission` raises (:class:`DiskLow`).
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        prepared = []
        for it in items:
            project = check_project(it.project)
            check_class(it.cls)
            if not isinstance(it.content, str):
                raise BadArchiveInput("content must be a string")
            if it.doc_id is not None:
                check_id("document id", it.doc_id)
            if it.session is not None and not isinstance(it.session, str):
                raise BadArchiveInput("session must be a string")
            if it.request_id is not None:
                check_id("request id", it.request_id)
            check_epoch("created_at", it.created_at)
            if it.expires_at is not None:
                check_epoch("expires_at", it.expires_at)
            payload = codec.encode_payload(it.content, it.meta, self._core.payload_format)
            if it.sources and it.cls != "derived":
                raise BadArchiveInput("only a derived document names sources")
            prepared.append((it, project, payload, _sha256(it.content)))
        if self._core.admission is not None:
            self._core.admission(sum(len(p) for _, _, p, _ in prepared))
        with self._core._lock:
            batch = Batch()
            results: list[AppendResult] = []
            seen_requests: dict[str, AppendResult] = {}
            for it, project, payload, digest in prepared:
                if it.request_id in seen_requests:
                    results.append(seen_requests[it.request_id])
                    continue
                ledger = (
                    None if it.doc_id is None else self._core._ledger(it.doc_id.encode(), batch)
                )
                res = self._answered(batch, it, ledger, digest, now) or self._append_one(
                    batch, it, ledger, project, payload, digest, now
                )
                if it.request_id is not None:
                    seen_requests[it.request_id] = res
                results.append(res)
            self._core._write(batch)
            return results

    def _answered(
        self,
        batch: Batch,
        it: NewVersion,
        ledger: dict[str, Any] | None,
        digest: str,
        now: float,
    ) -> AppendResult | None:
        """The answer of an append that makes no version, or None: a request applied
        before answers its first outcome; content (``digest``: its sha256) equal to its
        document's current live version (``ledger``: the document's) answers that
        version, whatever the request records' horizon (the request is recorded, so a
        redo answers from its record)."""
        if it.request_id is not None:
            prior = self._core._db.get(keys.request(it.request_id.encode()))
            if prior is not None:
                locator = keys.parse_request_value(prior)[0]
                doc_id, ver = parse_locator(locator)
                return AppendResult(locator, doc_id, ver, False, None)
        ver = self._unchanged_version(batch, it, ledger, digest)
        if it.doc_id is None or ver is None:
            return None
        locator = make_locator(it.doc_id, ver)
        self._record_request(batch, it, locator, now)
        return AppendResult(locator, it.doc_id, ver, False, None)

    def _unchanged_version(
        self, batch: Batch, it: NewVersion, ledger: dict[str, Any] | None, digest: str
    ) -> int | None:
        """The current version of ``it``'s document (its ``ledger``) if it is live and
        ``it`` would repeat it: the same project, class and content, its sources
        already linked."""
        if it.doc_id is None or ledger is None or not ledger["current"]:
            return None
        cur = ledger["current"]
        same = (
            ledger["project"] == it.project
            and ledger["class"] == it.cls
            and ledger["versions"][cur - 1]["sha256"] == digest
            and set(it.sources) <= set(ledger.get("sources", ()))
        )
        live = same and self._core._status(it.doc_id.encode(), ledger, cur, batch=batch) == "live"
        return cur if live else None

    def _record_request(self, batch: Batch, it: NewVersion, locator: str, now: float) -> None:
        """``it``'s request record and its time index (none without a request id)."""
        if it.request_id is not None:
            for key, value in keys.request_entries(it.request_id.encode(), locator, ms(now)):
                batch.put(key, value)

    def _append_one(
        self,
        batch: Batch,
        it: NewVersion,
        ledger: dict[str, Any] | None,
        project: bytes,
        payload: bytes,
        digest: str,
        now: float,
    ) -> AppendResult:
        """A new version of ``it``'s document (``ledger``: its ledger, None for a new one;
        ``digest``: the sha256 of its content)."""
        doc_id = it.doc_id
        if doc_id is None:
            while True:
                doc_id = f"{ms(now):012x}{secrets.token_hex(6)}"
                if self._core._ledger(doc_id.encode(), batch) is None:
                    break
        doc = doc_id.encode()
        superseded = None
        if ledger is None:
            ledger = {
                "project": it.project,
                "class": it.cls,
                "session": it.session,
                "created_at": it.created_at,
                "current": 0,
                "versions": [],
            }
        else:
            if ledger["project"] != it.project:
                raise ForeignProject(
                    f"document {doc_id} belongs to project {ledger['project']!r}, "
                    f"not {it.project!r}"
                )
            if ledger["class"] != it.cls:
                raise BadArchiveInput(
                    f"document {doc_id} has class {ledger['class']!r}; a new version "
                    f"cannot change it to {it.cls!r}"
                )
            cur = ledger["current"]
            if cur and self._core._stored_live(ledger, ledger["versions"][cur - 1], batch):
                # past its deadline unprotected, it expired (a wave would have said so)
                live = self._core._status(doc, ledger, cur, batch=batch) == "live"
                self._retire(batch, doc, ledger, cur, "superseded" if live else "expired", now)
                superseded = make_locator(doc_id, cur) if live else None
        ver = len(ledger["versions"]) + 1
        values, length = posting_values(it.content, it.meta)
        pinned = self._core._is_pinned(doc)
        expires_at = it.expires_at  # derived: its own age; its sources may end it sooner
        bucket = self._core._open_bucket(project, it.cls, expires_at, batch)
        v = {
            "status": "live",
            "created_at": it.created_at,
            "expires_at": expires_at,
            "gen": 1,
            "override": False,
            "len": length,
            "size": len(payload),
            "sha256": digest,
            "request_id": it.request_id,
        }
        if bucket != keys.HELD_BUCKET:
            v["b"] = bucket
        if it.aged_from is not None:
            v["aged_from"] = it.aged_from
        ledger["versions"].append(v)
        ledger["current"] = ver
        batch.ledgers[keys.doc(doc)] = ledger
        if it.sources:
            self._link_sources(batch, doc, ledger, it.sources)
        dv = keys.dv(doc, ver)
        seg = self._core._seg(ledger, v)
        codes = self._vectors._codes(it.content, batch)
        self._core._put_version(batch, seg, dv, payload, values, codes, length)
        if bucket == keys.HELD_BUCKET and expires_at is not None and not pinned:
            batch.put(self._core._expiry_key(expires_at, it.cls, doc, ver), keys.U32.pack(1))
        locator = make_locator(doc_id, ver)
        self._record_request(batch, it, locator, now)
        return AppendResult(locator, doc_id, ver, True, superseded)

    def _retire(
        self,
        batch: Batch,
        doc: bytes,
        ledger: dict[str, Any],
        ver: int,
        status: str,
        now: float,
        *,
        purge_budget: int = 0,
        expiry_key: bytes | None = None,
    ) -> int:
        """Tombstone a live version inside ``batch``: out of search and stats.

        ``expiry_key``: its expiry entry, when the caller holds it (a wave).

        Its terms come from its term list (:func:`version_removal`). When its
        postings and own keys fit in ``purge_budget`` deletes they go in the
        same batch (the version is purged at once); otherwise it is queued for
        :meth:`purge_pending`. Returns the keys deleted inline (0 when queued).
        """
        v = ledger["versions"][ver - 1]
        if not self._core._stored_live(ledger, v, batch):
            return 0
        dv = keys.dv(doc, ver)
        seg = self._core._seg(ledger, v)
        terms, own = version_removal(self._core, seg, dv, batch)
        project = ledger["project"].encode()
        if own:
            batch.removed.setdefault(project, []).extend(terms)
            for key in keys.seg_termstats_of(seg, terms):
                batch.df[key] -= 1
        self._core._count(batch, project, seg, v["len"], -1)
        if expiry_key is not None:
            batch.delete(expiry_key)
        elif v["expires_at"] is not None and "b" not in v:  # held: in the expiry index
            batch.delete(self._core._expiry_key(v["expires_at"], ledger["class"], doc, ver))
        self._vectors._drop_codes(batch, seg, dv)
        batch.wb.delete(keys.seg_member(seg, dv))  # no longer among its segment's versions
        v["status"] = status
        v["retired_at"] = now
        batch.ledgers[keys.doc(doc)] = ledger
        if status == "expired":
            self._follow_sources(batch, doc, now)
        if len(terms) + len(own) > purge_budget:
            batch.put(keys.purge(dv), b"")
            self._core._queue_empty = False
            if len(self._core._queued_terms) >= QUEUED_TERMS_MAX:
                self._core._queued_terms.clear()
            self._core._queued_terms[dv] = (terms, own)
            batch.queued.append((dv, doc, ver, seg))
            return 0
        _delete_version(batch, seg, terms, own, dv)
        v["purged"] = True  # its request record stays: a redo answers "expired"
        return len(terms) + len(own)

    def _link_sources(
        self, batch: Batch, doc: bytes, ledger: dict[str, Any], sources: Sequence[str]
    ) -> None:
        """Record a derived document's sources: live versions of its own project."""
        for loc in dict.fromkeys(sources):
            source_id, ver = parse_locator(loc)
            source = self._core._ledger(source_id.encode(), batch)
            if source is None or ver > len(source["versions"]):
                raise LocatorNotFound(f"no archived version {loc} to derive from")
            if source["project"] != ledger["project"]:
                raise ForeignProject(f"source {loc} belongs to project {source['project']!r}")
            status = self._core._status(source_id.encode(), source, ver, batch=batch)
            if status != "live":
                raise NotLive(f"source {loc} is {status}")
            batch.put(keys.derived(source_id.encode(), doc), b"")
            source["derived"] = True  # its retirement looks for derived documents
            batch.ledgers[keys.doc(source_id.encode())] = source
        ledger["sources"] = sorted(set(ledger.get("sources", [])) | set(sources))

    def _doc_live(self, doc: bytes, batch: Batch, now: float | None = None) -> bool:
        ledger = self._core._ledger(doc, batch)
        if not ledger:
            return False
        return self._core._status(doc, ledger, ledger["current"], clock=now, batch=batch) == "live"

    def _follow_sources(self, batch: Batch, source: bytes, now: float) -> None:
        """A source document lost its last live version: each derived document whose
        sources are now all gone expires with it (in ``batch``), unless promoted;
        a pinned or leased one gets the deadline now, for the wave after it lapses."""
        ledger = self._core._ledger(source, batch)
        if not ledger or not ledger.get("derived") or self._doc_live(source, batch, now):
            return
        for key, _ in self._core._prefix(keys.derived_prefix(source), fill_cache=False):
            doc = keys.derived_doc_of(key, source)
            ledger = self._core._ledger(doc, batch)
            if ledger is None or ledger["class"] != "derived":
                continue
            if not self._doc_live(doc, batch, now):
                continue
            srcs = [parse_locator(loc)[0].encode() for loc in ledger.get("sources", [])]
            if any(self._doc_live(s, batch, now) for s in srcs):
                continue
            cur = ledger["current"]
            if self._core._is_pinned(doc) or self._core._protected_by_lease(
                doc, cur, now, batch, ledger
            ):
                self._core._move_expiry(batch, doc, ledger, cur, now, override=True)
            else:
                self._retire(batch, doc, ledger, cur, "expired", now)
                batch.followed.append(make_locator(doc.decode(), cur))

    def forget(self, doc_ids: Sequence[str], *, now: float | None = None) -> list[str]:
        """Tombstone every live version of these documents now, pinned or leased
        (the user's right to delete), and drop their pins; one batch.

        The versions read ``expired`` (with ``forgotten``) from then on and are
        queued for purge like any expired version. Returns the locators retired.
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        with self._core._lock:
            batch = Batch()
            retired = []
            for doc_id in doc_ids:
                doc = check_id("document id", doc_id)
                ledger = self._core._ledger(doc, batch)
                if ledger is None:
                    raise LocatorNotFound(f"no archived document {doc_id}")
                for ver, v in enumerate(ledger["versions"], 1):
                    if self._core._stored_live(ledger, v, batch):
                        self._retire(batch, doc, ledger, ver, "expired", now)
                        v["forgotten"] = True
                        retired.append(make_locator(doc_id, ver))
                if self._core._is_pinned(doc):
                    batch.delete(keys.pin(doc))
            self._core._write(batch)
            return retired

    def session_documents(self, project: str, session: str) -> list[str]:
        """Ids of ``project``'s documents of ``session`` (a full ledger scan, in pages)."""
        found, after = [], None
        while page := self.documents(project=project, after=after):
            found += [info.doc_id for info in page if info.session == session]
            after = page[-1].doc_id
        return found

    def purge_pending(self, *, max_keys: int = 4096) -> PurgeReport:
        """Delete postings and payloads of tombstoned versions, at most ``max_keys`` keys.

        Whole versions are packed into one WriteBatch (with the queue's head
        cursor); a version larger than the budget is deleted in chunks first,
        each chunk with its resume point, and its payload goes last with its
        purge-queue entry, so a crash anywhere leaves work this call finishes
        later. Metadata stays in the ledger.
        """
        self._core._need_primary()
        budget = max(2, max_keys)
        versions = deleted = 0
        remaining = False
        with self._core._lock:
            if self._core._queue_empty:
                return PurgeReport()
            packed = Batch(sync=False)  # a purge lost in a crash is redone from its queue
            for key, resume in self._purge_queue_read_ahead(packed):
                left = budget - packed.deleted
                dv = keys.purge_version(key)
                doc_id, ver = keys.split_dv(dv)
                ledger = self._core._ledger(doc_id.encode(), packed)
                seg = self._core._seg(ledger, ledger["versions"][ver - 1]) if ledger else b"\xff"
                terms, own = self._purge_removal(seg, dv, packed, resume)
                if left <= 0 or (packed.deleted and len(terms) + len(own) > left):
                    remaining = True  # the next call starts here (the head cursor)
                    break
                while len(terms) >= left:  # a version bigger than the budget, alone
                    chunk, terms = terms[:left], terms[left:]
                    batch = Batch(sync=False)
                    for term in chunk:
                        batch.delete(keys.seg_posting(seg, term, dv))
                    batch.put(key, chunk[-1])
                    killpoint("archive_purge_chunk")
                    self._core._write(batch)
                    deleted += len(chunk)
                    budget = left = budget - len(chunk)
                    if budget <= 0:
                        return PurgeReport(versions, deleted, True)
                _delete_version(packed, seg, terms, own, dv)
                packed.wb.delete(key)
                packed.put(keys.cursor(PURGE_HEAD), key)
                self._core._queued_terms.pop(dv, None)
                if ledger is not None:
                    ledger["versions"][ver - 1]["purged"] = True  # a redo answers "expired"
                    packed.ledgers[keys.doc(doc_id.encode())] = ledger
                versions += 1
            if versions:
                killpoint("archive_purge_final")
                self._core._write(packed)
                deleted += packed.deleted
            self._core._queue_empty = not remaining
        return PurgeReport(versions, deleted, remaining)

    def _purge_retired(self, retired: Batch, max_keys: int) -> PurgeReport:
        """Purge the versions the just-written batch ``retired`` queued, from what it
        holds: their terms and ledgers, read again by nobody (the caller still holds
        the lock, so nothing changed them since). Whole versions in batches of at most
        ``max_keys`` deletes, unsynced like :meth:`purge_pending` (a crash leaves their
        queue entries, which it finishes); a version over the budget stays queued."""
        versions = deleted = 0
        remaining = False
        budget = max(2, max_keys)
        batch = Batch(sync=False)
        for dv, doc, ver, seg in retired.queued:
            terms, own = self._core._queued_terms.get(dv) or ([], [])
            size = len(terms) + len(own)
            if not own or size > budget:
                remaining = True  # evicted from the cache, or too big: the queue's
                continue
            if batch.deleted + size > budget:
                deleted += self._write_purge(batch)
                batch = Batch(sync=False)
            _delete_version(batch, seg, terms, own, dv)
            batch.wb.delete(keys.purge(dv))
            del self._core._queued_terms[dv]
            ledger = retired.ledgers[keys.doc(doc)]
            ledger["versions"][ver - 1]["purged"] = True  # a redo answers "expired"
            batch.ledgers[keys.doc(doc)] = ledger
            versions += 1
        deleted += self._write_purge(batch)
        return PurgeReport(versions, deleted, remaining)

    def _write_purge(self, batch: Batch) -> int:
        """Write one purge batch (when it holds any delete); its deleted keys."""
        if batch.deleted:
            killpoint("archive_purge_final")
            self._core._write(batch)
        return batch.deleted

    def _purge_removal(
        self, seg: bytes, dv: bytes, batch: Batch, resume: bytes
    ) -> tuple[list[bytes], list[bytes]]:
        """:func:`version_removal` of a queued version (what its retirement found, when
        this process retired it), its posting terms in order and after ``resume``."""
        terms, own = self._core._queued_terms.get(dv) or version_removal(self._core, seg, dv, batch)
        terms = sorted(terms)
        return ([t for t in terms if t > resume] if resume else terms), own

    def _purge_queue_read_ahead(
        self, batch: Batch, page: int = PURGE_READ_AHEAD
    ) -> Iterator[tuple[bytes, bytes]]:
        """:meth:`_purge_queue` in pages, each page's ledgers and term lists fetched into
        ``batch`` with one multi-get first (not one read per queued version)."""
        queue = self._purge_queue()
        while entries := list(itertools.islice(queue, page)):
            docs = [keys.split_dv(keys.purge_version(key)) for key, _ in entries]
            self._core._read_ahead(
                batch, list(dict.fromkeys(keys.doc(d.encode()) for d, _ in docs))
            )
            wanted = []
            for (doc_id, ver), (key, _) in zip(docs, entries, strict=True):
                ledger = self._core._ledger(doc_id.encode(), batch)
                if ledger is not None:
                    seg = self._core._seg(ledger, ledger["versions"][ver - 1])
                    wanted.append(keys.seg_terms(seg, keys.purge_version(key)))
            self._core._read_ahead(batch, wanted)
            yield from entries

    def _purge_queue(self) -> Iterator[tuple[bytes, bytes]]:
        """The purge queue from its head (where the last purge ended), wrapping around:
        a purge resumes where it stopped instead of re-reading the deleted front."""
        head = self._core._db.get(keys.cursor(PURGE_HEAD))
        if head is None:
            yield from self._core._prefix(keys.PURGE)
            return
        yield from self._core._scan(head, keys.prefix_end(keys.PURGE))
        yield from self._core._scan(keys.PURGE, head)

    def request_locator(self, request_id: str) -> str | None:
        """The locator an applied append request created, or None if never applied."""
        raw = self._core._db.get(keys.request(check_id("request id", request_id)))
        return None if raw is None else keys.parse_request_value(raw)[0]

    def pending_purge(self) -> int:
        """How many tombstoned versions still have canonical records."""
        return sum(1 for _ in self._core._prefix(keys.PURGE, fill_cache=False))


def _delete_version(
    batch: Batch, seg: bytes, terms: list[bytes], own: list[bytes], dv: bytes
) -> None:
    """A version's postings (of ``terms``) and its own keys, deleted in ``batch``."""
    delete = batch.wb.delete
    for key in keys.seg_postings_of(seg, terms, dv):
        delete(key)
    for key in own:
        delete(key)
    batch.deleted += len(terms) + len(own)


def _sha256(content: str) -> str:
    """The content digest a version's ledger entry keeps."""
    return hashlib.sha256(content.encode()).hexdigest()
