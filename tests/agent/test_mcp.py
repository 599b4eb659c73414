"""``memoryd mcp`` as a real subprocess, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from memoryd.faces.mcp.server import TOOLS
from memoryd.storage.archive import ArchiveStore, parse_locator
from tests.agent.conftest import PROJECT, call, connect, fails
from tests.conftest import wait_for

pytestmark = pytest.mark.slow
NOW = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def lease_of(home: Path, client: str) -> dict | None:
    """The client's lease as the archive holds it (read through a secondary instance)."""
    return archive_read(home, lambda store: store.protections.client_lease(client))


def access_buckets(home: Path, locator: str) -> list[float]:
    """The buckets in which the archive recorded an access to the locator's document."""
    return archive_read(home, lambda store: store.access.access_buckets(parse_locator(locator)[0]))


def archive_read(home: Path, fn: Callable[[ArchiveStore], Any]) -> Any:
    store = ArchiveStore.open_secondary(home / "archive", home / "test-secondary")
    try:
        return fn(store)
    finally:
        store.close()


def test_every_tool_over_stdio(project_home: Path) -> None:
    async def scenario() -> None:
        async with connect(project_home) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert set(listed) == set(TOOLS)
            for tool in listed.values():
                assert "Example:" in tool.description and tool.input_schema["type"] == "object"
            assert listed["search"].input_schema["required"] == ["query"]

            hit = await call(s, "search", query="how is the zstandard payload decoded")
            assert hit["status"] == "ok" and hit["items"][0]["path"] == "codec.py"
            gap = await call(s, "search", query="kubernetes ingress controller")
            assert gap["status"] == "abstained" and gap["items"] == [] and gap["gap"]

            recalled = await call(s, "recall", query="which retry backoff did we choose")
            assert recalled["status"] == "ok"
            assert recalled["items"][0]["source"] == "archive"
            nothing = await call(s, "recall", query="kubernetes ingress controller")
            assert nothing["status"] == "abstained" and nothing["injected"] == 0
            assert "does not show the fact does not exist" in nothing["gap"]

            line = orjson.dumps(
                {"role": "user", "content": "Pin the flaky migration test.", "timestamp": NOW}
            )
            added = await call(s, "archive_add", transcript=line.decode(), session="s2")
            loc = added["locators"][0]
            assert added["status"] == ["live"]
            found = await call(s, "archive_search", query="flaky migration test")
            assert [i["locator"] for i in found["items"]] == [loc]
            assert "flaky migration" in (await call(s, "archive_get", locator=loc))["content"]
            await call(s, "pin", locator=loc)
            assert (await call(s, "unpin", locator=loc))["unpinned"] is True

            leased = await call(s, "lease_acquire", locators=[loc])
            assert leased["locators"] == [loc]
            assert (await call(s, "lease_renew"))["client"] == leased["client"]
            status = await call(s, "status")
            assert status["session"] == {**status["session"], "client": leased["client"],
                                         "leased": True}  # fmt: skip
            assert status["projects"][0]["project"] == PROJECT
            assert (await call(s, "lease_release"))["released"] == 1

            bad = await fails(s, "archive_get", locator="no-such-locator")
            assert bad.startswith("BAD_LOCATOR: ")
            foreign = await fails(s, "lease_acquire", locators=[loc], project="elsewhere")
            assert foreign.startswith("LEASE_REJECTED: ") and "foreign_project" in foreign
            bad_candidate = await fails(s, "remember", candidates=[{"text": "   "}])
            assert bad_candidate.startswith("MALFORMED_CANDIDATE: ")  # blank text: nothing staged
            good = {"kind": "fact", "text": "The retry backoff doubles up to a minute."}
            staged = await call(s, "remember", candidates=[good, {"text": ""}])
            assert staged["staged"] == 1 and len(staged["candidates"]) == 1
            assert staged["dropped"][0]["line"] == 2
            unnamed = await fails(s, "remember", candidates=[{"kind": "fact"}])
            assert "text" in unnamed  # the schema requires text: the call is refused whole

    anyio.run(scenario)


def test_session_lease_is_released_on_disconnect(project_home: Path) -> None:
    async def scenario() -> str:
        async with connect(project_home) as s:
            loc = (await call(s, "archive_search", query="retry backoff"))["items"][0]["locator"]
            client = (await call(s, "lease_acquire", locators=[loc]))["client"]
            assert lease_of(project_home, client)["live"]
            return client

    client = anyio.run(scenario)
    assert lease_of(project_home, client) is None


def test_heartbeat_keeps_the_lease_and_a_killed_server_lets_it_lapse(project_home: Path) -> None:
    env = {"MEMORYD_RETENTION_ACTIVE_LEASE_SECONDS": "2", "MEMORYD_MCP_HEARTBEAT_SECONDS": "0.2"}
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with connect(project_home, **env) as s:
            loc = (await call(s, "archive_search", query="retry backoff"))["items"][0]["locator"]
            client = seen["client"] = (await call(s, "lease_acquire", locators=[loc]))["client"]
            first = lease_of(project_home, client)["expires_at"]
            # the heartbeat renews past the first deadline while the session lives
            await anyio.to_thread.run_sync(renewed_after, project_home, client, first)
            seen["heartbeats"] = (await call(s, "status"))["session"]["heartbeats"]
            os.kill(int(client.split("-")[-2]), signal.SIGKILL)
            seen["killed"] = True

    with contextlib.suppress(Exception):  # the transport may break with the killed server
        anyio.run(scenario)
    assert seen.get("killed") and seen["heartbeats"] >= 1
    wait_for(lambda: not lease_of(project_home, seen["client"])["live"], what="a lapsed lease")


def renewed_after(home: Path, client: str, first: str) -> str:
    return wait_for(lambda: lease_of(home, client)["expires_at"] > first, what="a renewal")


def test_beside_a_supervisor_the_tools_go_through_its_control_socket(
    project_home: Path, background
) -> None:
    sup = background("run", "--workers", "1", home=project_home)
    wait_for(lambda: (project_home / "memoryd.sock").exists(), what="the control socket")

    async def scenario() -> None:
        async with connect(project_home) as s:
            status = await call(s, "status")
            assert status["supervisor"]["pid"] == sup.pid
            recalled = await call(s, "recall", query="which retry backoff did we choose")
            loc = recalled["items"][0]["locator"]
            assert recalled["access_records"] == {"deferred": 1}  # handed to the flusher
            again = await call(s, "recall", query="which retry backoff did we choose")
            assert again["access_records"] == {"deferred": 0}  # same document, same bucket
            # the flusher queues it for the retention worker, which records it once
            await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: access_buckets(project_home, loc), what="an access")
            )
            leased = await call(s, "lease_acquire", locators=[loc])
            assert (await call(s, "lease_renew"))["epoch"] == leased["epoch"]
            assert (await call(s, "lease_release"))["released"] == 1

    anyio.run(scenario)
