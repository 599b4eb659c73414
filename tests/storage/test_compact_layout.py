"""The compact layout: a small home's authority keeps a rollback journal (no -wal, no
-shm), a pinned reader gets busy backpressure instead of a growing WAL, and the home
switches to WAL for good once it reaches ``wal_from_bytes``, with other processes'
connections open, crash-safe at the switch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import pytest

from memoryd.base.config import load_config
from memoryd.base.errors import StoreBusy
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
from memoryd.storage.maintenance import checkpoint_truncate, hold_wal_bound
from tests.conftest import MEMORYD, clean_env, run_cli

SMALL_BOUND = 48 * 1024  # a few hundred jobs' rows pass it


def _config(home: Path, **overrides):
    home.mkdir(parents=True, exist_ok=True)
    return load_config(home, {"write_retry_seconds": 1.0, **overrides})


def _fill(db, rows: int, start: int = 0) -> None:
    specs = [JobSpec("noop", {"i": i, "pad": "x" * 200}) for i in range(start, start + rows)]
    JobQueue(db).enqueue_many(specs)


def _jobs(db) -> int:
    return db.query("SELECT count(*) FROM jobs")[0][0]


def test_a_new_home_keeps_a_rollback_journal_and_no_wal_files(home: Path) -> None:
    config = _config(home)
    with open_authority(home, config) as db:
        _fill(db, 20)
        assert db.journal_mode() == "delete"
        assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 3  # EXTRA: dir synced
        names = sorted(p.name for p in home.iterdir())
        assert not any(n.endswith(("-wal", "-shm", "-journal")) for n in names), names
        assert checkpoint_truncate(db).ok  # nothing to checkpoint: no WAL
        assert not db.grow_to_wal()  # far below the bound
    with open_authority(home, config, readonly=True) as reader:
        assert reader.journal_mode() == "delete"
        assert _jobs(reader) == 20


def test_it_switches_to_wal_once_past_the_bound_and_never_back(home: Path) -> None:
    config = _config(home, wal_from_bytes=SMALL_BOUND)
    with open_authority(home, config) as db:
        _fill(db, 10)
        assert not db.grow_to_wal()
        _fill(db, 400, start=10)
        assert db.database_bytes() >= SMALL_BOUND
        assert db.grow_to_wal()
        assert db.journal_mode() == "wal"
        _fill(db, 5, start=410)
        assert (home / "authority.db-wal").exists() and (home / "authority.db-shm").exists()
        assert not db.grow_to_wal()
    # a later opener, whatever its bound, finds WAL in the header
    with open_authority(home, _config(home, wal_from_bytes=1 << 40)) as db:
        assert db.journal_mode() == "wal"
        assert _jobs(db) == 415


def test_a_bulk_write_switches_between_its_chunks(home: Path) -> None:
    """hold_wal_bound, called between the chunks of a bulk enqueue, switches a home the
    bulk write made large (no supervisor need run)."""
    config = _config(home, wal_from_bytes=SMALL_BOUND)
    with open_authority(home, config) as db:
        _fill(db, 400)
        hold_wal_bound(db)
        assert db.journal_mode() == "wal"


# A process holding the authority open in rollback mode: it reads, waits for a line on
# stdin, then writes and reads again and reports what it saw.
CHILD = r"""
import sys, orjson
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
home = Path(sys.argv[1])
db = open_authority(home, load_config(home, {"wal_from_bytes": int(sys.argv[2])}))
def report():
    jobs = db.query("SELECT count(*) FROM jobs")[0][0]
    print(orjson.dumps({"mode": db.journal_mode(), "jobs": jobs}).decode(), flush=True)
