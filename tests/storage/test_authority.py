"""The SQLite authority: pragmas on every connection, migrations once, no write on reopen."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import threading
from pathlib import Path

import apsw
import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.base.errors import SchemaTooNew, StoreBusy
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
from memoryd.storage.schema import CURRENT_VERSION, MIGRATIONS
from tests.conftest import clean_env, queue_counts, run_cli


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def config(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    return load_config(home, {"write_retry_seconds": 1.0})


def populated(home: Path, config) -> None:
    """An authority at the current schema with committed rows still in its WAL."""
    with open_authority(home, config) as db:
        JobQueue(db).enqueue_many([JobSpec("noop", {"i": i}) for i in range(50)])


# -- every connection: WAL and synchronous=FULL ----------------------------------------


@pytest.mark.parametrize("readonly", [False, True])
def test_every_connection_is_wal_and_synchronous_full(home: Path, config, readonly: bool) -> None:
    populated(home, config)
    with open_authority(home, config, readonly=readonly) as db:
        assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0


def test_fresh_authority_is_wal_and_full_and_at_current_schema(home: Path, config) -> None:
    with open_authority(home, config) as db:
        assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.user_version() == CURRENT_VERSION
        applied = db.query("SELECT version FROM schema_history ORDER BY version")
        assert [v for (v,) in applied] == [m[0] for m in MIGRATIONS]


def test_migrations_apply_once(home: Path, config) -> None:
    populated(home, config)
    for _ in range(3):
        with open_authority(home, config) as db:
            assert db.query("SELECT count(*) FROM schema_history")[0][0] == len(MIGRATIONS)
            assert db.query("SELECT count(*) FROM jobs")[0][0] == 50


def test_a_newer_schema_is_refused_untouched(home: Path, config) -> None:
    populated(home, config)
    raw = apsw.Connection(str(home / "authority.db"))
    raw.execute(f"PRAGMA user_version={CURRENT_VERSION + 1}")
    raw.close()
    before = sha256(home / "authority.db")
    with pytest.raises(SchemaTooNew, match="upgrade memoryd"):
        open_authority(home, config)
    assert sha256(home / "authority.db") == before


# -- Must show 6: reopening at the current schema writes nothing -------------------------


REOPEN = """
import sys, orjson
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.storage import open_authority
home = Path(sys.argv[1])
db = open_authority(home, load_config(home, {"write_retry_seconds": 1.0}))
report = {
    "total_changes": db.conn.total_changes(),
    "version": db.user_version(),
    "synchronous": db.conn.execute("PRAGMA synchronous").fetchone()[0],
    "journal_mode": db.conn.execute("PRAGMA journal_mode").fetchone()[0],
    "jobs": db.query("SELECT count(*) FROM jobs")[0][0],
    "total_changes_after_reads": db.conn.total_changes(),
}
db.close()
sys.stdout.write(orjson.dumps(report).decode())
"""


def test_reopen_at_current_schema_writes_nothing(home: Path, config) -> None:
    open_authority(home, config).close()  # create it at the current schema
    db_file, wal_file = home / "authority.db", home / "authority.db-wal"
    # An independent reader keeps the WAL alive: a last closing connection would
    # checkpoint and truncate it, which would hide any write the reopen made.
    keeper = apsw.Connection(str(db_file), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert keeper.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
        populated(home, config)
        assert keeper.execute("SELECT count(*) FROM jobs").fetchone()[0] == 50
        assert wal_file.stat().st_size > 0, "the committed rows are still in the WAL"
        before = (sha256(db_file), sha256(wal_file))

        # In this process ...
        with open_authority(home, config) as db:
            assert db.conn.total_changes() == 0
            assert db.user_version() == CURRENT_VERSION
            assert db.query("SELECT count(*) FROM jobs")[0][0] == 50
            assert db.conn.total_changes() == 0
        assert (sha256(db_file), sha256(wal_file)) == before

        # ... and in an independent process.
        proc = subprocess.run(
            [sys.executable, "-c", REOPEN, str(home)],
            env=clean_env(None),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        report = orjson.loads(proc.stdout)
        assert report == {
            "total_changes": 0,
            "version": CURRENT_VERSION,
            "synchronous": 2,
            "journal_mode": "wal",
            "jobs": 50,
            "total_changes_after_reads": 0,
        }
        assert (sha256(db_file), sha256(wal_file)) == before
    finally:
        keeper.close()


def test_reopen_takes_no_write_lock(home: Path, config) -> None:
    """A reopen succeeds while another connection holds the write lock: it never asks for it."""
    populated(home, config)
    holder = apsw.Connection(str(home / "authority.db"))
    holder.execute("BEGIN IMMEDIATE")
    try:
        # write_retry_seconds is 1 s: any write attempt would end in StoreBusy.
        with open_authority(home, config) as db:
            assert db.user_version() == CURRENT_VERSION
            assert db.conn.total_changes() == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- the write helper --------------------------------------------------------------------


def test_write_commits_and_returns(home: Path, config) -> None:
    with open_authority(home, config) as db:
        ids = db.write(lambda tx: JobQueue(db).enqueue_in(tx, [JobSpec("noop")] * 3))
        assert len(ids) == 3
        assert db.conn.get_autocommit()
    with open_authority(home, config) as db:
        assert db.query("SELECT count(*) FROM jobs")[0][0] == 3


def test_write_rolls_back_the_whole_transaction_on_error(home: Path, config) -> None:
    with open_authority(home, config) as db:

        def boom(tx: apsw.Connection) -> None:
            JobQueue(db).enqueue_in(tx, [JobSpec("noop")] * 3)
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            db.write(boom)
        assert db.conn.get_autocommit()
        assert db.query("SELECT count(*) FROM jobs")[0][0] == 0


def test_write_refuses_to_nest(home: Path, config) -> None:
    with open_authority(home, config) as db:
        with pytest.raises(RuntimeError, match="inside an open transaction"):
            db.write(lambda tx: db.write(lambda inner: None))
        assert db.conn.get_autocommit()


def test_write_retries_the_whole_transaction_while_another_writer_holds_the_lock(
    home: Path, config
) -> None:
    with open_authority(home, load_config(home, {"write_retry_seconds": 60.0})) as db:
        holder = apsw.Connection(str(db.path))
        holder.execute("BEGIN IMMEDIATE")
        holder.execute(
            "INSERT INTO jobs (kind, payload, max_attempts, created_at, updated_at)"
            " VALUES ('noop', 'null', 1, 0, 0)"
        )
        calls: list[int] = []
        released = threading.Event()

        def op(tx: apsw.Connection) -> int:
            calls.append(1)
            return tx.execute("SELECT count(*) FROM jobs").fetchone()[0]

        def release_later() -> None:
            # Commit once the writer has been turned away at least once.
            while not released.is_set():
                released.wait(0.05)
            holder.execute("COMMIT")

        t = threading.Thread(target=release_later)
        t.start()
        try:
            attempts = 0
            original = db._write_once

            def counting(fn):
                nonlocal attempts
                attempts += 1
                if attempts >= 3:
                    released.set()
                return original(fn)

            db._write_once = counting  # count attempts; the store itself is real
            assert db.write(op) == 1  # saw the other writer's committed row
        finally:
            released.set()
            t.join()
            holder.close()
        assert attempts >= 3
        assert len(calls) == 1, "the body runs only once the lock is ours"


def test_write_gives_up_with_store_busy(home: Path, config) -> None:
    with open_authority(home, load_config(home, {"write_retry_seconds": 0.3})) as db:
        holder = apsw.Connection(str(db.path))
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreBusy, match="locked by another writer"):
                db.write(lambda tx: tx.execute("DELETE FROM jobs"))
            assert db.conn.get_autocommit()
        finally:
            holder.execute("ROLLBACK")
            holder.close()


def test_savepoint_undoes_only_its_body(home: Path, config) -> None:
    with open_authority(home, config) as db:
        q = JobQueue(db)

        def op(tx: apsw.Connection) -> None:
            q.enqueue_in(tx, [JobSpec("noop")])
            with pytest.raises(KeyError), db.savepoint():
                q.enqueue_in(tx, [JobSpec("noop")] * 5)
                raise KeyError("undo me")

        db.write(op)
        assert db.query("SELECT count(*) FROM jobs")[0][0] == 1


@pytest.mark.slow
def test_a_process_killed_right_after_a_commit_returns_keeps_the_row(home: Path) -> None:
    """Durability as a process sees it, not only the pragma's value: SIGKILL at the kill
    point right after COMMIT returns (before anything else runs), reopen, the row is
    there; killed right before COMMIT, it is not."""
    assert run_cli("init", home=home).code == 0
    after = run_cli("jobs", "add", "noop", home=home, env={"MEMORYD_KILL_AT": "after_commit"})
    assert after.code == -signal.SIGKILL, after
    assert queue_counts(home)["queued"] == 1
    before = run_cli("jobs", "add", "noop", home=home, env={"MEMORYD_KILL_AT": "before_commit"})
    assert before.code == -signal.SIGKILL, before
    assert queue_counts(home)["queued"] == 1
