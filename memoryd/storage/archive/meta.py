"""Meta records, cursors, the degraded state and RocksDB properties (:class:`Meta`);
flushes, compactions and raw key access for migrations (:class:`Maintenance`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from rocksdict import BottommostLevelCompaction, CompactOptions, WriteBatch

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import StoreCore
from memoryd.storage.archive.postings import Postings
from memoryd.storage.archive.segments import Segments


class Meta:
    """Everything about the store that is not a document: cursors and meta records the
    layers above keep, the degraded state, counters and RocksDB's properties.

    Interface: :meth:`get_cursor`, :meth:`set_cursor`, :meth:`get_meta`,
    :meth:`set_meta`, :meth:`degraded`, :meth:`set_degraded`,
    :meth:`deleted_keys_total`, :meth:`properties`, :meth:`latest_sequence_number`.
    Receives the core only.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def get_cursor(self, name: str) -> bytes | None:
        return self._core._db.get(keys.cursor(name))

    def set_cursor(self, name: str, value: bytes | None) -> None:
        self._core._need_primary()
        with self._core._lock:
            if value is None:
                self._core._db.delete(keys.cursor(name), self._core._wopt)
            else:
                self._core._db.put(keys.cursor(name), value, self._core._wopt)

    def get_meta(self, name: str) -> Any:
        """A JSON value the layers above keep in the archive (None when absent)."""
        return self._core._get_json(keys.user_meta(name))

    def set_meta(self, name: str, value: Any) -> None:
        self._core._need_primary()
        with self._core._lock:
            if value is None:
                self._core._db.delete(keys.user_meta(name), self._core._wopt)
            else:
                self._core._db.put(keys.user_meta(name), orjson.dumps(value), self._core._wopt)

    def degraded(self) -> dict[str, Any] | None:
        """The durable degraded (disk-low) state, or None."""
        return self._core._get_json(keys.DEGRADED)

    def set_degraded(self, state: dict[str, Any] | None) -> None:
        self._core._need_primary()
        with self._core._lock:
            if state is None:
                self._core._db.delete(keys.DEGRADED, self._core._wopt)
            else:
                self._core._db.put(keys.DEGRADED, orjson.dumps(state), self._core._wopt)

    def deleted_keys_total(self) -> int:
        """Keys deleted by purges since the archive was created (a durable counter)."""
        return self._core._get_u64(keys.DELETED_KEYS)

    def properties(self) -> dict[str, int]:
        """RocksDB size estimates: live data, SST files, pending compaction, keys, memtables."""
        names = {
            "live_data_bytes": "rocksdb.estimate-live-data-size",
            "sst_bytes": "rocksdb.total-sst-files-size",
            "live_sst_bytes": "rocksdb.live-sst-files-size",
            "pending_compaction_bytes": "rocksdb.estimate-pending-compaction-bytes",
            "estimated_keys": "rocksdb.estimate-num-keys",
            "memtable_bytes": "rocksdb.cur-size-all-mem-tables",
            "running_compactions": "rocksdb.num-running-compactions",
            "running_flushes": "rocksdb.num-running-flushes",
        }
        out = {}
        for short, prop in names.items():
            try:
                out[short] = int(self._core._db.property_int_value(prop) or 0)
            except Exception:
                out[short] = 0
        return out

    def latest_sequence_number(self) -> int:
        return int(self._core._db.latest_sequence_number())


class Maintenance:
    """Flushes and manual compactions (after folding what they would otherwise keep),
    and raw key access for payload format migrations (:mod:`~.migrate`).

    Interface: :meth:`flush`, :meth:`compact_ranges`, :meth:`compact_content`,
    :meth:`compact_all`, :meth:`raw_items`, :meth:`raw_write`, :meth:`raw_delete`,
    :meth:`is_payload_key`, :meth:`is_format_key`. Receives the core,
    :class:`~.postings.Postings` (the journal is folded first) and
    :class:`~.segments.Segments` (expired ledgers are slimmed first).
    """

    def __init__(self, core: StoreCore, postings: Postings, segments: Segments) -> None:
        self._core = core
        self._postings = postings
        self._segments = segments

    def flush(self, *, wait: bool = True) -> None:
        """Flush memtables to SST files so background compaction sees the deletes.

        ``wait=False`` only schedules the flush: RocksDB's background threads write
        it while the caller goes on (the retention trigger; every write was synced
        to the WAL already, so nothing waits on it for durability)."""
        self._core._need_primary()
        self._core._db.flush(wait)
        if wait:
            self._core._db.flush_wal(True)

    def compact_ranges(self, ranges: list[tuple[bytes, bytes | None]]) -> None:
        """Flush, then compact each ``[begin, end)`` down to the last level, so the
        deletes in it are dropped from every file (operator request: bounded I/O)."""
        self._core._need_primary()
        self.flush()
        opts = CompactOptions()
        opts.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        opts.set_exclusive_manual_compaction(False)
        for begin, end in ranges:
            self._core._db.compact_range(begin, end, opts)

    def compact_content(self, project: str | None = None) -> None:
        """:meth:`compact_ranges` over the ranges that held content (``project``'s only)
        and the ledgers, after folding the document-frequency journal (which names
        removed terms) and packing the ledgers of expired segments' versions (which
        still held their hashes and sizes)."""
        self._postings.fold_df_journal()
        while not self._segments.slim_expired_ledgers(limit=100_000)[1]:
            pass
        ranges = keys.content_ranges(None if project is None else project.encode())
        self.compact_ranges([*ranges, (keys.DOC, keys.prefix_end(keys.DOC))])

    def compact_all(self) -> None:
        """Full manual compaction (operator request only: unbounded I/O), after folding
        the document-frequency journal."""
        self._core._need_primary()
        self._postings.fold_df_journal()
        self._core._db.compact_range(None, None)

    def raw_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every key and value (migrations and verification only)."""
        return self._core._scan(b"", None, fill_cache=False)

    def raw_write(self, items: Iterable[tuple[bytes, bytes]], *, batch_keys: int = 10_000) -> int:
        """Write raw pairs in batches (migrations only: copying into a fresh archive)."""
        with self._core._lock:  # the format is re-read in the same hold as the writes
            n = self._raw_batches(items, lambda wb, kv: wb.put(*kv), batch_keys)
            self._core._read_format()
        return n

    def raw_delete(self, keys: Iterable[bytes], *, batch_keys: int = 10_000) -> int:
        """Delete raw keys in batches (migrations only: re-syncing a copy)."""
        return self._raw_batches(keys, lambda wb, k: wb.delete(k), batch_keys)

    def _raw_batches(
        self, ops: Iterable, apply: Callable[[WriteBatch, Any], None], size: int
    ) -> int:
        """Apply each of ``ops`` to write batches of at most ``size`` keys, written as
        they fill (raw keys: the migration copy is byte for byte)."""
        self._core._need_primary()
        n = 0
        with self._core._lock:
            wb = WriteBatch(raw_mode=True)
            for op in ops:
                apply(wb, op)
                n += 1
                if len(wb) >= size:
                    self._core._db.write(wb, self._core._wopt)
                    wb = WriteBatch(raw_mode=True)
            if len(wb):
                self._core._db.write(wb, self._core._wopt)
        return n

    @staticmethod
    def is_payload_key(key: bytes) -> bool:
        return keys.is_payload(key)

    @staticmethod
    def is_format_key(key: bytes) -> bool:
        return key == keys.FORMAT
