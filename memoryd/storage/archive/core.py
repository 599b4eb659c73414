"""The open RocksDB handle every part of the store shares: opening, the one lock,
batched writes with their counters, scans, ledger reads.

The parts of :class:`~memoryd.storage.archive.ArchiveStore` (ledgers, segments,
expiry, protections, postings, meta...) are components that receive the core (the
store itself) and the components they call: one store object, one lock, one write
batch per operation. What more than one part needs stays here: where a version's
keys live and move, what its status is now (including what protects it), and the
document-frequency journal every retiring batch writes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from rocksdict import (
    AccessType,
    BlockBasedOptions,
    Cache,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from memoryd.base import killpoints
from memoryd.base.errors import (
    ArchiveBusy,
    ArchiveError,
    ArchiveReadOnly,
    BadArchiveInput,
    LocatorNotFound,
    corruption,
    is_corruption,
    typed_corruption,
)
from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.codec import CURRENT_PAYLOAD_FORMAT, PAYLOAD_FORMATS
from memoryd.storage.archive.records import VersionInfo, deadline_after, ms, parse_locator

#: Width of an expiry time bucket, fixed when the archive is created (stored in meta).
DEFAULT_BUCKET_SECONDS = 3600

#: Width of an expiry segment (a day): fixed when the archive is created (stored in meta).
DEFAULT_SEGMENT_SECONDS = 86_400

#: The archive layout this code writes: 2 = content keys by expiry segment.
LAYOUT = 2

#: Cursor holding the retention clock: the time of the last wave (a float, orjson).
CLOCK = "archive.clock"

#: Block cache of one open archive (RocksDB's default is 8 MiB).
BLOCK_CACHE_BYTES = 32 * 1024 * 1024

#: A wave folds the journal into the term statistics once it holds this many records.
DF_JOURNAL_FOLD_RECORDS = 32

#: Most decoded journal records a reader keeps (of every project).
JOURNAL_CACHE_RECORDS = 4 * DF_JOURNAL_FOLD_RECORDS

#: RocksDB info logs kept in the archive directory (one per open; its default keeps 1000).
INFO_LOGS_KEPT = 10


@dataclass
class Batch:
    """A WriteBatch plus the ledgers/counters changed inside it (read-your-writes)."""

    wb: WriteBatch = field(default_factory=lambda: WriteBatch(raw_mode=True))
    ledgers: dict[bytes, dict[str, Any]] = field(default_factory=dict)
    df: Counter[bytes] = field(default_factory=Counter)
    """Document-frequency changes by statistic key (global ``T`` and segment ``Z seg T``)."""
    removed: dict[bytes, list[bytes]] = field(default_factory=dict)
    """Terms of versions leaving the statistics (once per version), per project: one
    journal record each (:meth:`StoreCore._write`), folded into the statistics later."""
    folded: dict[bytes, Counter[bytes]] = field(default_factory=dict)
    """Journal removals this batch folds into the term statistics, per project."""
    corpus: dict[bytes, list[int]] = field(default_factory=dict)
    """Corpus changes ``[versions, length]`` by corpus key (global ``S`` and ``Z seg S``)."""
    states: dict[bytes, bytes] = field(default_factory=dict)
    """Segment states this batch writes (a segment that gets keys is live; a wave's
    segments are expired)."""
    deleted: int = 0
    reads: dict[bytes, bytes | None] = field(default_factory=dict)
    """Values read ahead in one multi-get (keys the batch does not change)."""
    rev_iter: Any = None  # one iterator over reverse lease references, reused by seeks
    leased: set[bytes] | None = None
    sessions: dict[tuple[bytes, bytes], tuple[str, int] | None] = field(default_factory=dict)
    """What protects each session looked up in this batch: the live lease that named it
    first, and since when (ms)."""
    """Versions (dv) that have reverse lease references, when read ahead for the batch."""
    followed: list[str] = field(default_factory=list)  # derived versions expired with a source
    queued: list[tuple[bytes, bytes, int, bytes]] = field(default_factory=list)
    """Versions this batch retired and queued for purge: ``(dv, doc, version, segment)``."""
    dying: set[bytes] = field(default_factory=set)
    """Segments this batch expires (a wave): their keys go by one range delete."""
    moved_df: Counter[bytes] = field(default_factory=Counter)
    """Versions copied out of a dying segment, by that segment's statistic key: its
    fold subtracts only the versions that stay."""
    moved_corpus: dict[bytes, list[int]] = field(default_factory=dict)
    """The same for the dying segments' corpus records."""
    sync: bool = True
    """False for work a crash only has to redo (purges): written to the WAL, not fsynced
    (the next synced write, or the OS, makes it durable; losing it loses nothing)."""

    def put(self, key: bytes, value: bytes) -> None:
        self.wb.put(key, value)

    def delete(self, key: bytes) -> None:
        self.wb.delete(key)
        self.deleted += 1


