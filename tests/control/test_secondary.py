"""The control server's archive secondary: caught up when the primary wrote, reopened
when a migration switched the archive directory (real RocksDB, a real migration)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from memoryd.operations.control_client import request
from memoryd.operations.control_secondary import Secondary, flushed
from memoryd.retention.boundary import Migration
from memoryd.storage.archive import ArchiveStore
from tests.agent.conftest import PROJECT, archived_session, write_transcript
from tests.conftest import run_cli, wait_for

NOW = time.time()


def append(store: ArchiveStore, text: str) -> str:
    return store.ledgers.append("p", "conversation", text, created_at=NOW, expires_at=None).locator


def read(secondary: Secondary, locator: str) -> dict | None:
    with secondary.reading() as store:
        return None if store is None else store.ledgers.get(locator)


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


def test_a_switch_under_the_open_lets_the_owner_answer(tmp_path: Path, monkeypatch) -> None:
    """The directory is renamed away between the secondary's look and its open (a
    migration's switch window): the read is handed to the owner, not failed."""
    archive = tmp_path / "archive"
    primary = ArchiveStore.open_primary(archive)
    first = append(primary, "the first words")
    primary.close()
    secondary = Secondary(archive, tmp_path / "secondary")
    real_open = ArchiveStore.open_secondary

    def switched_open(path, info_dir):
        os.rename(archive, tmp_path / "archive.old")
        return real_open(path, info_dir)

    monkeypatch.setattr(ArchiveStore, "open_secondary", switched_open)
    assert read(secondary, first) is None
    monkeypatch.setattr(ArchiveStore, "open_secondary", real_open)
    os.rename(tmp_path / "archive.old", archive)
    assert read(secondary, first)["content"] == "the first words"
    secondary.close()


def migrated(tmp_path: Path) -> tuple[Path, str, Migration]:
    """An archive whose one version sits in a table file (as after the retention
    worker's first open recovered it), copied to the new format beside it: the two
    directories hold the same data in files of the same numbers but other contents."""
    archive = tmp_path / "archive"
    primary = ArchiveStore.open_primary(archive, payload_format=1)
    locator = append(primary, "the first words")
    primary.close()
    ArchiveStore.open_primary(archive).close()
    migration = Migration(archive)
    migration.copy(2)
    return archive, locator, migration


def test_a_switch_inside_the_open_is_read_again(tmp_path: Path, monkeypatch) -> None:
    """RocksDB opens file by file through the path: a migration's switch landing inside
    the open leaves an instance of the old directory's MANIFEST over the new one's table
    files, which answered a live version NOT_FOUND. Modelled exactly: the open reads a
    directory of both (the old CURRENT and MANIFEST, the new tables and logs) and the
    switch lands before it returns; the read must still answer the content."""
    archive, locator, migration = migrated(tmp_path)
    torn = tmp_path / "torn"
    torn.mkdir()
    for old in archive.iterdir():
        if old.name == "CURRENT" or old.name.startswith(("MANIFEST", "OPTIONS")):
            shutil.copy(old, torn / old.name)
    for new in migration.next_path.iterdir():
        if new.suffix in (".sst", ".log") or new.name == "IDENTITY":
            shutil.copy(new, torn / new.name)
    real_open = ArchiveStore.open_secondary

    def switched_inside(path, info_dir):
        monkeypatch.setattr(ArchiveStore, "open_secondary", real_open)
        store = real_open(torn, info_dir)  # what the open read, the switch landing inside
        assert migration.verify()["state"] == "verified"
        return store

    monkeypatch.setattr(ArchiveStore, "open_secondary", switched_inside)
    secondary = Secondary(archive, tmp_path / "secondary")
    assert read(secondary, locator)["content"] == "the first words"
    assert secondary.store.payload_format == 2  # the new directory, opened again
    secondary.close()


