"""The archive's single owner: the open primary store with its policy, boundary,
maintenance and disk guard. The retention worker keeps one for its lifetime;
the CLI opens one embedded when no supervisor runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from memoryd.base.config import ARCHIVE_DIR, Config
from memoryd.base.locks import lock_holder, running_supervisor
from memoryd.retention.boundary import Boundary, Migration
from memoryd.retention.maintenance import Maintenance
from memoryd.storage.archive import ArchiveBusy, ArchiveStore
from memoryd.storage.archive.vectors import coder_for

#: The file RocksDB locks (a POSIX record lock) while a process has the archive open.
ROCKSDB_LOCK_FILE = "LOCK"


def archive_path(home: Path) -> Path:
    return Path(home) / ARCHIVE_DIR


def archive_holder(home: Path) -> str:
    """Who holds the archive's RocksDB LOCK: the running supervisor's retention worker,
    a memoryd command run without a supervisor, or another process (by pid)."""
    lock = archive_path(home) / ROCKSDB_LOCK_FILE
    pid = lock_holder(lock)  # a POSIX lock query (F_GETLK): never takes the lock
    if pid is None:
        return "another process (its lock on LOCK is gone or not visible)"
    try:
        proc = psutil.Process(pid)
        parent, cmdline = proc.ppid(), " ".join(proc.cmdline())
    except psutil.Error:
        return f"process {pid} (exited since)"
    supervisor = running_supervisor(home)
    if supervisor is not None and parent == supervisor:
        return f"the retention worker (pid {pid}) of the running supervisor (pid {supervisor})"
    shown = cmdline if len(cmdline) <= 120 else cmdline[:119] + "…"
    if "memoryd" in cmdline:
        return f"a memoryd command run without a supervisor (pid {pid}: {shown})"
    return f"process {pid} ({shown})"


class ArchiveOwner:
    def __init__(self, home: Path, config: Config) -> None:
        self.home = Path(home)
        self.path = archive_path(home)
        self.config = config
        self._open()

    def _open(self) -> None:
        config = self.config
        # A directory switch a crash interrupted is finished first: opening would
        # otherwise create an empty archive where the switch had moved the real one.
        Migration(self.path).recover()
        try:
            self.store = ArchiveStore.open_primary(
                self.path, segment_seconds=config.archive_segment_seconds
            )
        except ArchiveBusy as exc:
            # never query the LOCK from a process that holds it: closing any descriptor
            # of the file would drop RocksDB's POSIX lock
            holder = f"this process ({os.getpid()})" if exc.in_this_process else None
            busy = ArchiveBusy(
                f"the archive {self.path} is open read-write in "
                f"{holder or archive_holder(self.home)}; "
                "an archive job waits for it and is retried (no attempt charged); a command "
                "run without a supervisor: retry once that one has finished"
            )
            busy.in_this_process = exc.in_this_process
            raise busy from None
        self.store.vectors.coder = coder_for(config)  # version codes are written with the version
        self.boundary = Boundary(self.path)
        self.maintenance = Maintenance.from_config(self.store, config, boundary=self.boundary)
        self.policy = self.maintenance.policy
        if self.maintenance.disk_guard is not None:
            self.maintenance.disk_guard.on_open()

    def close(self) -> None:
        self.store.close()

    @contextmanager
    def closed(self) -> Iterator[None]:
        """Let go of the store (migration steps open it themselves), then reopen."""
        self.store.close()
        try:
            yield
        finally:
            self._open()

    def __enter__(self) -> ArchiveOwner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