def killpoint(name: str) -> None:
    """A named crash point for drills (``MEMORYD_KILL_AT=NAME[:N]``); see ``KILL_POINTS``."""
    killpoints.reach(name)


class StoreCore:
    """An open archive. Use :meth:`open_primary` or :meth:`open_secondary`.

    Thread-safe: mutations are serialized by one lock; reads need none.
    Times are epoch seconds (floats); every method that depends on the clock
    takes ``now`` (default ``time.time()``) so tests and drills can move it.
    """

    def __init__(self, db: Rdict, path: Path, *, readonly: bool, sync: bool) -> None:
        self._db = db
        self.path = path
        self.readonly = readonly
        self._lock = threading.RLock()
        self._wopt = WriteOptions()
        self._wopt.sync = sync
        self._wopt_redoable = WriteOptions()  # Batch.sync False
        self._closed = False
        self._queue_empty = False
        """The purge queue is known empty: a purge found it so and nothing queued since
        (this process is the only writer). A purge then does not walk the queue's
        deleted entries again."""
        self._queued_terms: dict[bytes, tuple[list[bytes], list[bytes]]] = {}
        """What purging versions queued by this process deletes (removal.version_removal)."""
        self._journal_cache: dict[bytes, Counter[str]] = {}
        """Decoded document-frequency journal records (immutable), by key."""
        self._read_format()
        self.admission: Callable[[int], None] | None = None
        """Called with the encoded size before every append; may raise :class:`DiskLow`."""

    def _read_format(self) -> None:
        meta = self._get_json(keys.FORMAT) or {}
        self.bucket_seconds: int = int(meta.get("bucket_seconds", DEFAULT_BUCKET_SECONDS))
        self.payload_format: int = int(meta.get("payload_format", CURRENT_PAYLOAD_FORMAT))
        self.segment_seconds: int = int(meta.get("segment_seconds", DEFAULT_SEGMENT_SECONDS))
        self.layout: int = int(meta.get("layout", 1))

    # ---- opening

    @staticmethod
    def _options(create: bool) -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(create)
        # Bloom filters: the checks of a wave look up pins and retrieval leases that
        # almost never exist; without a filter each miss reads a block of every level.
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        table.set_block_cache(Cache(BLOCK_CACHE_BYTES))
        opts.set_block_based_table_factory(table)
        # Files full of deletes are picked up by background compaction after a flush.
        opts.add_compact_on_deletion_collector_factory(4096, 1024, 0.3)
        opts.set_max_background_jobs(2)
        opts.set_keep_log_file_num(INFO_LOGS_KEPT)
        return opts

    @classmethod
    def open_primary(
        cls,
        path: Path | str,
        *,
        sync: bool = True,
        bucket_seconds: int = DEFAULT_BUCKET_SECONDS,
        payload_format: int = CURRENT_PAYLOAD_FORMAT,
        segment_seconds: int = DEFAULT_SEGMENT_SECONDS,
    ):
        """Open (creating if needed) the archive read-write.

        Only one process may: a second raises :class:`ArchiveBusy`. ``sync``
        fsyncs the WAL on every write batch. ``bucket_seconds``,
        ``payload_format`` and ``segment_seconds`` apply only when the archive is
        created (afterwards they are read from the archive itself).
        """
        path = Path(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot create the archive directory {path} ({exc})") from None
        try:
            db = Rdict(str(path), cls._options(True))
        except Exception as exc:  # rocksdict raises bare Exception
            if "lock" in str(exc).lower():
                busy = ArchiveBusy(
                    f"the archive {path} is open read-write elsewhere; "
                    "retry when it lets go, or read with a secondary instance"
                )
                busy.in_this_process = "current process" in str(exc)
                raise busy from None
            if is_corruption(exc):
                raise corruption(exc, str(path)) from None
            raise ArchiveError(f"cannot open the archive {path}: {exc}") from None
        if db.get(keys.FORMAT) is None:
            if payload_format not in PAYLOAD_FORMATS:
                db.close()
                raise BadArchiveInput(f"payload_format must be one of {PAYLOAD_FORMATS}")
            wopt = WriteOptions()
            wopt.sync = True
            db.put(
                keys.FORMAT,
                orjson.dumps(
                    {
                        "layout": LAYOUT,
                        "bucket_seconds": int(bucket_seconds),
                        "segment_seconds": int(segment_seconds),
                        "payload_format": payload_format,
                    }
                ),
                wopt,
            )
        return cls(db, path, readonly=False, sync=sync)

    @classmethod
    def open_secondary(cls, path: Path | str, secondary_path: Path | str):
        """Open a read-only secondary instance (any process, any number of them).

        ``secondary_path`` is a private directory for this instance's info log
        (one per process). Call :meth:`catch_up` to see the primary's newer writes.
        """
        path, secondary_path = Path(path), Path(secondary_path)
        if not (path / "CURRENT").exists():
            raise ArchiveError(f"{path} is not an archive (no RocksDB CURRENT file)")
        secondary_path.mkdir(parents=True, exist_ok=True)
        try:
            db = Rdict(
                str(path),
                cls._options(False),
                access_type=AccessType.secondary(str(secondary_path)),
            )
        except Exception as exc:
            if is_corruption(exc):
                raise corruption(exc, str(path)) from None
            raise ArchiveError(f"cannot open the archive {path} as a secondary: {exc}") from None
        return cls(db, path, readonly=True, sync=False)

    @classmethod
    def open_read_only(cls, path: Path | str):
        """Open a read-only instance beside whichever process holds the archive (it takes
        no lock). Unlike a secondary, whose view leaves out a file it cannot find (the
        primary may have compacted it away), the open checks every file the MANIFEST
        names: a lost SST, MANIFEST or CURRENT fails here (``doctor --deep``)."""
        path = Path(path)
        try:
            db = Rdict(str(path), cls._options(False), access_type=AccessType.read_only())
        except Exception as exc:
            if is_corruption(exc):
                raise corruption(exc, str(path)) from None
            raise ArchiveError(f"cannot open the archive {path} read-only: {exc}") from None
        try:
            with typed_corruption(str(path)):  # it reads the archive's format key
                return cls(db, path, readonly=True, sync=False)
        except BaseException:
            db.close()
            raise

    def catch_up(self) -> None:
        """Secondary only: read the primary's newer writes."""
        if self.readonly:
            self._db.try_catch_up_with_primary()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with self._lock:
                if not self.readonly:
                    self._db.flush_wal(True)
                self._db.close()

    def verify_checksums(self) -> int:
        """Read every key and value with their blocks' checksums checked, uncached
        (``doctor --deep``); the keys read. A damaged block or a lost file raises
        :class:`Corrupt` naming it."""
        ropt = ReadOptions()
        ropt.set_verify_checksums(True)
        ropt.fill_cache(False)
        read = 0
        try:
            it = self._db.iter(ropt)
            it.seek_to_first()
            while it.valid():
                it.value()
                read += 1
                it.next()
            it.status()  # an iteration a read error ended says so here
        except Exception as exc:
            if is_corruption(exc):
                raise corruption(exc, str(self.path)) from None
            raise
        return read

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- payload encoding (kept on the store for the layers above)

    encode_payload = staticmethod(codec.encode_payload)
    decode_payload = staticmethod(codec.decode_payload)
    payload_format_of = staticmethod(codec.payload_format_of)

    # ---- low-level

    def _need_primary(self) -> None:
        if self.readonly:
            raise ArchiveReadOnly(
                "this archive handle is a read-only secondary; send writes to the retention "
                "worker (or open the archive read-write when no worker runs)"
            )

    def _write(self, batch: Batch) -> None:
        if batch.removed:
            self._fold_if_long(batch)
            self._journal_removed(batch)
        if batch.df or batch.folded:
            self._apply_df(batch)
        if batch.deleted:
            total = self._get_u64(keys.DELETED_KEYS) + batch.deleted
            batch.put(keys.DELETED_KEYS, keys.U64.pack(total))
        for key, ledger in batch.ledgers.items():
            batch.put(key, codec.encode_ledger(ledger))
        self._apply_corpus(batch)
        for seg, state in batch.states.items():
            batch.put(keys.segment_state(seg), state)
        if len(batch.wb):
            self._db.write(batch.wb, self._wopt if batch.sync else self._wopt_redoable)

    def _journal_removed(self, batch: Batch) -> None:
        """One journal record per project for the terms leaving the statistics: a
        wave writes one key instead of a read-modify-write of every term it held."""
        seq = self._get_u64(keys.DF_JOURNAL_SEQ)
        for project, terms in batch.removed.items():
            seq += 1
            batch.put(keys.df_journal(project, seq), b"\n".join(terms))
        batch.put(keys.DF_JOURNAL_SEQ, keys.U64.pack(seq))

    def _apply_df(self, batch: Batch) -> None:
        """Document-frequency changes (appends', folded removals) into the term
        statistics, one multi-get in key order; a statistic that reaches zero is
        deleted. (A fold touches most of a project's vocabulary: the loop is flat.)"""
        deltas = {k: d for k, d in batch.df.items() if d}
        for project, counts in batch.folded.items():
            head = keys.termstat(project, b"")
            if not deltas:  # a fold alone (retention): no append's change to merge
                deltas = {head + term: -n for term, n in counts.items()}
                continue
            for term, n in counts.items():
                key = head + term
                deltas[key] = deltas.get(key, 0) - n
        stat_keys = sorted(deltas)
        put, delete, deleted = batch.wb.put, batch.wb.delete, 0
        for key, raw in zip(stat_keys, self._db.get(stat_keys), strict=True):
            value = (int.from_bytes(raw, "big") if raw else 0) + deltas[key]
            if value > 0:
                put(key, value.to_bytes(8, "big"))
            elif raw is not None:
                delete(key)
                deleted += 1
        batch.deleted += deleted

    def _apply_corpus(self, batch: Batch) -> None:
        """Corpus changes into the global and segment corpus records (one multi-get); a
        segment's record that reaches zero is deleted."""
        wanted = list(batch.corpus)
        for key, raw in zip(wanted, self._db.get(wanted), strict=True):
            old = orjson.loads(raw) if raw else {"versions": 0, "length": 0}
            dv, dl = batch.corpus[key]
            new = {"versions": old["versions"] + dv, "length": old["length"] + dl}
            if key[:1] == keys.SEGMENT and new["versions"] <= 0:
                if raw is not None:
                    batch.wb.delete(key)
            else:
                batch.put(key, orjson.dumps(new))

    @staticmethod
    def _count(batch: Batch, project: bytes | None, seg: bytes, length: int, sign: int) -> None:
        """A version entering (``sign`` 1) or leaving (-1) its segment's corpus
        statistics, and the project's (``project`` None: it stays live, it moves)."""
        wanted = [keys.seg_corpus(seg)] + ([] if project is None else [keys.corpus(project)])
        for key in wanted:
            c = batch.corpus.setdefault(key, [0, 0])
            c[0] += sign
            c[1] += sign * length

    # ---- segments and what a version's status is now

    def _bucket_of(self, expires_at: float | None) -> int:
        """The segment bucket of a deadline (None: the held segment)."""
        if expires_at is None:
            return keys.HELD_BUCKET
        return int(expires_at // self.segment_seconds)

    @staticmethod
    def _seg(ledger: dict[str, Any], v: dict[str, Any]) -> bytes:
        """The segment a version's keys live in (its ledger names its bucket)."""
        return keys.segment(
            ledger["project"].encode(),
            v.get("b", keys.HELD_BUCKET),
            keys.CLASS_CODE[ledger["class"]],
        )

    def _open_bucket(self, project: bytes, cls: str, expires_at: float | None, batch: Batch) -> int:
        """The bucket a version with this deadline goes to: its deadline's segment, or
        the held one when that segment has expired already (a version written into an
        expired range would never be deleted: the per-version path expires it)."""
        bucket = self._bucket_of(expires_at)
        seg = keys.segment(project, bucket, keys.CLASS_CODE[cls])
        if bucket != keys.HELD_BUCKET and self._seg_state(seg, batch) == keys.SEG_EXPIRED:
            return keys.HELD_BUCKET
        return bucket

    def _put_version(
        self,
        batch: Batch,
        seg: bytes,
        dv: bytes,
        payload: bytes,
        values: dict[str, bytes],
        codes: bytes | None,
        length: int,
    ) -> None:
        """Every key of a new version in segment ``seg`` (:meth:`_place`), counted in
        the project's statistics too."""
        terms = keys.encode_terms(list(values))
        listed = keys.join_terms(list(values))
        stored = dict(zip(terms, values.values(), strict=True))
        self._place(batch, seg, dv, payload, listed, stored, codes, length)
        project = keys.parse_segment(seg)[0]
        head, df = keys.termstat(project, b""), batch.df
        for term in terms:
            df[head + term] += 1
        c = batch.corpus.setdefault(keys.corpus(project), [0, 0])
        c[0] += 1
        c[1] += length

    def _place(
        self,
        batch: Batch,
        seg: bytes,
        dv: bytes,
        payload: bytes,
        listed: bytes,
        values: dict[bytes, bytes | None],
        codes: bytes | None,
        length: int,
    ) -> None:
        """A version's stored values under segment ``seg`` (payload, term list, member
        record, codes, postings), counted in the segment's statistics (a version that
        moves stays counted in the project's); the segment is marked live."""
        batch.put(keys.seg_payload(seg, dv), payload)
        batch.put(keys.seg_terms(seg, dv), listed)
        batch.put(keys.seg_member(seg, dv), b"")
        if codes is not None:
            batch.put(keys.seg_codes(seg, dv), codes)
        terms = list(values)
        put, df = batch.wb.put, batch.df
        for key, value in zip(keys.seg_postings_of(seg, terms, dv), values.values(), strict=True):
            if value is not None:
                put(key, value)
        for key in keys.seg_termstats_of(seg, terms):
            df[key] += 1
        self._count(batch, None, seg, length, 1)
        state_key = keys.segment_state(seg)
        if seg not in batch.states and state_key not in batch.reads:
            state = self._db.get(state_key)
            if state == keys.SEG_EXPIRED:  # its range was deleted: a key here would stay
                raise ArchiveError(f"segment {seg!r} has expired; nothing may enter it")
            batch.reads[state_key] = state
            if state is None:
                batch.states[seg] = keys.SEG_LIVE

    def _live_segments(self, project: bytes | None = None) -> list[bytes]:
        """The live segments (of ``project``, or all), in key order."""
        prefix = keys.segment_states_prefix(project)
        return [
            keys.state_segment(key)
            for key, state in self._prefix(prefix, fill_cache=False)
            if state == keys.SEG_LIVE
        ]

    def _segment_items(
        self, family: bytes, project: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes, bytes]]:
        """``(segment, key, value)`` of one family (``SEG_*``) in every live segment."""
        for seg in self._live_segments(project):
            for key, value in self._prefix(keys.seg_family(seg, family), fill_cache=False):
                yield seg, key, value

    def _seg_state(self, seg: bytes, batch: Batch | None = None) -> bytes | None:
        if batch is not None and seg in batch.states:
            return batch.states[seg]
        return self._get(keys.segment_state(seg), batch)

    def _stored_live(
        self,
        ledger: dict[str, Any],
        v: dict[str, Any],
        batch: Batch | None = None,
        live: set[bytes] | None = None,
    ) -> bool:
        """The version's keys are still in the store and counted by the statistics:
        its ledger says live and its segment has not expired (``live``: the live
        segments, read once by a caller asking about many versions)."""
        if v["status"] != "live":
            return False
        if live is not None:
            return self._seg(ledger, v) in live
        return self._seg_state(self._seg(ledger, v), batch) != keys.SEG_EXPIRED

    def clock(self) -> float:
        """The retention clock: the time the last wave ran at (0: none yet). A version
        whose deadline is not after it reads expired unless a protection holds it,
        whether or not its segment has gone yet."""
        raw = self._db.get(keys.cursor(CLOCK))
        return float(orjson.loads(raw)) if raw else 0.0

    def _status(
        self,
        doc: bytes,
        ledger: dict[str, Any],
        ver: int,
        *,
        clock: float | None = None,
        batch: Batch | None = None,
        live: set[bytes] | None = None,
    ) -> str:
        """What a version is now: its ledger's status, except that a live version reads
        ``expired`` once its segment expired, or once its deadline is not after the
        retention clock and nothing protects it (exact visibility: its keys may stay
        until its segment's bucket ends)."""
        v = ledger["versions"][ver - 1]
        if not self._stored_live(ledger, v, batch, live):
            return "expired" if v["status"] == "live" else v["status"]
        deadline = v["expires_at"]
        if deadline is None or deadline > (self.clock() if clock is None else clock):
            return "live"
        now = self.clock() if clock is None else clock
        if self._is_pinned(doc, batch):
            return "live"
        guard = self._protected_by_lease(doc, ver, now, batch, ledger)
        return "live" if guard else "expired"

    def _get_json(self, key: bytes) -> Any:
        raw = self._db.get(key)
        return None if raw is None else orjson.loads(raw)

    def _get_u64(self, key: bytes) -> int:
        raw = self._db.get(key)
        return keys.U64.unpack(raw)[0] if raw else 0

    def _scan(
        self,
        start: bytes,
        end: bytes | None,
        *,
        fill_cache: bool = True,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Keys in ``[start, end)`` in order (``end`` None: to the end of the store)."""
        ropt = ReadOptions()
        if end is not None:
            ropt.set_iterate_upper_bound(end)
        if not fill_cache:
            ropt.fill_cache(False)
        it = self._db.iter(ropt)
        it.seek(start)
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def _iter(self, prefix: bytes) -> tuple[Any, ReadOptions]:
        """A raw iterator positioned on the first key under ``prefix``, bounded by its
        end, uncached (a long one-off read: a segment's statistics), and its options:
        the caller keeps them alive while it iterates (the bound lives in them)."""
        ropt = ReadOptions()
        end = keys.prefix_end(prefix)
        if end is not None:
            ropt.set_iterate_upper_bound(end)
        ropt.fill_cache(False)
        it = self._db.iter(ropt)
        it.seek(prefix)
        return it, ropt

    def _prefix(self, prefix: bytes, **kw: Any) -> Iterator[tuple[bytes, bytes]]:
        return self._scan(prefix, keys.prefix_end(prefix), **kw)

    def _get(self, key: bytes, batch: Batch | None = None) -> bytes | None:
        """A value, from ``batch``'s read-ahead when it holds the key."""
        if batch is not None and key in batch.reads:
            return batch.reads[key]
        return self._db.get(key)

    def _read_ahead(self, batch: Batch, wanted: list[bytes]) -> None:
        """Fetch ``wanted`` in one multi-get into ``batch.reads``."""
        batch.reads.update(zip(wanted, self._db.get(wanted), strict=True))

    def _ledger(self, doc: bytes, batch: Batch | None = None) -> dict[str, Any] | None:
        key = keys.doc(doc)
        if batch is not None and key in batch.ledgers:
            return batch.ledgers[key]
        raw = self._get(key, batch)
        return None if raw is None else codec.decode_ledger(raw)

    def _version_ledger(self, locator: str) -> tuple[bytes, int, dict[str, Any]]:
        """``(doc, version, ledger)`` of a locator; raises :class:`LocatorNotFound`."""
        doc_id, ver = parse_locator(locator)
        ledger = self._ledger(doc_id.encode())
        if ledger is None or ver > len(ledger["versions"]):
            raise LocatorNotFound(f"no archived version {locator}")
        return doc_id.encode(), ver, ledger

    def _is_pinned(self, doc: bytes, batch: Batch | None = None) -> bool:
        key = keys.pin(doc)
        if batch is not None and key in batch.reads:
            return batch.reads[key] is not None
        return key in self._db

    def _rev_refs(self, version: bytes, batch: Batch | None) -> Iterator[tuple[bytes, bytes]]:
        """Reverse lease references of a version (with a batch: one reused iterator)."""
        prefix = keys.rev_prefix(version)
        if batch is None:
            yield from self._prefix(prefix, fill_cache=False)
            return
        if batch.leased is not None and version not in batch.leased:
            return
        it = self._rev_iter(batch)
        it.seek(prefix)
        while it.valid() and it.key().startswith(prefix):
            yield it.key(), it.value()
            it.next()

    def _rev_iter(self, batch: Batch) -> Any:
        if batch.rev_iter is None:
            ropt = ReadOptions()
            ropt.fill_cache(False)
            batch.rev_iter = self._db.iter(ropt)
        return batch.rev_iter

    def _read_ahead_leased(self, batch: Batch, versions: list[bytes]) -> None:
        """Which of ``versions`` have reverse lease references (:meth:`_walk_present`)."""
        prefixes = {keys.rev_prefix(v): v for v in versions}
        found = self._walk_present(self._rev_iter(batch), prefixes, exact=False)
        batch.leased = {prefixes[p] for p in found}

    def _read_ahead_sparse(self, batch: Batch, wanted: list[bytes]) -> None:
        """Fetch keys that almost never exist (pins, retrieval leases) into
        ``batch.reads`` by one walk (:meth:`_walk_present`) instead of a lookup each."""
        ropt = ReadOptions()
        ropt.fill_cache(False)
        found = self._walk_present(self._db.iter(ropt), wanted, exact=True)
        batch.reads.update(dict.fromkeys(wanted))
        batch.reads.update(found)

    @staticmethod
    def _walk_present(it: Any, wanted: Iterable[bytes], *, exact: bool) -> dict[bytes, bytes]:
        """The ``wanted`` keys that exist (``exact``) or prefixes that start a key, with
        the first such key's value, walking them in key order with one iterator: a seek
        only where one may lie (none after the first when nothing is there), not one
        lookup per key."""
        found: dict[bytes, bytes] = {}
        current: bytes | None = None
        for want in sorted(set(wanted)):
            if current is not None and current < want:
                current = None
            if current is None:
                it.seek(want)
                current = it.key() if it.valid() else b"\xff"  # past every key
            if current == want or (not exact and current.startswith(want)):
                found[want] = it.value()
                current = None  # the next one seeks again
        return found

    def _expiry_key(self, expires_at: float, cls: str, doc: bytes, ver: int) -> bytes:
        bucket = int(expires_at // self.bucket_seconds)
        return keys.expiry(bucket, keys.CLASS_CODE[cls], keys.dv(doc, ver))

    def corpus_stats_raw(self, project: bytes) -> tuple[int, int]:
        raw = self._get_json(keys.corpus(project))
        return (raw["versions"], raw["length"]) if raw else (0, 0)

    def _info(self, doc_id: str, ledger: dict[str, Any], ver: int, pinned: bool) -> VersionInfo:
        v = ledger["versions"][ver - 1]
        status, retired_at, purged = v["status"], v.get("retired_at"), v.get("purged", False)
        if status == "live":
            status = self._status(doc_id.encode(), ledger, ver)
            if status == "expired":  # by its deadline (read-time) or its segment's expiry
                purged = not self._stored_live(ledger, v)  # (a disk-low pass: early)
                retired_at = min(v["expires_at"], max(self.clock(), v["created_at"]))
        return VersionInfo(
            doc_id=doc_id,
            version=ver,
            project=ledger["project"],
            cls=ledger["class"],
            session=ledger.get("session"),
            status=status,
            created_at=v["created_at"],
            expires_at=v["expires_at"],
            generation=v["gen"],
            override=v.get("override", False),
            length=v["len"],
            size=v["size"],
            sha256=v["sha256"],
            purged=purged,
            retired_at=retired_at,
            current_version=ledger["current"],
            pinned=pinned,
            forgotten=v.get("forgotten", False),
            aged_from=v.get("aged_from"),
        )

    # ---- what protects a version (every status read asks; leases and waves too)

    def _owner(self, client: bytes) -> dict[str, Any] | None:
        return self._get_json(keys.owner(client))

    def _owner_live(self, client: bytes, epoch_raw: bytes, now: float) -> bool:
        """A reference of ``client`` at this epoch protects: its owner has not lapsed."""
        owner = self._owner(client)
        return (
            owner is not None
            and owner["epoch"] == keys.U32.unpack(epoch_raw)[0]
            and owner["expires_at"] > now
        )

    def _protected_by_lease(
        self,
        doc: bytes,
        ver: int,
        now: float,
        batch: Batch | None = None,
        ledger: dict[str, Any] | None = None,
    ) -> str | None:
        """``"retrieval"``, ``"lease:<client>"``, ``"session:<client>"`` (a lease on the
        version's session, which protects its current version) or None. Streams
        references uncached and returns at the first live owner."""
        dv = keys.dv(doc, ver)
        raw = self._get(keys.rlease(dv), batch)
        if raw is not None and keys.U64.unpack(raw)[0] > ms(now):
            return "retrieval"
        for key, epoch_raw in self._rev_refs(dv, batch):
            client = keys.rev_client(key, dv)
            if self._owner_live(client, epoch_raw, now):
                return "lease:" + client.decode()
        ledger = self._ledger(doc, batch) if ledger is None else ledger
        if ledger is None or not ledger.get("session") or ver != ledger["current"]:
            return None
        project, session = ledger["project"].encode(), ledger["session"].encode()
        if batch is None:
            found = self._session_guard(project, session, now)
        else:  # a wave looks at many of a session's versions
            if (project, session) not in batch.sessions:
                batch.sessions[project, session] = self._session_guard(project, session, now)
            found = batch.sessions[project, session]
        deadline = ledger["versions"][ver - 1]["expires_at"]
        if found is None or not deadline_after(deadline, found[1]):
            return None  # a lease never brings back a version past its deadline
        return found[0]

    def _session_guard(self, project: bytes, session: bytes, now: float) -> tuple[str, int] | None:
        """``("session:<client>", since_ms)`` of the live lease on a session that named
        it at the earliest retention clock (it protects the current versions whose
        deadline is after ``since``), or None."""
        best: tuple[str, int] | None = None
        prefix = keys.session_ref_prefix(project, session)
        for key, raw in self._prefix(prefix, fill_cache=False):
            epoch, since = keys.parse_session_ref_value(raw)
            client = keys.session_ref_client(key, project, session)
            if (best is None or since < best[1]) and self._owner_live(client, epoch, now):
                best = ("session:" + client.decode(), since)
        return best

    # ---- the document-frequency journal (every retiring batch writes it: removal.py)

    def _journal_removals(self, project: bytes, terms: Iterable[str]) -> Counter[str]:
        """Versions of each term removed by journal records not yet folded."""
        cache = self._journal_cache
        prefix = keys.df_journal_prefix(project)
        seen: dict[bytes, Counter[str]] = {}
        out: Counter[str] = Counter()
        wanted = list(terms)
        for key, raw in self._prefix(prefix):
            counts = cache.get(key)
            if counts is None:
                counts = _journal_counts(raw)
            seen[key] = counts
            for t in wanted:
                n = counts.get(t)
                if n:
                    out[t] += n
        # records are immutable; the project's folded ones drop out, other projects' stay
        kept = {k: v for k, v in cache.items() if not k.startswith(prefix)}
        if len(kept) + len(seen) > JOURNAL_CACHE_RECORDS:
            kept = {}
        self._journal_cache = {**kept, **seen}
        return out

    def _journal(self) -> Iterator[tuple[bytes, bytes, Counter[str]]]:
        """Every journal record: ``(key, project, removals)``."""
        for key, raw in self._prefix(keys.df_journal_prefix(), fill_cache=False):
            yield key, keys.df_journal_project(key), _journal_counts(raw)

    def _fold_into(self, batch: Batch) -> int:
        """The journal's removals as statistic changes of ``batch``, its records deleted."""
        removed: dict[bytes, list[bytes]] = {}
        folded = 0
        for key, raw in self._prefix(keys.df_journal_prefix(), fill_cache=False):
            if raw:  # terms stay bytes: the statistics' keys are built from them
                removed.setdefault(keys.df_journal_project(key), []).extend(raw.split(b"\n"))
            batch.wb.delete(key)
            folded += 1
        if folded:  # the file holding the emptied statistics ends on this key, not a term
            batch.put(keys.DF_JOURNAL_SEQ, keys.U64.pack(self._get_u64(keys.DF_JOURNAL_SEQ)))
        for project, terms in removed.items():
            counts = Counter(terms)
            counts.update(batch.folded.get(project, ()))
            batch.folded[project] = counts
        return folded

    def _fold_if_long(self, batch: Batch) -> None:
        """Fold in ``batch`` when the journal reached :data:`DF_JOURNAL_FOLD_RECORDS`."""
        start = keys.df_journal_prefix()
        for i, _ in enumerate(self._scan(start, keys.prefix_end(start), fill_cache=False)):
            if i + 1 >= DF_JOURNAL_FOLD_RECORDS:
                self._fold_into(batch)
                return

    # ---- moving a version's keys to another segment (new deadline, class, hold)

    def _move_expiry(
        self,
        batch: Batch,
        doc: bytes,
        ledger: dict[str, Any],
        ver: int,
        expires_at: float | None,
        *,
        override: bool,
        old: bytes | None = None,
    ) -> int:
        """A new deadline under a new generation (the old entry goes; a pinned
        document gets no entry); the keys move to the deadline's segment (from
        ``old``: its segment before a class change). Returns the new generation."""
        v = ledger["versions"][ver - 1]
        if v["expires_at"] is not None and "b" not in v:  # held: it has an entry
            batch.wb.delete(self._expiry_key(v["expires_at"], ledger["class"], doc, ver))
        v["gen"] += 1
        v["expires_at"] = expires_at
        v["override"] = override
        bucket = self._open_bucket(ledger["project"].encode(), ledger["class"], expires_at, batch)
        if expires_at is not None and expires_at <= self.clock():
            bucket = keys.HELD_BUCKET  # due already: expired one by one, not a day later
        self._move_version(batch, doc, ledger, ver, bucket, old)
        if bucket == keys.HELD_BUCKET and expires_at is not None and not self._is_pinned(doc):
            batch.put(
                self._expiry_key(expires_at, ledger["class"], doc, ver), keys.U32.pack(v["gen"])
            )
        batch.ledgers[keys.doc(doc)] = ledger
        return v["gen"]

    def _move_version(
        self,
        batch: Batch,
        doc: bytes,
        ledger: dict[str, Any],
        ver: int,
        bucket: int,
        old: bytes | None = None,
    ) -> None:
        """Move a live version's keys to segment ``bucket`` of its project and class
        (values copied as stored; the segment statistics move with them). Out of a
        segment this batch expires (``batch.dying``) nothing is deleted: the range
        delete takes the old keys and its fold skips the version (``batch.moved_*``)."""
        v = ledger["versions"][ver - 1]
        old = self._seg(ledger, v) if old is None else old  # (given: the class changed)
        new = keys.segment(ledger["project"].encode(), bucket, keys.CLASS_CODE[ledger["class"]])
        if new == old:
            return
        dv = keys.dv(doc, ver)
        listed = self._get(keys.seg_terms(old, dv), batch)
        terms = keys.split_terms(listed) if listed else []
        old_postings = keys.seg_postings_of(old, terms, dv)
        values = dict(zip(terms, self._db.get(old_postings), strict=True))
        payload = self._get(keys.seg_payload(old, dv), batch)
        codes = self._get(keys.seg_codes(old, dv), batch)
        if payload is None:  # cannot happen for a live version; never invent content
            raise ArchiveError(f"live version {doc.decode()}@{ver} has no payload")
        self._place(batch, new, dv, payload, listed or b"", values, codes, v["len"])
        if old in batch.dying:
            for key in keys.seg_termstats_of(old, terms):
                batch.moved_df[key] += 1
            moved = batch.moved_corpus.setdefault(old, [0, 0])
            moved[0] += 1
            moved[1] += v["len"]
        else:
            for key in keys.seg_termstats_of(old, terms):
                batch.df[key] -= 1
            self._count(batch, None, old, v["len"], -1)
            for key in old_postings:
                batch.wb.delete(key)
            for own in (keys.seg_terms, keys.seg_member, keys.seg_payload, keys.seg_codes):
                batch.wb.delete(own(old, dv))
        if bucket == keys.HELD_BUCKET:
            v.pop("b", None)
        else:
            v["b"] = bucket
        batch.ledgers[keys.doc(doc)] = ledger


def _terms(raw: bytes) -> list[str]:
    return raw.decode().split("\n")


def _journal_counts(raw: bytes) -> Counter[str]:
    return Counter(_terms(raw)) if raw else Counter()
