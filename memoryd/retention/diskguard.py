"""Disk-low emergency mode.

Below ``threshold_bytes`` of free space (default 2 GiB; 0 disables the guard)
the archive is **degraded**, durably (the state lives in the archive and
survives restarts), and the maintenance tick:

1. runs all already-due expiry work at once (not just the tick's waves);
2. expires the future *ephemeral* segments now, whole (not conversation
   sources, durable or active evidence): their pinned or leased versions are
   copied out and stay, every other version goes with its segment's range
   delete (``shortened``);
3. flushes, leaving reclamation to background compaction.

Admission: an archival append that would leave less than ``reserve_bytes``
free (default 64 MiB) is rejected with the typed, retryable
:class:`~memoryd.storage.archive.DiskLow`, in any mode; every other append is
accepted, degraded or not (an append below the threshold only records the
degraded state). The reserve is the room kept for what must keep working:
search, pins, leases, heartbeats and retention's own writes are never refused. With threshold 0,
:meth:`DiskGuard.on_open` clears a previously persisted degraded state.

Free space is measured by ``free_bytes()`` (injectable for tests); the
default is ``shutil.disk_usage`` of the archive directory.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

from memoryd.base.config import SETTINGS, MiB
from memoryd.base.times import utc_iso
from memoryd.retention.boundary import Boundary
from memoryd.retention.policy import RetentionPolicy
from memoryd.retention.waves import WAVE_CURSOR, run_wave
from memoryd.storage.archive import ArchiveStore, DiskLow

DEFAULT_THRESHOLD = SETTINGS["retention_disk_low_bytes"].default
DEFAULT_RESERVE = SETTINGS["retention_disk_reserve_bytes"].default


class DiskGuard:
    """Free-space checks, admission and the emergency pass for one open archive."""

    def __init__(
        self,
        store: ArchiveStore,
        *,
        threshold_bytes: int = DEFAULT_THRESHOLD,
        reserve_bytes: int = DEFAULT_RESERVE,
        free_bytes: Callable[[], int] | None = None,
    ) -> None:
        self.store = store
        self.threshold = int(threshold_bytes)
        self.reserve = int(reserve_bytes)
        self.free_bytes = free_bytes or (lambda: shutil.disk_usage(store.path).free)

    @classmethod
    def from_config(
        cls, store: ArchiveStore, config: Any, *, free_bytes: Callable[[], int] | None = None
    ) -> DiskGuard:
        return cls(
            store,
            threshold_bytes=config.retention_disk_low_bytes,
            reserve_bytes=config.retention_disk_reserve_bytes,
            free_bytes=free_bytes,
        )

    def install(self) -> DiskGuard:
        """Make every append of ``store`` pass :meth:`admit` first."""
        self.store.admission = self.admit
        return self

    def on_open(self, *, now: float | None = None) -> dict[str, Any] | None:
        """At worker start: threshold 0 clears a persisted degraded flag; else re-check."""
        if self.threshold <= 0:
            if self.store.meta.degraded() is not None:
                self.store.meta.set_degraded(None)
            return None
        return self.check(now=now)

    def check(self, *, now: float | None = None) -> dict[str, Any] | None:
        """Measure free space; persist entering or leaving degraded mode. Returns the state."""
        now = time.time() if now is None else now
        current = self.store.meta.degraded()
        if self.threshold <= 0:
            return current
        free = self.free_bytes()
        if free < self.threshold:
            state = {
                "degraded": True,
                "reason": "disk_low",
                "since": (current or {}).get("since", utc_iso(now)),
                "checked_at": utc_iso(now),
                "free_bytes": free,
                "threshold_bytes": self.threshold,
                "reserve_bytes": self.reserve,
            }
            if current is None or current.get("free_bytes") != free:
                self.store.meta.set_degraded(state)
            return state
        if current is not None:
            self.store.meta.set_degraded(None)
        return None

    def admit(self, nbytes: int) -> None:
        """Raise :class:`DiskLow` if an archival write of ``nbytes`` must be refused."""
        if self.threshold <= 0:
            return
        free = self.free_bytes()
        if free < self.threshold and self.store.meta.degraded() is None and not self.store.readonly:
            self.check()
        if free - nbytes < self.reserve:
            raise DiskLow(
                f"writing {nbytes:,} bytes would eat the {self.reserve // MiB} MiB disk "
                f"reserve ({free // MiB} MiB free): free some space (retention runs its "
                "disk-low pass), then retry; search, pins and leases still work"
            )

    def emergency(
        self,
        policy: RetentionPolicy,
        boundary: Boundary,
        *,
        now: float | None = None,
        max_shorten: int = 10_000,
        wave_documents: int = 256,
        purge_batch_keys: int = 4096,
    ) -> dict[str, Any]:
        """The disk-low pass (call when :meth:`check` says degraded).

        Returns ``{"expired", "shortened", "flushed"}``. Raises what
        :func:`run_wave` raises while a migration blocks retention.
        """
        now = time.time() if now is None else now
        expired = self._drain(policy, boundary, now, wave_documents, purge_batch_keys)
        shortened = 0
        with boundary.retention_wave():
            early = self.store.segments.future_segments("ephemeral", now)
            while early and shortened < max_shorten:
                done = self.store.segments.expire_segments(
                    now=now, early=early, purge_keys=purge_batch_keys
                )
                shortened += len(done.expired)
                early = early[done.segments :]
        self.store.maintenance.flush()
        return {"expired": expired + shortened, "shortened": shortened, "flushed": True}

    def _drain(
        self, policy: RetentionPolicy, boundary: Boundary, now: float, docs: int, keys: int
    ) -> int:
        expired = 0
        self.store.meta.set_cursor(WAVE_CURSOR, None)  # all due work, from the first bucket
        while True:
            report = run_wave(
                self.store, policy, boundary, now=now, max_documents=docs, purge_batch_keys=keys
            )
            expired += len(report.expired)
            if report.exhausted:
                return expired
