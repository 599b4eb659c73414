"""Through the agent's own interface: ``remember`` a fact, then the MCP
``forget`` tool (called with its documented example's arguments and a real id) removes
it, and no file of the home holds its text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import orjson
import pytest

from tests.agent.conftest import PROJECT
from tests.agent.test_mcp import call, connect, fails
from tests.conftest import CLI_TIMEOUT, MEMORYD, clean_env, holding, marker, run_cli, wait_for

pytestmark = pytest.mark.slow


def consolidated(home: Path, word: str) -> str | None:
    """The id of the record holding ``word``, once there is one."""
    found = run_cli("memory", "list", "--project", PROJECT, "--json", home=home).json()
    return next((r["id"] for r in found if word in r["text"]), None)


def settle(home: Path) -> None:
    """Consolidate what is staged: ``memory add --wait`` follows a running supervisor or
    drains one here (either runs the runs queued before it)."""
    line = orjson.dumps({"kind": "lesson", "text": "Run the linter before pushing."})
    subprocess.run(
        [*MEMORYD, "memory", "add", "-", "--project", PROJECT, "--wait"],
        input=line + b"\n", env=clean_env(home), timeout=CLI_TIMEOUT, check=True,
        capture_output=True,
    )  # fmt: skip


def test_forget_tool_removes_a_remembered_fact_from_every_file(project_home: Path) -> None:
    secret = marker("mcpsecret")

    async def scenario() -> None:
        async with connect(project_home) as s:
            text = f"The staging database password is {secret}"
            staged = await call(s, "remember", candidates=[{"kind": "fact", "text": text}])
            assert staged["staged"] == 1
            await anyio.to_thread.run_sync(settle, project_home)
            rid = wait_for(lambda: consolidated(project_home, secret), what="the record")
            assert holding(project_home, secret), "precondition: the text is on disk"

            out = await call(s, "forget", id=rid)
            assert out["forgotten"] == [rid] and out["checkpointed"] is True
            assert holding(project_home, secret) == []
            assert consolidated(project_home, secret) is None
            again = await fails(s, "forget", id=rid)
            assert again.startswith("NO_SUCH_RECORD: ")
            # by its text, as remembered (the tool's documented form)
            word = marker("cron")
            other = f"The cache warms at night via {word}"
            await call(s, "remember", candidates=[{"text": other}])
            by_text = await call(s, "forget", text=other.upper(), project=PROJECT)
            assert len(by_text["forgotten"]) == 1 and holding(project_home, word) == []

    anyio.run(scenario)
    assert holding(project_home, secret) == []
