"""Coarse access records: at most one per document per time bucket; never a deadline."""

from __future__ import annotations

import time
from collections.abc import Iterable

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.records import parse_locator

#: Width of a coarse access-record bucket (at most one record per document per bucket).
DEFAULT_ACCESS_BUCKET_SECONDS = 86400


class AccessMixin(StoreCore):
    """Which documents were read, by day."""

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
        self._need_primary()
        now = time.time() if now is None else now
        bucket = int(now // bucket_seconds)
        with self._lock:
            batch = Batch()
            n = 0
            for doc_id in dict.fromkeys(parse_locator(loc)[0] for loc in locators):
                key = keys.access(bucket, doc_id.encode())
                if key not in self._db:
                    batch.put(key, b"")
                    n += 1
            self._write(batch)
            return n

    def access_buckets(self, doc_id: str, *, bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS):
        """Start times of the buckets in which ``doc_id`` was accessed (a full scan)."""
        doc = doc_id.encode()
        found = (keys.parse_access(k) for k, _ in self._prefix(keys.ACCESS, fill_cache=False))
        return [float(bucket * bucket_seconds) for bucket, d in found if d == doc]

    def cleanup_access_records(
        self,
        *,
        before: float,
        limit: int = 1000,
        bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS,
    ) -> int:
        """Delete access records of buckets that start before ``before`` (at most ``limit``)."""
        self._need_primary()
        end = keys.access_bucket(int(before // bucket_seconds))
        with self._lock:
            batch = Batch()
            n = 0
            for key, _ in self._scan(keys.ACCESS, end, fill_cache=False):
                if n >= limit:
                    break
                batch.delete(key)
                n += 1
            self._write(batch)
            return n
