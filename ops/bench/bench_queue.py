"""Durable queue throughput: memoryd against raw apsw, huey and persist-queue.

    make bench-queue                      # 10,000 and 100,000 jobs
    .venv/bin/python ops/bench/bench_queue.py [--quick] [--json]

Every system runs on SQLite in WAL mode with ``synchronous=FULL`` (each system's
effective settings are read back from its own connections and printed), in a
fresh temporary directory that is removed afterwards. For each size N:

- **enqueue**: N ``noop`` jobs through the system's own enqueue API. memoryd
  and the apsw reference insert all N in one transaction; huey and
  persist-queue have no batch enqueue, so each job is its own commit.
- **claim+complete, k workers** (k = 1, 2): drain a queue of N jobs with k
  worker processes. The 1- and 2-worker runs drain byte-identical copies of
  the database the enqueue step wrote.
- **enqueue-then-drain**: N / (enqueue seconds + 2-worker drain seconds).

Systems:

- **memoryd**: the real supervisor, ``Memoryd(home).run(workers=k, drain=True)``.
  Timed: the whole call, so worker start-up (spawn) and shutdown (final WAL
  checkpoint) count. Its effects are the ``job_effects`` rows its ``noop``
  applier writes in the group commit that completes the job. It records the
  dashboard's samples at the default period (``sample_period_seconds``, 5 s).
- **memoryd, samples off** (``sample_period_seconds=0``) and **memoryd, sample
  every 0.1 s** (50 times the default rate): the same drain, to show what the
  samples cost; the "memoryd / memoryd-nosample" column is the ratio.
- **apsw 1/claim** and **apsw 64/claim**: a raw apsw reference on a jobs table
  shaped like memoryd's. k forked processes, each with its own connection;
  ``BEGIN IMMEDIATE`` with busy timeout 0 and whole-transaction retry with a
  short jittered backoff (no sleeping busy handler). Per claim: one ``UPDATE
  ... RETURNING`` transaction claiming 1 (or 64) jobs under a lease token;
  then one ack transaction that marks each job done, fenced by the token, and
  inserts its effect row. Timed from a start signal once every process has
  its connection open.
- **huey**: ``SqliteHuey(fsync=True)`` (huey.storage.SqliteStorage with
  ``synchronous=2``, WAL), driven by a real huey consumer with k workers of
  type ``process``. Its dequeue deletes the task before running it
  (at-most-once). Timed from starting the consumer until N effects exist.
- **persist-queue**: ``SQLiteAckQueue(multithreading=True)`` with
  ``synchronous=FULL`` set on both of its connections, k forked consumer
  processes (``get`` / run / ``ack``), each with its own queue object. Its
  ``get`` selects then marks, so two processes can receive the same job:
  duplicates are counted.

Effects of huey and persist-queue jobs are 16-byte records (job id, time)
appended to a per-process file: delivery records, neither durable nor atomic
with the ack (less work per job than memoryd's and apsw's effect rows).
Exactly-once is checked on every run: effects == N, duplicates (effects beyond
one per job) and lost jobs (no effect).

The "after first commit" rows exclude start-up: (jobs with an effect - effects
of the first commit) / (time of the last effect - time of the first effect).

Time cap (``--cap``, 45 s) so that a full run stays under ~10 minutes on 2
cores: a drain still running then is stopped between jobs and rated on the
jobs it finished; a one-commit-per-job enqueue still running then is rated on
the jobs enqueued so far, and the rest go in untimed, in one transaction, with
the library's own serializer and INSERT, so every drain starts from N. Capped
values are marked ``*``. Each value is a single run: on a shared 2-core machine,
expect run-to-run spread.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import shutil
import signal
import struct
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Keep the imports above light: memoryd spawns its workers, and a spawned
# process re-imports this module (as __mp_main__). Heavy imports live in functions.

SIZES = (10_000, 100_000)
QUICK_SIZES = (10_000,)
WORKERS = (1, 2)
REF_BATCH = 64
DRAIN_CAP = 45.0  # seconds; a drain still running then is stopped and rated on what it finished
DRAIN_TIMEOUT = 600.0
STALL_SECONDS = 5.0  # huey: no new effect for this long with an empty queue = lost jobs
EFFECT = struct.Struct("<qd")  # job id, time.time()


@dataclass
class Verify:
    jobs: int  # enqueued
    partial: bool = False  # the drain was stopped at the time cap
    done: int = 0  # jobs the system itself reports finished (done / acked / dequeued)
    effects: int = 0
    distinct: int = 0  # jobs with at least one effect
    duplicates: int = 0  # effects beyond one per job
    lost: int = 0  # jobs finished (or, after a whole drain, enqueued) without an effect
    first_at: float = 0.0
    first_count: int = 0
    last_at: float = 0.0

    @property
    def exactly_once(self) -> bool:
        expected = self.done if self.partial else self.jobs
        return self.duplicates == 0 and self.lost == 0 and self.done == expected

    @property
    def steady_rate(self) -> float | None:
        """Jobs per second between the first and the last effect (duplicates not counted)."""
        span = self.last_at - self.first_at
        if span <= 0:
            return None
        return max(0, self.distinct - self.first_count) / span


@dataclass
class Drained:
    seconds: float
    partial: bool = False  # stopped at the time cap
    processed: int | None = None  # jobs finished when the clock stopped, if not all
    notes: dict = field(default_factory=dict)


@dataclass
class Run:
    system: str
    size: int
    workers: int
    seconds: float
    processed: int  # jobs finished within ``seconds`` (the size, unless partial)
    partial: bool
    verify: Verify
    notes: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.processed / self.seconds


def _verify_records(
    jobs: int, records: list[tuple[int, float]], done: int, partial: bool = False
) -> Verify:
    v = Verify(jobs, partial=partial, done=done)
    v.effects = len(records)
    v.distinct = len({r[0] for r in records})
    v.duplicates = v.effects - v.distinct
    v.lost = max(0, (done if partial else jobs) - v.distinct)
    if records:
        times = sorted(r[1] for r in records)
        v.first_at, v.last_at = times[0], times[-1]
        v.first_count = times.count(times[0])
    return v


# -- memoryd ---------------------------------------------------------------------


class MemorydSystem:
    key = "memoryd"
    label = "memoryd"
    guarantee = "exactly-once: effects and completion in one commit, fenced by lease token"
    overrides: dict = {}  # settings of the drain (the sampling variants below)

    def enqueue(self, home: Path, n: int, cap: float) -> tuple[float, int]:
        from memoryd.operations.api import Memoryd
        from memoryd.operations.jobs import Jobs

        md = Memoryd(home=home)
        md.init()
        start = time.perf_counter()
        Jobs(md).add("noop", count=n)
        seconds = time.perf_counter() - start
        md.close()
        return seconds, n

    def drain(self, home: Path, n: int, workers: int, cap: float) -> Drained:
        from memoryd.operations.api import Memoryd

        md = Memoryd(home=home, overrides=self.overrides)
        start = time.perf_counter()
        stats = md.run(workers=workers, drain=True)  # no cap: it exits when drained
        return Drained(time.perf_counter() - start, notes={"run_stats": stats})

    def verify(self, home: Path, n: int, partial: bool) -> Verify:
        import apsw

        conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            done = conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0]
            records = conn.execute("SELECT job_id, at FROM job_effects").fetchall()
        finally:
            conn.close()
        return _verify_records(n, records, done, partial)

    def durability(self, home: Path) -> str:
        from memoryd.base.config import load_config
        from memoryd.storage import open_authority

        db = open_authority(home, load_config(home))
        try:
            mode = db.conn.execute("PRAGMA journal_mode").fetchone()[0]
            sync = db.conn.execute("PRAGMA synchronous").fetchone()[0]
        finally:
            db.close()
        return f"journal_mode={mode}, synchronous={sync} (authority connection)"


class MemorydSamplesOff(MemorydSystem):
    """memoryd with the dashboard's samples off: the reference for what sampling costs."""

    key = "memoryd-nosample"
    label = "memoryd, samples off"
    overrides = {"sample_period_seconds": 0}


