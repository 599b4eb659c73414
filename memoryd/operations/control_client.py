"""The client side of the control socket: one JSON line out, one JSON line back.

:func:`request` opens a connection for one request; a :class:`Client` keeps its
connection for every request of a session (a CLI command makes one request, an
MCP server many: a connect and a server thread per request cost a recall more
than a millisecond under load).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memoryd.base.errors import ArchiveOpError, StoreBusy
from memoryd.workers.socket_address import address, socket_path

if TYPE_CHECKING:
    import socket

#: A request unanswered this long means the supervisor is wedged, not slow.
REQUEST_TIMEOUT_SECONDS = 60.0
#: The archive's read ops: they never create a home, and a supervisor's control socket
#: answers each at once (never through the queue, whose claims may be paused).
ARCHIVE_READS = ("get", "search", "retention_status", "projects")


def request(home: Path, op: str, /, **args: Any) -> dict | None:
    """Send one request; the answer is ``{"ok": true, "result"}`` or an error answer
    (see :func:`unwrap`). ``None`` when no server listens."""
    conn = connect(home)
    if conn is None:
        return None
    with conn:
        return exchange(conn, encode(op, args))


def connect(home: Path) -> socket.socket | None:
    """A connection to the home's control socket; None when no server listens."""
    import socket  # here: a command run embedded (no supervisor) makes no connection

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(REQUEST_TIMEOUT_SECONDS)
    try:
        with address(socket_path(home)) as where:
            conn.connect(where)
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    return conn


def encode(op: str, args: dict) -> bytes:
    return orjson.dumps({"op": op, "args": args}) + b"\n"


def exchange(conn: socket.socket, line: bytes) -> dict:
    conn.sendall(line)
    return orjson.loads(_read_line(conn))


class Client:
    """One kept connection to a home's control socket, for a session's requests.

    A request on a connection the server has closed (the supervisor stopped or was
    replaced) is sent again once on a fresh connection: every control request is
    a read or an idempotent write (a heartbeat, a noted access), so resending one
    the old server may have seen is harmless. Thread-safe: requests take turns.
    """

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._conn: socket.socket | None = None
        self._lock = threading.Lock()

    def request(self, op: str, /, **args: Any) -> dict | None:
        """As :func:`request`; ``None`` when no server listens."""
        line = encode(op, args)
        with self._lock:
            if self._conn is not None:
                try:
                    return self._exchange(line)
                except (BrokenPipeError, ConnectionResetError, Disconnected):
                    pass  # the server went away since the last request: once more, afresh
            self._conn = connect(self.home)
            return None if self._conn is None else self._exchange(line)

    def _exchange(self, line: bytes) -> dict:
        """One exchange; any failure leaves the stream unknown, so the connection goes."""
        try:
            return exchange(self._conn, line)
        except BaseException:
            self._drop()
            raise

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()


class Disconnected(StoreBusy):
    """The server closed the connection before answering."""


def _read_line(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = conn.recv(1 << 16)
        except TimeoutError:
            raise StoreBusy(
                f"the supervisor's control socket did not answer in {REQUEST_TIMEOUT_SECONDS:g}s; "
                "see `memoryd status` and `memoryd doctor`"
            ) from None
        if not chunk:
            raise Disconnected("the supervisor closed the control socket mid-answer; retry")
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


def unwrap(answer: dict) -> Any:
    """The result an answer carries, or its error raised as :class:`ArchiveOpError`."""
    if not answer["ok"]:
        raise ArchiveOpError(answer)
    return answer["result"]
