"""Coarse access records: at most one per document per time bucket; never a deadline."""

from __future__ import annotations

import time
from collections.abc import Iterable

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.records import parse_locator

#: Width of a coarse access-record bucket (at most one record per document per bucket).
DEFAULT_ACCESS_BUCKET_SECONDS = 86400
#: Cursor of the sweep for exposure records of retired documents.
ACCESS_SWEEP = "archive.access_sweep"


class Access:
    """Which documents were read, by day.

    Interface: :meth:`record_access`, :meth:`access_buckets`,
    :meth:`cleanup_access_records`. Receives the core only.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def record_access(
        self,
        locators: Iterable[str],
        *,
        now: float | None = None,
        bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS,
    ) -> int:
        """Note that documents were read: at most one record per document per bucket.

        Never changes a deadline. Returns how many new records were written.
        """
        self._core._need_primary()
        now = time.time() if now is None else now
        bucket = int(now // bucket_seconds)
        with self._core._lock:
            batch = Batch()
            n = 0
            for doc_id in dict.fromkeys(parse_locator(loc)[0] for loc in locators):
                key = keys.access(bucket, doc_id.encode())
                if key not in self._core._db:
                    batch.put(key, b"")
                    n += 1
            self._core._write(batch)
            return n

    def access_buckets(self, doc_id: str, *, bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS):
        """Start times of the buckets in which ``doc_id`` was accessed (a full scan)."""
        doc = doc_id.encode()
        found = (keys.parse_access(k) for k, _ in self._core._prefix(keys.ACCESS, fill_cache=False))
        return [float(bucket * bucket_seconds) for bucket, d in found if d == doc]

    def cleanup_access_records(
        self,
        *,
        before: float,
        limit: int = 1000,
        bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS,
    ) -> int:
        """Delete at most ``limit`` access records in all: those of buckets that start
        before ``before``, then (with what is left of ``limit``) exposure records of
        documents with no live version any more, swept from a cursor that wraps."""
        self._core._need_primary()
        end = keys.access_bucket(int(before // bucket_seconds))
        with self._core._lock:
            batch = Batch()
            for key, _ in self._core._scan(keys.ACCESS, end, fill_cache=False):
                if batch.deleted >= limit:
                    break
                batch.delete(key)
            self._sweep_retired_access(batch, limit, after=end)
            self._core._write(batch)
            return batch.deleted

    def _sweep_retired_access(self, batch: Batch, limit: int, *, after: bytes) -> None:
        """Look at up to what is left of ``limit`` records from the sweep cursor (never
        before ``after``: the old buckets just deleted); delete those naming a document
        without a live version (its source expired or was forgotten)."""
        budget = limit - batch.deleted
        if budget <= 0:
            return
        cursor = self._core._get(keys.cursor(ACCESS_SWEEP))
        start = max(cursor or keys.ACCESS, after)
        live: dict[bytes, bool] = {}
        last = None
        for key, _ in self._core._scan(start, keys.prefix_end(keys.ACCESS), fill_cache=False):
            if budget <= 0:
                break
            budget -= 1
            last = key
            doc = keys.parse_access(key)[1]
            if doc not in live:
                ledger = self._core._ledger(doc, batch)
                live[doc] = bool(ledger) and any(
                    self._core._stored_live(ledger, v, batch) for v in ledger["versions"]
                )
            if not live[doc]:
                batch.delete(key)
        if budget > 0 or last is None:  # reached the end: the next sweep starts over
            if cursor is not None:  # (an idle tick writes nothing: no fsync)
                batch.wb.delete(keys.cursor(ACCESS_SWEEP))
        else:
            batch.put(keys.cursor(ACCESS_SWEEP), last + b"\x00")
