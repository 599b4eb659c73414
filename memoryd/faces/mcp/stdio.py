"""The MCP server's stdio transport: the SDK's, fed lines it can always answer.

The SDK drops a line its JSON-RPC parser refuses without a reply, so a client
whose request holds a lone surrogate escape (``"\\ud800"``: valid JSON, not
valid Unicode) waits for ever. Such a line is repaired before the SDK sees it:
each lone surrogate becomes U+FFFD and the request is answered like any other.
Bytes that are not UTF-8 are replaced the same way when stdin is decoded.

Like the SDK's own transport, the wire is taken off fds 0 and 1 while serving,
so a child process (a supervisor started for the home) never reads the
client's requests or writes into the replies.

A line that is no JSON-RPC message at all (the SDK drops it without a word) is
logged on stderr, one line each, and counted: :func:`run` returns the count, so
the command does not end as if the session had been clean.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from memoryd.base import logs

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
    """The line as the SDK can parse it: unchanged unless it is JSON holding lone
    surrogates (the stdlib parser accepts those; orjson and the SDK's do not)."""
    try:
        orjson.loads(line)
        return line
    except orjson.JSONDecodeError:
        pass
    try:
        decoded = json.loads(line)
    except ValueError:
        return line  # not JSON at all: the SDK's own answer (or not) stands
    return json.dumps(_scrub(decoded), ensure_ascii=False) + "\n"


def is_message(line: str) -> bool:
    """Whether the SDK can read ``line`` as a JSON-RPC message."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return False
    return True


class _RepairedLines:
    def __init__(self, source: anyio.AsyncFile[str]) -> None:
        self.source = source
        self.refused = 0  # lines that were no JSON-RPC message

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            fixed = repair(line)
            if not line.strip() or is_message(fixed):
                yield fixed
                continue
            self.refused += 1
            logs.event(
                "mcp_line_refused",
                f"memoryd mcp: ignored a line on stdin that is no JSON-RPC message: "
                f"{line.strip()[:SHOWN_CHARS]!r}",
                level=logging.WARNING,
            )


def _take_stdin() -> TextIOWrapper:
    """The client's stdin as text on a private descriptor; fd 0 becomes /dev/null."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return TextIOWrapper(open(wire, "rb", closefd=True), encoding="utf-8", errors="replace")


def run(server: MCPServer) -> int:
    """Serve ``server`` over this process's stdin and stdout until the client hangs up;
    how many lines of stdin were no JSON-RPC message (each logged, then ignored)."""
    stdin = _RepairedLines(anyio.wrap_file(_take_stdin()))

    async def main() -> None:
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
            low = server._lowlevel_server  # what MCPServer.run_stdio_async runs, minus stdin
            await low.run(read_stream, write_stream, low.create_initialization_options())

    anyio.run(main)
    return stdin.refused
