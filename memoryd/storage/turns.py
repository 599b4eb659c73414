"""Write turns: a long outside writer lets a waiting writer in between its chunks.

SQLite gives its write lock to whoever asks first after a commit. A writer that commits
chunk after chunk back to back asks first every time, and another writer, whose busy
handler sleeps between its tries, may not get in for as long as the chunks go on (a
bulk ``jobs add`` starved the supervisor). So every write says it wants the lock: a
shared ``flock`` on ``<authority>-turn`` held while :meth:`Authority.write` runs (an
advisory signal: a write that cannot take it goes on without). Between two chunks, a
long writer looks for one (a non-blocking exclusive probe) and, when a writer waits,
lets it commit first (see :meth:`Authority.give_turn`).

``flock`` locks belong to the open file, not the process (unlike the POSIX locks of
:mod:`memoryd.base.locks`): closing this descriptor drops no SQLite lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

TURN_SUFFIX = "-turn"


class WriteTurns:
    """One connection's view of the turn file beside its database."""

    def __init__(self, database: Path) -> None:
        self.path = Path(f"{database}{TURN_SUFFIX}")
        self.fd: int | None = None

    def _open(self) -> int | None:
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                return None  # a read-only home: no turns, writes go on without
        return self.fd

    @contextlib.contextmanager
    def wanting(self) -> Iterator[None]:
        """Say, for the block, that this connection wants or holds the write lock."""
        fd = self._open()
        held = fd is not None and _flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        try:
            yield
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def others_want(self) -> bool:
        """Whether another connection is inside a write (waiting for the lock or holding
        it). Call outside this connection's own writes."""
        fd = self._open()
        if fd is None or _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation)
    except OSError:
        return False
    return True
