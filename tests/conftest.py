"""Shared fixtures: a fresh data home, the real CLI as a subprocess, a background supervisor.

Nothing here mocks a store: every helper runs the installed ``memoryd`` command
(or ``python -m memoryd.faces.cli.main``) against a real home, and reads the authority
with an independent SQLite connection.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import secrets
import signal
import string
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import apsw
import orjson
import psutil
import pytest

T = TypeVar("T")

# Generous bounds: they only matter when something is broken; tests poll, never sleep-and-hope.
CLI_TIMEOUT = 180.0
WAIT_TIMEOUT = 120.0
# retries that come back at once (tests of failure paths)
FAST_RETRY = {"MEMORYD_RETRY_BACKOFF_BASE": "0.01", "MEMORYD_RETRY_BACKOFF_MAX": "0.05"}

_SCRIPT = Path(sys.executable).with_name("memoryd")
MEMORYD = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "memoryd.faces.cli.main"]


def clean_env(home: Path | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without any ``MEMORYD_*`` leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["COLUMNS"] = "200"  # keep rich from wrapping messages mid-phrase
    env["PYTHONUNBUFFERED"] = "1"
    if home is not None:
        env["MEMORYD_HOME"] = str(home)
    env.update(extra or {})
    return env


# A child process in which any network connection or name lookup raises.
_NO_NETWORK = textwrap.dedent(
    """
    import socket, sys
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    """
)


def offline(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """``code`` run in a child Python whose every network call raises, with
    ``tmp_path`` as its home (and the hub's offline switch off: nothing may rely on it)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "0"}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    return subprocess.run(
        [sys.executable, "-c", _NO_NETWORK + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


_WAL_READER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN")
conn.execute("SELECT count(*) FROM jobs").fetchall()
print("held", flush=True)
sys.stdin.readline()
"""


@contextlib.contextmanager
def wal_reader(home: Path) -> Iterator[subprocess.Popen]:
    """Another process holding a read snapshot of the authority (it pins the WAL)
    for the block; it lets go when the block ends."""
    reader = subprocess.Popen(
        [sys.executable, "-c", _WAL_READER, str(home / "authority.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(None),
    )
    try:
        assert reader.stdout.readline().strip() == "held"
        yield reader
    finally:
        with contextlib.suppress(BrokenPipeError):  # it may have been let go already
            reader.stdin.write("\n")
            reader.stdin.flush()
        reader.wait(timeout=30)


class Result(NamedTuple):
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return orjson.loads(self.stdout)

    @property
    def message(self) -> str:
        """What the command said went wrong: stderr with whitespace collapsed (rich wraps
        long lines), or under ``--json`` (which says it on stdout alone) the error's
        message."""
        if not self.stderr.strip() and self.stdout.lstrip().startswith("{"):
            with contextlib.suppress(orjson.JSONDecodeError):
                return str(self.json().get("message", ""))
        return " ".join(self.stderr.split())


def run_cli(
    *args: str,
    home: Path | None,
    env: dict[str, str] | None = None,
    timeout: float = CLI_TIMEOUT,
) -> Result:
    """Run ``memoryd ARGS`` to completion with ``MEMORYD_HOME=home``."""
    proc = subprocess.run(
        [*MEMORYD, *args],
        env=clean_env(home, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def drains(home: Path) -> list[psutil.Process]:
    """Processes running ``memoryd run --drain`` on ``home`` that a face started for it
    (memoryd.operations.drain; a zombie has no command line, so only live ones are found)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info["cmdline"] or []
        if "--drain" in line and str(home) in line:
            found.append(proc)
    return found


def wait_for(
    condition: Callable[[], T],
    *,
    timeout: float = WAIT_TIMEOUT,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {what} (last: {last!r})"
            )
        time.sleep(interval)


def wal_size(home: Path) -> int:
    try:
        return (home / "authority.db-wal").stat().st_size
    except FileNotFoundError:
        return 0


class WalSampler:
    """Samples the WAL file size from a thread: the largest size seen."""

    def __init__(self, home: Path) -> None:
        self.home, self.max, self._stop = home, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.max = max(self.max, wal_size(self.home))
            time.sleep(0.002)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.max


# -- reading the authority independently ------------------------------------------


def db_path(home: Path) -> Path:
    return Path(home) / "authority.db"


@contextlib.contextmanager
def reader(home: Path) -> Iterator[apsw.Connection]:
    conn = apsw.Connection(str(db_path(home)), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(5000)
    try:
        yield conn
    finally:
        conn.close()


def query(home: Path, sql: str, bindings: tuple = ()) -> list[tuple]:
    with reader(home) as conn:
        return conn.execute(sql, bindings).fetchall()


def memory_record_count(home: Path) -> int:
    """Memory records of the home (0 before the first: its write makes their tables)."""
    from memoryd.storage import records

    with reader(home) as conn:
        return sum(records.totals(conn, None)["records"].values())


def queue_counts(home: Path) -> dict[str, int]:
    counts = dict.fromkeys(("queued", "claimed", "done", "failed", "dead"), 0)
    counts.update(query(home, "SELECT state, count(*) FROM jobs GROUP BY state"))
    return counts


def effects_per_job(home: Path) -> dict[int, int]:
    return dict(query(home, "SELECT job_id, count(*) FROM job_effects GROUP BY job_id"))


def assert_each_done_once(home: Path, expected: int) -> None:
    """Every job done, exactly one effect row per job, no effect for an unknown job."""
    jobs = dict(query(home, "SELECT id, state FROM jobs"))
    assert len(jobs) == expected
    assert set(jobs.values()) == {"done"}, queue_counts(home)
    effects = effects_per_job(home)
    assert set(effects) == set(jobs), "every job has an effect row and no other job does"
    twice = {job: n for job, n in effects.items() if n != 1}
    assert not twice, f"jobs applied more than once: {twice}"
    assert query(home, "SELECT count(*) FROM job_effects")[0][0] == expected


# -- byte scans -----------------------------------------------------------------------


MARKER_TAIL = 12  # characters of a marker a scan looks for: its random end


def marker(tag: str) -> str:
    """A word no other text holds (random, so no earlier run's file holds it either):
    letters then digits, like ``quokka4471``, which every tokenizer and stemmer of the
    home keeps whole. Find it with :func:`holding`."""
    letters = "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))
    return f"{tag}{letters}{secrets.randbelow(9000) + 1000}"


def holding(root: Path, word: str) -> list[str]:
    """The files under ``root`` holding a :func:`marker`'s random end: sorted key stores
    (RocksDB blocks, FTS5 leaves) write the bytes a key shares with the key before it
    once, so only the end of a word is sure to be verbatim wherever it is stored."""
    return files_holding(root, word[-MARKER_TAIL:].encode())


def files_holding(root: Path, needle: bytes, *, skip: str | None = None) -> list[str]:
    """The files under ``root`` (not under a directory named ``skip``) whose raw bytes
    hold ``needle``: the authority, its WAL and -shm, the archive's RocksDB
    files, the markdown mirror, staging, dead letters, spool, logs. RocksDB deletes
    obsolete files while a store is open: one gone before it is read holds nothing any
    more. A scan proves deletion only after it found the needle before: compressed
    stores may hold a text without its bytes."""
    found = []
    for d, dirs, files in os.walk(root):
        if skip in dirs:
            dirs.remove(skip)
        for f in files:
            path = Path(d, f)
            try:
                if path.is_file() and needle in path.read_bytes():  # not the control socket
                    found.append(os.path.join(d, f))
            except FileNotFoundError:
                continue
    return found


# -- processes ----------------------------------------------------------------------


def status(home: Path, env: dict[str, str] | None = None) -> dict:
    res = run_cli("status", "--json", home=home, env=env)
    assert res.code == 0, res.stderr
    return res.json()


def worker_pids(home: Path) -> dict[int, int]:
    """``{worker index: pid}`` of the running supervisor, from ``memoryd status --json``."""
    sup = status(home)["supervisor"]
    return {w["index"]: w["pid"] for w in (sup or {}).get("workers", [])}


# nanosleep and clock_nanosleep, for kernels that hide /proc/PID/wchan.
_SLEEP_SYSCALLS = {"x86_64": {35, 230}, "aarch64": {101, 115}}


def in_sleep(pid: int) -> bool:
    """True while ``pid`` sits in a nanosleep (a ``sleep`` job), per /proc."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        wchan = ""
    if wchan not in ("", "0"):
        return "nanosleep" in wchan
    try:
        nr = int(Path(f"/proc/{pid}/syscall").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return nr in _SLEEP_SYSCALLS.get(platform.machine(), set())


class Background:
    """A ``memoryd`` command running in the background, output captured to files."""

    def __init__(self, args: list[str], home: Path, env: dict[str, str], logdir: Path) -> None:
        n = len(list(logdir.glob("bg-*.out")))
        self.out_path = logdir / f"bg-{n}.out"
        self.err_path = logdir / f"bg-{n}.err"
        self.args = args
        self.home = home
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [*MEMORYD, *args],
                env=clean_env(home, env),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
        self.pid = self.proc.pid

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = CLI_TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def wait_running(self, workers: int) -> dict[int, int]:
        """Wait until ``memoryd status`` reports this supervisor with all its workers."""

        def ready() -> dict[int, int] | None:
            assert self.alive(), f"supervisor exited early: {self.stderr}"
            if not (self.home / "authority.db").exists():
                return None  # the supervisor has not created its home yet
            sup = status(self.home)["supervisor"]
            if sup and sup["pid"] == self.pid and len(sup.get("workers", [])) == workers:
                return {w["index"]: w["pid"] for w in sup["workers"]}
            return None

        return wait_for(ready, what=f"supervisor {self.pid} with {workers} workers")

    def terminate(self, timeout: float = CLI_TIMEOUT) -> int:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill_tree(self) -> None:
        """Teardown: SIGKILL this process and whatever it started (by pid)."""
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            children = []
        if self.alive():
            self.proc.kill()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _no_memoryd_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process code must not see a developer's MEMORYD_* variables either."""
    for key in list(os.environ):
        if key.startswith("MEMORYD_"):
            monkeypatch.delenv(key)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh data home (not yet created: memoryd creates it)."""
    return tmp_path / "home"


@pytest.fixture
def cli(home: Path) -> Callable[..., Result]:
    """``cli("jobs", "add", "noop")`` runs the real CLI on the test's home."""

    def call(*args: str, env: dict[str, str] | None = None, **kw: Any) -> Result:
        return run_cli(*args, home=kw.pop("home", home), env=env, **kw)

    return call


@pytest.fixture
def background(home: Path, tmp_path: Path) -> Iterator[Callable[..., Background]]:
    """Start ``memoryd ARGS`` in the background; everything started is killed at teardown."""
    started: list[Background] = []
    logdir = tmp_path / "logs"
    logdir.mkdir(exist_ok=True)

    def start(*args: str, env: dict[str, str] | None = None, **kw: Any) -> Background:
        bg = Background(list(args), kw.pop("home", home), env or {}, logdir)
        started.append(bg)
        return bg

    yield start
    for bg in started:
        bg.kill_tree()


_CREATED = re.compile(
    r"CREATE\s+(?:VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I
)
_ADDED = re.compile(r"ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)", re.I)


def rebuilt_sql(table: str, columns: str, select: str) -> str:
    """SQL that makes ``table`` again with ``columns``, its rows those of ``select``
    (over the table as it was), keeping its AUTOINCREMENT high-water mark."""
    return f"""
        CREATE TABLE rebuilt_{table} ({columns});
        INSERT INTO rebuilt_{table} {select};
        DELETE FROM sqlite_sequence WHERE name = 'rebuilt_{table}';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'rebuilt_{table}', seq FROM sqlite_sequence WHERE name = '{table}';
        DROP TABLE {table};
        ALTER TABLE rebuilt_{table} RENAME TO {table};
    """


#: The undoing of migrations that rebuild a table (nothing generic can): 15 gives chunks
#: back their project and ordinal, and files and history their hashes in hex.
UNDO: dict[int, str] = {
    15: rebuilt_sql(
        "chunks",
        "id INTEGER PRIMARY KEY AUTOINCREMENT, project_id INTEGER NOT NULL,"
        " file_id INTEGER NOT NULL REFERENCES files (id), ordinal INTEGER NOT NULL,"
        " start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, content_hash BLOB NOT NULL",
        "SELECT c.id, f.project_id, c.file_id, c.id - f.chunk_first, c.start_line, c.end_line,"
        " c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id",
    )
    + """
        UPDATE files SET content_hash = lower(hex(content_hash));
        UPDATE history SET content_hash = lower(hex(content_hash)) WHERE content_hash IS NOT NULL;
    """,
}


def _if_missing(ddl: str) -> str:
    """``ddl`` with each CREATE made a no-op where its object exists."""
    return re.sub(r"CREATE (VIRTUAL TABLE|TABLE|INDEX|TRIGGER) ", r"CREATE \1 IF NOT EXISTS ", ddl)


def downgrade_sql(version: int) -> str:
    """SQL that turns a current authority back into one at schema ``version``.

    Undoes each later migration's CREATEs and ADD COLUMNs, newest first, so a test can
    prove a migration upgrades an older home that already holds data. Data-only
    statements of a migration need no undoing (their tables go with it). An older home
    has every table made when first written (its migrations made them): they are made
    first where missing.
    """
    from memoryd.storage.lazy import GROUPS
    from memoryd.storage.schema import MIGRATIONS

    out = [_if_missing(group.ddl) for group in GROUPS]
    for v, _name, sql in reversed(MIGRATIONS):
        if v <= version:
            break
        body = re.sub(r"--[^\n]*", "", sql)
        if v in UNDO:
            out += [UNDO[v], f"DELETE FROM schema_history WHERE version = {v};"]
            continue
        for kind, name in reversed(_CREATED.findall(body)):
            if not name.lower().startswith("temp"):
                out.append(f"DROP {kind.upper()} IF EXISTS {name};")
        out += [f"ALTER TABLE {t} DROP COLUMN {c};" for t, c in _ADDED.findall(body)]
        out.append(f"DELETE FROM schema_history WHERE version = {v};")
    return " ".join(out) + f" PRAGMA user_version = {version};"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The crash drills first: they are the longest tests, and under pytest-xdist one
    that starts last leaves the other worker idle until it ends."""
    items.sort(key=lambda item: "test_drill" not in item.nodeid)


def sigkill_after_some_batches(home: Path, sup) -> None:
    """SIGKILL the background supervisor ``sup`` once its ingest has committed a few
    batches but not all of them (the run's batches must be small enough for that)."""

    def some_done() -> bool:
        done = query(home, "SELECT files_done, finished_at FROM ingest_runs")[0]
        assert done[1] is None, "the ingest finished before the kill: make batches smaller"
        return done[0] > 0

    wait_for(some_done, interval=0.01, what="a few committed batches")
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait()


def small_talk(first: str, second: str, sessions: int = 6) -> dict:
    """Sessions of two speakers about nothing in particular (``f0``, ``f1``, ...): the
    background an archive's term statistics need, holding no asked fact."""
    return {
        f"f{i}": [
            (first, f"The weather on day {i} was grey and windy."),
            (second, "Same here, I stayed inside and read."),
        ]
        for i in range(sessions)
    }


def archive_conversations(owner, project: str, sessions: dict, now: float) -> None:
    """Archive ``sessions`` (name -> [(speaker, text), ...]) as transcripts of two named
    speakers: the first speaker's turns as ``user``, the other's as ``assistant``, each
    keeping its ``Name: `` prefix, created an hour before ``now``."""
    from memoryd.archive.ops import run_op
    from memoryd.operations.control_client import unwrap

    for name, turns in sessions.items():
        first = turns[0][0]
        content = "\n".join(
            f"{'user' if who == first else 'assistant'}: {who}: {said}" for who, said in turns
        )
        args = {"project": project, "session": name, "created_at": now - 3600, "now": now,
                "content": content, "turns": len(turns)}  # fmt: skip
        unwrap(run_op(owner, "add", args))


SMALL_FS = "size=2m"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", SMALL_FS, "tmpfs", str(mnt)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def archive_lines(cli, path: Path, lines: list[dict], *extra: str):
    """``lines`` written to ``path`` as a JSONL transcript, then ``archive add`` of it to
    project ``demo`` (created if new) with ``--json --allow-expired`` and ``extra``."""
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json",
               "--allow-expired", *extra)  # fmt: skip
