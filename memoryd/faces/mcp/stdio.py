"""The MCP server's stdio transport: JSON-RPC lines in, each request answered
(:class:`memoryd.faces.mcp.protocol.Server`) in a task of its own, answers out.

A strict JSON parser refuses a line whose request holds a lone surrogate escape
(``"\\ud800"``: valid JSON, not valid Unicode), and the client would wait for
ever. Such a line is repaired first: each lone surrogate becomes U+FFFD and the
request is answered like any other. Bytes that are not UTF-8 are replaced the
same way when stdin is decoded.

Like the SDK's stdio transport, the wire is taken off fds 0 and 1 while serving,
so a child process (a supervisor started for the home) never reads the
client's requests or writes into the replies.

Unlike it, no request or answer waits for a worker thread and back: the SDK read
each line of a file wrapped for anyio in a worker thread and writes and flushes each
answer in two more, every one a hop there and back that, on a machine whose cores are
all busy, waits for the scheduler each way. A pipe or socket on stdin is read on the
event loop, which waits for the descriptor itself (:class:`_FdLines`; anything else,
a file or a terminal, is still read in a thread), and answers go to one thread that
writes them in order (:class:`_Answers`): the event loop hands them over and goes on.

A line that is no JSON-RPC message at all (unanswerable: it has no id to answer) is
logged on stderr, one line each, and counted: :func:`run` returns the count, so
the command does not end as if the session had been clean.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import queue
import stat
import threading
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import orjson

from memoryd.base import logs
from memoryd.faces.mcp.protocol import Server

SHOWN_CHARS = 80  # of a refused line, in its log line


def _scrub(value: Any) -> Any:
    """``value`` with every string's lone surrogates replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def repair(line: str) -> str:
    """The line as orjson can parse it: unchanged unless it is JSON holding lone
    surrogates (the stdlib parser accepts those; orjson does not)."""
    try:
        orjson.loads(line)
        return line
    except orjson.JSONDecodeError:
        pass
    try:
        decoded = json.loads(line)
    except ValueError:
        return line  # not JSON at all: refused as no message
    return json.dumps(_scrub(decoded), ensure_ascii=False) + "\n"


def message(line: str) -> dict | None:
    """The JSON-RPC 2.0 message ``line`` holds (a request, a notification or a
    response), else None."""
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return None
    has_id = "id" in msg and type(msg["id"]) in (str, int)
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return None
        if "params" in msg and not isinstance(msg["params"], dict):
            return None
        return msg if has_id or "id" not in msg else None
    return msg if has_id and ("result" in msg) != ("error" in msg) else None


def is_message(line: str) -> bool:
    """Whether ``line`` is a JSON-RPC message."""
    return message(line) is not None


class _RepairedLines:
    def __init__(self, source: anyio.AsyncFile[str]) -> None:
        self.source = source
        self.refused = 0  # lines that were no JSON-RPC message

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[dict]:
        async for line in self.source:
            if not line.strip():
                continue
            if (msg := message(repair(line))) is not None:
                yield msg
                continue
            self.refused += 1
            logs.event(
                "mcp_line_refused",
                f"memoryd mcp: ignored a line on stdin that is no JSON-RPC message: "
                f"{line.strip()[:SHOWN_CHARS]!r}",
                level=logging.WARNING,
            )


READ_BYTES = 65536  # at most this much of stdin at a time
CLOSE_SECONDS = 30.0  # at the end, the last answers are waited for this long at most


def _text(line: bytes) -> str:
    """A line of stdin as text (CRLF ended as LF, undecodable bytes replaced)."""
    if line.endswith(b"\r\n"):
        line = line[:-2] + b"\n"
    return line.decode("utf-8", errors="replace")


class _FdLines:
    """The lines of a pipe or socket, read on the event loop: it waits for the
    descriptor to be readable, then reads what is there (a read of a pipe that is
    readable returns at once, whatever the descriptor's blocking mode)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = b""
        while True:
            await anyio.wait_readable(self.fd)
            chunk = os.read(self.fd, READ_BYTES)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield _text(line + b"\n")
        if pending:
            yield _text(pending)


class _Answers:
    """stdout for the answers: each answer is queued for one thread that
    writes it whole, in order, so the event loop neither waits for the write nor is
    woken after it. Once the client is gone (a broken pipe) the rest is dropped: the
    session ends when its stdin does. :meth:`close` waits for what is queued, then stops."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._write, name="mcp-stdout", daemon=True)
        self.thread.start()

    async def write(self, text: str) -> None:
        self.queue.put(text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing to wait for: every answer is written as soon as its thread can."""

    def close(self, timeout: float = CLOSE_SECONDS) -> bool:
        """Whether every answer was written within ``timeout`` (a client that reads
        nothing more can hold the last one; the thread is a daemon: it ends with us)."""
        self.queue.put(None)
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def _write(self) -> None:
        gone = False
        while (data := self.queue.get()) is not None:
            view = memoryview(data)
            while view and not gone:
                try:
                    view = view[os.write(self.fd, view) :]
                except InterruptedError:
                    continue
                except OSError:  # the client hung up: nobody reads the rest
                    gone = True


def _pipe_like(fd: int) -> bool:
    """Whether the event loop can wait for ``fd`` (epoll refuses regular files)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _take(fd: int, diversion: int) -> int:
    """``fd``'s wire on a private descriptor (not inherited); ``fd`` becomes
    ``diversion``'s file."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    os.close(diversion)
    return wire


def _take_stdin() -> int:
    """The client's stdin on a private descriptor; fd 0 becomes /dev/null."""
    return _take(0, os.open(os.devnull, os.O_RDONLY))


def _take_stdout() -> int:
    """The client's stdout on a private descriptor; fd 1 becomes stderr (stray output
    of this process or a child goes to the log, never into the answers)."""
    try:
        diversion = os.dup(2)
    except OSError:
        diversion = os.open(os.devnull, os.O_WRONLY)
    return _take(1, diversion)


def _lines(wire: int) -> Any:
    """stdin's lines: on the event loop for a pipe or socket, else in a worker thread
    (which may still block on the descriptor after the session: never closed here)."""
    if _pipe_like(wire):
        return _FdLines(wire)
    return anyio.wrap_file(
        TextIOWrapper(open(wire, "rb", closefd=False), encoding="utf-8", errors="replace")
    )


async def serve(server: Server, requests: AsyncIterator[dict], answers: _Answers) -> None:
    """Answer each request in a task of its own (a slow tool holds up no other
    request); notifications and responses need no answer. Returns once stdin ended
    and every request was answered."""

    async def answer(request: dict) -> None:
        reply = await server.answer(request)
        await answers.write(orjson.dumps(reply).decode() + "\n")

    async with anyio.create_task_group() as tg:
        async for msg in requests:
            if "method" in msg and "id" in msg:
                tg.start_soon(answer, msg)


def run(server: Server) -> int:
    """Serve ``server`` over this process's stdin and stdout until the client hangs up;
    how many lines of stdin were no JSON-RPC message (each logged, then ignored)."""
    wire_in, wire_out = _take_stdin(), _take_stdout()
    stdin = _RepairedLines(_lines(wire_in))
    stdout = _Answers(wire_out)
    try:
        anyio.run(serve, server, stdin, stdout)
    finally:
        written = stdout.close()  # every answer written before the wire is given back
        os.dup2(wire_out, 1)
        if written:  # else its thread may still be writing to it: never reused under it
            os.close(wire_out)
    return stdin.refused