report()
sys.stdin.readline()
JobQueue(db).enqueue_many([JobSpec("noop", {"child": 1})])
report()
db.close()
"""


def test_other_processes_connections_follow_the_switch_without_reopening(home: Path) -> None:
    import orjson

    config = _config(home, wal_from_bytes=SMALL_BOUND)
    with open_authority(home, config) as db:
        _fill(db, 10)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(home), str(SMALL_BOUND)],
            env=clean_env(None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for child in children:
            assert orjson.loads(child.stdout.readline()) == {"mode": "delete", "jobs": 10}
        with open_authority(home, config) as db:
            _fill(db, 400, start=10)
            assert db.grow_to_wal()  # the children's connections stay open, idle
            for n, child in enumerate(children, 1):
                child.stdin.write("go\n")
                child.stdin.flush()
                seen = orjson.loads(child.stdout.readline())
                assert seen == {"mode": "wal", "jobs": 410 + n}, child.stderr.read()
                assert child.wait(timeout=60) == 0, child.stderr.read()
            assert _jobs(db) == 412
            assert db.query("PRAGMA integrity_check") == [("ok",)]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


HOLD_READ = r"""
import sys, apsw
conn = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
conn.execute("BEGIN")
conn.execute("SELECT count(*) FROM jobs").fetchone()
print("holding", flush=True)
sys.stdin.readline()
"""


def _holding(script: str, home: Path) -> subprocess.Popen:
    """A process running ``script`` on the authority, once it holds its lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(home / "authority.db")],
        env=clean_env(None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "holding"
    return proc


def _release(proc: subprocess.Popen) -> None:
    proc.stdin.write("done\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


def test_a_pinned_reader_gets_writers_busy_backpressure_not_growth(home: Path) -> None:
    """A reader holding a read transaction in another process: a commit waits, then the
    write is retried whole and ends in the typed, retryable StoreBusy (nothing half
    written); the switch to WAL gives way (a later turn does it); once the reader ends,
    both go through."""
    config = _config(home, wal_from_bytes=SMALL_BOUND, rollback_busy_timeout_ms=200)
    with open_authority(home, config) as db:
        _fill(db, 400)
        reader = _holding(HOLD_READ, home)
        try:
            start = time.monotonic()
            with pytest.raises(StoreBusy) as caught:
                _fill(db, 1, start=400)
            assert caught.value.retryable
            assert time.monotonic() - start >= config.write_retry_seconds
            assert not db.grow_to_wal()
            assert db.journal_mode() == "delete"
            assert _jobs(db) == 400
            assert not (home / "authority.db-wal").exists()
        finally:
            _release(reader)
        _fill(db, 1, start=400)
        assert db.grow_to_wal()
        assert _jobs(db) == 401


def test_a_read_behind_a_waiting_commit_outlasts_the_commits_wait(home: Path) -> None:
    """The drill's STORE_BUSY: a small home's commit waits for the readers already in
    (``rollback_busy_timeout_ms``) while readers arriving meanwhile queue behind it; a
    reader that gave up with the commit failed where WAL never fails one. A reader now
    waits longer than a commit does (``read_busy_seconds``): here a command started
    behind a commit that gives up twice is answered once the commit went through."""
    wait = {"MEMORYD_ROLLBACK_BUSY_TIMEOUT_MS": "1000"}
    config = _config(home, rollback_busy_timeout_ms=1000, write_retry_seconds=30.0)
    with open_authority(home, config) as db:
        _fill(db, 20)
        pinned = _holding(HOLD_READ, home)
        writer = threading.Thread(target=_fill, args=(db, 1, 20))
        writer.start()  # its commit waits for the pinned reader, new readers behind it
        time.sleep(0.3)
        later = subprocess.Popen(
            [*MEMORYD, "status", "--json"],
            env=clean_env(home, wait),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.5)  # past two of the commit's waits
        _release(pinned)
        writer.join(timeout=60)
        out, err = later.communicate(timeout=120)
        assert later.returncode == 0, (out, err)
        # before the commit (in a gap between its attempts) or after it
        assert json.loads(out)["queue"]["queued"] in (20, 21), out
        assert _jobs(db) == 21


SWITCH = r"""
import sys
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
home = Path(sys.argv[1])
db = open_authority(home, load_config(home, {"wal_from_bytes": int(sys.argv[2])}))
JobQueue(db).enqueue_many([JobSpec("noop", {"i": i, "pad": "x" * 200}) for i in range(400)])
db.grow_to_wal()
JobQueue(db).enqueue_many([JobSpec("noop", {"after": 1})])
db.close()
"""


@pytest.mark.parametrize(
    ("point", "mode", "jobs"),
    [("before_wal_switch", "delete", 400), ("after_wal_switch", "wal", 400)],
)
def test_a_process_killed_at_the_switch_leaves_one_whole_layout(
    home: Path, point: str, mode: str, jobs: int
) -> None:
    """SIGKILL right before and right after the header write that switches to WAL:
    the next opener finds the database whole, every committed row, and one mode; a
    writer then goes on (and switches, when it was killed before)."""
    config = _config(home, wal_from_bytes=SMALL_BOUND)
    open_authority(home, config).close()
    proc = subprocess.run(
        [sys.executable, "-c", SWITCH, str(home), str(SMALL_BOUND)],
        env={**clean_env(None), "MEMORYD_KILL_AT": point},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with open_authority(home, config, readonly=True) as reader:
        assert reader.journal_mode() == mode
        assert reader.query("PRAGMA integrity_check") == [("ok",)]
        assert _jobs(reader) == jobs
    with open_authority(home, config) as db:
        db.grow_to_wal()
        _fill(db, 1, start=jobs)
        assert db.journal_mode() == "wal"
        assert _jobs(db) == jobs + 1
        assert db.query("PRAGMA integrity_check") == [("ok",)]


KILLED_MID_COMMIT = r"""
import os, signal, sys
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.storage import open_authority
home = Path(sys.argv[1])
db = open_authority(home, load_config(home, {}))
def fn(tx):
    tx.execute("PRAGMA cache_size=2")  # spill: the database file is written mid-transaction
    tx.execute("UPDATE jobs SET payload = randomblob(900)")
    tx.execute("DELETE FROM jobs")
    assert os.path.exists(str(home / "authority.db") + "-journal")
    os.kill(os.getpid(), signal.SIGKILL)
db.write(fn)
"""


def test_a_hot_journal_left_by_a_kill_mid_commit_is_rolled_back(home: Path) -> None:
    """SIGKILL inside a rollback-mode commit's journal window (after the journal is
    written, before it is removed): the journal is hot, the next opener rolls it back
    and the database is whole, without the transaction."""
    config = _config(home)
    with open_authority(home, config) as db:
        _fill(db, 50)
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_MID_COMMIT, str(home)],
        env=clean_env(None),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    journal = home / "authority.db-journal"
    assert journal.exists() and journal.stat().st_size > 0  # hot
    with open_authority(home, config) as db:
        assert _jobs(db) == 50
        assert db.query("PRAGMA integrity_check") == [("ok",)]
    assert not journal.exists()
    assert os.path.exists(home / "authority.db")


SWITCH_AND_HOLD = r"""
import sys
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
home = Path(sys.argv[1])
db = open_authority(home, load_config(home, {"wal_from_bytes": int(sys.argv[2])}))
JobQueue(db).enqueue_many([JobSpec("noop", {"i": i, "pad": "x" * 200}) for i in range(400)])
assert db.grow_to_wal()
JobQueue(db).enqueue_many([JobSpec("noop", {"after": 1})])
print("switched", flush=True)
sys.stdin.readline()
db.close()
"""


def test_wal_files_made_by_another_process_are_not_taken_for_this_ones(home: Path) -> None:
    """The inode check (WAL_REPLACED) records the -wal/-shm only once this connection is
    in WAL mode: a connection still in rollback mode that looked while the switching
    process held them, then saw them removed by that process's close and made anew by
    its own first read, is not a replaced WAL."""
    config = _config(home, wal_from_bytes=SMALL_BOUND)
    with open_authority(home, config) as db:
        _fill(db, 1)
        other = subprocess.Popen(
            [sys.executable, "-c", SWITCH_AND_HOLD, str(home), str(SMALL_BOUND)],
            env=clean_env(None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert other.stdout.readline().strip() == "switched"
        db.check_wal()  # the switching process's files exist; this connection holds none
        other.stdin.write("done\n")
        other.stdin.flush()
        assert other.wait(timeout=60) == 0
        assert not (home / "authority.db-wal").exists()  # its close removed them
        for n in range(4):  # new files take the inodes freed, so the new WAL files differ
            (home / f"spacer-{n}").write_bytes(b"")
        _fill(db, 1, start=1)  # made anew by this connection: no WAL_REPLACED
        assert db.journal_mode() == "wal"
        assert _jobs(db) == 403
        db.check_wal()


HOLD_EXCLUSIVE = r"""
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN EXCLUSIVE")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_a_read_kept_out_past_the_busy_timeout_answers_store_busy(home: Path) -> None:
    """In rollback mode a read waits on a commit; one held past the read's patience (here
    an exclusive lock that stays) answers the typed, retryable STORE_BUSY, no traceback."""
    assert run_cli("jobs", "add", "noop", home=home).code == 0
    holder = _holding(HOLD_EXCLUSIVE, home)
    try:
        res = run_cli("status", "--json", home=home, env={"MEMORYD_READ_BUSY_SECONDS": "0.3"})
        assert res.code != 0 and "Traceback" not in res.stderr, res
        answer = json.loads(res.stdout)
        assert answer["error"] == "STORE_BUSY" and answer["retryable"], answer
    finally:
        _release(holder)
    assert run_cli("status", "--json", home=home).code == 0


def test_a_reader_after_a_kill_mid_commit_rolls_the_hot_journal_back(home: Path) -> None:
    """A reader (the CLI's status, the MCP server's reads) opened after a writer died
    mid-commit: a read-only connection cannot roll the hot journal back
    (SQLITE_READONLY_ROLLBACK); memoryd's reader has it rolled back by a read-write
    connection opened for that alone, and stays read-only."""
    config = _config(home)
    with open_authority(home, config) as db:
        _fill(db, 50)
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_MID_COMMIT, str(home)],
        env=clean_env(None),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (home / "authority.db-journal").stat().st_size > 0  # hot
    with open_authority(home, config, readonly=True) as reader:
        assert _jobs(reader) == 50
        with pytest.raises(apsw.ReadOnlyError):
            reader.query("DELETE FROM jobs")
    assert not (home / "authority.db-journal").exists()
    assert run_cli("status", "--json", home=home).code == 0
