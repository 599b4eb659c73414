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
(:meth:`LocalReads.wrote`). A thread does the costly part ahead of the reads
(:meth:`~memoryd.operations.control_secondary.Secondary.refresh`): the catch-up after
such a write, at once, and the reopen after the primary flushed (every open of the
primary flushes: a supervisor's start, an embedded write), looked for every
``MCP_SECONDARY_REFRESH_SECONDS`` while the server is in use (a read or a write in
the last ``MCP_SECONDARY_ACTIVE_SECONDS``). A read still looks and catches up or
reopens itself when the primary changed since (a read never answers from an older
view than it did before), but a reopen is then rarely a read's cost.

The writes a read implies (recall's access records, a search's retrieval leases)
are gathered for ``MCP_DEFERRED_WAIT_SECONDS`` and handed over to the archive's
owner in one request by a thread, never on the read's path.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memoryd.base.config import (
    ARCHIVE_DIR,
    AUTHORITY_FILE,
    MCP_DEFERRED_WAIT_SECONDS,
    MCP_SECONDARY_ACTIVE_SECONDS,
    MCP_SECONDARY_DIR,
    MCP_SECONDARY_REFRESH_SECONDS,
    Config,
)
from memoryd.operations.api import Memoryd
from memoryd.operations.control_deferred import DeferredWrites
from memoryd.operations.control_requests import DEFERRED_WRITES, SECONDARY_READS, read_on
from memoryd.operations.control_secondary import Secondary, drop_stale

T = TypeVar("T")
#: What a first search or recall imports (a tenth of a second and more): loaded at start.
SEARCH_MODULES = (
    "memoryd.search.pipeline",
    "memoryd.search.engine",
    "memoryd.consolidation.recall",
    "memoryd.text.structure",
    "memoryd.archive.ops",
    "memoryd.archive.search",
    "memoryd.archive.query",
)
#: The preload's own search: what it finds does not matter (it is not shown, and a
#: project search writes nothing), only what the first search of a connection builds.
PRELOAD_QUERY = "preload"


class NotHere(Exception):
    """This read cannot be answered here (no authority or no archive yet): the caller
    answers it the way it did before (the control socket, or embedded)."""


class LocalReads:
    """One MCP server's reads of its home. ``hand_over(op, args)`` sends a gathered
    write (``access``, ``retrieval_lease``) to the archive's owner."""

    def __init__(
        self,
        home: Path,
        config: Config,
        pid: int,
        hand_over: Callable[[str, dict], Any],
        project: str | None = None,
    ) -> None:
        self.home, self.config, self.project = Path(home), config, project
        self.info_dir = self.home / MCP_SECONDARY_DIR / str(pid)
        self.secondary = Secondary(self.home / ARCHIVE_DIR, self.info_dir)
        self.deferred = DeferredWrites(
            hand_over,
            period=MCP_DEFERRED_WAIT_SECONDS,
            access_bucket_seconds=float(config.retention_access_bucket_seconds),
        )
        self.md: Memoryd | None = None  # opened at the first read that finds an authority
        self.lock = threading.Lock()
        self.refresh_seconds = MCP_SECONDARY_REFRESH_SECONDS
        self._wake = threading.Event()  # a write: the refresher catches up at once
        self._active = threading.Event()  # a read or a write lately: the refresher looks
        self._used = 0.0  # when the last read or write was (monotonic)
        self._stopped = threading.Event()
        self._refresher: threading.Thread | None = None

    def start(self) -> None:
        """Remove the secondary directories of servers that are gone; start the flusher,
        and a thread loading the search code and opening both stores (:meth:`preload`)."""
        drop_stale(self.home / MCP_SECONDARY_DIR)
        self.deferred.start()
        threading.Thread(target=self.preload, name="mcp-preload", daemon=True).start()
        self._refresher = threading.Thread(target=self._refresh, name="mcp-refresh", daemon=True)
        self._refresher.start()

    def preload(self) -> None:
        """Import the search code, open both stores and search the project once (a
        connection's first search builds what the next ones reuse: a small project's
        index in its temp schema, the term statistics), so that the session's first
        read (an agent's first call, often right after the handshake) is not the slow
        one. A read arriving meanwhile waits for the import or the lock, no longer than
        it would have taken it. Whatever fails here is left to that read to report."""
        from memoryd.operations.search import Search

        for name in SEARCH_MODULES:
            importlib.import_module(name)
        with contextlib.suppress(Exception), self.lock:
            Search(self._api()).search(PRELOAD_QUERY, self.project, limit=1)
        with contextlib.suppress(Exception), self.secondary.reading():
            pass

    def run(self, fn: Callable[[Memoryd], T]) -> T:
        """``fn`` on this process's read-only API instance; :class:`NotHere` when the
        home has no authority or ``fn`` reads an archive that does not exist yet."""
        with self.lock:
            try:
                return fn(self._api())
            finally:
                self._use()

    def wrote(self) -> None:
        """A write was committed: the next archive read catches up first (the refresher,
        woken, does it before that read if it can)."""
        self.secondary.stale()
        self._use()
        self._wake.set()

    def _use(self) -> None:
        self._used = time.monotonic()
        self._active.set()

    def _refresh(self) -> None:
        """Keep the secondary ready ahead of the reads (:meth:`Secondary.refresh`) while
        the server is in use; idle, the thread waits for the next read or write."""
        while True:
            self._active.wait()
            self._wake.wait(self.refresh_seconds)
            self._wake.clear()
            if self._stopped.is_set():
                return
            if time.monotonic() - self._used > MCP_SECONDARY_ACTIVE_SECONDS:
                self._active.clear()
                if time.monotonic() - self._used <= MCP_SECONDARY_ACTIVE_SECONDS:
                    self._active.set()  # used meanwhile
                continue
            self.secondary.refresh()

    def close(self) -> None:
        """Hand over what is pending, close both stores, remove the secondary's directory."""
        self._stopped.set()
        self._active.set()
        self._wake.set()
        if self._refresher is not None:
            self._refresher.join(timeout=30)
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
