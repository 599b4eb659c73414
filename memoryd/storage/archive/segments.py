"""Expiry segments: a due segment's versions expire together, by one range delete.

A version's content keys live under its segment (:mod:`~.keys`: project, the
bucket of its deadline, its class). Once a segment's bucket has ended, every
version in it is past its deadline; :meth:`Segments.expire_segments`
expires up to :data:`SEGMENTS_PER_BATCH` due segments in one synced WriteBatch:

1. **protections**, walked once for the whole batch (pins, active-context lease
   references, retrieval leases, session leases: few, so the cost does not grow
   with the segments' size); each protected version is **copied out** to its
   class's held segment (values copied, segment statistics moved) and, unless
   pinned, put in the per-version expiry index for the wave after its
   protection lapses;
2. the **fold**: the segments' document-frequency and corpus deltas (minus the
   copied-out versions) are subtracted from the project's statistics, each
   global statistic read and written once per batch;
3. each segment is marked expired (``z seg = X``: every version its ledgers
   place there reads ``expired`` without a ledger being rewritten) and its key
   range deleted; derived documents whose last source went with it follow
   (per version, as before);
4. the retention clock moves to ``now``.

A batch expires at most ``max_versions`` versions (a tick stays bounded however
large a day's segment grows): due segments go whole while their versions fit;
when the first due segment alone is larger, the batch retires ``max_versions``
of its versions one by one instead (protected ones copied out to the held
segment, the rest tombstoned and purged like any retired version, the
segment's own statistics kept exact), and the segment stays live and due for
the next batch, which takes it whole once the rest fits.

A crash before the write leaves everything as it was (the rerun redoes it);
after, nothing is redone: the state is the cursor. Kill points:
``segment_before_batch``, ``segment_after_batch``.

Visibility does not wait for the segment: a version reads ``expired`` from the
first wave at or after its deadline (the retention clock) unless a protection
holds it (:meth:`~.core.StoreCore._status`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.core import CLOCK, Batch, StoreCore, killpoint
from memoryd.storage.archive.expiry import Expiry
from memoryd.storage.archive.ledgers import Ledgers
from memoryd.storage.archive.records import deadline_after, make_locator, ms

#: Due segments one wave batch expires (one fsync for all of them).
SEGMENTS_PER_BATCH = 64

#: Cursor of the ledger slimming pass (:meth:`Segments.slim_expired_ledgers`):
#: orjson ``[expiries seen at its start, next ledger key (hex)]``.
SLIM_CURSOR = "archive.slim"
#: How many segment batches expired something (u64): the pass runs while its last
#: complete walk began before the latest of them.
SLIM_DUE = "archive.slim_due"

#: Crash points of a segment wave.
KILL_POINTS = ("segment_before_batch", "segment_after_batch")


@dataclass
class SegmentReport:
    """What one :meth:`Segments.expire_segments` did."""

    segments: int = 0  # segments expired
    expired: list[str] = field(default_factory=list)  # locators that expired with them
    held: list[str] = field(default_factory=list)  # protected: copied out to a held segment
    followed: list[str] = field(default_factory=list)  # derived versions that followed
    terms_folded: int = 0  # (segment, term) statistics subtracted
    remaining: bool = False  # more due segments (or versions of one) than one batch
    keys_deleted: int = 0  # per-version deletes (the range deletes are not counted)


class Segments:
    """Due segments, their protections, and their expiry.

    Interface: what is due or coming (:meth:`due_segments`, :meth:`due_locators`,
    :meth:`future_segments`, :meth:`expiry_schedule`, :meth:`segment_versions`), the
    wave's :meth:`expire_segments`, and :meth:`slim_expired_ledgers`. Receives the core,
    :class:`~.ledgers.Ledgers` (retiring, purging, derived documents following their
    sources) and :class:`~.expiry.Expiry` (the held versions' entries).
    """

    def __init__(self, core: StoreCore, ledgers: Ledgers, expiry: Expiry) -> None:
        self._core = core
        self._ledgers = ledgers
        self._expiry = expiry

    def due_segments(self, now: float, *, limit: int | None = None) -> list[bytes]:
        """Live dated segments whose bucket ended by ``now``, project by project in
        bucket order (at most ``limit``). Each project's scan stops at its first
        bucket that has not ended."""
        last = int(now // self._core.segment_seconds)  # buckets before this one have ended
        out: list[bytes] = []
        it = self._core._db.iter()
        it.seek(keys.SEGMENT_STATE)
        while it.valid() and it.key()[:1] == keys.SEGMENT_STATE:
            seg = keys.state_segment(it.key())
            project, bucket, _ = keys.parse_segment(seg)
            if bucket >= last:  # this project's later buckets have not ended either
                it.seek(keys.prefix_end(keys.segment_states_prefix(project)) or b"\xff")
                continue
            if it.value() == keys.SEG_LIVE:
                out.append(seg)
                if limit is not None and len(out) >= limit:
                    break
            it.next()
        return out

    def _deadlines_by(self, now: float) -> bool:
        """May a live version's deadline lie at or before ``now``: a live dated segment
        whose bucket has begun, or a held version's entry? Otherwise the clock need
        not move (a write per idle tick would move the store's sequence number, which
        readers' caches watch)."""
        current = int(now // self._core.segment_seconds)
        for seg in self._core._live_segments():
            bucket = keys.parse_segment(seg)[1]
            if bucket <= current and bucket != keys.HELD_BUCKET:
                return True
        return bool(self._expiry.expiry_entries(until=now, limit=1))

    def future_segments(self, cls: str, now: float) -> list[bytes]:
        """Live dated segments of class ``cls`` whose bucket has not ended at ``now``."""
        code, current = keys.CLASS_CODE[cls], int(now // self._core.segment_seconds)
        out = []
        for seg in self._core._live_segments():
            _, bucket, seg_code = keys.parse_segment(seg)
            if seg_code == code and current <= bucket != keys.HELD_BUCKET:
                out.append(seg)
        return out

    def expiry_schedule(self, until: float, *, limit: int = 100_000) -> list[tuple[float, int]]:
        """``(start, versions)`` of what expires by ``until``: each live dated segment
        whose bucket starts by then (its corpus record counts its versions) and each
        held version with a deadline (one each), in no particular order."""
        out: list[tuple[float, int]] = []
        last = int(until // self._core.segment_seconds)
        for seg in self._core._live_segments():
            bucket = keys.parse_segment(seg)[1]
            if bucket <= last:
                raw = self._core._db.get(keys.seg_corpus(seg))
                if raw is not None:
                    out.append(
                        (float(bucket * self._core.segment_seconds), orjson.loads(raw)["versions"])
                    )
        held = self._expiry.expiry_entries(until=until, limit=limit)
        return out + [(e.bucket_start, 1) for e in held]

    def due_locators(self, now: float, *, limit: int = 100_000) -> list[str]:
        """Locators of the versions in due segments (at most ``limit``): what the next
        waves expire whole unless a protection holds them."""
        out: list[str] = []
        for seg in self.due_segments(now):
            for dv in self.segment_versions(seg):
                out.append(make_locator(*keys.split_dv(dv)))
                if len(out) >= limit:
                    return out
        return out

    def segment_versions(self, seg: bytes) -> Iterator[bytes]:
        """The dv of each version in a segment (its member records, in order)."""
        prefix = keys.seg_family(seg, keys.SEG_MEMBER)
        for key, _ in self._core._prefix(prefix, fill_cache=False):
            yield keys.seg_version(key, seg)

    def expire_segments(
        self,
        *,
        now: float | None = None,
        max_segments: int = SEGMENTS_PER_BATCH,
        max_versions: int | None = None,
        purge_keys: int = 4096,
        early: list[bytes] | None = None,
    ) -> SegmentReport:
        """Expire up to ``max_segments`` due segments, at most ``max_versions``
        versions (None: no cap), in one synced batch (see the module docstring); the
        retention clock moves to ``now`` either way.

        ``early``: expire these live segments now instead, due or not (the disk-low
        pass: a whole future segment at once, protected versions copied out)."""
        self._core._need_primary()
        now = time.time() if now is None else now
        report = SegmentReport()
        with self._core._lock:
            if early is None:
                due = self.due_segments(now, limit=max_segments + 1)
            else:
                live = set(self._core._live_segments())
                due = [seg for seg in early if seg in live][: max_segments + 1]
            report.remaining = len(due) > max_segments
            due = due[:max_segments]
            part = None
            if max_versions is not None:
                kept = self._fitting(due, max_versions)
                report.remaining |= len(kept) < len(due)
                part = due[0] if due and not kept else None
                due = kept
            batch = Batch()
            batch.dying = set(due)
            if due:
                self._expire_into(batch, due, now, report)
            elif part is not None and max_versions is not None:
                self._expire_part(batch, part, max_versions, now, purge_keys, report)
            if now > self._core.clock() and (due or self._deadlines_by(now)):
                batch.put(keys.cursor(CLOCK), orjson.dumps(now))
            if due:  # their versions' ledgers can be packed now
                seq = self._core._get_u64(keys.cursor(SLIM_DUE)) + 1
                batch.put(keys.cursor(SLIM_DUE), keys.U64.pack(seq))
            killpoint("segment_before_batch")
            self._core._write(batch)
            killpoint("segment_after_batch")
            report.keys_deleted = batch.deleted
            report.keys_deleted += self._ledgers._purge_retired(batch, purge_keys).keys_deleted
        return report

    def _expire_into(
        self, batch: Batch, due: list[bytes], now: float, report: SegmentReport
    ) -> None:
        """The batch's protections, copy-outs, fold, states and range deletes."""
        members = {seg: list(self.segment_versions(seg)) for seg in due}
        protected = self._protected_in(batch, members, now)
        for (doc, ver), ledger in protected.items():
            self._hold(batch, doc, ledger, ver)
            report.held.append(make_locator(doc.decode(), ver))
        sources = self._sources_in(batch, due)
        held = {keys.dv(doc, ver) for doc, ver in protected}
        for seg in due:
            report.terms_folded += self._fold(batch, seg)
            report.expired += [
                make_locator(*keys.split_dv(dv)) for dv in members[seg] if dv not in held
            ]
            batch.states[seg] = keys.SEG_EXPIRED
            start = keys.segment_prefix(seg)
            batch.wb.delete_range(start, keys.prefix_end(start))
        report.segments = len(due)
        for source in sources:
            self._ledgers._follow_sources(batch, source, now)
        report.followed = batch.followed
        _drop_dying(batch)
        self._core._fold_if_long(batch)  # (a long journal: here too)

    def _fitting(self, due: list[bytes], max_versions: int) -> list[bytes]:
        """The leading segments of ``due`` whose versions together fit ``max_versions``."""
        total = 0
        for i, seg in enumerate(due):
            raw = self._core._db.get(keys.seg_corpus(seg))
            total += orjson.loads(raw)["versions"] if raw is not None else 0
            if total > max_versions:
                return due[:i]
        return due

    def _expire_part(
        self,
        batch: Batch,
        seg: bytes,
        limit: int,
        now: float,
        purge_keys: int,
        report: SegmentReport,
    ) -> None:
        """Retire the first ``limit`` versions of a due segment too large for one batch,
        one by one: a protected one is copied out to the held segment, the others are
        tombstoned (purged in this batch within ``purge_keys`` deletes, else queued).
        Each leaves the segment's members and statistics, so the segment stays exact
        and the next batch sees only the rest."""
        for dv in itertools.islice(self.segment_versions(seg), limit):
            doc_id, ver = keys.split_dv(dv)
            doc = doc_id.encode()
            ledger = self._core._ledger(doc, batch)
            if ledger is None or not self._core._stored_live(
                ledger, ledger["versions"][ver - 1], batch
            ):
                continue  # (retired earlier in this batch: a derived document following)
            locator = make_locator(doc_id, ver)
            if self._core._is_pinned(doc, batch) or self._core._protected_by_lease(
                doc, ver, now, batch, ledger
            ):
                self._hold(batch, doc, ledger, ver)
                report.held.append(locator)
                continue
            self._ledgers._retire(
                batch, doc, ledger, ver, "expired", now, purge_budget=purge_keys - batch.deleted
            )
            report.expired.append(locator)
        report.followed = batch.followed
        self._core._fold_if_long(batch)

    def _hold(self, batch: Batch, doc: bytes, ledger: dict[str, Any], ver: int) -> None:
        """Copy a protected version out of its dying segment to the held one; it enters
        the per-version index (unless pinned: unpinning puts it there)."""
        self._core._move_version(batch, doc, ledger, ver, keys.HELD_BUCKET)
        v = ledger["versions"][ver - 1]
        v["gen"] += 1
        if not self._core._is_pinned(doc, batch):
            entry = self._core._expiry_key(v["expires_at"], ledger["class"], doc, ver)
            batch.put(entry, keys.U32.pack(v["gen"]))

    def _fold(self, batch: Batch, seg: bytes) -> int:
        """Subtract a dying segment's statistics deltas (less its copied-out versions)
        from its project's; returns the terms folded. The keys its range delete takes
        are counted as deleted (what the compaction trigger counts): a posting per
        unit of its document frequencies, three keys a version (payload, term list,
        member record; four with codes), its statistics."""
        project = keys.parse_segment(seg)[0]
        head, df, moved = keys.termstat(project, b""), batch.df, batch.moved_df
        prefix = keys.seg_family(seg, keys.SEG_TERMSTAT)
        cut, to_int, get = len(prefix), int.from_bytes, df.get
        n = postings = 0
        it, _bound = self._core._iter(prefix)
        key, value, step, valid = it.key, it.value, it.next, it.valid
        while valid():  # the hot loop: one pass per (segment, term), no generator
            k, stored = key(), to_int(value(), "big")
            postings += stored
            if moved and k in moved:
                stored -= moved[k]
            if stored:
                stat = head + k[cut:]
                df[stat] = get(stat, 0) - stored
            n += 1
            step()
        raw = self._core._db.get(keys.seg_corpus(seg))
        versions = 0
        if raw is not None:
            c = orjson.loads(raw)
            versions = c["versions"]
            kept = batch.moved_corpus.get(seg, [0, 0])
            total = batch.corpus.setdefault(keys.corpus(project), [0, 0])
            total[0] -= c["versions"] - kept[0]
            total[1] -= c["length"] - kept[1]
        per_version = 3 + (self._core._db.get(keys.VECTORS_META) is not None)
        batch.deleted += postings + per_version * versions + n + (raw is not None)
        return n

    def slim_expired_ledgers(self, *, limit: int = 10_000) -> tuple[int, bool]:
        """Rewrite the ledgers (at most ``limit`` looked at, from a cursor) whose live
        versions sit in expired segments: those versions become ``expired`` and purged
        in the ledger itself, which packs to a tombstone when nothing else is left (a
        segment's expiry rewrites no ledger; until this pass its state answers).
        Unsynced: a pass lost in a crash is redone. Returns (rewritten, done)."""
        self._core._need_primary()
        with self._core._lock:
            due = self._core._get_u64(keys.cursor(SLIM_DUE))
            began, start = self._core._get_json(keys.cursor(SLIM_CURSOR)) or [due, keys.DOC.hex()]
            if not due:
                return 0, True  # no segment expired since the last complete walk
            batch = Batch(sync=False)
            states: dict[bytes, bytes | None] = {}
            seen, last, clock = 0, b"", self._core.clock()
            end = keys.prefix_end(keys.DOC)
            for key, raw in self._core._scan(bytes.fromhex(start), end, fill_cache=False):
                seen, last = seen + 1, key
                if raw[:1] == b"{":  # (a packed tombstone has nothing live)
                    self._slim(batch, key, codec.decode_ledger(raw), states, clock)
                if seen >= limit:
                    break
            done = seen < limit
            if not done:
                cursor = [began, (last + b"\x00").hex()]
                batch.put(keys.cursor(SLIM_CURSOR), orjson.dumps(cursor))
            elif began == due:  # nothing expired since this walk began: all packed
                batch.wb.delete(keys.cursor(SLIM_CURSOR))
                batch.wb.delete(keys.cursor(SLIM_DUE))
            else:  # a segment expired meanwhile: walk again from the first ledger
                batch.put(keys.cursor(SLIM_CURSOR), orjson.dumps([due, keys.DOC.hex()]))
                done = False
            self._core._write(batch)
            return len(batch.ledgers), done

    def _slim(
        self,
        batch: Batch,
        key: bytes,
        ledger: dict[str, Any],
        states: dict[bytes, bytes | None],
        clock: float,
    ) -> None:
        for v in ledger["versions"]:
            if v["status"] != "live" or "b" not in v:
                continue
            seg = self._core._seg(ledger, v)
            if seg not in states:
                states[seg] = self._core._db.get(keys.segment_state(seg))
            if states[seg] == keys.SEG_EXPIRED:
                v.update(status="expired", purged=True)
                v["retired_at"] = min(v["expires_at"], max(clock, v["created_at"]))
                batch.ledgers[key] = ledger

    # ---- what the batch's walk finds

    def _protected_in(
        self, batch: Batch, members: dict[bytes, list[bytes]], now: float
    ) -> dict[tuple[bytes, int], dict[str, Any]]:
        """``{(doc, version): ledger}`` of the versions in the dying segments that a
        pin, an active-context lease, a retrieval lease or a session lease protects
        now: one walk of each protection family for the whole batch."""
        found: dict[tuple[bytes, int], dict[str, Any]] = {}

        def consider(doc: bytes, ver: int | None = None) -> None:
            ledger = self._core._ledger(doc, batch)
            if ledger is None:
                return
            ver = ledger["current"] if ver is None else ver
            if ver > len(ledger["versions"]) or (doc, ver) in found:
                return
            v = ledger["versions"][ver - 1]
            if v["status"] == "live" and "b" in v and self._core._seg(ledger, v) in batch.dying:
                batch.ledgers[keys.doc(doc)] = ledger  # one dict for every change to it
                found[(doc, ver)] = ledger

        for key, _ in self._core._prefix(keys.PIN, fill_cache=False):
            consider(keys.doc_of(key))
        for key, epoch in self._core._prefix(keys.REV, fill_cache=False):
            doc, ver, client = _parse_rev(key)
            if self._core._owner_live(client, epoch, now):
                consider(doc, ver)
        for key, raw in self._core._prefix(keys.RLEASE, fill_cache=False):
            if keys.U64.unpack(raw)[0] > ms(now):
                doc_id, ver = keys.split_dv(key[1:])
                consider(doc_id.encode(), ver)
        sessions = self._leased_sessions(now)
        if sessions:
            for seg, dvs in members.items():
                if keys.parse_segment(seg)[0] in {p for p, _ in sessions}:
                    self._consider_sessions(batch, dvs, sessions, consider)
        return found

    def _leased_sessions(self, now: float) -> dict[tuple[bytes, bytes], int]:
        """``{(project, session): since_ms}`` of every session a live lease protects:
        the earliest retention clock at which a live lease named it (it protects the
        current versions whose deadline is after that)."""
        out: dict[tuple[bytes, bytes], int] = {}
        for key, raw in self._core._prefix(keys.SESSION_REF, fill_cache=False):
            project, session, client = _parse_session_ref(key)
            epoch, since = keys.parse_session_ref_value(raw)
            earliest = out.get((project, session))
            if earliest is not None and earliest <= since:
                continue
            if self._core._owner_live(client, epoch, now):
                out[project, session] = since
        return out

    def _consider_sessions(
        self,
        batch: Batch,
        dvs: list[bytes],
        sessions: dict[tuple[bytes, bytes], int],
        consider: Any,
    ) -> None:
        """Offer each current version of a leased session among ``dvs`` whose deadline
        is after the clock at which the lease named the session (ledgers read in one
        multi-get: paid only where a project has a live session lease)."""
        docs = list(dict.fromkeys(keys.split_dv(dv)[0].encode() for dv in dvs))
        self._core._read_ahead(batch, [keys.doc(d) for d in docs])
        for dv in dvs:
            doc_id, ver = keys.split_dv(dv)
            ledger = self._core._ledger(doc_id.encode(), batch)
            if ledger is None or not ledger.get("session") or ledger["current"] != ver:
                continue
            since = sessions.get((ledger["project"].encode(), ledger["session"].encode()))
            deadline = ledger["versions"][ver - 1]["expires_at"]
            if since is not None and deadline_after(deadline, since):
                consider(doc_id.encode(), ver)

    def _sources_in(self, batch: Batch, due: list[bytes]) -> list[bytes]:
        """Source documents (with derived documents) whose current version is in a
        dying segment: their derived documents may follow them."""
        out: list[bytes] = []
        for key, _ in self._core._prefix(keys.DERIVED, fill_cache=False):
            source = key[1 : key.index(keys.SEP, 1)]
            if out and out[-1] == source:
                continue
            ledger = self._core._ledger(source, batch)
            if ledger is None:
                continue
            v = ledger["versions"][ledger["current"] - 1]
            if v["status"] == "live" and "b" in v and self._core._seg(ledger, v) in batch.dying:
                out.append(source)
        return out


def _parse_rev(key: bytes) -> tuple[bytes, int, bytes]:
    """``(doc, version, client)`` of a reverse lease reference ``R doc 0 ver:u32 client``."""
    i = key.index(keys.SEP, 1)
    return key[1:i], keys.U32.unpack(key[i + 1 : i + 5])[0], key[i + 5 :]


def _parse_session_ref(key: bytes) -> tuple[bytes, bytes, bytes]:
    """``(project, session, client)`` of ``W project 0 session 0 client``."""
    project, session, client = key[1:].split(keys.SEP, 2)
    return project, session, client


def _drop_dying(batch: Batch) -> None:
    """No statistic change may land inside a range the batch deletes (it would be
    written after the delete and outlive the segment)."""
    for changes in (batch.df, batch.corpus):
        for key in [k for k in changes if k[:1] == keys.SEGMENT]:
            if keys.segment_of(key) in batch.dying:
                del changes[key]
