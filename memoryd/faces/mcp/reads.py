"""The MCP server's own reads: search, recall and the archive's reads answered in its
process, beside a supervisor or without one.

A read through a supervisor's control socket waits for a thread of a busy process
(its workers' results, its flusher, every other client's reads), and an embedded
read opens the archive under its lock; either costs a read far more than the read.
Here the authority is read through this process's read-only SQLite connection
(autocommit: every statement sees what was committed before it, a forget
included) and the archive through its own RocksDB secondary instance, in
``mcp-secondary/<PID>`` in the home: removed when the server ends, and the
directories of servers that are gone (killed) removed when one starts.

The secondary catches up when the primary's files changed
(:class:`~memoryd.operations.control_secondary.Secondary`: reopened after a flush
or compaction, so a purged key is never served from its replayed log) and, in any
case, before the first read after a write this server made or was told of
(:meth:`LocalReads.wrote`). The writes a read implies (recall's access records, a
search's retrieval leases) are gathered for ``MCP_DEFERRED_WAIT_SECONDS`` and handed
over to the archive's owner in one request by a thread, never on the read's path.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memoryd.base.config import (
    ARCHIVE_DIR,
    AUTHORITY_FILE,
    MCP_DEFERRED_WAIT_SECONDS,
    MCP_SECONDARY_DIR,
    Config,
)
from memoryd.operations.api import Memoryd
from memoryd.operations.control_deferred import DeferredWrites
from memoryd.operations.control_requests import DEFERRED_WRITES, SECONDARY_READS, read_on
from memoryd.operations.control_secondary import Secondary, drop_stale

T = TypeVar("T")


class NotHere(Exception):
    """This read cannot be answered here (no authority or no archive yet): the caller
    answers it the way it did before (the control socket, or embedded)."""


class LocalReads:
    """One MCP server's reads of its home. ``hand_over(op, args)`` sends a gathered
    write (``access``, ``retrieval_lease``) to the archive's owner."""

    def __init__(
        self, home: Path, config: Config, pid: int, hand_over: Callable[[str, dict], Any]
    ) -> None:
        self.home, self.config = Path(home), config
        self.info_dir = self.home / MCP_SECONDARY_DIR / str(pid)
        self.secondary = Secondary(self.home / ARCHIVE_DIR, self.info_dir)
        self.deferred = DeferredWrites(
            hand_over,
            period=MCP_DEFERRED_WAIT_SECONDS,
            access_bucket_seconds=float(config.retention_access_bucket_seconds),
        )
        self.md: Memoryd | None = None  # opened at the first read that finds an authority
        self.lock = threading.Lock()

    def start(self) -> None:
        """Remove the secondary directories of servers that are gone; start the flusher."""
        drop_stale(self.home / MCP_SECONDARY_DIR)
        self.deferred.start()

    def run(self, fn: Callable[[Memoryd], T]) -> T:
        """``fn`` on this process's read-only API instance; :class:`NotHere` when the
        home has no authority or ``fn`` reads an archive that does not exist yet."""
        with self.lock:
            return fn(self._api())

    def wrote(self) -> None:
        """A write was committed: the next archive read catches up first."""
        self.secondary.stale()

    def close(self) -> None:
        """Hand over what is pending, close both stores, remove the secondary's directory."""
        self.deferred.stop()
        with self.lock, self.secondary.lock:
            self.secondary.close()
            if self.md is not None:
                self.md.close()
        shutil.rmtree(self.info_dir, ignore_errors=True)

    def _api(self) -> Memoryd:
        if self.md is None:
            if not (self.home / AUTHORITY_FILE).exists():
                raise NotHere("no authority yet")
            md = Memoryd(self.home)
            md.config = self.config
            md.read_only()
            md.archive_reader = self._archive
            self.md = md
        return self.md

    def _archive(self, op: str, args: dict) -> Any:
        if op in DEFERRED_WRITES:
            return getattr(self.deferred, op)(args)
        if op not in SECONDARY_READS:
            raise NotHere(f"archive {op} is a write")
        answer = read_on(
            self.secondary, self.home, self.config, self.deferred.retrieval_lease, op, args
        )
        if answer is NotImplemented:
            raise NotHere("no archive yet")
        return answer
