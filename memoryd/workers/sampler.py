"""What the supervisor records every ``sample_period_seconds``, in its group commit:
the dashboard's samples, a supervisor extension.

One sample: jobs waiting, claimed and dead jobs by kind, jobs done per second
since the previous sample, WAL bytes, the pause state and the pids pinning the
WAL, the last checkpoint, worker pids with their RSS and the respawns, the
archive's size on disk. A due sample rides a turn's transaction when the turn
commits anyway, never a transaction of its own: an idle supervisor's samples come
with its periodic purge step (every ``maintenance_period_seconds``). None is taken
while claims are paused by WAL pressure: a sample would grow the WAL the pause holds.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import apsw
import psutil

from memoryd.base.config import ARCHIVE_DIR, Config
from memoryd.storage import samples
from memoryd.storage.maintenance import wal_bytes, wal_reader_pids
from memoryd.workers.extensions import Extension, Running


def dir_bytes(path: Path) -> int:
    """Bytes of the files directly in ``path`` (RocksDB keeps its files flat)."""
    total = 0
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(path):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


def rss_bytes(pid: int | None) -> int | None:
    if not pid:
        return None
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return None


class Sampler(Extension):
    def __init__(self, config: Config) -> None:
        self.period = config.sample_period_seconds
        self.keep = samples.keep_rows(self.period or 1.0, config.sample_keep_seconds)
        self.next_at = 0.0  # monotonic
        self.last: tuple[float, int] | None = None  # (time, jobs done) of the last sample
        self.pending: tuple[float, int] | None = None  # the same, written, not yet committed

    def due(self) -> bool:
        """Whether this turn carries a sample (never when sampling is off)."""
        return bool(self.period) and time.monotonic() >= self.next_at

    def in_turn(self, tx: apsw.Connection, sup: Running, tally: Any) -> None:
        """A due sample, written in the turn's open transaction ``tx`` after its changes
        (it shows what the turn commits): jobs done this run count those it completes."""
        if self.due() and sup.wal.pause_reason is None:
            now, done = time.time(), sup.stats.done + tally.done
            self.pending = (now, done)
            samples.record_in(tx, now, self.take(tx, sup, now, done), self.keep)

    def after_commit(self) -> None:
        """After the turn's commit: the next sample is due a period later (a rolled-back
        one is simply taken again by the retried transaction)."""
        if self.pending is not None:
            self.next_at = time.monotonic() + self.period
            self.last, self.pending = self.pending, None

    def take(self, tx: apsw.Connection, sup: Running, now: float, done: int) -> dict:
        queue, kinds = samples.live_counts(tx)
        rate = None
        if self.last and now > self.last[0]:
            rate = round(max(0, done - self.last[1]) / (now - self.last[0]), 3)
        checkpoint = None
        if sup.wal.last_checkpoint is not None:
            at, result = sup.wal.last_checkpoint
            checkpoint = {
                "at": at,
                "ok": result.ok,
                "wal_bytes_before": result.wal_bytes_before,
                "wal_bytes_after": result.wal_bytes_after,
                "blocked_by": result.blocked_by,
                "reader_pids": result.reader_pids,
            }
        return {
            "queue": queue,
            "kinds": kinds,
            "done_total": done,
            "done_per_second": rate,
            "wal_bytes": wal_bytes(sup.db),
            "wal_reader_pids": wal_reader_pids(sup.db),
            "claims_paused": sup.wal.pause_reason is not None,
            "pause_reason": sup.wal.pause_reason,
            "checkpoint": checkpoint,
            "checkpoints": dict(sup.wal.checkpoints),
            "workers": [
                {"pool": s.pool, "index": s.index, "pid": s.pid, "rss_bytes": rss_bytes(s.pid)}
                for s in sup.pool.slots
            ],
            "respawned": sup.stats.respawned,
            "archive_bytes": dir_bytes(sup.home / ARCHIVE_DIR),
        }