class MemorydSamplesDense(MemorydSystem):
    """A sample every 0.1 s, 50 times the default rate: sampling's cost made visible."""

    key = "memoryd-sample0.1"
    label = "memoryd, sample every 0.1 s"
    overrides = {"sample_period_seconds": 0.1}


# -- raw apsw reference ----------------------------------------------------------

REF_SCHEMA = """
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    project       TEXT,
    kind          TEXT NOT NULL,
    payload       BLOB NOT NULL,
    state         TEXT NOT NULL DEFAULT 'queued',
    priority      INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL,
    not_before    REAL NOT NULL DEFAULT 0,
    lease_owner   TEXT,
    lease_token   TEXT,
    lease_expires REAL,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    finished_at   REAL
);
CREATE INDEX jobs_ready ON jobs (priority DESC, id) WHERE state IN ('queued', 'failed');
CREATE INDEX jobs_leased ON jobs (lease_expires) WHERE state = 'claimed';
CREATE TABLE effects (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, at REAL NOT NULL);
"""

REF_CLAIM = (
    "UPDATE jobs SET state = 'claimed', attempts = attempts + 1, lease_owner = ?,"
    " lease_token = ?, lease_expires = ?, updated_at = ?"
    " WHERE id IN (SELECT id FROM jobs WHERE state IN ('queued', 'failed')"
    "   AND not_before <= ? ORDER BY priority DESC, id LIMIT ?)"
    " RETURNING id, payload"
)
REF_ACK = (
    "UPDATE jobs SET state = 'done', finished_at = ?, updated_at = ?, lease_owner = NULL,"
    " lease_expires = NULL WHERE id = ? AND lease_token = ? AND state = 'claimed' RETURNING id"
)


