"""What the dashboard shows, gathered in its own process, read-only.

The authority is read through a read-only connection, one short autocommit
read per statement (nothing here opens a transaction, so the WAL is never
pinned between statements); the evidence archive through a RocksDB secondary
instance. Nothing here writes to either store, nor talks to the supervisor.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import Counter
from typing import Any

from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.base.config import ARCHIVE_DIR
from memoryd.base.times import iso_time
from memoryd.operations.api import Memoryd
from memoryd.operations.control_secondary import drop_stale
from memoryd.operations.home import Home
from memoryd.operations.jobs import Jobs
from memoryd.operations.memory import Memory
from memoryd.retention.maintenance import COMPACTION_META
from memoryd.retention.policy import RetentionPolicy
from memoryd.storage import samples
from memoryd.storage.archive import ArchiveError, ArchiveStore

SECONDARY_DIR = "dashboard-secondary"  # in the home: each dashboard's RocksDB secondary, by pid
DAY = 86400.0
DUE_DAYS = 7  # what is due, day by day, this far ahead
DUE_SCAN_LIMIT = 10_000  # expiry entries looked at per refresh
RETENTION_REFRESH_SECONDS = 30.0  # the archive's counts are a full scan: not every refresh
LAST_TICKS = 5
LAST_RUNS = 8
DEAD_SHOWN = 20


def pause_intervals(series: list[dict]) -> list[dict]:
    """Runs of consecutive samples with claims paused: start, end (None while it lasts)
    and every pid seen pinning the WAL meanwhile."""
    out: list[dict] = []
    current: dict | None = None
    for s in series:
        if s.get("claims_paused"):
            if current is None:
                current = {"start": s["at"], "end": None, "pids": set(), "reason": None}
                out.append(current)
            current["pids"].update(s.get("wal_reader_pids") or [])
            current["reason"] = s.get("pause_reason") or current["reason"]
        elif current is not None:
            current["end"] = s["at"]
            current = None
    return [{**i, "pids": sorted(i["pids"])} for i in out]


def checkpoints(series: list[dict]) -> list[dict]:
    """Each distinct checkpoint the samples saw (the last one before each sample)."""
    seen: dict[float, dict] = {}
    for s in series:
        cp = s.get("checkpoint")
        if cp:
            seen[cp["at"]] = cp
    return [seen[at] for at in sorted(seen)]


def due_by_day(store: ArchiveStore, now: float) -> dict[str, int]:
    """Versions due now ("overdue") and on each of the next days (UTC dates)."""
    out: Counter[str] = Counter()
    for start, n in store.segments.expiry_schedule(now + DUE_DAYS * DAY, limit=DUE_SCAN_LIMIT):
        out["overdue" if start <= now else _date(start)] += n
    return dict(out)


def _date(t: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(t))


class DashboardData:
    """The dashboard's reads of one home; one instance per dashboard process."""

    def __init__(self, md: Memoryd) -> None:
        self.md = md.read_only()
        self.home = self.md.home
        self.config = self.md.config
        self._secondary_dir = self.home / SECONDARY_DIR / str(os.getpid())
        self._archive: ArchiveStore | None = None
        self._retention: tuple[float, dict] | None = None

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()
        self.md.close()
        shutil.rmtree(self._secondary_dir, ignore_errors=True)

    def snapshot(self, window_seconds: float) -> dict[str, Any]:
        """Everything the page shows; ``status`` is exactly ``memoryd status --json``'s
        shape, read at ``taken_at``."""
        taken = time.time()
        status = Home(self.md).status()
        series = samples.since(self.md.reader, taken - window_seconds)
        return {
            "taken_at": iso_time(taken),
            "taken_ts": taken,
            "status": status,
            "samples": series,
            "samples_kept": samples.count(self.md.reader),
            "sample_period_seconds": self.config.sample_period_seconds,
            "pauses": pause_intervals(series),
            "checkpoints": checkpoints(series),
            "kinds": samples.queue_by_kind(self.md.reader.conn),
            "runs": samples.recent_runs(self.md.reader, LAST_RUNS),
            "dead": Jobs(self.md).listing("dead", DEAD_SHOWN),
            "memory": Memory(self.md).status(),
            "retention": self.retention(taken),
        }

    def retention(self, now: float) -> dict[str, Any]:
        if self._retention and now - self._retention[0] < RETENTION_REFRESH_SECONDS:
            return self._retention[1]
        out = self._read_retention(now)
        self._retention = (now, out)
        return out

    def _read_retention(self, now: float) -> dict[str, Any]:
        policy = RetentionPolicy.from_config(self.config).as_dict()
        disk = shutil.disk_usage(self.home)
        out: dict[str, Any] = {
            "policy": policy,
            "disk": {
                "free_bytes": disk.free,
                "low_bytes": self.config.retention_disk_low_bytes,
                "reserve_bytes": self.config.retention_disk_reserve_bytes,
            },
            "ticks": [
                {**t, "finished_at": iso_time(t["finished_at"])}
                for t in samples.last_results(
                    self.md.reader, ARCHIVE_OP, "retention.tick", LAST_TICKS
                )
            ],
            "archive": None,
        }
        store = self._open_archive()
        if store is None:
            return out
        store.catch_up()
        out["archive"] = {
            "degraded": store.meta.degraded(),
            "counts": store.ledgers.counts(),
            "due_by_day": due_by_day(store, now),
            "compaction": store.meta.get_meta(COMPACTION_META),
            "deleted_keys_total": store.meta.deleted_keys_total(),
            "properties": store.meta.properties(),
        }
        return out

    def _open_archive(self) -> ArchiveStore | None:
        if self._archive is None and (self.home / ARCHIVE_DIR / "CURRENT").exists():
            drop_stale(self.home / SECONDARY_DIR)
            with contextlib.suppress(ArchiveError):
                self._archive = ArchiveStore.open_secondary(
                    self.home / ARCHIVE_DIR, self._secondary_dir
                )
        return self._archive