def test_switches_in_another_process_never_answer_a_torn_view(tmp_path: Path) -> None:
    """The real race: another process switches the directory again and again (a fresh
    copy each time, old layout and migrated alternately, as a migration and its
    rollback do) while reads go through the secondary. Each answers the content or
    hands the read to the owner (None); NOT_FOUND is a view of two directories."""
    archive, locator, migration = migrated(tmp_path)
    copies = []
    for i in range(SWITCHES):
        copy = tmp_path / f"copy{i}"
        shutil.copytree(migration.next_path if i % 2 == 0 else archive, copy)
        copies.append(str(copy))
    switcher = subprocess.Popen([sys.executable, "-c", SWITCHER, str(archive), *copies])
    secondary = Secondary(archive, tmp_path / "secondary")
    answers: Counter = Counter()
    try:
        while switcher.poll() is None:
            try:
                got = read(secondary, locator)
            except Exception as exc:  # a torn view raises (NOT_FOUND) or mis-decodes
                answers[type(exc).__name__] += 1
                continue
            answers["owner" if got is None else got.get("content", got["status"])] += 1
    finally:
        switcher.wait()
    assert read(secondary, locator)["content"] == "the first words"
    assert set(answers) <= {"the first words", "owner"}, answers
    secondary.close()


SWITCHES = 200
#: Moves the archive away (never back: each directory keeps its identity) and a copy
#: into its place, for each copy given.
SWITCHER = """
import os, sys, time
archive = sys.argv[1]
for i, copy in enumerate(sys.argv[2:]):
    os.replace(archive, f"{archive}.gone{i}")
    os.replace(copy, archive)
    time.sleep(0.002)
"""


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
    primary.maintenance.flush()  # the memtable goes to a table file: a new log takes the next write
    os.utime(archive, (old, old))  # even with the directory's mtime unmoved
    second = append(primary, "written to the new log")
    assert read(secondary, second)["content"] == "written to the new log"
    primary.close()
    secondary.close()


def test_a_refresh_does_the_reopen_and_the_noted_catch_up_a_read_would_have(
    tmp_path: Path,
) -> None:
    """Off a read's path (the MCP server's refresher): after a flush a refresh reopens,
    after a write this process noted it catches up, and the read that follows does
    neither; another process's write is left to the read (cheap, and made ahead of
    every write it would cost an idle reader one per write)."""
    archive = tmp_path / "archive"
    primary = ArchiveStore.open_primary(archive)
    first = append(primary, "the first words")
    secondary = Secondary(archive, tmp_path / "secondary")
    assert secondary.refresh() and secondary.opens == 1
    assert not secondary.refresh()  # nothing changed
    assert read(secondary, first)["content"] == "the first words"
    second = append(primary, "the second words")
    assert not secondary.refresh() and secondary.catch_ups == 0  # left to the read
    secondary.stale()  # as after a write of this process
    assert secondary.refresh() and secondary.catch_ups == 1
    assert read(secondary, second)["content"] == "the second words"
    assert secondary.catch_ups == 1  # the read found it current
    primary.maintenance.flush()  # a new MANIFEST: a catch-up would keep the flushed log
    assert secondary.refresh() and secondary.opens == 2
    assert read(secondary, second)["content"] == "the second words"
    assert (secondary.opens, secondary.catch_ups) == (2, 1)
    third = append(primary, "written before any refresh")
    assert read(secondary, third)["content"] == "written before any refresh"
    assert secondary.catch_ups == 2
    primary.maintenance.flush()
    with secondary.reading():  # a read holds the instance: the refresh leaves it alone
        assert not secondary.refresh()
    primary.close()
    secondary.close()


def test_a_write_noted_during_a_catch_up_forces_the_next_one(tmp_path: Path) -> None:
    """A write the process learns of while a catch-up runs (a refresh beside a read or a
    tool call) may have missed it: the next read still catches up."""
    archive = tmp_path / "archive"
    primary = ArchiveStore.open_primary(archive)
    first = append(primary, "the first words")
    secondary = Secondary(archive, tmp_path / "secondary")
    assert read(secondary, first)["content"] == "the first words"
    with secondary.reading() as store:
        real = store.catch_up

        def noted_meanwhile() -> None:
            real()
            secondary.stale()  # as a tool call's write, ended during this catch-up

        store.catch_up = noted_meanwhile
    secondary.stale()
    catch_ups = secondary.catch_ups
    read(secondary, first)
    assert secondary.catch_ups == catch_ups + 1
    read(secondary, first)
    assert secondary.catch_ups == catch_ups + 2  # the write noted meanwhile was kept
    primary.close()
    secondary.close()


