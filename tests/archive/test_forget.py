"""Issue 18 item 17 through the real CLI: ``archive forget`` removes a transcript now,
pinned or leased, with retention's guarantees: tombstone, purge, and after compaction
no file under ``archive/`` holds its words."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

WORD = b"xylophonequokka4471"  # one exact term: a posting key holds it verbatim


def files_holding(root: Path, needle: bytes, *, skip: str | None = None) -> list[str]:
    """The files under ``root`` (not under a directory named ``skip``) holding ``needle``.
    RocksDB deletes obsolete files while a store is open: one gone before it is read
    holds nothing any more."""
    found = []
    for d, dirs, files in os.walk(root):
        if skip in dirs:
            dirs.remove(skip)
        for f in files:
            try:
                if needle in Path(d, f).read_bytes():
                    found.append(os.path.join(d, f))
            except FileNotFoundError:
                continue
    return found


def archive(cli, tmp_path: Path, session: str, text: str) -> list[str]:
    path = tmp_path / f"{session}.jsonl"
    stamp = time.time() - 60
    lines = [{"role": "user", "content": text, "timestamp": stamp},
             {"role": "tool", "content": f"tool said {text}", "timestamp": stamp}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    res = cli("archive", "add", str(path), "--project", "demo", "--json")
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
    redo = cli("archive", "add", str(tmp_path / "private.jsonl"), "--project", "demo", "--json")
    assert redo.json()["locators"] == [session, tool], "the same add is not stored again"
    assert files_holding(home / "archive", WORD) == []


def test_forget_one_locator_and_usage_errors(cli, tmp_path):
    session, tool = archive(cli, tmp_path, "s1", "first note")
    res = cli("archive", "forget", tool)
    assert res.code == 0, res.stderr
    assert "forgot 1 version(s) of 1 document(s)" in res.stdout
    assert cli("archive", "get", tool, "--json").json()["status"] == "expired"
    assert cli("archive", "get", session, "--json").json()["status"] == "live"
    assert cli("archive", "forget").code == 2
    assert cli("archive", "forget", session, "--session", "s1", "--project", "demo").code == 2
    missing = cli("archive", "forget", "--session", "nope", "--project", "demo", "--json")
    assert missing.code == 1 and missing.json()["error"] == "NOT_FOUND"
