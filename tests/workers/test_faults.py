"""Faults of the supervisor and its pool, reproduced with real processes.

Every test runs the real ``memoryd`` command, kills with real signals and reads
the authority with an independent connection.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import apsw
import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
from tests.conftest import (
    FAST_RETRY,
    assert_each_done_once,
    db_path,
    in_sleep,
    query,
    queue_counts,
    status,
    wait_for,
    worker_pids,
)

pytestmark = pytest.mark.slow

MiB = 1024 * 1024


def enqueue(home: Path, specs: list[JobSpec]) -> list[int]:
    """Enqueue in this process (payloads too big for a command line)."""
    home.mkdir(parents=True, exist_ok=True)
    with open_authority(home, load_config(home)) as db:
        return JobQueue(db).enqueue_many(specs)


def job_row(home: Path, job_id: int) -> tuple:
    return query(
        home,
        "SELECT state, attempts, last_error, supervisor_deaths FROM jobs WHERE id = ?",
        (job_id,),
    )[0]


# -- a dead worker never kills the supervisor ------------------------------------------


def test_a_worker_killed_under_load_is_replaced_and_the_run_completes(
    cli, home: Path, background
) -> None:
    total = 50_000  # the kill at 2,000 leaves seconds of work even on a fast machine
    assert cli("jobs", "add", "noop", "--count", str(total)).code == 0
    sup = background("run", "--workers", "2", "--drain", "--json")
    workers = sup.wait_running(workers=2)
    wait_for(lambda: queue_counts(home)["done"] > 2000, what="the run to be under way")
    os.kill(workers[0], signal.SIGKILL)
    assert sup.wait() == 0, f"the supervisor died with its worker: {sup.stderr!r}"
    stats = orjson.loads(sup.stdout)
    assert stats["respawned"] >= 1
    assert_each_done_once(home, total)


# -- sends never block the loop; every job has a time limit ----------------------------


def test_multi_megabyte_batches_and_results_cross_without_deadlock(cli, home: Path) -> None:
    """One worker, two big echo jobs: the supervisor sends the second batch while the
    worker sends the first result, both larger than any socket buffer."""
    big = [JobSpec("echo", {"blob": chr(97 + i) * (4 * MiB)}) for i in range(4)]
    ids = enqueue(home, big)
    res = cli("run", "--workers", "1", "--drain", "--json", timeout=120)
    assert res.code == 0, res.stderr
    assert res.json()["done"] == 4
    assert_each_done_once(home, len(ids))


def test_a_job_past_job_timeout_seconds_loses_its_worker_and_its_attempt(cli, home: Path) -> None:
    slow = enqueue(home, [JobSpec("sleep", {"seconds": 300}, max_attempts=1)])[0]
    assert cli("jobs", "add", "noop", "--count", "20").code == 0
    env = {"MEMORYD_JOB_TIMEOUT_SECONDS": "1"}
    res = cli("run", "--workers", "1", "--drain", "--json", env=env, timeout=120)
    assert res.code == 0, res.stderr
    stats = res.json()
    assert (stats["dead"], stats["done"]) == (1, 20)
    assert stats["respawned"] >= 1
    state, attempts, error, _ = job_row(home, slow)
    assert (state, attempts) == ("dead", 1)
    assert "exceeded job_timeout_seconds" in error
    assert query(home, "SELECT count(*) FROM job_effects") == [(20,)]


# -- one job's failed apply is that job's alone -----------------------------------------


def test_a_failing_apply_fails_only_its_own_job(cli, home: Path) -> None:
    specs = [JobSpec("echo", {"i": i}, max_attempts=1) for i in range(300)]
    bad_at = {50, 150, 250}
    for i in bad_at:
        specs[i] = JobSpec("echo", {"fail_apply": f"bad {i}"}, max_attempts=1)
    ids = enqueue(home, specs)
    res = cli("run", "--workers", "2", "--drain", "--json")
    assert res.code == 0, res.stderr
    assert (res.json()["done"], res.json()["dead"]) == (297, 3)
    bad = {ids[i] for i in bad_at}
    rows = query(home, "SELECT id, state, attempts, last_error FROM jobs")
    for job_id, state, attempts, error in rows:
        if job_id in bad:
            assert state == "dead" and "applying results failed" in error
        else:
            assert (state, attempts, error) == ("done", 1, None), (job_id, error)
    effects = {r[0] for r in query(home, "SELECT job_id FROM job_effects")}
    assert effects == set(ids) - bad


# -- a long outside write never kills a daemon supervisor ------------------------------


def test_a_daemon_supervisor_waits_out_a_long_outside_write(cli, home: Path, background) -> None:
    assert cli("jobs", "add", "sleep", "--count", "6", "--payload", '{"seconds": 0.5}').code == 0
    env = {"MEMORYD_WRITE_RETRY_SECONDS": "1"}
    sup = background("run", "--workers", "1", env=env)
    [pid] = sup.wait_running(workers=1).values()
    wait_for(lambda: in_sleep(pid), what="the worker inside a sleep job")
    outside = apsw.Connection(str(db_path(home)))
    outside.set_busy_timeout(10_000)  # it takes its turn: the supervisor may be committing
    try:
        outside.execute("BEGIN IMMEDIATE")  # a long outside write: 4 s > write_retry_seconds
        time.sleep(4)
        assert sup.alive(), f"the supervisor gave up on a busy store: {sup.stderr}"
        outside.execute("COMMIT")
    finally:
        outside.close()
    wait_for(lambda: queue_counts(home)["done"] == 6, what="the jobs to finish after the write")
    assert sup.alive()
    assert "the store is busy" in sup.stderr and "writable again" in sup.stderr
    assert sup.terminate() == 0
    assert_each_done_once(home, 6)


def test_jobs_add_count_commits_in_bounded_chunks(cli, home: Path) -> None:
    res = cli(
        "jobs", "add", "noop", "--count", "25", "--json", env={"MEMORYD_ENQUEUE_CHUNK_ROWS": "10"}
    )
    assert res.code == 0, res.stderr
    assert res.json()["added"] == 25
    chunks = query(home, "SELECT created_at, count(*) FROM jobs GROUP BY created_at")
    assert sorted(n for _, n in chunks) == [5, 10, 10], "three transactions of at most 10 rows"


# -- a job that kills its supervisor is dead-lettered, not crash-looped ----------------


def test_a_poison_job_is_dead_lettered_after_the_death_cap(cli, home: Path) -> None:
    assert cli("jobs", "add", "noop", "--count", "50").code == 0
    md = Memoryd(home)  # an internal kind: `jobs add` takes user kinds only
    try:
        poison = md.queue.enqueue(JobSpec("poison"))
    finally:
        md.close()
    assert cli("jobs", "add", "noop", "--count", "50").code == 0
    exits = []
    for _ in range(6):
        res = cli("run", "--workers", "1", "--drain", "--json")
        exits.append(res.code)
        if res.code == 0:
            break
    assert exits == [-signal.SIGKILL] * 3 + [0], exits
    state, _, error, deaths = job_row(home, poison)
    assert (state, deaths) == ("dead", 3)
    assert "supervisor_death_cap=3" in error
    rows = query(home, "SELECT id, state FROM jobs WHERE id != ?", (poison,))
    assert {s for _, s in rows} == {"done"} and len(rows) == 100
    assert query(home, "SELECT count(*), count(DISTINCT job_id) FROM job_effects") == [(100, 100)]
    [(bystander_deaths,)] = query(
        home, "SELECT max(supervisor_deaths) FROM jobs WHERE id != ?", (poison,)
    )
    assert bystander_deaths <= 2, "a job sharing a fatal commit never reaches the cap"


# -- retryable errors are waited for, not charged ---------------------------------------


def test_a_retryable_error_defers_the_job_without_charging_it(cli, home: Path, background) -> None:
    payload = '{"message": "resource held", "retryable": true}'
    res = cli("jobs", "add", "fail", "--payload", payload, "--max-attempts", "1", "--json")
    [job_id] = res.json()["ids"]
    sup = background("run", "--workers", "1", "--json", env=FAST_RETRY)
    sup.wait_running(workers=1)
    seen: set[float] = set()

    def deferred_again() -> bool:
        (updated,) = query(home, "SELECT updated_at FROM jobs WHERE id = ?", (job_id,))[0]
        state, attempts, error, _ = job_row(home, job_id)
        assert state in ("queued", "claimed"), (state, error)
        if state == "queued":
            assert attempts == 0 and error.startswith("DRILL_BUSY: resource held")
            seen.add(updated)
        return len(seen) >= 3

    wait_for(deferred_again, what="three deferrals of the busy job")
    assert sup.terminate() == 0
    stats = orjson.loads(sup.stdout)
    assert stats["deferred"] >= 3 and stats["dead"] == stats["failed"] == 0


# -- done jobs are purged (the queue's half; the archive's: tests/archive/test_spool.py) --


def test_a_running_supervisor_purges_done_jobs_past_jobs_keep_seconds(
    cli, home: Path, background
) -> None:
    assert cli("jobs", "add", "noop", "--count", "30").code == 0
    env = {"MEMORYD_JOBS_KEEP_SECONDS": "1", "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.2"}
    sup = background("run", "--workers", "1", "--json", env=env)
    sup.wait_running(workers=1)
    wait_for(lambda: query(home, "SELECT count(*) FROM job_effects") == [(30,)], what="effects")
    wait_for(lambda: query(home, "SELECT count(*) FROM jobs") == [(0,)], what="the purge")
    assert status(home, env)["done_jobs"]["kept"] == 0
    assert sup.terminate() == 0
    assert orjson.loads(sup.stdout)["purged"] == 30
    assert worker_pids(home) == {}


def test_a_running_supervisor_purges_file_history_past_history_keep_seconds(
    cli, home: Path, tmp_path: Path, background
) -> None:
    """History grows by a row per changed file and ingest; the supervisor purges old rows."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        (src / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    assert cli("ingest", str(src), "--project", "p", "--wait").code == 0
    assert query(home, "SELECT count(*) FROM history") == [(5,)]
    env = {"MEMORYD_HISTORY_KEEP_SECONDS": "1", "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.2"}
    sup = background("run", "--workers", "1", "--json", env=env)
    sup.wait_running(workers=1)
    wait_for(lambda: query(home, "SELECT count(*) FROM history") == [(0,)], what="the purge")
    assert sup.terminate() == 0
    assert orjson.loads(sup.stdout)["history_purged"] == 5