@pytest.mark.slow
def test_reads_over_the_socket_follow_a_migration(home: Path, tmp_path: Path, background):
    """A real migration through the supervisor's retention worker while a thread keeps
    reading over the control socket: every read answers the right content, and what is
    archived after the switch is found."""
    locator = archived_session(home, tmp_path)
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
    added = run_cli(
        "archive", "add", str(later), "--project", PROJECT, "--new-project", "--json", home=home
    )
    assert added.code == 0, added.stdout
    new = added.json()["locators"][0]
    got = request(home, "archive", op="get", args={"locator": new})
    assert got["ok"] and "canary deploy" in got["result"]["content"], got
    ask = {"project": PROJECT, "query": "canary deploy smoke tests", "limit": 3}
    found = request(home, "archive", op="search", args=ask)
    assert [item["locator"] for item in found["result"]["items"]] == [new]


def test_a_forget_is_never_followed_by_a_read_of_the_forgotten_text(tmp_path: Path) -> None:
    """RocksDB keeps what a secondary replayed from a log in its memtable after the
    primary flushed that log: a catch-up alone served a forgotten version as live."""
    archive = tmp_path / "archive"
    secondary = Secondary(archive, tmp_path / "secondary")
    primary = ArchiveStore.open_primary(archive)
    locator = append(primary, "the zebracorn deploy key")
    assert read(secondary, locator)["status"] == "live"
    primary.ledgers.forget([locator.split("@")[0]])
    primary.ledgers.purge_pending()
    primary.maintenance.compact_all()
    after = read(secondary, locator)
    assert after["status"] != "live" and "zebracorn" not in orjson.dumps(after).decode(), after


@pytest.mark.slow
def test_reads_through_the_socket_after_a_forget_do_not_serve_it(home: Path, tmp_path, background):
    assert run_cli("init", home=home).code == 0
    transcript = write_transcript(tmp_path / "chat.jsonl", time.time() - 60)
    background("run", "--workers", "1").wait_running(1)
    added = run_cli(
        "archive",
        "add",
        str(transcript),
        "--project",
        PROJECT,
        "--new-project",
        "--json",
        home=home,
    )
    locator = orjson.loads(added.stdout)["locators"][0]
    got = request(home, "archive", op="get", args={"locator": locator})["result"]
    assert got["status"] == "live" and "backoff" in got["content"]
    forgot = run_cli("archive", "forget", locator, "--json", home=home)
    assert forgot.code == 0, forgot
    got = request(home, "archive", op="get", args={"locator": locator})["result"]
    assert got["status"] != "live" and "backoff" not in orjson.dumps(got).decode(), got
    found = request(home, "archive", op="search", args={"project": PROJECT, "query": "backoff"})
    assert found["result"]["status"] == "abstained", found


def test_a_flush_is_seen_in_the_manifest_before_its_log_is_deleted() -> None:
    """The primary records a flush in its MANIFEST at once and deletes the flushed log
    later, in the background: a secondary that waited for the log to go would catch up
    instead of reopening, and serve what the flush dropped."""
    seen = (("000004.log", 900, 1), ("CURRENT", 16, 1), ("MANIFEST-000005", 400, 1))
    flushed_now = (("000004.log", 900, 1), ("000009.log", 0, 2), ("CURRENT", 16, 1),
                   ("MANIFEST-000005", 520, 2))  # fmt: skip
    written_now = (("000004.log", 1300, 2), ("CURRENT", 16, 1), ("MANIFEST-000005", 400, 1))
    assert flushed(seen, flushed_now)
    assert not flushed(seen, written_now)  # a write appends to the log only: catch up
    assert flushed(seen, None)  # a file went mid-look: reopen rather than trust a catch-up
