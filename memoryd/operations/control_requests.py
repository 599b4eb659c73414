"""What the control socket's requests do: status, search, recall and archive operations,
answered by embedded API instances of the supervisor's process.

Archive reads (``get``, ``search``) use one RocksDB secondary instance, caught up
when the primary changed and reopened after a migration switched the directory
(:mod:`memoryd.operations.control_secondary`); the writes a read implies (a search's
retrieval lease, recall's access records) are coalesced and enqueued as archive jobs
for the retention worker by a flusher thread, never on the request path
(:mod:`memoryd.operations.control_deferred`). Lease heartbeats skip the queue: they
go to the supervisor's inbox, whose loop hands them straight to the retention worker
(:class:`~memoryd.workers.extensions.Direct`), claims paused or not; so does every
other read the secondary cannot answer (no archive yet, a directory switch, the
retention status): a read never waits behind the queue. The socket itself is the
runtime's (:mod:`memoryd.workers.control`).
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.archive import ops as archive_ops
from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.base.config import CONTROL_SECONDARY_DIR, Config
from memoryd.base.errors import StoreBusy, SupervisorStopping, UsageError
from memoryd.operations import hook_context
from memoryd.operations.control_client import ARCHIVE_READS, unwrap
from memoryd.operations.control_deferred import DeferredWrites
from memoryd.operations.control_secondary import Secondary
from memoryd.operations.home import Home
from memoryd.operations.recall import recall
from memoryd.operations.search import Search
from memoryd.queue import JobSpec
from memoryd.storage.archive import ArchiveStore
from memoryd.workers.extensions import Direct, Inbox

#: Ops that read the archive on the secondary; any other read (or one the secondary
#: cannot answer) goes to the retention worker directly, writes through the queue.
SECONDARY_READS = ("get", "search")
#: Writes a read implies: coalesced, then enqueued for the retention worker (not waited for).
DEFERRED_WRITES = ("access", "retrieval_lease")
#: Writes that must not wait behind the queue: handed to the retention worker directly.
DIRECT_WRITES = ("lease",)
DIRECT_WAIT_SECONDS = 30.0


_MISSING = object()


def _arg(args: dict, op: str, name: str, kind: type | tuple, default: Any = _MISSING) -> Any:
    """``args[name]`` checked against ``kind`` (None passes for an optional one; a bool
    is no number): a missing or mistyped argument is BAD_USAGE, never a Python error's repr."""
    value = args.get(name, default)
    if value is _MISSING:
        raise UsageError(f"control request {op!r} needs the argument {name!r}")
    mistyped = not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)
    if value is not None and mistyped:
        raise UsageError(
            f"control request {op!r}: argument {name!r} has the wrong type ({type(value).__name__})"
        )
    return value


def read_on(
    secondary: Secondary,
    home: Path,
    config: Config,
    defer: Callable[[dict], Any],
    op: str,
    args: dict,
) -> Any:
    """``op`` (one of :data:`SECONDARY_READS`) answered on ``secondary``, its retrieval
    lease noted through ``defer``; ``NotImplemented`` when there is no archive (yet, or
    mid-switch: the archive's owner answers)."""
    with secondary.reading() as store:
        if store is None:
            return NotImplemented
        return unwrap(archive_ops.run_op(_ReadSide(home, config, store, defer), op, args))


class _ReadSide:
    """The archive as a secondary sees it, shaped like an :class:`ArchiveOwner` for the
    read ops; a retrieval lease is noted for the flusher (:class:`DeferredWrites`)."""

    def __init__(self, home: Path, config: Config, store: ArchiveStore, defer) -> None:
        self.home, self.config, self.path = home, config, store.path
        self.store = _Store(store, defer)


class _Store:
    """The secondary store, its one write (a retrieval lease) deferred to the flusher."""

    def __init__(self, store: ArchiveStore, defer: Callable[[dict], None]) -> None:
        self._store = store
        self.protections = _DeferredLeases(store.protections, defer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _DeferredLeases:
    """The store's protections, but a retrieval lease is noted instead of written."""

    def __init__(self, protections: Any, defer: Callable[[dict], None]) -> None:
        self._protections, self._defer = protections, defer

    def take_retrieval_leases(self, locators, *, seconds: float, now: float) -> None:
        self._defer({"locators": list(locators), "seconds": seconds, "now": now})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._protections, name)


