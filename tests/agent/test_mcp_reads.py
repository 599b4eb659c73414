"""The MCP server's own reads (its read-only authority connection and its RocksDB
secondary of the archive): never a forgotten text, and no secondary left behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import orjson
import pytest

from memoryd.base.config import MCP_SECONDARY_DIR, load_config
from memoryd.faces.mcp import reads as mcp_reads
from memoryd.faces.mcp.reads import LocalReads
from memoryd.faces.mcp.server import Session
from memoryd.operations.api import Memoryd
from memoryd.storage.archive import ArchiveStore
from tests.agent.conftest import PROJECT, call, connect
from tests.agent.test_forget_tool import consolidated, settle
from tests.conftest import marker, run_cli, wait_for

pytestmark = pytest.mark.slow


def transcript(word: str) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = {
        "role": "user",
        "content": f"The deploy token rotates through {word}.",
        "timestamp": stamp,
    }
    return orjson.dumps(line).decode()


def forget_session(home: Path, session: str) -> None:
    res = run_cli("archive", "forget", "--session", session, "--project", PROJECT, home=home)
    assert res.code == 0, res.stderr


def shows(answer: dict, word: str) -> bool:
    """Whether an answer holds ``word`` outside its gap (which repeats the query)."""
    return word in orjson.dumps({k: v for k, v in answer.items() if k != "gap"}).decode()


@pytest.mark.parametrize("supervised", [False, True], ids=["embedded", "supervised"])
def test_an_archive_forget_is_never_followed_by_a_read_of_its_text(
    project_home: Path, background, supervised: bool
) -> None:
    if supervised:
        background("run", "--workers", "1", home=project_home)
        wait_for(lambda: (project_home / "memoryd.sock").exists(), what="the control socket")
    word = marker("rotor")

    async def scenario() -> None:
        async with connect(project_home) as s:
            for round_ in range(3):  # the secondary is open and caught up before each forget
                session = f"f{round_}"
                added = await call(s, "archive_add", transcript=transcript(word), session=session)
                loc = added["locators"][0]
                assert shows(await call(s, "archive_search", query=f"deploy token {word}"), word)
                assert shows(await call(s, "archive_get", locator=loc), word)
                assert shows(await call(s, "recall", query=f"deploy token {word}"), word)

                await anyio.to_thread.run_sync(forget_session, project_home, session)
                found = await call(s, "archive_search", query=f"deploy token {word}")
                assert not shows(found, word), found
                got = await call(s, "archive_get", locator=loc)
                assert got["status"] == "expired" and not shows(got, word), got
                recalled = await call(s, "recall", query=f"deploy token {word}")
                assert not shows(recalled, word), recalled

    anyio.run(scenario)


def test_a_forgotten_memory_record_is_never_read_again(project_home: Path) -> None:
    word = marker("vault")
    text = f"The release signing key lives in {word}"

    async def scenario() -> None:
        async with connect(project_home) as s:
            await call(s, "remember", candidates=[{"kind": "fact", "text": text}])
            await anyio.to_thread.run_sync(settle, project_home)
            rid = wait_for(lambda: consolidated(project_home, word), what="the record")
            assert shows(await call(s, "search", query=f"release signing key {word}"), word)
            assert shows(await call(s, "recall", query=f"release signing key {word}"), word)

            await call(s, "forget", id=rid)
            assert not shows(await call(s, "search", query=f"release signing key {word}"), word)
            assert not shows(await call(s, "recall", query=f"release signing key {word}"), word)

    anyio.run(scenario)


def test_the_secondary_directory_goes_with_its_server(project_home: Path) -> None:
    parent = project_home / MCP_SECONDARY_DIR
    gone, junk = parent / "999999999", parent / "not-a-pid"  # left by killed servers
    for stale in (gone, junk):
        stale.mkdir(parents=True)
        (stale / "LOG").write_text("an info log\n")
    seen: dict[str, Path] = {}

    async def scenario() -> None:
        async with connect(project_home) as s:
            await call(s, "archive_search", query="retry backoff")
            client = (await call(s, "status"))["session"]["client"]
            mine = seen["mine"] = parent / client.split("-")[-2]
            assert mine.is_dir() and not gone.exists() and not junk.exists()

    anyio.run(scenario)
    wait_for(lambda: not seen["mine"].exists(), what="the server's secondary directory removed")
    assert list(parent.iterdir()) == []


def test_the_preload_opens_both_stores_and_writes_nothing(project_home: Path) -> None:
    """What a session's first read would pay for is done at start; the preload's own
    search is no read of the agent's: it hands nothing over (no lease, no access)."""
    handed: list[tuple[str, dict]] = []
    reads = LocalReads(
        project_home, load_config(project_home), os.getpid(),
        lambda op, args: handed.append((op, args)), PROJECT,
    )  # fmt: skip
    reads.preload()
    assert reads.md is not None and reads.secondary.store is not None
    reads.deferred.flush()
    assert handed == []
    reads.close()
    assert not reads.info_dir.exists()


def test_the_refresher_catches_up_after_a_write_before_any_read(project_home: Path) -> None:
    """A write the server made (``wrote``) is caught up by its refresher thread, so the
    read that follows finds the secondary current and does not pay for it."""
    reads = LocalReads(project_home, load_config(project_home), os.getpid(), lambda *a: None)
    reads.start()
    wait_for(lambda: reads.secondary.store is not None, what="the secondary opened")
    catch_ups = reads.secondary.catch_ups
    reads.wrote()
    wait_for(lambda: reads.secondary.catch_ups > catch_ups, what="a catch-up without a read")
    assert not reads.secondary.forced
    reads.close()
    assert not reads._refresher.is_alive()


def test_reads_of_the_authority_do_not_force_an_archive_catch_up(project_home: Path) -> None:
    """Waiting for the session's candidates (before a search or recall) and naming the
    project read the authority only: the next archive read need not catch up for them,
    where a tool call that may have written the archive still makes it."""
    state = Session(Memoryd(project_home), PROJECT)
    assert state.settle() is None  # nothing staged: nothing pending
    assert state.project_name(None) == PROJECT
    assert not state.local.secondary.forced
    with state.api():
        pass
    assert state.local.secondary.forced
    state.close()


def test_the_refresher_reopens_after_a_flush_while_in_use_then_rests(
    project_home: Path, monkeypatch
) -> None:
    """In use, the server's refresher reopens its secondary after the primary flushed
    (every open of the primary does), before any read; idle, it stops looking."""
    reads = LocalReads(project_home, load_config(project_home), os.getpid(), lambda *a: None)
    reads.start()
    reads.run(lambda md: None)  # a read: the server is in use
    wait_for(lambda: reads.secondary.store is not None, what="the secondary opened")
    opens = reads.secondary.opens
    primary = ArchiveStore.open_primary(project_home / "archive")  # an open flushes
    primary.close()
    wait_for(lambda: reads.secondary.opens > opens, what="a reopen without a read")
    monkeypatch.setattr(mcp_reads, "MCP_SECONDARY_ACTIVE_SECONDS", 0.0)
    wait_for(lambda: not reads._active.is_set(), what="the refresher at rest")
    reads.close()
