"""The WAL guard: checkpoint at safe boundaries, pause claims while the WAL is pinned.

The supervisor calls :meth:`WalGuard.maintain` outside every transaction. A
pinned reader makes TRUNCATE give way; once the WAL has reached
``wal_pause_bytes`` that way, claims pause (a soft bound: in-flight jobs still
commit) and later calls retry until a checkpoint succeeds, at most once per
``poll_seconds``: the loop also turns for every control-socket heartbeat, and a
retry (a /proc/locks read, a republished state) must not run after each.
"""

from __future__ import annotations

import logging
import time

from memoryd import logs
from memoryd.storage import Authority
from memoryd.storage.maintenance import CheckpointResult, checkpoint_truncate, wal_bytes


class WalGuard:
    def __init__(self, db: Authority) -> None:
        self.db = db
        self.config = db.config
        self.next_checkpoint = 0.0
        self.next_retry = 0.0  # while paused: the earliest next retry
        self.pause_reason: str | None = None  # set while claims are paused
        self.pinned = False  # the last checkpoint gave way to a reader or writer
        # the dashboard's samples: the last checkpoint (time, result) and counts by outcome
        self.last_checkpoint: tuple[float, CheckpointResult] | None = None
        self.checkpoints = {"ok": 0, "gave_way": 0}

    def maintain(self) -> bool:
        """Checkpoint when the WAL has grown or on a period. True when the pause state
        changed (the supervisor then republishes its state)."""
        now = time.monotonic()
        if self.pause_reason is not None and now < self.next_retry:
            return False
        self.next_retry = now + float(self.config.poll_seconds)
        size = wal_bytes(self.db)
        due = (
            self.pause_reason is not None
            or size >= int(self.config.wal_checkpoint_bytes)
            or (size and now >= self.next_checkpoint)
        )
        if not due:
            return False
        self.next_checkpoint = now + float(self.config.maintenance_period_seconds)
        result = checkpoint_truncate(self.db)
        self.last_checkpoint = (time.time(), result)
        self.checkpoints["ok" if result.ok else "gave_way"] += 1
        _log_checkpoint(result, news=not self.pinned)  # a paused guard retries every turn
        self.pinned = not result.ok
        if result.ok:
            reason = None
        elif result.wal_bytes_after >= int(self.config.wal_pause_bytes):
            pids = ", ".join(map(str, result.reader_pids)) or "unknown"
            reason = (
                f"WAL at {result.wal_bytes_after:,} bytes and the checkpoint gave way: "
                f"{result.blocked_by} (pids holding WAL read locks: {pids})"
            )
        else:
            reason = self.pause_reason  # keep the state until a checkpoint succeeds
        if reason == self.pause_reason:
            return False
        if reason and self.pause_reason:
            self.pause_reason = reason  # still paused; the WAL size in the reason moved
            return True
        if reason:
            logs.event(
                "claims_paused",
                f"claims paused: {reason}",
                level=logging.WARNING,
                wal_bytes=result.wal_bytes_after,
                reader_pids=result.reader_pids,
                blocked_by=result.blocked_by,
            )
        else:
            logs.event("claims_resumed", "claims resumed: WAL truncated", wal_bytes=0)
        self.pause_reason = reason
        return True


def _log_checkpoint(result, *, news: bool) -> None:
    """A truncating checkpoint is routine (debug); the first to give way to a reader says
    who (``news``), the retries after it are debug."""
    if result.ok:
        logs.event(
            "checkpoint",
            f"WAL checkpointed: {result.wal_bytes_before:,} -> 0 bytes",
            level=logging.DEBUG,
            wal_bytes_before=result.wal_bytes_before,
        )
        return
    pids = ", ".join(map(str, result.reader_pids)) or "unknown"
    logs.event(
        "checkpoint_gave_way",
        f"checkpoint gave way: {result.blocked_by} (reader pids {pids});"
        f" WAL stays {result.wal_bytes_after:,} bytes",
        level=logging.INFO if news else logging.DEBUG,
        wal_bytes=result.wal_bytes_after,
        reader_pids=result.reader_pids,
        blocked_by=result.blocked_by,
    )
