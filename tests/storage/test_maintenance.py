"""Checkpoints give way at once to readers and writers; every connection is FULL."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
from memoryd.storage.maintenance import checkpoint_truncate, wal_bytes
from memoryd.workers.contract import WorkContext
from tests.conftest import clean_env

HOLD = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute({begin!r})
conn.execute("SELECT count(*) FROM jobs").fetchall()
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@pytest.fixture
def db(home: Path):
    home.mkdir(parents=True)
    with open_authority(home, load_config(home)) as authority:
        JobQueue(authority).enqueue_many([JobSpec("noop", {"i": i}) for i in range(200)])
        yield authority


def hold(db, begin: str) -> subprocess.Popen:
    """Another process holding a read snapshot (BEGIN) or the write lock (BEGIN IMMEDIATE)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(begin=begin), str(db.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(None),
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def release(proc: subprocess.Popen) -> None:
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=30)


def states(db) -> list[tuple]:
    return db.query("SELECT id, state, attempts FROM jobs ORDER BY id")


def test_a_reader_makes_truncate_give_up_at_once_and_the_timeout_is_restored(db):
    reader = hold(db, "BEGIN")
    try:
        db.write(lambda tx: tx.execute("UPDATE jobs SET priority = 1 WHERE id <= 100"))
        before = wal_bytes(db)
        assert before > 0
        start = time.monotonic()
        result = checkpoint_truncate(db)
        elapsed = time.monotonic() - start
        assert not result.ok and result.blocked_by == "a reader holds a snapshot"
        assert result.reader_pids == [reader.pid]
        assert result.wal_bytes_after >= before  # nothing deleted, nothing truncated
        assert elapsed < db.config.busy_timeout_ms / 1000  # it did not wait for the reader
        assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.config.busy_timeout_ms
    finally:
        release(reader)
    result = checkpoint_truncate(db)
    assert result.ok and result.wal_bytes_after == 0


def test_a_competing_writer_makes_the_checkpoint_yield_and_nothing_is_relabeled(db):
    db.write(lambda tx: tx.execute("UPDATE jobs SET state = 'done' WHERE id <= 50"))
    before = states(db)
    writer = hold(db, "BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        result = checkpoint_truncate(db)
        assert time.monotonic() - start < db.config.busy_timeout_ms / 1000
        assert not result.ok and result.blocked_by == "another writer holds the lock"
        assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.config.busy_timeout_ms
    finally:
        release(writer)
    assert states(db) == before
    assert checkpoint_truncate(db).ok


def test_checkpoint_wal_command_reports_what_it_did(db, cli):
    reader = hold(db, "BEGIN")
    try:
        db.write(lambda tx: tx.execute("UPDATE jobs SET priority = 2"))
        blocked = cli("checkpoint-wal", "--json")
        assert blocked.code == 1
        report = blocked.json()
        assert report["ok"] is False and reader.pid in report["reader_pids"]
        assert report["wal_bytes_before"] == report["wal_bytes_after"] > 0
        assert reader.pid in cli("status", "--json").json()["wal_reader_pids"]
    finally:
        release(reader)
    done = cli("checkpoint-wal", "--json")
    assert done.code == 0 and done.json()["wal_bytes_after"] == 0


def test_every_kind_of_connection_runs_synchronous_full(db, home):
    """CLI/library, worker, read-only and the verify scratch copy all open through
    Authority; no module opens SQLite any other way."""
    config = db.config
    md = Memoryd(home)
    worker = WorkContext(home, config, 0).authority()
    readonly = open_authority(home, config, readonly=True)
    try:
        for conn in (db.conn, md.db.conn, worker.conn, readonly.conn):
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        md.close()
        worker.close()
        readonly.close()
    package = Path(__file__).resolve().parents[2] / "memoryd"
    openers = {
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if re.search(r"apsw\.Connection\((?!\":memory:\")", p.read_text())
    }
    # authority.py is Authority itself; rebuild.py only fills a backup file it then
    # reopens through Authority. (In-memory connections hold no data: not counted.)
    assert openers == {"storage/authority.py", "storage/rebuild.py"}
