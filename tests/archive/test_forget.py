"""Through the real CLI: ``archive forget`` removes a transcript now,
pinned or leased, with retention's guarantees: tombstone, purge, and after compaction
no file under ``archive/`` holds its words."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from tests.conftest import files_holding, holding, marker

WORD = b"xylophonequokka4471"  # one exact term: a posting key holds it verbatim


def archive(cli, tmp_path: Path, session: str, text: str) -> list[str]:
    path = tmp_path / f"{session}.jsonl"
    stamp = time.time() - 60
    lines = [{"role": "user", "content": text, "timestamp": stamp},
             {"role": "tool", "content": f"tool said {text}", "timestamp": stamp}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    res = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert res.code == 0, res.stderr
    return res.json()["locators"]


def test_forget_a_session_leaves_nothing_after_compaction(cli, home, tmp_path):
    session, tool = archive(cli, tmp_path, "private", f"my secret is {WORD.decode()}")
    kept, _ = archive(cli, tmp_path, "other", "an unrelated kept note")
    assert cli("archive", "pin", session).code == 0
    leased = cli("archive", "lease", "acquire", "--client", "a", "--project", "demo", tool)
    assert leased.code == 0
    assert files_holding(home / "archive", WORD), "precondition: the term is on disk"

    res = cli("archive", "forget", "--session", "private", "--project", "demo", "--json")
    assert res.code == 0, res.stderr
    r = res.json()
    assert sorted(r["forgotten"]) == sorted([session, tool])
    for loc in (session, tool):
        got = cli("archive", "get", loc, "--json").json()
        assert got["status"] == "expired" and got["forgotten"] and "content" not in got
    hit = cli("archive", "search", WORD.decode(), "--project", "demo", "--json").json()
    assert hit["items"] == []
    assert cli("archive", "get", kept, "--json").json()["status"] == "live"
    assert files_holding(home / "archive", WORD) == []
    redo = cli(
        "archive",
        "add",
        str(tmp_path / "private.jsonl"),
        "--project",
        "demo",
        "--new-project",
        "--json",
    )
    assert redo.json()["locators"] == [session, tool], "the same add is not stored again"
    assert files_holding(home / "archive", WORD) == []


def test_forget_one_locator_and_usage_errors(cli, tmp_path):
    session, tool = archive(cli, tmp_path, "s1", "first note")
    res = cli("archive", "forget", tool)
    assert res.code == 0, res.stderr
    assert "forgot 1 version of 1 document" in res.stdout
    assert cli("archive", "get", tool, "--json").json()["status"] == "expired"
    assert cli("archive", "get", session, "--json").json()["status"] == "live"
    assert cli("archive", "forget").code == 2
    assert cli("archive", "forget", session, "--session", "s1", "--project", "demo").code == 2
    missing = cli("archive", "forget", "--session", "nope", "--project", "demo", "--json")
    assert missing.code == 1 and missing.json()["error"] == "NOT_FOUND"


def test_forgetting_a_session_document_forgets_its_tool_output(cli, home, tmp_path):
    """The session's locator takes the documents linked to it (its tool
    output) with it, and no file of the home keeps either's words after the forget."""
    said, tool_said = marker("sessionword"), marker("toolword")
    path = tmp_path / "linked.jsonl"
    stamp = time.time() - 60
    lines = [{"role": "user", "content": f"remember {said}", "timestamp": stamp},
             {"role": "tool", "content": f"output {tool_said}", "timestamp": stamp}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    res = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert res.code == 0, res.stderr
    session, tool = res.json()["locators"]
    assert holding(home, said) and holding(home, tool_said), "precondition: both on disk"

    res = cli("archive", "forget", session, "--json")
    assert res.code == 0, res.stderr
    assert sorted(res.json()["forgotten"]) == sorted([session, tool])
    for loc in (session, tool):
        got = cli("archive", "get", loc, "--json").json()
        assert got["status"] == "expired" and got["forgotten"] and "content" not in got
    hit = cli("archive", "search", tool_said, "--project", "demo", "--json").json()
    assert hit["items"] == []
    assert holding(home, said) == [] and holding(home, tool_said) == []
