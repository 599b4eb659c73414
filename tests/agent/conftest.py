"""Homes for the agent's faces, and the MCP SDK's own stdio client driving ``memoryd mcp``."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import MEMORYD, clean_env, run_cli

PROJECT = "demo"
README_PROJECT = "myrepo"  # the project of the README's MCP configuration
CODEC = '''def decode_payload(blob):
    """Decode the zstandard frame and parse the orjson document."""
    return orjson.loads(zstandard.decompress(blob))
'''


def write_transcript(path: Path, created: float) -> Path:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
    lines = [
        {
            "role": "user",
            "content": "We chose exponential retry backoff with jitter for the uploader.",
            "timestamp": stamp,
        },  # fmt: skip
        {"role": "assistant", "content": "Agreed, exponential backoff with jitter it is."},
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def ingest_sources(home: Path, tmp_path: Path, project: str) -> None:
    """A small repository (six helpers and a codec) ingested as ``project``."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        (src / f"mod{i}.py").write_text(f"def helper_{i}(value):\n    return value + {i}\n")
    (src / "codec.py").write_text(CODEC)
    res = run_cli("ingest", str(src), "--project", project, "--wait", "--json", home=home)
    assert res.code == 0, res.stderr


@pytest.fixture
def readme_home(home: Path, tmp_path: Path) -> Path:
    """A home as a new user has it after ingesting the README's ``myrepo``: nothing runs."""
    ingest_sources(home, tmp_path, README_PROJECT)
    return home


def archived_session(home: Path, tmp_path: Path) -> str:
    """Init ``home`` and archive one conversation an hour old into a new project
    ``PROJECT``: its locator."""
    assert run_cli("init", home=home).code == 0
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    added = run_cli("archive", "add", str(transcript), "--project", PROJECT,
                    "--new-project", "--json", home=home)  # fmt: skip
    assert added.code == 0, added.stderr
    return added.json()["locators"][0]


@pytest.fixture
def project_home(home: Path, tmp_path: Path) -> Path:
    ingest_sources(home, tmp_path, PROJECT)
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    res = run_cli("archive", "add", str(transcript), "--project", PROJECT, "--session", "s1",
                  "--json", home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    return home


@asynccontextmanager
async def connect(home: Path, project: str = PROJECT, **env: str) -> AsyncIterator[ClientSession]:
    """A session with ``memoryd mcp --project PROJECT`` on ``home``, as an MCP client starts
    it (the README's configuration: the command, its args, MEMORYD_HOME)."""
    extra = {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env}
    params = StdioServerParameters(
        command=MEMORYD[0],
        args=[*MEMORYD[1:], "mcp", "--project", project],
        env=clean_env(home, extra),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(client: ClientSession, tool: str, /, **args: Any) -> Any:
    """A successful call's JSON answer."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return orjson.loads(result.content[0].text)


async def fails(client: ClientSession, tool: str, /, **args: Any) -> str:
    """A failed call's error text (it starts with the error code)."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.content
    return result.content[0].text
