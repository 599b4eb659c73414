"""WAL maintenance of the authority, always outside any transaction.

``wal_checkpoint(TRUNCATE)`` runs with a zero busy timeout, so an active
reader or a competing writer wins at once; the connection's previous timeout
is restored in ``finally``. Nothing is killed, nothing is deleted, nothing is
vacuumed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import apsw

from memoryd.base import killpoints
from memoryd.base.errors import StoreBusy
from memoryd.storage.authority import Authority

# SQLite's WAL-index locks live in the -shm file: byte 120 is the writer lock,
# 123..127 are the read marks a reader holds while its snapshot is open.
SHM_WRITE_LOCK = 120
SHM_READ_MARKS = range(123, 128)


@dataclass(frozen=True)
class CheckpointResult:
    ok: bool  # checkpointed and truncated
    wal_bytes_before: int
    wal_bytes_after: int
    blocked_by: str | None  # why SQLite said busy, when it did
    reader_pids: list[int] = field(default_factory=list)


def wal_bytes(db: Authority) -> int:
    try:
        return os.stat(str(db.path) + "-wal").st_size
    except FileNotFoundError:
        return 0


def _shm_locks(db: Authority) -> list[tuple[str, int, int]]:
    """(type, pid, offset) of every POSIX lock held on the authority's -shm (Linux)."""
    try:
        inode = os.stat(str(db.path) + "-shm").st_ino
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.readlines()
    except OSError:
        return []
    held = []
    for line in lines:
        parts = line.split()
        # "1: POSIX  ADVISORY  READ 10859 fe:00:2179266 123 123" (waiters carry "->")
        if len(parts) < 8 or parts[1] == "->" or not parts[5].endswith(f":{inode}"):
            continue
        try:
            held.append((parts[3], int(parts[4]), int(parts[6])))
        except ValueError:
            continue
    return held


def wal_reader_pids(db: Authority, *, exclude_self: bool = True) -> list[int]:
    """Pids holding a WAL read mark on the authority: the readers that pin the WAL."""
    pids = {pid for kind, pid, at in _shm_locks(db) if kind == "READ" and at in SHM_READ_MARKS}
    if exclude_self:
        pids.discard(os.getpid())
    return sorted(pids)


def wal_writer_pids(db: Authority) -> list[int]:
    """Pids (other than this one) holding the WAL write lock."""
    return sorted(
        {pid for kind, pid, at in _shm_locks(db) if kind == "WRITE" and at == SHM_WRITE_LOCK}
        - {os.getpid()}
    )


def checkpoint_truncate(db: Authority) -> CheckpointResult:
    """Try once to checkpoint and truncate the WAL; give way at once to anyone busy."""
    if not db.conn.get_autocommit():
        raise RuntimeError("checkpoint inside an open transaction")
    db.check_wal()  # never copy a WAL deleted under us over what others wrote
    before = wal_bytes(db)
    previous = db.config.busy_timeout_ms
    db.conn.set_busy_timeout(0)
    try:
        db.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        blocked = None
    except apsw.BusyError:
        blocked = "busy"
    finally:
        db.conn.set_busy_timeout(previous)
    after = wal_bytes(db)
    if blocked:
        readers = wal_reader_pids(db)
        if wal_writer_pids(db):
            blocked = "another writer holds the lock"
        elif readers:
            blocked = "a reader holds a snapshot"
        return CheckpointResult(False, before, after, blocked, readers)
    killpoints.reach("after_checkpoint")
    return CheckpointResult(True, before, after, None)


def hold_wal_bound(db: Authority) -> None:
    """Between the chunks of a long outside write (a bulk enqueue): checkpoint once the
    WAL is past ``wal_checkpoint_bytes``, as the supervisor would had it got the lock;
    past ``wal_pause_bytes``, wait and retry (a reader pins the WAL, or the supervisor
    writes) until a checkpoint succeeds or the WAL is back under the bound, at most
    ``write_retry_seconds`` (then :class:`StoreBusy`: the chunks committed stay)."""
    config = db.config
    if wal_bytes(db) < config.wal_checkpoint_bytes:
        return
    deadline = time.monotonic() + config.write_retry_seconds
    while True:
        result = checkpoint_truncate(db)
        if result.ok or result.wal_bytes_after < config.wal_pause_bytes:
            return
        if time.monotonic() > deadline:
            pids = ", ".join(map(str, result.reader_pids)) or "unknown"
            raise StoreBusy(
                f"the WAL stayed at {result.wal_bytes_after:,} bytes, past wal_pause_bytes, "
                f"for {config.write_retry_seconds:g}s: {result.blocked_by} (pids "
                f"holding WAL read locks: {pids}); what was written so far stays: retry "
                "the rest once that reader ends"
            )
        time.sleep(config.poll_seconds)


def integrity_check(db: Authority) -> list[str]:
    """SQLite's ``integrity_check`` lines (``["ok"]`` when sound; each FTS5 index's own
    check included)."""
    return [r[0] for r in db.query("PRAGMA integrity_check")]
