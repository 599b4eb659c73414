"""Raw JSON-RPC lines on `memoryd mcp`'s stdin: every request gets its answer."""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time

import anyio
import orjson

from memoryd import __version__
from memoryd.faces.mcp import stdio as mcp_stdio
from tests.conftest import MEMORYD, clean_env, run_cli

ANSWER_SECONDS = 120.0  # a loaded machine starts the server slowly; no speed is asserted


def _answers(proc: subprocess.Popen, ids: set[int]) -> dict[int, dict]:
    """The server's replies to the requests ``ids`` (notifications and logs skipped).

    ``proc.stdout`` is unbuffered (``bufsize=0``): a buffered reader could hold a
    second reply that arrived with the first, where ``select`` never sees it."""
    found: dict[int, dict] = {}
    deadline = time.monotonic() + ANSWER_SECONDS
    while ids - found.keys() and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            message = orjson.loads(line)
            if message.get("id") in ids:
                found[message["id"]] = message
    return found


def test_a_request_holding_a_lone_surrogate_is_answered(home) -> None:
    assert run_cli("init", home=home).code == 0
    proc = subprocess.Popen(
        [*MEMORYD, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=clean_env(home),
        bufsize=0,
    )
    lines = [
        *_opening("wire-test"),
        # valid JSON, invalid Unicode: orjson and the SDK's parser refuse it
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call",'
        b' "params": {"name": "search", "arguments": {"query": "x \\ud800 y"}}}',
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call",'
        b' "params": {"name": "status", "arguments": {}}}',
    ]
    try:
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        found = _answers(proc, {1, 2, 3})
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert set(found) == {1, 2, 3}, found
    # answered as a search (a typed tool error here: the home has no project yet)
    assert "BAD_USAGE" in found[2]["result"]["content"][0]["text"], found[2]
    assert not found[3]["result"].get("isError"), found[3]


def _opening(client: str) -> list[bytes]:
    """The handshake a client opens with: ``initialize`` (id 1), then ``initialized``."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": client, "version": "1"}}  # fmt: skip
    return [
        orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
    ]


def _call(rid: int, tool: str, arguments: dict) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def test_argument_errors_are_typed_and_garbage_is_not_a_clean_exit(home, tmp_path) -> None:
    """Argument errors answer memoryd's BAD_USAGE (not pydantic's text), an
    unknown argument refused, the server's version set, a line that is no JSON-RPC
    message logged and the session ending in an error."""
    assert run_cli("init", home=home).code == 0
    errlog = tmp_path / "mcp.err"
    with open(errlog, "wb") as err:
        proc = subprocess.Popen(
            [*MEMORYD, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            env=clean_env(home), bufsize=0,
        )  # fmt: skip
    lines = [
        *_opening("wire-test"),
        b"this is not JSON-RPC",
        _call(2, "search", {"query": "retry backoff", "limit": 0}),
        _call(3, "search", {"query": "retry backoff", "lmit": 3}),
        _call(4, "archive_get", {}),
        _call(5, "search", {"query": "retry backoff"}),  # no project yet: a typed error
    ]
    try:
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        found = _answers(proc, {1, 2, 3, 4, 5})
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=30)
    assert found[1]["result"]["serverInfo"]["version"] == __version__
    text = {i: found[i]["result"]["content"][0]["text"] for i in (2, 3, 4, 5)}
    assert all(found[i]["result"]["isError"] for i in text), found
    assert all(t.startswith("BAD_USAGE: ") for t in text.values()), text
    assert not any("pydantic" in t or "validation error" in t for t in text.values()), text
    assert "'limit'" in text[2] and "(got 0)" in text[2]
    assert "'lmit'" in text[3] and "limit" in text[3], "the unknown one and the known ones"
    assert "'locator'" in text[4]
    assert code == 2, "a session with a line that was no message does not end clean"
    assert "this is not JSON-RPC" in errlog.read_text()


def _no_worker_threads(monkeypatch) -> None:
    def refused(*args, **kwargs):
        raise AssertionError("a worker thread was asked for")

    monkeypatch.setattr(anyio.to_thread, "run_sync", refused)


def test_stdin_lines_of_a_pipe_are_read_on_the_event_loop(monkeypatch) -> None:
    """Each request line is read where the event loop waits for the pipe, not in a
    worker thread and back (two scheduler waits a request on a busy machine); the
    lines are the text the SDK's reader gave (CRLF ended, bad bytes replaced)."""
    _no_worker_threads(monkeypatch)
    read_end, write_end = os.pipe()
    sent = b'{"a": 1}\n{"b": "\xff"}\r\n' + b"x" * 70000 + b"\nlast"  # more than a pipe holds

    def client() -> None:
        os.write(write_end, sent)
        os.close(write_end)

    async def lines() -> list[str]:
        return [line async for line in mcp_stdio._lines(read_end)]

    writer = threading.Thread(target=client)
    writer.start()
    try:
        got = anyio.run(lines)
    finally:
        writer.join()
        os.close(read_end)
    assert got == ['{"a": 1}\n', '{"b": "\ufffd"}\n', "x" * 70000 + "\n", "last"]


def test_answers_are_handed_to_one_writer_and_all_written_at_close(monkeypatch) -> None:
    """The SDK's writer task awaits neither a write nor a flush in a worker thread: the
    answers go to one thread, in order, and close() returns once all are written; a
    client gone (a broken pipe) fails nothing."""
    _no_worker_threads(monkeypatch)
    read_end, write_end = os.pipe()
    answers = mcp_stdio._Answers(write_end)
    sent = [f'{{"id": {n}, "pad": "{"y" * 5000}"}}\n' for n in range(40)]  # more than a pipe holds

    async def write() -> None:
        for line in sent:
            await answers.write(line)
            await answers.flush()

    got = bytearray()
    reader = threading.Thread(target=lambda: got.extend(_read_all(read_end)))
    reader.start()
    anyio.run(write)
    assert answers.close()
    os.close(write_end)
    reader.join()
    assert got.decode() == "".join(sent)
    os.close(read_end)
    read_end, write_end = os.pipe()
    os.close(read_end)
    gone = mcp_stdio._Answers(write_end)
    anyio.run(gone.write, "nobody reads this\n")
    assert gone.close()
    os.close(write_end)


def _read_all(fd: int) -> bytes:
    out = bytearray()
    while chunk := os.read(fd, 65536):
        out += chunk
    return bytes(out)
