"""WAL maintenance of the authority, always outside any transaction.

``wal_checkpoint(TRUNCATE)`` runs with a zero busy timeout, so an active
reader or a competing writer wins at once; the connection's previous timeout
is restored in ``finally``. Nothing is killed, nothing is deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import apsw

from memoryd.storage.authority import Authority


@dataclass(frozen=True)
class CheckpointResult:
    ok: bool  # the WAL was checkpointed and truncated
    wal_bytes_before: int
    wal_bytes_after: int
    blocked_by: str | None  # "reader or writer" when SQLite said busy


def wal_path(db: Authority) -> str:
    return str(db.path) + "-wal"


def wal_bytes(db: Authority) -> int:
    try:
        return os.stat(wal_path(db)).st_size
    except FileNotFoundError:
        return 0


def checkpoint_truncate(db: Authority) -> CheckpointResult:
    if not db.conn.get_autocommit():
        raise RuntimeError("checkpoint inside an open transaction")
    before = wal_bytes(db)
    previous = int(db.config.busy_timeout_ms)
    db.conn.set_busy_timeout(0)
    try:
        db.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        blocked = None
    except apsw.BusyError:
        blocked = "reader or writer"
    finally:
        db.conn.set_busy_timeout(previous)
    after = wal_bytes(db)
    return CheckpointResult(blocked is None, before, after, blocked)
