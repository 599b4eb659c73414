"""The control socket: a supervisor extension, a thread of the supervisor, one thread
per connection.

This module is the socket's protocol: the 0600 socket renamed into place, each
peer's credentials checked (``SO_PEERCRED``: only the owning uid may talk), request
lines framed incrementally and bounded by ``control_max_request_bytes``, one JSON
answer line per request, any number of requests on one connection. What a request
does is injected (:class:`Requests`, memoryd's in
:mod:`memoryd.operations.control_requests`): requests never touch the job queue's
claims, so they answer while claims are paused for WAL pressure.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson

from memoryd.base.config import Config
from memoryd.base.errors import (
    MemorydError,
    PeerRefused,
    SupervisorStopping,
    UsageError,
    corruption,
    error_answer,
    is_corruption,
)
from memoryd.workers.extensions import Extension, Inbox, Running
from memoryd.workers.socket_address import address, socket_path


class Requests(Protocol):
    """What the control socket's requests do (injected by whoever starts a supervisor)."""

    def start(self, inbox: Inbox) -> None:
        """Before the socket listens; ``inbox`` takes work for the supervisor's workers."""

    def handle(self, op: str, args: dict) -> Any:
        """The result of one request (a typed error raised is an answer too)."""

    def stop(self) -> None:
        """After the socket is closed."""


_UCRED = struct.Struct("3i")  # pid, uid, gid
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


def _refuse(conn: socket.socket, exc: MemorydError) -> None:
    """Answer the refusal, then read what the peer sent until it hangs up (at most
    ``REFUSAL_DRAIN_SECONDS``): closing with unread input would reset the connection
    before the peer reads why."""
    conn.sendall(orjson.dumps(error_answer(exc)) + b"\n")
    conn.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + REFUSAL_DRAIN_SECONDS
    conn.settimeout(REFUSAL_DRAIN_SECONDS)
    with contextlib.suppress(OSError):
        while conn.recv(1 << 16) and time.monotonic() < deadline:
            pass


class RequestTooLarge(UsageError):
    """A request line longer than ``control_max_request_bytes``."""


def _lines(conn: socket.socket, limit: int) -> Iterator[bytes]:
    """The request lines a client sends, until it hangs up. Only each new chunk is
    searched for a newline (a long line costs its length once, not once per chunk), and
    a line longer than ``limit`` bytes raises :class:`RequestTooLarge`."""
    parts: list[bytes] = []
    size = 0
    while chunk := conn.recv(1 << 16):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            size += end - start
            if size > limit:
                break
            yield b"".join([*parts, chunk[start:end]])
            parts, size, start = [], 0, end + 1
        else:
            parts.append(chunk[start:])
            size += len(chunk) - start
        if size > limit:
            raise RequestTooLarge(
                f"control request longer than {limit} bytes (control_max_request_bytes); "
                "the connection is closed"
            )


class ControlServer(Extension):
    """The control socket of one supervisor; ``requests`` says what each request does."""

    def __init__(self, home: Path, config: Config, requests: Requests) -> None:
        self.home = Path(home)
        self.config = config
        self.requests = requests
        self.path = socket_path(self.home)
        self._sock: socket.socket | None = None
        self.stopping = False  # set first thing in stop(): requests answer SUPERVISOR_STOPPING

    # -- lifecycle ---------------------------------------------------------------

    def start(self, sup: Running) -> None:
        self.requests.start(sup.inbox)
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
        threading.Thread(target=self._accept, name="control-accept", daemon=True).start()

    def stop(self) -> None:
        self.stopping = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
            self._sock = None
        self.path.unlink(missing_ok=True)
        self.requests.stop()

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
            limit = self.config.control_max_request_bytes
            with contextlib.suppress(ConnectionError):  # the client went away mid-request
                try:
                    for line in _lines(conn, limit):
                        conn.sendall(orjson.dumps(self.answer(line)) + b"\n")
                except RequestTooLarge as exc:
                    _refuse(conn, exc)

    def answer(self, line: bytes) -> dict:
        """One request's answer; a typed error is an answer too."""
        try:
            req = orjson.loads(line)
            op, args = req["op"], req.get("args") or {}
            if not isinstance(op, str) or not isinstance(args, dict):
                raise TypeError("op must be a string and args an object")
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            return error_answer(UsageError(f"malformed control request: {what}"))
        try:
            if self.stopping:
                raise SupervisorStopping("the supervisor is stopping; ask again")
            return {"ok": True, "result": self.requests.handle(op, args)}
        except MemorydError as exc:
            return error_answer(exc)
        except Exception as exc:  # a bug must answer, not leave the client hanging
            if is_corruption(exc):
                return error_answer(corruption(exc, str(self.home)))
            return error_answer(MemorydError(f"control request {op!r} failed: {exc!r}"))
