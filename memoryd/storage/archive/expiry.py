"""The expiry index: due entries in time order, retiring what is due, new deadlines.

Every expirable live version has one entry (bucket, class, version) ->
generation. A stale generation is harmless: the wave drops it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from memoryd.errors import LocatorNotFound
from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.records import ExpiryEntry, parse_locator


class ExpiryMixin(StoreCore):
    """Expiry entries and the atomic check-then-tombstone of one due version."""

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
            start = keys.expiry_bucket(int(since // self.bucket_seconds))
        if after is not None and after > start:
            start = after + b"\x00"
        end = keys.prefix_end(keys.EXPIRY)
        if until is not None:
            end = keys.expiry_bucket(max(0, int(until // self.bucket_seconds)) + 1)
        wanted = None if classes is None else {keys.CLASS_CODE[c] for c in classes}
        out: list[ExpiryEntry] = []
        for key, raw in self._scan(start, end, fill_cache=False):
            bucket, code, version = keys.parse_expiry(key)
            if wanted is not None and code not in wanted:
                continue
            doc_id, ver = keys.split_dv(version)
            out.append(
                ExpiryEntry(
                    key=key,
                    bucket_start=float(bucket * self.bucket_seconds),
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
        self._need_primary()
        now = time.time() if now is None else now
        doc = entry.doc_id.encode()
        with self._lock:
            ledger = self._ledger(doc)
            v = None
            if ledger is not None and entry.version <= len(ledger["versions"]):
                v = ledger["versions"][entry.version - 1]
            if v is None or v["gen"] != entry.generation or v["status"] != "live":
                batch = Batch()
                batch.wb.delete(entry.key)
                self._write(batch)
                return "stale"
            if v["expires_at"] is None or v["expires_at"] > now:
                return "not_due"
            if self._is_pinned(doc):
                return "pinned"
            if self._protected_by_lease(doc, entry.version, now):
                return "leased"
            batch = Batch()
            self._retire(batch, doc, ledger, entry.version, "expired", now)
            batch.wb.delete(entry.key)
            self._write(batch)
            return "expired"

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
        self._need_primary()
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        with self._lock:
            ledger = self._ledger(doc)
            if ledger is None or ver > len(ledger["versions"]):
                raise LocatorNotFound(f"no archived version {locator}")
            v = ledger["versions"][ver - 1]
            if v["status"] != "live":
                return None
            if expected_generation is not None and v["gen"] != expected_generation:
                return None
            batch = Batch()
            if v["expires_at"] is not None:
                batch.wb.delete(self._expiry_key(v["expires_at"], ledger["class"], doc, ver))
            v["gen"] += 1
            v["expires_at"] = expires_at
            v["override"] = override
            if expires_at is not None and not self._is_pinned(doc):
                batch.put(
                    self._expiry_key(expires_at, ledger["class"], doc, ver), keys.U32.pack(v["gen"])
                )
            batch.ledgers[keys.doc(doc)] = ledger
            self._write(batch)
            return v["gen"]
