"""New deadlines (a version moves to its deadline's segment) and the per-version
expiry index: due entries in time order, retiring what is due.

A version in a dated segment expires with its segment (:mod:`~.segments`). The
per-version index holds only the versions of a **held** segment that have a
deadline (kept past it by a protection that may lapse, or given a deadline that
has passed): one entry (bucket, class, version) -> generation each. A stale
generation is harmless: the wave drops it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from memoryd.base.errors import BadArchiveInput, NotLive
from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore, killpoint
from memoryd.storage.archive.ledgers import Ledgers
from memoryd.storage.archive.records import (
    DueReport,
    ExpiryEntry,
    check_class,
    check_epoch,
)

#: A class policy: ``(class, created_at) -> deadline`` (None: never).
DeadlineOf = Callable[[str, float], float | None]


class Expiry:
    """Expiry entries and the atomic check-then-tombstone of one due version.

    Interface: :meth:`expiry_entries`; retiring due versions one by one
    (:meth:`retire_expired`) or in a wave's batch (:meth:`retire_due`); new deadlines
    and classes (:meth:`renew`, :meth:`set_expiry`, :meth:`promote`). Receives the core
    and :class:`~.ledgers.Ledgers` (retiring and purging a version).
    """

    def __init__(self, core: StoreCore, ledgers: Ledgers) -> None:
        self._core = core
        self._ledgers = ledgers

    def expiry_entries(
        self,
        *,
        until: float | None = None,
        since: float | None = None,
        after: bytes | None = None,
        classes: Iterable[str] | None = None,
        limit: int = 256,
    ) -> list[ExpiryEntry]:
        """Expiry entries in time order, at most ``limit``.

        ``until``: stop after the bucket holding this time (a due scan stops
        at the first future bucket; entries of the last bucket may still lie
        a little in the future: the wave checks each deadline). ``since``:
        start at this time's bucket. ``after``: resume after this entry key
        (a cursor). ``classes``: only these classes.
        """
        start = keys.EXPIRY
        if since is not None:
            start = keys.expiry_bucket(int(since // self._core.bucket_seconds))
        if after is not None and after > start:
            start = after + b"\x00"
        end = keys.prefix_end(keys.EXPIRY)
        if until is not None:
            end = keys.expiry_bucket(max(0, int(until // self._core.bucket_seconds)) + 1)
        wanted = None if classes is None else {keys.CLASS_CODE[c] for c in classes}
        out: list[ExpiryEntry] = []
        for key, raw in self._core._scan(start, end, fill_cache=False):
            bucket, code, version = keys.parse_expiry(key)
            if wanted is not None and code not in wanted:
                continue
            doc_id, ver = keys.split_dv(version)
            out.append(
                ExpiryEntry(
                    key=key,
                    bucket_start=float(bucket * self._core.bucket_seconds),
                    cls=keys.CODE_CLASS[code],
                    doc_id=doc_id,
                    version=ver,
                    generation=keys.U32.unpack(raw)[0],
                )
            )
            if len(out) >= limit:
                break
        return out

    def retire_expired(self, entry: ExpiryEntry, *, now: float | None = None) -> str:
        """Check and tombstone one due version, atomically with respect to other requests.

        Returns the outcome: ``"expired"`` (tombstoned now; queued for purge),
        ``"stale"`` (the entry names an old generation or a retired version:
        the entry was dropped), ``"not_due"`` (deadline later than ``now``),
        ``"pinned"``, ``"leased"`` (an active-context or retrieval lease
        protects the version). Only ``"expired"`` changes the version.
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        with self._core._lock:
            batch = Batch()
            outcome = self._decide(batch, entry, now)
            self._core._write(batch)
            return outcome

    def retire_due(
        self,
        entries: Sequence[ExpiryEntry],
        *,
        now: float,
        deadline_of: DeadlineOf | None = None,
        cursor_name: str,
        cursor_value: bytes | None,
        purge_keys: int = 4096,
    ) -> DueReport:
        """One retention wave's changes in one WriteBatch, synced once.

        Each entry gets :meth:`retire_expired`'s checks (generation, deadline,
        pin, leases), first re-deriving its deadline with ``deadline_of``
        when it is not an explicit one (``"reindexed"``: the class's age grew
        or went to never). Retired versions whose postings and payload fit in
        ``purge_keys`` deletes (all of them together) are purged in the same
        batch; the rest are queued, and purged right after the write from the
        batch's own terms and ledgers (:meth:`_purge_retired`: no second read).
        The cursor ``cursor_name`` is set to ``cursor_value`` (None: cleared) in
        the same batch, so a crash before the write redoes the whole wave and a
        crash after it redoes nothing (the queue finishes the purge).
        """
        self._core._need_primary()
        report = DueReport()
        with self._core._lock:
            batch = Batch()
            versions = [keys.parse_expiry(e.key)[2] for e in entries]
            docs = [e.doc_id.encode() for e in entries]
            self._read_ahead_wave(batch, entries)
            self._core._read_ahead_sparse(batch, [keys.pin(d) for d in docs])
            self._core._read_ahead_sparse(batch, [keys.rlease(v) for v in versions])
            self._core._read_ahead_leased(batch, versions)
            for entry in entries:
                outcome = self._decide(
                    batch,
                    entry,
                    now,
                    deadline_of=deadline_of,
                    purge_budget=purge_keys - batch.deleted,
                )
                report.outcomes.append(outcome)
                if outcome == "expired":
                    ledger = self._core._ledger(entry.doc_id.encode(), batch)
                    v = ledger["versions"][entry.version - 1] if ledger else {}
                    report.purged_versions += bool(v.get("purged"))
            report.followed = batch.followed
            if cursor_value is None:
                batch.wb.delete(keys.cursor(cursor_name))
            else:
                batch.put(keys.cursor(cursor_name), cursor_value)
            killpoint("wave_before_batch")
            self._core._write(batch)
            report.keys_deleted = batch.deleted  # with the statistics a fold emptied
            killpoint("wave_after_batch")
            rest = self._ledgers._purge_retired(batch, purge_keys)
            report.purged_versions += rest.versions
            report.keys_deleted += rest.keys_deleted
        return report

    def _read_ahead_wave(self, batch: Batch, entries: Sequence[ExpiryEntry]) -> None:
        """What the checks of a wave read by key, in two multi-gets: the ledgers, then
        the term lists of the versions they place (pins and retrieval leases, which
        seldom exist, are walked: :meth:`_read_ahead_sparse`)."""
        docs = list(dict.fromkeys(e.doc_id.encode() for e in entries))
        self._core._read_ahead(batch, [keys.doc(d) for d in docs])
        wanted = []
        for e in entries:
            ledger = self._core._ledger(e.doc_id.encode(), batch)
            if ledger is not None and e.version <= len(ledger["versions"]):
                seg = self._core._seg(ledger, ledger["versions"][e.version - 1])
                wanted.append(keys.seg_terms(seg, keys.dv(e.doc_id.encode(), e.version)))
        self._core._read_ahead(batch, wanted)

    def _decide(
        self,
        batch: Batch,
        entry: ExpiryEntry,
        now: float,
        *,
        deadline_of: DeadlineOf | None = None,
        purge_budget: int = 0,
    ) -> str:
        """The outcome of one expiry entry, its changes written into ``batch``."""
        doc = entry.doc_id.encode()
        ledger = self._core._ledger(doc, batch)
        v = None
        if ledger is not None and entry.version <= len(ledger["versions"]):
            v = ledger["versions"][entry.version - 1]
        if (
            v is None
            or v["gen"] != entry.generation
            or not self._core._stored_live(ledger, v, batch)
        ):
            batch.delete(entry.key)
            return "stale"
        if deadline_of is not None and not v.get("override", False):
            deadline = deadline_of(ledger["class"], v.get("aged_from", v["created_at"]))
            if deadline != v["expires_at"] and (deadline is None or deadline > now):
                self._core._move_expiry(batch, doc, ledger, entry.version, deadline, override=False)
                return "reindexed"
        if v["expires_at"] is None or v["expires_at"] > now:
            return "not_due"
        if self._core._is_pinned(doc, batch):
            return "pinned"
        if self._core._protected_by_lease(doc, entry.version, now, batch, ledger):
            return "leased"
        self._ledgers._retire(
            batch,
            doc,
            ledger,
            entry.version,
            "expired",
            now,
            purge_budget=purge_budget,
            expiry_key=entry.key,  # the version's entry: its generation was checked
        )
        return "expired"

    def renew(self, locator: str, expires_at: float | None) -> int:
        """Explicitly renew a live version's expiry: a new generation with an explicit
        deadline (``None``: never); the old expiry entry becomes harmless. Raises
        :class:`NotLive` for an expired or superseded version."""
        if expires_at is not None:
            check_epoch("expires_at", expires_at)
        gen = self.set_expiry(locator, expires_at, override=True)
        if gen is None:
            status = self._ledgers.version_info(locator).status
            raise NotLive(f"{locator} is {status}; only a live version can be renewed")
        return gen

    def promote(self, locator: str, cls: str, expires_at: float | None) -> None:
        """Move a live derived document (``locator``: its current version) to class
        ``cls`` with deadline ``expires_at``: it no longer follows its sources.
        Raises :class:`NotLive` or :class:`BadArchiveInput`."""
        self._core._need_primary()
        check_class(cls)
        with self._core._lock:
            doc, ver, ledger = self._core._version_ledger(locator)
            if ver != ledger["current"] or self._core._status(doc, ledger, ver) != "live":
                raise NotLive(f"{locator} is not the live current version of its document")
            if ledger["class"] != "derived" or cls == "derived":
                raise BadArchiveInput(
                    f"promote moves a derived document to another class ({locator} is "
                    f"{ledger['class']}, asked for {cls}); to keep a {ledger['class']} "
                    f"document longer, give it a deadline: `memoryd archive renew {locator} "
                    "--days N` (or no flag: never expires)"
                )
            batch = Batch()
            old = self._core._seg(ledger, ledger["versions"][ver - 1])  # (its class's segment)
            ledger["class"] = cls  # the segment names the class: the keys move with it
            ledger["promoted_from"] = ledger.pop("sources", [])
            self._core._move_expiry(batch, doc, ledger, ver, expires_at, override=False, old=old)
            self._core._write(batch)

    def set_expiry(
        self,
        locator: str,
        expires_at: float | None,
        *,
        override: bool = True,
        expected_generation: int | None = None,
    ) -> int | None:
        """Give a live version a new deadline (``None``: never) under a new generation.

        ``override`` marks the deadline as explicit (renewal, disk-low
        shortening): waves honour it instead of re-deriving one from the
        class policy. With ``expected_generation`` the change applies only if
        the version is still at that generation. Returns the new generation,
        or None when nothing changed (not live, or generation moved on).
        """
        self._core._need_primary()
        with self._core._lock:
            doc, ver, ledger = self._core._version_ledger(locator)
            v = ledger["versions"][ver - 1]
            if self._core._status(doc, ledger, ver) != "live":
                return None
            if expected_generation is not None and v["gen"] != expected_generation:
                return None
            batch = Batch()
            gen = self._core._move_expiry(batch, doc, ledger, ver, expires_at, override=override)
            self._core._write(batch)
            return gen