def _ref_connect(path: str):
    import apsw

    conn = apsw.Connection(path)
    conn.set_busy_timeout(0)  # no sleeping busy handler: the write helper retries
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def _ref_write(conn, fn):
    """BEGIN IMMEDIATE; on SQLITE_BUSY roll back and retry the whole transaction."""
    import apsw

    delay = 0.0001
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            except BaseException:
                if not conn.get_autocommit():
                    conn.execute("ROLLBACK")
                raise
        except apsw.BusyError:
            time.sleep(random.uniform(0, delay))
            delay = min(delay * 2, 0.005)


def _ref_worker(path: str, batch: int, stop, ready, go) -> None:
    import orjson

    conn = _ref_connect(path)
    owner = f"ref-{os.getpid()}"
    ready.release()
    go.wait()

    def claim(tx):
        now = time.time()
        token = secrets.token_hex(8)
        rows = tx.execute(REF_CLAIM, (owner, token, now + 60, now, now, batch)).fetchall()
        return token, rows

    while not stop.is_set():
        token, rows = _ref_write(conn, claim)
        if not rows:
            break
        results = [(job_id, orjson.loads(payload)) for job_id, payload in rows]  # run: noop

        def ack(tx, token=token, results=results):
            now = time.time()
            for job_id, _ in results:
                if tx.execute(REF_ACK, (now, now, job_id, token)).fetchone():
                    tx.execute("INSERT INTO effects (job_id, at) VALUES (?, ?)", (job_id, now))

        _ref_write(conn, ack)
    conn.close()


def _drain_processes(target, args: tuple, k: int, cap: float) -> Drained:
    """Fork k processes; once all are ready, start the clock and let them drain.

    Each gets ``(*args, stop, ready, go)`` and returns when the queue is empty
    or ``stop`` is set (checked between claims, so nothing is left in flight).
    """
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    stop, ready, go = ctx.Event(), ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=target, args=(*args, stop, ready, go)) for _ in range(k)]
    try:
        for p in procs:
            p.start()
        for _ in procs:
            if not ready.acquire(timeout=60):
                raise RuntimeError("a benchmark process did not start")
        start = time.perf_counter()
        go.set()
        for p in procs:
            p.join(max(0.0, start + cap - time.perf_counter()))
        partial = any(p.is_alive() for p in procs)
        if partial:
            stop.set()
            for p in procs:
                p.join(DRAIN_TIMEOUT)
        seconds = time.perf_counter() - start
        if any(p.is_alive() for p in procs):
            raise RuntimeError("benchmark processes did not stop")
        bad = [p.exitcode for p in procs if p.exitcode != 0]
        if bad:
            raise RuntimeError(f"benchmark processes failed with exit codes {bad}")
        return Drained(seconds, partial=partial)
    finally:
        _kill(procs)


