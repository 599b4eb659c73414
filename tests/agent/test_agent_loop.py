"""The agent's loop through ``memoryd mcp`` as the README configures it, nothing else started:
every tool's documented example works as written, and what it remembers it finds again
(or is told why not). The loop's later steps (a correction, forgetting) belong here too."""

from __future__ import annotations

import re
import secrets
import string
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp.client.session import ClientSession

from memoryd.base.config import MEMORY_SETTLE_SECONDS
from memoryd.consolidation.candidates import DEFAULT_KIND, KINDS
from memoryd.faces.mcp.server import TOOLS
from tests.agent.conftest import README_PROJECT, call, connect
from tests.conftest import FAST_RETRY, WAIT_TIMEOUT, drains, holding, marker, run_cli, wait_for

pytestmark = pytest.mark.slow
EXAMPLE = re.compile(r" Example: (\{.*\})$")


def examples(tools: list) -> dict[str, dict]:
    """Each tool's example call, parsed out of the description the server lists."""
    found = {}
    for tool in tools:
        match = EXAMPLE.search(tool.description)
        assert match, f"{tool.name}'s description ends with 'Example: {{...}}'"
        found[tool.name] = orjson.loads(match.group(1))
    return found


def memory_items(answer: dict, marker: str) -> list[dict]:
    return [i for i in answer["items"] if i.get("source") == "memory" and marker in i["text"]]


async def search_until(s: ClientSession, query: str, done: Callable[[dict | None], Any]) -> dict:
    """Search (again, as ``memory_pending`` tells an agent to) until ``done(memory_pending)``:
    a loaded machine may not decide a candidate within one search's bounded wait."""
    with anyio.fail_after(WAIT_TIMEOUT):
        while not done((found := await call(s, "search", query=query))["memory_pending"]):
            await anyio.sleep(0.1)
    return found


def decided(pending: dict | None) -> bool:
    return pending is None or "not consolidated yet" not in pending["why"]


def fields(schema: dict) -> Iterator[tuple[str, dict, bool]]:
    """Every field of a tool's input schema and of the objects it defines: (name, its
    schema, whether it is required)."""
    for obj in [schema, *schema.get("$defs", {}).values()]:
        for name, field in obj["properties"].items():
            yield name, field, name in obj.get("required", [])


def test_every_tool_example_succeeds_as_written(readme_home: Path) -> None:
    async def scenario() -> None:
        async with connect(readme_home, README_PROJECT) as s:
            listed = (await s.list_tools()).tools
            for tool in listed:  # each field says what it is; an optional one its default
                for name, field, required in fields(tool.input_schema):
                    where = f"{tool.name}.{name}"
                    assert field.get("description"), f"{where} has a description"
                    assert {"type", "anyOf", "$ref"} & set(field), f"{where} has a type"
                    assert required or "default" in field, f"{where} has a default"
            candidate = next(t for t in listed if t.name == "remember").input_schema["$defs"]
            (candidate,) = candidate.values()
            assert candidate["required"] == ["text"]
            assert candidate["properties"]["kind"]["enum"] == list(KINDS)
            assert candidate["properties"]["kind"]["default"] == DEFAULT_KIND
            calls = examples(listed)
            assert set(calls) == set(TOOLS)
            for name in TOOLS:  # in the order the examples build on (archive_add first)
                result = await s.call_tool(name, args := calls[name])
                assert not result.is_error, f"{name} {args}: {result.content[0].text}"

    anyio.run(scenario)
    wait_for(lambda: not drains(readme_home), timeout=30, what="no drain left running")


def test_remembered_facts_are_found_by_search_and_recall(readme_home: Path) -> None:
    marker = f"zq{secrets.token_hex(4)}"
    fact = f"The staging cache is warmed by the {marker} cron job every night."

    async def scenario() -> None:
        async with connect(readme_home, README_PROJECT) as s:
            remember = next(t for t in (await s.list_tools()).tools if t.name == "remember")
            example = examples([remember])["remember"]
            staged = await call(s, "remember", **example)
            assert staged["staged"] == 1 and staged["started"] is True
            assert (await call(s, "remember", candidates=[{"text": fact}]))["staged"] == 1

            query = f"which cron job warms the staging cache {marker}"
            start = time.monotonic()
            found = await call(s, "search", query=query)
            waited = time.monotonic() - start
            if not memory_items(found, marker):  # a machine too slow to drain within the bound:
                assert waited >= MEMORY_SETTLE_SECONDS  # it waited the whole bound,
                assert "not consolidated yet" in found["memory_pending"]["why"]  # said so,
                found = await search_until(s, query, lambda p: p is None)  # a later one finds it
            assert memory_items(found, marker), found
            # (pending is read before the search: a record committed between the two is
            # both found and still reported pending, never neither)
            await search_until(s, query, lambda p: p is None)
            recalled = await call(s, "recall", query=f"what does the {marker} cron job do")
            assert recalled["status"] == "ok" and memory_items(recalled, marker), recalled
            apsw = await call(s, "search", query="do we use apsw or sqlite3")
            assert [i for i in apsw["items"] if i.get("source") == "memory"], apsw

    anyio.run(scenario)
    wait_for(lambda: not drains(readme_home), timeout=30, what="no drain left running")


