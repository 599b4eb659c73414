"""The WAL guard: checkpoint at safe boundaries, pause claims while the WAL is pinned.

The supervisor calls :meth:`WalGuard.maintain` outside every transaction. A
pinned reader makes TRUNCATE give way; once the WAL has reached
``wal_pause_bytes`` that way, claims pause (a soft bound: in-flight jobs still
commit) and later calls retry until a checkpoint succeeds, at most once per
``poll_seconds``: the loop also turns for every control-socket heartbeat, and a
retry (a /proc/locks read, a republished state) must not run after each.

A waiter (``ingest --wait``, ``memory add --wait``) does not wait on a pause
forever: :class:`PauseWatch` answers :class:`~memoryd.base.errors.QueuePaused`, naming
the pinning pids, once claims stayed paused for ``wait_paused_seconds``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import orjson

from memoryd.base import logs
from memoryd.base.config import SUPERVISOR_STATE_FILE
from memoryd.base.errors import QueuePaused
from memoryd.base.locks import running_supervisor
from memoryd.storage import Authority
from memoryd.storage.maintenance import CheckpointResult, checkpoint_truncate, wal_bytes


class WalGuard:
    def __init__(self, db: Authority) -> None:
        self.db = db
        self.config = db.config
        self.next_checkpoint = 0.0
        self.next_retry = 0.0  # while paused: the earliest next retry
        self.pause_reason: str | None = None  # set while claims are paused
        self.pause_pids: list[int] = []  # then: the pids holding WAL read locks
        self.paused_since: float | None = None  # then: when claims paused (monotonic)
        self.pinned = False  # the last checkpoint gave way to a reader or writer
        # the dashboard's samples: the last checkpoint (time, result) and counts by outcome
        self.last_checkpoint: tuple[float, CheckpointResult] | None = None
        self.checkpoints = {"ok": 0, "gave_way": 0}

    def maintain(self) -> bool:
        """Checkpoint when the WAL has grown or on a period. True when the pause state
        changed (the supervisor then republishes its state)."""
        self.db.check_wal()  # an idle supervisor notices a deleted WAL at once
        now = time.monotonic()
        if self.pause_reason is not None and now < self.next_retry:
            return False
        self.next_retry = now + self.config.poll_seconds
        size = wal_bytes(self.db)
        due = (
            self.pause_reason is not None
            or size >= self.config.wal_checkpoint_bytes
            or (size and now >= self.next_checkpoint)
        )
        if not due:
            return False
        self.next_checkpoint = now + self.config.maintenance_period_seconds
        result = checkpoint_truncate(self.db)
        self.last_checkpoint = (time.time(), result)
        self.checkpoints["ok" if result.ok else "gave_way"] += 1
        _log_checkpoint(result, news=not self.pinned)  # a paused guard retries every turn
        self.pinned = not result.ok
        if result.ok:
            reason = None
        elif result.wal_bytes_after >= self.config.wal_pause_bytes:
            pids = ", ".join(map(str, result.reader_pids)) or "unknown"
            reason = (
                f"WAL at {result.wal_bytes_after:,} bytes and the checkpoint gave way: "
                f"{result.blocked_by} (pids holding WAL read locks: {pids})"
            )
        else:
            reason = self.pause_reason  # keep the state until a checkpoint succeeds
        if reason == self.pause_reason:
            return False
        self.pause_pids = result.reader_pids if reason else []
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
        self.paused_since = now if reason else None
        return True

    def check_paused(self, bound: float) -> None:
        """Raise :class:`QueuePaused` once claims stayed paused ``bound`` seconds."""
        if self.pause_reason is not None and self.paused_since is not None:
            waited = time.monotonic() - self.paused_since
            if waited >= bound:
                raise _paused(waited, self.pause_reason, self.pause_pids)


class PauseWatch:
    """A waiter's look at the running supervisor's claim pause (its state file): raises
    :class:`QueuePaused` once the claims stayed paused ``bound`` seconds, as seen by
    this waiter's calls of :meth:`check` (a resume in between starts the count again)."""

    def __init__(self, home: Path, bound: float) -> None:
        self.home = Path(home)
        self.bound = bound
        self.since: float | None = None

    def check(self) -> None:
        state = supervisor_state(self.home)
        if not state or not state.get("claims_paused"):
            self.since = None
            return
        now = time.monotonic()
        self.since = now if self.since is None else self.since
        if now - self.since >= self.bound:
            reason = state.get("pause_reason") or "claims paused"
            raise _paused(now - self.since, reason, list(state.get("pause_pids") or []))


def supervisor_state(home: Path) -> dict | None:
    """The running supervisor's published state (None: none runs or none published)."""
    if running_supervisor(home) is None:
        return None
    try:
        return orjson.loads((Path(home) / SUPERVISOR_STATE_FILE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None


def _paused(waited: float, reason: str, pids: list[int]) -> QueuePaused:
    who = ", ".join(map(str, pids)) or "unknown"
    return QueuePaused(
        f"the queue has been paused for {waited:.0f}s: {reason}; the work stays queued and "
        f"resumes once the reader lets go: end or close the process holding the store "
        f"open (pids {who}), then run the command again",
        pids,
    )


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