class ControlRequests:
    """The requests of one supervisor's control socket (its
    :class:`~memoryd.workers.control.Requests`). ``new_api(home)``: an API instance
    (:class:`~memoryd.operations.api.Memoryd`), made embedded here."""

    def __init__(self, home: Path, config: Config, new_api: Callable[[Path], Any]) -> None:
        self.home = Path(home)
        self.config = config
        self.new_api = new_api
        self.secondary = Secondary(self.home / "archive", self.home / CONTROL_SECONDARY_DIR)
        self.deferred = DeferredWrites(
            self._enqueue,
            period=config.control_write_flush_seconds,
            access_bucket_seconds=float(config.retention_access_bucket_seconds),
        )
        # API instances between requests, the warmest on top: an instance's authority
        # connection caches the pages its queries read, so one client's requests keep
        # to one instance (a FIFO alternated them: each query cold on the other)
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._writer: Any = None  # the flusher's own API instance: never a request's
        self.inbox: Inbox | None = None  # the supervisor's, for lease heartbeats

    def start(self, inbox: Inbox) -> None:
        self.inbox = inbox
        self.deferred.start()

    def stop(self) -> None:
        self.deferred.stop()  # before its API instance goes: it enqueues through it
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break
        with self.secondary.lock:
            self.secondary.close()

    def handle(self, op: str, args: dict) -> Any:
        with self._api() as md:
            return self._dispatch(md, op, args)

    def _dispatch(self, md, op: str, args: dict) -> Any:
        if op == "status":
            return Home(md).status()
        if op in ("search", "recall"):
            query = _arg(args, op, "query", str)
            project = _arg(args, op, "project", str, None)
            limit = _arg(args, op, "limit", int, 10 if op == "search" else 5)
            score = _arg(args, op, "min_score", (int, float), None)
            dense = _arg(args, op, "dense", bool, True)
            asked = {
                "limit": limit,
                "min_score": score,
                "dense": dense,
                "answer_threshold": _arg(args, op, "answer_threshold", (int, float), None),
            }
            if op == "recall":
                return recall(md, query, project, **asked)
            return Search(md).search(query, project, **asked)
        if op == "archive":
            return md.archive(_arg(args, op, "op", str), _arg(args, op, "args", dict, None) or {})
        if op == "hook_context":
            fields = {k: _arg(args, op, k, str, "") for k in ("cwd", "event", "prompt", "source")}
            return hook_context.context(md, **fields)
        raise UsageError(
            f"unknown control request {op!r}; one of status, search, recall, archive, hook_context"
        )

    @contextlib.contextmanager
    def _api(self):
        """An API instance for one request, embedded (it must never route back to this
        socket). Instances are reused: a warm authority connection keeps its caches."""
        try:
            md = self._idle.get_nowait()
        except queue.Empty:
            md = self._new_api()
        try:
            yield md
        finally:
            self._idle.put(md)

    def _new_api(self) -> Any:
        md = self.new_api(self.home)
        md.config = self.config
        md.via_control = False
        md.archive_reader = self.archive_read
        return md

    # -- the archive -------------------------------------------------------------------

    def archive_read(self, op: str, args: dict) -> Any:
        """Answer an archive op here, or ``NotImplemented`` to send it through the queue."""
        if op in DEFERRED_WRITES:
            return getattr(self.deferred, op)(args)
        if op in DIRECT_WRITES:
            return self._direct(op, args)
        if op in SECONDARY_READS:
            defer = self.deferred.retrieval_lease
            answer = read_on(self.secondary, self.home, self.config, defer, op, args)
            if answer is not NotImplemented:
                return answer
        if op in ARCHIVE_READS:  # the owner answers at once: a job would wait out a pause
            return self._direct(op, args)
        return NotImplemented

    def _direct(self, op: str, args: dict) -> Any:
        item = Direct(ARCHIVE_OP, {"op": op, "args": args})
        if self.inbox is None or not self.inbox.submit(item):
            # stopped under this request: its loop will not hand it over
            raise SupervisorStopping(f"the supervisor stopped before the {op}; ask again")
        if not item.done.wait(DIRECT_WAIT_SECONDS):
            raise StoreBusy(
                f"the retention worker did not answer a {op} in {DIRECT_WAIT_SECONDS:g}s; "
                "see `memoryd status`, then retry"
            )
        return unwrap(item.answer)

    def _enqueue(self, op: str, args: dict) -> int | None:
        if self._writer is None:  # the flusher's thread (or stop(), after it ended)
            self._writer = self._new_api()
        return self._writer.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": op, "args": args}))