def test_a_candidate_that_cannot_be_decided_is_reported_not_silently_missing(
    readme_home: Path,
) -> None:
    # an adjudicator that always fails: a candidate with a shortlist is parked for a retry
    env = {"MEMORYD_MEMORY_ADJUDICATOR": "false", **FAST_RETRY}
    first = "Release builds are signed with the hardware key kept in the vault."
    second = "Release builds are signed with the hardware key from the office safe, not the vault."
    query = "how are release builds signed"

    async def scenario() -> None:
        async with connect(readme_home, README_PROJECT, **env) as s:
            await call(s, "remember", candidates=[{"text": first}])  # nothing like it: added
            assert (await search_until(s, query, decided))["memory_pending"] is None
            added = await call(s, "remember", candidates=[{"text": second}])
            pending = (await search_until(s, query, decided))["memory_pending"]
            assert pending["ids"] == added["candidates"] and pending["candidates"] == 1
            assert "parked for a retry" in pending["why"] or "dead-lettered" in pending["why"]
            assert "memoryd memory" in pending["why"]  # says what to do

    anyio.run(scenario)
    wait_for(lambda: not drains(readme_home), timeout=30, what="no drain left running")


def test_the_whole_loop_remember_correct_forget(readme_home: Path) -> None:
    """Save a fact, correct it later, get the correction back, forget it, and find no
    byte of it in the home: through the tools alone, with the defaults a new user has."""
    word = marker("redis")
    old = f"The staging Redis {word} listens on port 6380."
    new = f"The staging Redis server {word} listens on port 6379."
    query = f"which port does the staging Redis {word} listen on"

    async def scenario() -> None:
        async with connect(readme_home, README_PROJECT) as s:
            await call(s, "remember", candidates=[{"text": old}])
            first = await search_until(s, query, lambda p: p is None)
            assert [i["text"] for i in memory_items(first, word)] == [old], first
            await call(s, "remember", candidates=[{"text": new}])
            second = await search_until(s, query, lambda p: p is None)
            assert [i["text"] for i in memory_items(second, word)] == [new], second
            assert holding(readme_home, word), "precondition: the text is on disk"
            gone = await call(s, "forget", text=new)
            assert len(gone["forgotten"]) == 1 and len(gone["forgotten"][0]["forgotten"]) == 2
            after = await call(s, "search", query=query)
            assert not memory_items(after, word), after

    anyio.run(scenario)
    wait_for(lambda: not drains(readme_home), timeout=30, what="no drain left running")
    assert run_cli("checkpoint-wal", home=readme_home).code == 0
    assert holding(readme_home, word) == [], "no file of the home holds the forgotten fact"


def records_of(home: Path, word: str) -> dict[str, dict]:
    """The project's memory records holding ``word``, by text (every status)."""
    res = run_cli("memory", "list", "--project", README_PROJECT, "--json", home=home)
    assert res.code == 0, res.stderr
    return {r["text"]: r for r in orjson.loads(res.stdout) if word in r["text"]}


def test_a_corrected_decision_supersedes_and_a_rephrasing_reinforces(readme_home: Path) -> None:
    """Through the remember tool with the defaults: a decision whose chosen name changes
    supersedes the older one, which stays readable pointing at the newer; the same
    fact said again with a clause added (and "time out" for "timeout") reinforces the
    record instead of adding a second one."""
    word = marker("mailer").rstrip(string.digits)  # a plain word, no identifier
    chose = f"We chose Sidekiq for the Rails {word} retries"
    changed = f"we chose RabbitMQ for the Rails {word} retries now"
    fact = f"The {word} relay gives up after a 30 s timeout"
    again = f"The {word} relay gives up when requests time out after 30 s"

    async def remember_decided(s: ClientSession, text: str, kind: str) -> None:
        await call(s, "remember", candidates=[{"text": text, "kind": kind}])
        await search_until(s, f"{word} retries relay timeout", lambda p: p is None)

    async def scenario() -> None:
        async with connect(readme_home, README_PROJECT) as s:
            for text, kind in ((chose, "decision"), (changed, "decision"), (fact, "fact")):
                await remember_decided(s, text, kind)
            await remember_decided(s, again, "fact")

    anyio.run(scenario)
    wait_for(lambda: not drains(readme_home), timeout=30, what="no drain left running")
    found = records_of(readme_home, word)
    assert set(found) == {chose, changed, fact}, found  # the rephrasing made no record
    assert found[chose]["status"] == "superseded" and not found[changed]["conflicts_with"]
    assert found[chose]["pointer"] == found[changed]["id"]
    assert found[changed]["status"] == "active"
    assert found[fact]["status"] == "active" and found[fact]["count"] == 2
