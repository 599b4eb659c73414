"""One convention for every time a JSON answer shows: ISO 8601 in
UTC to the millisecond with a ``Z``, or null. The main commands' ``--json`` answers
and the MCP tools' results are walked, and every time-like field is checked."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import orjson

from tests.agent.conftest import PROJECT, call, connect, ingest_sources, write_transcript
from tests.conftest import run_cli

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LOOKS_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
#: Time fields not named ``*_at`` (the queue's and retention's own names).
TIME_KEYS = {"now", "not_before", "lease_expires", "until"}


def bad_times(value: Any, path: str = "") -> list[str]:
    """Every time-like field of ``value`` not in the convention: its path and value."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if (key.endswith("_at") or key in TIME_KEYS) and not isinstance(item, (dict, list)):
                if item is not None and not (isinstance(item, str) and ISO_MS.match(item)):
                    out.append(f"{where}={item!r}")
                continue
            out += bad_times(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += bad_times(item, f"{path}[{i}]")
    elif isinstance(value, str) and LOOKS_ISO.match(value) and not ISO_MS.match(value):
        out.append(f"{path}={value!r}")
    return out


def answer(home: Path, *args: str) -> Any:
    res = run_cli(*args, "--json", home=home)
    assert res.code == 0, (args, res.stdout, res.stderr)
    return orjson.loads(res.stdout.splitlines()[-1]) if "--wait" in args else res.json()


def test_every_json_time_is_iso_utc_to_the_millisecond(home: Path, tmp_path: Path) -> None:
    ingest_sources(home, tmp_path, PROJECT)
    chat = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    added = answer(home, "archive", "add", str(chat), "--project", PROJECT, "--session", "s1")
    locator = added["locators"][0]
    answers = {"archive add": added}
    commands = {
        "status": ("status",),
        "projects": ("projects",),
        "jobs list": ("jobs", "list"),
        "search": ("search", "retry backoff", "--project", PROJECT),
        "recall": ("recall", "which retry backoff did we choose", "--project", PROJECT),
        "archive get": ("archive", "get", locator),
        "archive search": ("archive", "search", "retry backoff", "--project", PROJECT),
        "archive pin": ("archive", "pin", locator),
        "lease acquire": (
            "archive",
            "lease",
            "acquire",
            "--client",
            "c",
            "--project",
            PROJECT,
            locator,
        ),  # fmt: skip
        "lease renew": ("archive", "lease", "renew", "--client", "c"),
        "retention status": ("retention", "status"),
        "retention dry run": ("retention", "run", "--dry-run"),
        "retention run": ("retention", "run"),
    }
    for name, args in commands.items():
        answers[name] = answer(home, *args)
    answers["mcp"] = asyncio.run(mcp_answers(home, locator))
    bad = {name: found for name, a in answers.items() if (found := bad_times(a))}
    assert not bad, bad


async def mcp_answers(home: Path, locator: str) -> dict:
    async with connect(home) as s:
        return {
            "pin": await call(s, "pin", locator=locator),
            "unpin": await call(s, "unpin", locator=locator),
            "archive_get": await call(s, "archive_get", locator=locator),
            "lease_acquire": await call(s, "lease_acquire", locators=[locator]),
            "lease_renew": await call(s, "lease_renew"),
            "status": await call(s, "status"),
            "recall": await call(s, "recall", query="which retry backoff did we choose"),
        }