def _kill(procs) -> None:
    for p in procs:
        if p.is_alive():
            p.kill()
        if p.pid is not None:
            p.join(5)


class ApswReference:
    guarantee = "exactly-once: effects and ack in one commit, fenced by lease token"

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.key = f"apsw-{batch}"
        self.label = f"apsw {batch}/claim"

    @staticmethod
    def _path(home: Path) -> str:
        return str(home / "ref.db")

    def enqueue(self, home: Path, n: int, cap: float) -> tuple[float, int]:
        import orjson

        home.mkdir(parents=True, exist_ok=True)
        conn = _ref_connect(self._path(home))
        _ref_write(conn, lambda tx: tx.execute(REF_SCHEMA))
        payload = orjson.dumps(None)
        start = time.perf_counter()

        def insert(tx):
            now = time.time()
            tx.executemany(
                "INSERT INTO jobs (project, kind, payload, priority, max_attempts, not_before,"
                " created_at, updated_at) VALUES (NULL, 'noop', ?, 0, 5, 0, ?, ?)",
                ((payload, now, now) for _ in range(n)),
            )

        _ref_write(conn, insert)
        seconds = time.perf_counter() - start
        conn.close()
        return seconds, n

    def drain(self, home: Path, n: int, workers: int, cap: float) -> Drained:
        return _drain_processes(_ref_worker, (self._path(home), self.batch), workers, cap)

    def verify(self, home: Path, n: int, partial: bool) -> Verify:
        import apsw

        conn = apsw.Connection(self._path(home), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            done = conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0]
            records = conn.execute("SELECT job_id, at FROM effects").fetchall()
        finally:
            conn.close()
        return _verify_records(n, records, done, partial)

    def durability(self, home: Path) -> str:
        conn = _ref_connect(self._path(home))
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        finally:
            conn.close()
        return f"journal_mode={mode}, synchronous={sync} (every connection)"


# -- effect records of huey and persist-queue jobs -------------------------------

_effect_fd: tuple[int, int] | None = None  # (pid, fd)


