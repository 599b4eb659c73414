"""Through the real CLI: transcript times in seconds or milliseconds,
refusal of what no later read could show, and reads that survive a bad stored time."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config

JUNE_10 = "2024-06-10T06:13:20Z"  # 1718000000 epoch seconds
SHOWN = "2024-06-10T06:13:20.000Z"  # as JSON shows every time


def write(path: Path, *messages: dict) -> Path:
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    return path


def add(cli, path: Path):
    """Imported: the 2024 times are history, past every class's age."""
    return cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--json", "--imported"
    )


def documents(cli) -> int:
    res = cli("retention", "status", "--json")
    assert res.code == 0, res.stderr
    return res.json()["counts"]["documents"]


@pytest.mark.parametrize("stamp", [1718000000000, 1718000000, 1718000000.0, JUNE_10])
def test_milliseconds_and_seconds_are_both_read_as_the_same_time(cli, tmp_path, stamp):
    path = write(tmp_path / "ms.jsonl",
                 {"role": "user", "content": "we chose the flamingo cache layout",
                  "timestamp": stamp})  # fmt: skip
    res = add(cli, path)
    assert res.code == 0, res.stderr
    (loc,) = res.json()["locators"]
    got = cli("archive", "get", loc, "--json")
    assert got.code == 0, got.stderr
    assert got.json()["created_at"] == SHOWN
    hit = cli("archive", "search", "flamingo cache layout", "--project", "demo", "--json")
    assert hit.code == 0, hit.stderr
    assert hit.json()["items"][0]["created_at"] == SHOWN


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "x", "timestamp": 1e300},
        {"role": "user", "content": "x", "timestamp": -1e12},
        {"role": "user", "content": "x", "timestamp": -5},
        {"role": "user", "content": "x", "timestamp": 1e16},  # past 9999 even as ms
        {"role": "user", "content": "x", "timestamp": "10000-01-01T00:00:00Z"},
        {"role": "user", "content": "x", "timestamp": True},
        {"role": "user", "content": [{"type": "text", "text": 42}], "timestamp": 1718000000},
        {"role": "user", "content": [{"type": "text", "text": ["a"]}], "timestamp": 1718000000},
        {"role": "user", "content": [7], "timestamp": 1718000000},
        {"role": "user", "content": {"text": "x"}, "timestamp": 1718000000},
    ],
)
def test_unreadable_input_is_refused_and_nothing_is_stored(cli, tmp_path, message):
    assert cli("init").code == 0  # an existing home, so a read can prove nothing was stored
    good = {"role": "assistant", "content": "fine line", "timestamp": 1718000000}
    res = add(cli, write(tmp_path / "bad.jsonl", good, message))
    assert res.code == 2, (res.code, res.stderr)
    assert res.json()["error"] == "BAD_ARCHIVE_INPUT"
    assert "Traceback" not in res.stderr and "bad.jsonl:2" in res.message
    assert documents(cli) == 0


def test_text_blocks_are_joined_and_blocks_without_text_skipped(cli, tmp_path):
    blocks = [{"type": "text", "text": "first part"}, {"type": "image", "source": "..."},
              "second part"]  # fmt: skip
    path = write(tmp_path / "b.jsonl", {"role": "user", "content": blocks, "timestamp": 1718000000})
    res = add(cli, path)
    assert res.code == 0, res.stderr
    got = cli("archive", "get", res.json()["locators"][0], "--json").json()
    assert got["content"] == "user: first part second part"


def test_a_version_stored_with_a_bad_time_does_not_break_reads(cli, home, tmp_path):
    """A version stored before the check (its time in milliseconds taken as seconds)."""
    path = write(tmp_path / "old.jsonl",
                 {"role": "user", "content": "the pelican deploy runs nightly",
                  "timestamp": 1718000000})  # fmt: skip
    (loc,) = add(cli, path).json()["locators"]
    doc = loc.rsplit("@", 1)[0].encode()
    with ArchiveOwner(home, load_config(home)) as owner:
        key = b"D" + doc
        ledger = orjson.loads(dict(owner.store.maintenance.raw_items())[key])
        ledger["created_at"] = ledger["versions"][0]["created_at"] = 1718000000000.0
        owner.store.maintenance.raw_write([(key, orjson.dumps(ledger))])
    got = cli("archive", "get", loc, "--json")
    assert got.code == 0, got.stderr
    assert got.json()["created_at"] is None and "pelican" in got.json()["content"]
    hit = cli("archive", "search", "pelican deploy nightly", "--project", "demo", "--json")
    assert hit.code == 0, hit.stderr
    assert hit.json()["items"][0]["locator"] == loc
    assert cli("archive", "search", "pelican deploy nightly", "--project", "demo").code == 0
