"""The migration boundary's lock: an inter-process reader-writer lock on a file beside
the archive (POSIX record locks: the OS drops a dead holder's side).

A retention wave holds it **shared**; a migration step (and opening a layout-1
archive, which moves its content under expiry segments) holds it **exclusive**.
The migration states around it are retention's (:mod:`memoryd.retention.boundary`);
the lock sits here so the store can take it without reaching up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from memoryd.base.errors import BoundaryBusy
from memoryd.base.locks import _FLOCK, FileLock, _held


def _any_holder(path: Path) -> int | None:
    """A pid holding any lock (shared or exclusive) on ``path``.

    :func:`memoryd.base.locks.lock_holder` asks about conflicts with a read lock,
    which misses shared holders. A second descriptor is opened only when this
    process holds no lock on the file (closing it would drop that lock).
    """
    if _held(path) is not None:
        return os.getpid()
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        l_type, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
        return None if l_type == fcntl.F_UNLCK else pid
    finally:
        os.close(fd)


class BoundaryLock:
    """The boundary lock of the archive at ``archive_path``."""

    def __init__(self, archive_path: Path | str) -> None:
        self.archive_path = Path(archive_path)
        base = self.archive_path.parent / self.archive_path.name
        self.lock_path = Path(f"{base}.boundary.lock")

    def acquire(self, shared: bool) -> FileLock:
        """Take one side now or raise :class:`BoundaryBusy` naming the holder."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.lock_path)
        if not lock.try_acquire(shared=shared):
            pid = _any_holder(self.lock_path)
            side = "a migration step (exclusive)" if shared else "a retention wave (shared)"
            raise BoundaryBusy(
                f"the archive migration boundary is held by {side}"
                + (f" in pid {pid}" if pid else " in this process")
                + "; retry when it is done",
                pid,
            )
        return lock

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the exclusive side (raises :class:`BoundaryBusy` while a wave runs)."""
        lock = self.acquire(shared=False)
        try:
            yield
        finally:
            lock.release()