def _record_effect(effects_dir: str, job_id: int) -> None:
    global _effect_fd
    pid = os.getpid()
    if _effect_fd is None or _effect_fd[0] != pid:
        path = os.path.join(effects_dir, f"{pid}.bin")
        _effect_fd = (pid, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    os.write(_effect_fd[1], EFFECT.pack(job_id, time.time()))


def _effect_count(effects_dir: Path) -> int:
    total = 0
    for entry in os.scandir(effects_dir):
        total += entry.stat().st_size // EFFECT.size
    return total


def _read_effects(effects_dir: Path) -> list[tuple[int, float]]:
    records = []
    for path in effects_dir.glob("*.bin"):
        data = path.read_bytes()
        usable = len(data) - len(data) % EFFECT.size
        records.extend(EFFECT.iter_unpack(data[:usable]))
    return records


def _timed_loop(enqueue_one, n: int, cap: float) -> tuple[float, int]:
    """Call ``enqueue_one(i)`` for i = 1..n until done or ``cap`` seconds have passed."""
    start = time.perf_counter()
    for i in range(1, n + 1):
        enqueue_one(i)
        if i % 256 == 0 and time.perf_counter() - start > cap:
            return time.perf_counter() - start, i
    return time.perf_counter() - start, n


# -- huey ------------------------------------------------------------------------


def _huey_app(home: Path):
    from huey import SqliteHuey

    huey = SqliteHuey(
        "bench", filename=str(home / "huey.db"), fsync=True, journal_mode="wal", results=False
    )
    effects = str(home / "effects")

    @huey.task(name="noop")
    def noop(job_id: int) -> None:
        _record_effect(effects, job_id)

    return huey, noop


def _huey_consumer(home: str, workers: int) -> None:
    import logging

    logging.getLogger("huey").setLevel(logging.ERROR)
    huey, _ = _huey_app(Path(home))
    huey.create_consumer(workers=workers, worker_type="process", periodic=False).run()


class HueySystem:
    key = "huey"
    label = "huey"
    guarantee = "at-most-once: dequeue deletes the task before it runs"

    def enqueue(self, home: Path, n: int, cap: float) -> tuple[float, int]:
        """One ``noop(i)`` call (one commit) per job; past the cap, the rest in bulk, untimed."""
        home.mkdir(parents=True, exist_ok=True)
        (home / "effects").mkdir(exist_ok=True)
        huey, noop = _huey_app(home)
        seconds, timed = _timed_loop(noop, n, cap)
        if timed < n:
            # huey's own message format and table, one transaction (what enqueue() inserts)
            rows = [(huey.name, huey.serialize_task(noop.s(i)), 0) for i in range(timed + 1, n + 1)]
            with huey.storage.db(commit=True) as cursor:
                cursor.executemany(
                    "INSERT INTO task (queue, data, priority) VALUES (?, ?, ?)", rows
                )
        huey.storage.close()
        return seconds, timed

    def drain(self, home: Path, n: int, workers: int, cap: float) -> Drained:
        """Run a consumer until N effects exist (effects count delivered jobs)."""
        import multiprocessing

        effects = home / "effects"
        ctx = multiprocessing.get_context("fork")
        proc = ctx.Process(target=_huey_consumer, args=(str(home), workers))
        start = time.perf_counter()
        proc.start()
        last_count, last_change = -1, time.perf_counter()
        partial = False
        try:
            while True:
                count = _effect_count(effects)
                now = time.perf_counter()
                if count >= n:
                    break
                if count != last_count:
                    last_count, last_change = count, now
                if now - start > cap:
                    partial = True
                    break
                if now - last_change > STALL_SECONDS and self._queue_size(home) == 0:
                    break  # the queue is empty and nothing more arrives: jobs were lost
                if not proc.is_alive():
                    raise RuntimeError("the huey consumer died")
                time.sleep(0.002)
            seconds = now - start
        finally:
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGINT)  # graceful: workers finish their task
                proc.join(30)
            _kill([proc])
        return Drained(seconds, partial=partial, processed=count if partial else None)

    @staticmethod
    def _queue_size(home: Path) -> int:
        huey, _ = _huey_app(home)
        try:
            return huey.storage.queue_size()
        finally:
            huey.storage.close()

    def verify(self, home: Path, n: int, partial: bool) -> Verify:
        remaining = self._queue_size(home)
        return _verify_records(n, _read_effects(home / "effects"), n - remaining, partial)

    def durability(self, home: Path) -> str:
        huey, _ = _huey_app(home)
        try:
            conn = huey.storage.conn
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        finally:
            huey.storage.close()
        return f"journal_mode={mode}, synchronous={sync} (SqliteHuey fsync=True)"


# -- persist-queue ---------------------------------------------------------------


def _pq_open(home: Path, *, auto_resume: bool = False):
    from persistqueue import SQLiteAckQueue

    q = SQLiteAckQueue(str(home / "pq"), multithreading=True, auto_resume=auto_resume)
    for conn in {id(q._getter): q._getter, id(q._putter): q._putter}.values():
        conn.execute("PRAGMA synchronous=FULL")
    return q


def _pq_consumer(home: str, stop, ready, go) -> None:
    from persistqueue.exceptions import Empty

    q = _pq_open(Path(home))
    effects = os.path.join(home, "effects")
    ready.release()
    go.wait()
    while not stop.is_set():
        try:
            item = q.get(block=False, raw=True)
        except Empty:
            break
        _record_effect(effects, item["data"])  # run: noop
        q.ack(id=item["pqid"])
    q.close()


