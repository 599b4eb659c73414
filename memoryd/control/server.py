"""The control socket's server: a thread of the supervisor, one thread per connection.

Requests never touch the job queue's claims, so they answer while claims are
paused for WAL pressure. Archive reads (``get``, ``search``) use one RocksDB
secondary instance, caught up when the primary changed and reopened after a
migration switched the directory (:mod:`memoryd.control.secondary`); the
writes a read implies (a search's retrieval lease, recall's access records)
are coalesced and enqueued as archive jobs for the retention worker by a
flusher thread, never on the request path (:mod:`memoryd.control.deferred`).
A client may send any number of requests on one connection. Lease heartbeats
skip the queue: the supervisor's loop hands them straight to the retention
worker (see :class:`Direct`). Only the owning uid may talk: the socket is 0600 and each
peer's credentials are checked (``SO_PEERCRED``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memoryd.archive import ops as archive_ops
from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.config import CONTROL_SECONDARY_DIR, Config
from memoryd.control.client import address, socket_path, unwrap
from memoryd.control.deferred import DeferredWrites
from memoryd.control.secondary import Secondary
from memoryd.errors import MemorydError, PeerRefused, StoreBusy, UsageError
from memoryd.storage.archive import ArchiveStore

if TYPE_CHECKING:
    from memoryd.api import Memoryd

_UCRED = struct.Struct("3i")  # pid, uid, gid
#: Ops that read the archive on the secondary; the rest still go through the queue.
SECONDARY_READS = ("get", "search")
#: Writes a read implies: coalesced, then enqueued for the retention worker (not waited for).
DEFERRED_WRITES = ("access", "retrieval_lease")
#: Writes that must not wait behind the queue: handed to the retention worker directly.
DIRECT_WRITES = ("lease",)
DIRECT_WAIT_SECONDS = 30.0
REFUSAL_DRAIN_SECONDS = 2.0


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return _UCRED.unpack(raw)[1]


def check_peer(uid: int) -> None:
    """Refuse a peer running as another user (the socket mode is the first wall)."""
    if uid != os.geteuid():
        raise PeerRefused(
            f"control socket: peer uid {uid} is not the home's owner (uid {os.geteuid()}); "
            "run memoryd as the user who owns the home"
        )


def _refuse(conn: socket.socket, exc: PeerRefused) -> None:
    """Answer the refusal, then read what the peer sent until it hangs up: closing with
    unread input would reset the connection before the peer reads why."""
    conn.sendall(orjson.dumps(archive_ops.error_answer(exc)) + b"\n")
    conn.shutdown(socket.SHUT_WR)
    conn.settimeout(REFUSAL_DRAIN_SECONDS)
    with contextlib.suppress(OSError):
        while conn.recv(1 << 16):
            pass


def _lines(conn: socket.socket) -> Iterator[bytes]:
    """The request lines a client sends, until it hangs up."""
    pending = b""
    while chunk := conn.recv(1 << 16):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from lines


class _ReadSide:
    """The archive as a secondary sees it, shaped like an :class:`ArchiveOwner` for the
    read ops; a retrieval lease is noted for the flusher (:class:`DeferredWrites`)."""

    def __init__(self, home: Path, config: Config, store: ArchiveStore, defer) -> None:
        self.home, self.config, self.path, self.store = home, config, store.path, _Store(store)
        self.store.take_retrieval_leases = lambda locators, *, seconds, now: defer(
            {"locators": list(locators), "seconds": seconds, "now": now}
        )


class _Store:
    """The secondary store, with its one write replaced per instance."""

    def __init__(self, store: ArchiveStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class Direct:
    """One write handed to the retention worker by the supervisor's loop, bypassing the
    queue (no claim, no authority write): the control thread waits for its answer."""

    def __init__(self, op: str, args: dict) -> None:
        self.payload = orjson.dumps({"op": op, "args": args})
        self.answer: dict | None = None
        self.done = threading.Event()

    def finish(self, ok: bool, value: Any) -> None:
        if ok:
            self.answer = value
        else:  # the worker failed it (the archive busy, the worker died): say so
            self.answer = archive_ops.error_answer(
                StoreBusy(f"the retention worker failed: {value}")
            )
        self.done.set()


class ControlServer:
    def __init__(self, home: Path, config: Config) -> None:
        self.home = Path(home)
        self.config = config
        self.path = socket_path(self.home)
        self.secondary = Secondary(self.home / "archive", self.home / CONTROL_SECONDARY_DIR)
        self.deferred = DeferredWrites(
            self._enqueue,
            period=float(config.control_write_flush_seconds),
            access_bucket_seconds=float(config.retention_access_bucket_seconds),
        )
        self._sock: socket.socket | None = None
        # API instances between requests, the warmest on top: an instance's authority
        # connection caches the pages its queries read, so one client's requests keep
        # to one instance (a FIFO alternated them: each query cold on the other)
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._writer: Memoryd | None = None  # the flusher's own: never a request's
        self.direct: queue.SimpleQueue[Direct] = queue.SimpleQueue()  # drained by the supervisor
        # a byte per direct write wakes the supervisor's wait (it polls the read end)
        self.wake_read: int | None = None
        self._wake_write: int | None = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        self.wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        # bound and listening under a side name, then renamed into place (replacing a
        # dead supervisor's socket: we hold its lock): a client that sees the socket
        # can connect, never refused between bind and listen
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with address(fresh) as where:
                sock.bind(where)
        finally:
            os.umask(old)
        os.chmod(fresh, 0o600)
        sock.listen(64)
        os.replace(fresh, self.path)
        self._sock = sock
        self.deferred.start()
        threading.Thread(target=self._accept, name="control-accept", daemon=True).start()

    def stop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
            self._sock = None
        self.path.unlink(missing_ok=True)
        for fd in (self.wake_read, self._wake_write):
            if fd is not None:
                os.close(fd)
        self.wake_read = self._wake_write = None
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

    def _accept(self) -> None:
        while self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    # -- one connection ------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                check_peer(peer_uid(conn))
            except PeerRefused as exc:
                _refuse(conn, exc)
                return
            with contextlib.suppress(ConnectionError):  # the client went away mid-request
                for line in _lines(conn):
                    conn.sendall(orjson.dumps(self.answer(line)) + b"\n")

    def answer(self, line: bytes) -> dict:
        """One request's answer; a typed error is an answer too."""
        try:
            req = orjson.loads(line)
            op, args = req["op"], req.get("args") or {}
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            return archive_ops.error_answer(UsageError(f"malformed control request: {exc!r}"))
        try:
            return {"ok": True, "result": self._handle(op, args)}
        except MemorydError as exc:
            return archive_ops.error_answer(exc)
        except Exception as exc:  # a bug must answer, not leave the client hanging
            return archive_ops.error_answer(MemorydError(f"control request {op!r} failed: {exc!r}"))

    def _handle(self, op: str, args: dict) -> Any:
        with self._api() as md:
            return self._dispatch(md, op, args)

    def _dispatch(self, md, op: str, args: dict) -> Any:
        if op == "status":
            return md.status()
        if op == "search":
            score = args.get("min_score")
            return md.search(
                args["query"],
                args.get("project"),
                limit=int(args.get("limit", 10)),
                min_score=None if score is None else float(score),
            )
        if op == "recall":
            return md.recall(args["query"], args.get("project"), limit=int(args.get("limit", 5)))
        if op == "archive":
            return md.archive(args["op"], args.get("args") or {})
        raise UsageError(f"unknown control request {op!r}; one of status, search, recall, archive")

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

    def _new_api(self) -> Memoryd:
        from memoryd.api import Memoryd

        md = Memoryd(self.home)
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
        if op not in SECONDARY_READS:
            return NotImplemented
        with self.secondary.reading() as store:
            if store is None:  # no archive (yet, or mid-switch): the owner answers
                return NotImplemented
            side = _ReadSide(self.home, self.config, store, self.deferred.retrieval_lease)
            return unwrap(archive_ops.run_op(side, op, args))

    def _direct(self, op: str, args: dict) -> Any:
        item = Direct(op, args)
        self.direct.put(item)
        with contextlib.suppress(BlockingIOError):  # full: the supervisor is awake already
            os.write(self._wake_write, b"!")
        if not item.done.wait(DIRECT_WAIT_SECONDS):
            raise StoreBusy(
                f"the retention worker did not answer a {op} in {DIRECT_WAIT_SECONDS:g}s; "
                "see `memoryd status`, then retry"
            )
        return unwrap(item.answer)

    def _enqueue(self, op: str, args: dict) -> int | None:
        from memoryd.queue import JobSpec

        if self._writer is None:  # the flusher's thread (or stop(), after it ended)
            self._writer = self._new_api()
        return self._writer.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": op, "args": args}))
