"""Inter-process locks the OS releases when their holder dies (POSIX record locks).

POSIX locks belong to a process; closing *any* descriptor of the file drops
them, so each lock file is opened once per process, by this module only.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from memoryd.base.config import SUPERVISOR_LOCK_FILE

# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
_FLOCK = "hhqqi4x"


# Locks this process holds: real path -> (pid, descriptor, shared). A second
# descriptor of a held file must never be opened here: closing it drops the lock.
_HELD: dict[str, tuple[int, int, bool]] = {}


def _held(path: Path) -> tuple[int, int, bool] | None:
    held = _HELD.get(os.path.realpath(path))
    return held if held and held[0] == os.getpid() else None


class FileLock:
    """An exclusive or shared lock on one file, held until :meth:`release` or death."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.fd: int | None = None

    def try_acquire(self, *, shared: bool = False) -> bool:
        if _held(self.path):
            return False  # already held in this process, by another FileLock
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        _HELD[os.path.realpath(self.path)] = (os.getpid(), fd, shared)
        return True

    def release(self) -> None:
        if self.fd is not None:
            _HELD.pop(os.path.realpath(self.path), None)
            os.close(self.fd)
            self.fd = None


def lock_holder(path: Path) -> int | None:
    """The pid holding a conflicting (exclusive) lock on ``path``, without taking it.

    Safe in the holding process itself: it asks through the descriptor it holds.
    """
    held = _held(path)
    if held is not None:
        _, fd, shared = held
        return _conflicting_pid(fd) if shared else os.getpid()
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return _conflicting_pid(fd)
    finally:
        os.close(fd)


def _conflicting_pid(fd: int) -> int | None:
    query = struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
    answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    l_type, _, _, _, pid = struct.unpack(_FLOCK, answer)
    return None if l_type == fcntl.F_UNLCK else pid


def running_supervisor(home: Path) -> int | None:
    """The pid of the supervisor running on ``home``, if any."""
    return lock_holder(Path(home) / SUPERVISOR_LOCK_FILE)