class PersistQueueSystem:
    key = "persist-queue"
    label = "persist-queue"
    guarantee = "at-least-once: ack after run; get is not atomic across processes"

    def enqueue(self, home: Path, n: int, cap: float) -> tuple[float, int]:
        """One ``put`` (one commit) per job; past the cap, the rest in bulk, untimed."""
        home.mkdir(parents=True, exist_ok=True)
        (home / "effects").mkdir(exist_ok=True)
        q = _pq_open(home, auto_resume=True)
        seconds, timed = _timed_loop(q.put, n, cap)
        if timed < n:
            # the queue's own serializer and INSERT, one transaction (what put() runs)
            rows = [(q._serializer.dumps(i), time.time()) for i in range(timed + 1, n + 1)]
            with q._putter:
                q._putter.executemany(q._sql_insert, rows)
        q.close()
        return seconds, timed

    def drain(self, home: Path, n: int, workers: int, cap: float) -> Drained:
        return _drain_processes(_pq_consumer, (str(home),), workers, cap)

    def verify(self, home: Path, n: int, partial: bool) -> Verify:
        q = _pq_open(home)
        try:
            acked = q.acked_count()
        finally:
            q.close()
        return _verify_records(n, _read_effects(home / "effects"), acked, partial)

    def durability(self, home: Path) -> str:
        q = _pq_open(home)
        try:
            modes = {
                name: (
                    c.execute("PRAGMA journal_mode").fetchone()[0],
                    c.execute("PRAGMA synchronous").fetchone()[0],
                )
                for name, c in (("get", q._getter), ("put", q._putter))
            }
        finally:
            q.close()
        return ", ".join(f"{k}: journal_mode={m}, synchronous={s}" for k, (m, s) in modes.items())


# -- the run ---------------------------------------------------------------------


def machine() -> dict:
    import sqlite3
    from importlib.metadata import version

    import apsw

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if "model name" in ln), cpu)
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite_apsw": apsw.sqlite_lib_version(),
        "sqlite_stdlib": sqlite3.sqlite_version,
        "apsw": apsw.apsw_version(),
        "huey": version("huey"),
        "persist_queue": version("persist-queue"),
        "tmpdir": tempfile.gettempdir(),
        "loadavg_start": _loadavg(),
        "memoryd_commit": _git_commit(),
    }


