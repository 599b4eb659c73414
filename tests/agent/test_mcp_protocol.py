"""``memoryd mcp`` speaks the protocol without the SDK's server: a start imports none of
it (its client, transports and protocol models cost a start most of its CPU), and
its tools are listed as the SDK's server lists them."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from memoryd.faces.mcp.server import Session, build
from memoryd.operations.api import Memoryd
from tests.agent.test_mcp_wire import _answers, _call, _opening
from tests.conftest import MEMORYD, clean_env

#: What the SDK's server brings in: none of it is imported by a serving ``memoryd mcp``.
SDK_PACKAGES = ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "httpx")


def _imported(log: str) -> set[str]:
    """The modules a ``PYTHONPROFILEIMPORTTIME`` log names."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in log.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_a_serving_server_imports_none_of_the_sdk(project_home: Path, tmp_path: Path) -> None:
    """Handshake, listing, a recall and a remember answered; the process imported no
    module of the SDK or its HTTP stack (each import is logged by the interpreter)."""
    lines = [
        *_opening("import-test"),
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}',
        _call(3, "recall", {"query": "retry backoff", "project": "demo"}),
        _call(4, "archive_get", {"locator": "nope"}),
    ]
    errlog = tmp_path / "imports.log"
    with errlog.open("wb") as err:
        proc = subprocess.Popen(
            [*MEMORYD, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            env=clean_env(project_home, {"PYTHONPROFILEIMPORTTIME": "1"}), bufsize=0,
        )  # fmt: skip
        try:
            proc.stdin.write(b"\n".join(lines) + b"\n")
            found = _answers(proc, {1, 2, 3, 4})
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
    assert set(found) == {1, 2, 3, 4}, found
    assert not found[3]["result"]["isError"], found[3]
    assert found[4]["result"]["isError"] and "BAD_LOCATOR" in str(found[4])
    modules = _imported(errlog.read_text())
    assert "memoryd.faces.mcp.server" in modules, "the import log is the server's"
    sdk = sorted(m for m in modules if m.split(".")[0] in SDK_PACKAGES)
    assert not sdk, f"a serving memoryd mcp imported the SDK: {sdk[:10]}"


def test_tools_are_listed_as_the_sdks_server_lists_them() -> None:
    """Each tool's input schema is the one the SDK's ``MCPServer`` builds for the same
    function (but for the schema's title, which the SDK takes from the function's name)."""
    from mcp.server.mcpserver import MCPServer

    ours = build(Session(Memoryd(Path("no-home")), None))
    sdk = MCPServer("reference")
    for name, tool in ours.tools.items():
        sdk.tool(name=name, description=tool.description)(tool.fn)
    listed = {t.name: t for t in asyncio.run(sdk.list_tools())}
    assert set(listed) == set(ours.tools)
    for name, tool in ours.tools.items():
        mine = tool.listing()
        theirs = listed[name].model_dump(mode="json", by_alias=True, exclude_none=True)
        assert mine["description"] == theirs["description"]
        assert {**mine["inputSchema"], "title": None} == {**theirs["inputSchema"], "title": None}
