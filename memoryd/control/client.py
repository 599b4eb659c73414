"""The client side of the control socket: one JSON line out, one JSON line back."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import orjson

from memoryd.config import CONTROL_SOCKET_FILE
from memoryd.errors import StoreBusy

#: A request unanswered this long means the supervisor is wedged, not slow.
REQUEST_TIMEOUT_SECONDS = 60.0


def socket_path(home: Path) -> Path:
    return Path(home) / CONTROL_SOCKET_FILE


def request(home: Path, op: str, /, **args: Any) -> dict | None:
    """Send one request; the answer is ``{"ok": true, "result"}`` or an error answer
    (see :func:`memoryd.archive.ops.unwrap`). ``None`` when no server listens."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(REQUEST_TIMEOUT_SECONDS)
        try:
            conn.connect(str(socket_path(home)))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        conn.sendall(orjson.dumps({"op": op, "args": args}) + b"\n")
        return orjson.loads(_read_line(conn))


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
            raise StoreBusy("the supervisor closed the control socket mid-answer; retry")
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)
