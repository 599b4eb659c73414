"""The control server's archive secondary: caught up when the primary wrote, reopened
when a migration switched the archive directory (real RocksDB, a real migration)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import orjson
import pytest

from memoryd.control import request
from memoryd.control.secondary import Secondary
from memoryd.retention.boundary import Migration
from memoryd.storage.archive import ArchiveStore
from tests.agent.conftest import PROJECT, write_transcript
from tests.conftest import run_cli, wait_for

NOW = time.time()


def append(store: ArchiveStore, text: str) -> str:
    return store.append("p", "conversation", text, created_at=NOW, expires_at=None).locator


def read(secondary: Secondary, locator: str) -> dict | None:
    with secondary.reading() as store:
        return None if store is None else store.get(locator)


def test_catch_up_only_after_a_write_and_reopen_after_a_switch(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    secondary = Secondary(archive, tmp_path / "secondary")
    assert read(secondary, "x@1") is None  # no archive yet: the owner answers
    primary = ArchiveStore.open_primary(archive)
    first = append(primary, "the first words")
    assert read(secondary, first)["content"] == "the first words"
    catch_ups = secondary.catch_ups
    for _ in range(3):
        assert read(secondary, first)["status"] == "live"
    assert secondary.catch_ups == catch_ups  # nothing written: no catch-up
    second = append(primary, "the second words")
    assert read(secondary, second)["content"] == "the second words"
    assert secondary.catch_ups == catch_ups + 1
    primary.close()

    migration = Migration(archive)
    migration.copy(2)
    assert migration.verify()["state"] == "verified"  # the directories were switched
    primary = ArchiveStore.open_primary(archive)
    assert primary.payload_format == 2
    third = append(primary, "written after the switch")
    assert read(secondary, third)["content"] == "written after the switch"
    assert secondary.opens == 2  # the new directory was opened, not caught up
    assert read(secondary, first)["content"] == "the first words"
    primary.close()
    migration.commit()
    assert read(secondary, second)["content"] == "the second words"
    secondary.close()


def test_reads_list_the_directory_only_when_it_changed(tmp_path: Path) -> None:
    """A read looks at the primary's marked files, not its whole directory (an info log
    per open piles up there); a write into a log created since is still seen."""
    archive = tmp_path / "archive"
    primary = ArchiveStore.open_primary(archive)
    first = append(primary, "the first words")
    secondary = Secondary(archive, tmp_path / "secondary")
    old = time.time() - 60  # past the racy window: the directory's mtime is trusted
    os.utime(archive, (old, old))
    assert read(secondary, first)["content"] == "the first words"
    listings = secondary.marks.listings
    for _ in range(3):
        assert read(secondary, first)["status"] == "live"
    assert secondary.marks.listings == listings  # nothing changed: not listed again
    primary.flush()  # the memtable goes to a table file: a new log takes the next write
    os.utime(archive, (old, old))  # even with the directory's mtime unmoved
    second = append(primary, "written to the new log")
    assert read(secondary, second)["content"] == "written to the new log"
    primary.close()
    secondary.close()


@pytest.mark.slow
def test_reads_over_the_socket_follow_a_migration(home: Path, tmp_path: Path, background):
    """A real migration through the supervisor's retention worker while a thread keeps
    reading over the control socket: every read answers the right content, and what is
    archived after the switch is found."""
    assert run_cli("init", home=home).code == 0
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    added = run_cli("archive", "add", str(transcript), "--project", PROJECT, "--json", home=home)
    locator = added.json()["locators"][0]
    background("run", "--workers", "1")
    wait_for(lambda: (home / "memoryd.sock").exists(), what="the control socket")
    stop, answers = threading.Event(), []

    def reader() -> None:
        while not stop.is_set():
            answer = request(home, "archive", op="get", args={"locator": locator})
            answers.append(answer)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for step in ("--copy", "--verify", "--commit"):
            res = run_cli("archive", "migrate", step, "--json", home=home)
            assert res.code == 0, res.stderr
    finally:
        stop.set()
        thread.join()
    assert answers and all(a["ok"] for a in answers), [a for a in answers if not a["ok"]][:3]
    assert all("jitter" in a["result"]["content"] for a in answers)

    later = tmp_path / "later.jsonl"
    said = {"role": "user", "content": "The canary deploy waits for smoke tests.", "timestamp": NOW}
    later.write_bytes(orjson.dumps(said) + b"\n")
    added = run_cli("archive", "add", str(later), "--project", PROJECT, "--json", home=home)
    assert added.code == 0, added.stdout
    new = added.json()["locators"][0]
    got = request(home, "archive", op="get", args={"locator": new})
    assert got["ok"] and "canary deploy" in got["result"]["content"], got
    ask = {"project": PROJECT, "query": "canary deploy smoke tests", "limit": 3}
    found = request(home, "archive", op="search", args=ask)
    assert [item["locator"] for item in found["result"]["items"]] == [new]