def _git_commit() -> str | None:
    """HEAD of the checkout, with "+changes" when memoryd/ differs from it."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "memoryd"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return f"{head}{' +changes in memoryd/' if dirty else ''}" if head else None


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def measure(systems, sizes, root: Path, cap: float, progress) -> tuple[list[dict], list[Run], dict]:
    enqueues: list[dict] = []
    runs: list[Run] = []
    durability: dict[str, str] = {}
    for n in sizes:
        for system in systems:
            base = root / f"{system.key}-{n}"
            first = base / "w1"
            progress(f"{system.label}: enqueue {n:,}")
            seconds, timed = system.enqueue(first, n, cap)
            enqueues.append(
                {"system": system.key, "size": n, "seconds": seconds, "timed_jobs": timed}
            )
            if timed < n:
                progress(f"{system.label}: enqueue stopped at the {cap:g} s cap after {timed:,}")
            durability.setdefault(system.key, system.durability(first))
            shutil.copytree(first, base / "w2")
            for k in WORKERS:
                home = base / f"w{k}"
                progress(f"{system.label}: drain {n:,} with {k} worker(s)")
                d = system.drain(home, n, k, cap)
                v = system.verify(home, n, d.partial)
                processed = d.processed if d.processed is not None else v.distinct
                run = Run(system.key, n, k, d.seconds, processed, d.partial, v, d.notes)
                runs.append(run)
                progress(
                    f"{system.label}: {n:,} x {k} worker(s): {run.rate:,.0f} jobs/s"
                    f"{f' (stopped at the {cap:g} s cap)' if d.partial else ''}, "
                    f"{_observed(v)}"
                )
            shutil.rmtree(base, ignore_errors=True)
    return enqueues, runs, durability


def _observed(v: Verify) -> str:
    if v.exactly_once:
        return "each job once"
    parts = []
    if v.duplicates:
        parts.append(f"{v.duplicates:,} duplicate effects")
    if v.lost:
        parts.append(f"{v.lost:,} lost")
    expected = v.done if v.partial else v.jobs
    if v.done != expected:
        parts.append(f"{v.done:,} of {expected:,} finished")
    return ", ".join(parts)


def _plural(w: int) -> str:
    return f"{w} worker{'s' if w > 1 else ''}"


def build_rows(systems, sizes, enqueues: list[dict], runs: list[Run]) -> list[dict]:
    """One row per measurement: {"measurement", "size", key: jobs/s or None, "capped": [key]}."""
    keys = [s.key for s in systems]
    # seconds to enqueue all N (projected at the measured rate when the cap stopped it)
    enq = {(e["system"], e["size"]): e["seconds"] * e["size"] / e["timed_jobs"] for e in enqueues}
    enq_capped = {(e["system"], e["size"]) for e in enqueues if e["timed_jobs"] < e["size"]}
    drained = {(r.system, r.size, r.workers): r for r in runs}
    rows = []
    for n in sizes:
        rows.append(
            {
                "measurement": f"enqueue {n:,}",
                "size": n,
                **{k: n / enq[(k, n)] if (k, n) in enq else None for k in keys},
                "capped": [k for k in keys if (k, n) in enq_capped],
            }
        )
        for w in WORKERS:
            got = {k: drained.get((k, n, w)) for k in keys}
            capped = [k for k, r in got.items() if r and r.partial]
            rows.append(
                {
                    "measurement": f"claim+complete {n:,}, {_plural(w)}",
                    "size": n,
                    **{k: r.rate if r else None for k, r in got.items()},
                    "capped": capped,
                }
            )
            rows.append(
                {
                    "measurement": f"  after first commit, {_plural(w)}",
                    "size": n,
                    **{k: r.verify.steady_rate if r else None for k, r in got.items()},
                    "capped": capped,
                }
            )
        w = max(WORKERS)
        got = {k: drained.get((k, n, w)) for k in keys}
        rows.append(
            {
                "measurement": f"enqueue-then-drain {n:,}, {_plural(w)}",
                "size": n,
                **{
                    # a capped drain is projected to all N at its measured rate
                    k: n / (enq[(k, n)] + n / r.rate) if r and (k, n) in enq else None
                    for k, r in got.items()
                },
                "capped": [k for k, r in got.items() if (r and r.partial) or (k, n) in enq_capped],
            }
        )
    return rows


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if value is None:
        return "-"
    return f"{value:,.0f}{'*' if key in row['capped'] else ''}"


def _ratio(row: dict, ref: str) -> str:
    a, b = row.get("memoryd"), row.get(ref)
    return "-" if not a or not b else f"{a / b:.2f}x"


def print_report(systems, rows, runs, durability, info, cap: float, wall: float) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 150))
    keys = [s.key for s in systems]
    refs = [k for k in ("apsw-64", "apsw-1", "memoryd-nosample") if k in keys and "memoryd" in keys]
    table = Table(
        title="Durable queue throughput, jobs/s (SQLite WAL, synchronous=FULL)",
        box=box.SIMPLE_HEAVY,
    )
    table.add_column("measurement")
    for s in systems:
        table.add_column(s.label, justify="right")
    for ref in refs:
        table.add_column(f"memoryd / {ref}", justify="right")
    for i, row in enumerate(rows):
        end = i + 1 == len(rows) or rows[i + 1]["size"] != row["size"]
        cells = [_cell(row, k) for k in keys] + [_ratio(row, ref) for ref in refs]
        style = "dim" if row["measurement"].startswith("  ") else None
        table.add_row(row["measurement"], *cells, style=style, end_section=end)
    console.print(table)
    if any(row["capped"] for row in rows):
        console.print(
            f"* stopped at the {cap:g} s cap: the rate of the jobs finished by then "
            "(enqueue-then-drain projects all N at the measured rates)"
        )

    check = Table(title="Exactly-once check of every drain", box=box.SIMPLE_HEAVY)
    for col in ("system", "jobs", "workers", "finished", "effects", "duplicates", "lost"):
        check.add_column(col, justify="left" if col == "system" else "right")
    check.add_column("observed")
    for r in runs:
        v = r.verify
        observed = _observed(v)
        observed = f"[green]{observed}[/]" if v.exactly_once else f"[red]{observed}[/]"
        if r.partial:
            observed += f" (stopped at {cap:g} s)"
        check.add_row(
            r.system,
            f"{r.size:,}",
            str(r.workers),
            f"{v.done:,}",
            f"{v.effects:,}",
            f"{v.duplicates:,}",
            f"{v.lost:,}",
            observed,
        )
    console.print(check)
    for s in systems:
        console.print(f"[bold]{s.label}[/]: {durability.get(s.key, '?')}; {s.guarantee}")
    console.print(
        f"machine: {info['nproc']} cores ({info['cpu']}), Python {info['python']}, "
        f"SQLite {info['sqlite_apsw']} (apsw) / {info['sqlite_stdlib']} (stdlib sqlite3: "
        f"huey {info['huey']}, persist-queue {info['persist_queue']}); whole run {wall:.0f} s; "
        f"load average {info['loadavg_start']} at start, {info['loadavg_end']} at end; "
        f"memoryd {info['memoryd_commit']}"
    )


def _describe(system, durability: dict) -> dict:
    return {
        "label": system.label,
        "durability": durability.get(system.key),
        "guarantee": system.guarantee,
    }


def _run_json(run: Run) -> dict:
    out = {k: v for k, v in asdict(run).items() if k != "verify"}
    out["jobs_per_s"] = run.rate
    out["verify"] = {
        **asdict(run.verify),
        "exactly_once": run.verify.exactly_once,
        "after_first_commit_jobs_per_s": run.verify.steady_rate,
    }
    return out


SYSTEMS = {
    "memoryd": MemorydSystem,
    "memoryd-nosample": MemorydSamplesOff,
    "memoryd-sample0.1": MemorydSamplesDense,
    "apsw-1": lambda: ApswReference(1),
    "apsw-64": lambda: ApswReference(REF_BATCH),
    "huey": HueySystem,
    "persist-queue": PersistQueueSystem,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 jobs only")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated subset of {', '.join(SYSTEMS)}",
    )
    parser.add_argument("--sizes", help="comma-separated job counts (overrides --quick)")
    parser.add_argument(
        "--cap",
        type=float,
        default=DRAIN_CAP,
        help="stop a competitor's drain after this many seconds and rate what it finished",
    )
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in names if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    systems = [SYSTEMS[s]() for s in names]
    sizes = (
        tuple(int(x) for x in args.sizes.split(","))
        if args.sizes
        else (QUICK_SIZES if args.quick else SIZES)
    )

    def progress(message: str) -> None:
        print(f"[bench-queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    info = machine()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-queue-") as tmp:
        enqueues, runs, durability = measure(systems, sizes, Path(tmp), args.cap, progress)
    wall = time.perf_counter() - started
    info["loadavg_end"] = _loadavg()
    rows = build_rows(systems, sizes, enqueues, runs)
    if args.json:
        out = {
            "machine": info,
            "sizes": list(sizes),
            "workers": list(WORKERS),
            "cap_seconds": args.cap,
            "systems": {s.key: _describe(s, durability) for s in systems},
            "rows": rows,
            "runs": [_run_json(r) for r in runs],
            "wall_seconds": wall,
        }
        print(json.dumps(out, indent=2))
    else:
        print_report(systems, rows, runs, durability, info, args.cap, wall)
    return 0 if all(r.verify.exactly_once for r in runs if r.system == "memoryd") else 1


if __name__ == "__main__":
    sys.exit(main())
