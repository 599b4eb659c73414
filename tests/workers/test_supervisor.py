"""The supervisor and its workers, as real processes: drain, SIGKILLs, dead-lettering.

Every test runs the installed ``memoryd`` command and kills processes with real
signals; outcomes are read from the authority with an independent connection.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import orjson
import psutil
import pytest

from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.operations.api import Memoryd
from memoryd.queue import JobSpec
from tests.conftest import (
    FAST_RETRY,
    assert_each_done_once,
    in_sleep,
    query,
    queue_counts,
    status,
    wait_for,
    worker_pids,
)

pytestmark = pytest.mark.slow


def sleeping_workers(home: Path) -> list[int]:
    return [pid for pid in worker_pids(home).values() if in_sleep(pid)]


# -- Must show 1 -------------------------------------------------------------------------


def test_2000_noop_jobs_drain_exactly_once(cli, home: Path) -> None:
    res = cli("jobs", "add", "noop", "--count", "2000", "--json")
    assert res.code == 0, res.stderr
    assert res.json()["added"] == 2000

    res = cli("run", "--workers", "2", "--drain", "--json")
    assert res.code == 0, res.stderr
    stats = res.json()
    assert (stats["done"], stats["failed"], stats["dead"], stats["rejected"]) == (2000, 0, 0, 0)

    assert_each_done_once(home, 2000)
    assert query(home, "SELECT count(*) FROM jobs WHERE attempts != 1") == [(0,)]
    st = status(home)
    assert st["queue"] == {"queued": 0, "claimed": 0, "done": 2000, "failed": 0, "dead": 0}
    assert st["effects"]["effects"] == 2000
    assert st["supervisor"] is None, "--drain exited and released the home"


def test_long_jobs_run_side_by_side_on_every_worker(cli, home: Path, background) -> None:
    """Two sleep jobs on two workers run at the same time, not one behind the other."""
    assert cli("jobs", "add", "sleep", "--count", "2", "--payload", '{"seconds": 30}').code == 0
    sup = background("run", "--workers", "2", env={"MEMORYD_SHUTDOWN_GRACE_SECONDS": "0.5"})
    sup.wait_running(workers=2)
    both = wait_for(
        lambda: len(sleeping_workers(home)) == 2,
        what="both workers to be inside a sleep job at once",
    )
    assert both
    assert sup.terminate() == 0  # graceful: in-flight jobs are released, not lost
    assert queue_counts(home)["queued"] + queue_counts(home)["done"] == 2


# -- Must show 2 -------------------------------------------------------------------------


def test_sigkill_of_a_worker_mid_job_redoes_the_job_once_and_respawns(
    cli, home: Path, background
) -> None:
    # Long enough that a loaded machine still finds a worker inside a job (3 s was not).
    res = cli("jobs", "add", "sleep", "--count", "2", "--payload", '{"seconds": 10}')
    assert res.code == 0, res.stderr
    sup = background("run", "--workers", "2", "--json", env=FAST_RETRY)
    before = sup.wait_running(workers=2)

    victim = wait_for(lambda: sleeping_workers(home), what="a worker inside a sleep job")[0]
    [index] = [i for i, pid in before.items() if pid == victim]
    os.kill(victim, signal.SIGKILL)

    after = wait_for(
        lambda: (w := worker_pids(home)).get(index) not in (None, victim) and w,
        what=f"worker {index} to be respawned",
    )
    assert not psutil.pid_exists(victim) or psutil.Process(victim).status() == "zombie"
    assert after[index] != victim
    assert sup.alive()

    wait_for(lambda: queue_counts(home)["done"] == 2, what="both jobs done")
    assert sup.terminate() == 0
    stats = orjson.loads(sup.stdout)
    assert stats["respawned"] >= 1
    assert stats["done"] == 2

    assert_each_done_once(home, 2)
    redone = query(home, "SELECT attempts, last_error FROM jobs WHERE attempts > 1")
    assert len(redone) >= 1, "the killed worker's job was run again"
    assert any(f"pid {victim}" in (err or "") for _, err in redone), redone


# -- Must show 3 -------------------------------------------------------------------------


def test_sigkill_of_the_supervisor_leaves_no_worker_and_a_restart_finishes(
    cli, home: Path, background
) -> None:
    assert cli("jobs", "add", "sleep", "--count", "6", "--payload", '{"seconds": 2}').code == 0
    assert cli("jobs", "add", "noop", "--count", "300").code == 0
    sup = background("run", "--workers", "2")
    workers = sup.wait_running(workers=2)
    wait_for(lambda: sleeping_workers(home), what="a worker inside a sleep job")
    assert queue_counts(home)["claimed"] > 0

    children = psutil.Process(sup.pid).children(recursive=True)
    assert set(workers.values()) <= {c.pid for c in children}
    os.kill(sup.pid, signal.SIGKILL)
    assert sup.wait(timeout=30) == -signal.SIGKILL
    try:
        gone, alive = psutil.wait_procs(children, timeout=5.0)
        assert not alive, f"processes outlived their supervisor by 5 s: {alive}"
    finally:
        for proc in children:  # never leave one behind, even when the test fails
            if proc.is_running():
                proc.kill()

    counts = queue_counts(home)
    assert counts["claimed"] > 0, "the dead supervisor's claims are still in the store"
    assert counts["done"] < 306

    res = cli("run", "--workers", "2", "--drain", "--json")
    assert res.code == 0, res.stderr
    stats = res.json()
    assert stats["reclaimed"] >= counts["claimed"]
    assert stats["rejected"] == 0
    assert_each_done_once(home, 306)


# -- Must show 5 -------------------------------------------------------------------------


def test_an_always_failing_job_backs_off_dies_and_can_be_retried(cli, home: Path) -> None:
    res = cli(
        "jobs", "add", "fail", "--payload", '{"message": "kaboom"}', "--max-attempts", "3",
        "--json",
    )  # fmt: skip
    assert res.code == 0, res.stderr
    [job_id] = res.json()["ids"]

    res = cli("run", "--workers", "2", "--drain", "--json", env=FAST_RETRY)
    assert res.code == 0, res.stderr
    stats = res.json()
    assert (stats["failed"], stats["dead"], stats["done"]) == (2, 1, 0)

    res = cli("jobs", "dead", "--json")
    assert res.code == 0, res.stderr
    [dead] = res.json()
    assert dead["id"] == job_id
    assert (dead["state"], dead["attempts"], dead["max_attempts"]) == ("dead", 3, 3)
    assert "DrillFailure" in dead["last_error"] and "kaboom" in dead["last_error"]
    assert query(home, "SELECT count(*) FROM job_effects") == [(0,)]
    assert status(home)["queue"]["dead"] == 1

    res = cli("jobs", "retry", str(job_id), "--json")
    assert res.code == 0, res.stderr
    assert res.json() == {"requeued": [job_id], "refused": []}
    res = cli("jobs", "list", "--state", "queued", "--json")
    [queued] = res.json()
    assert (queued["id"], queued["attempts"]) == (job_id, 0)
    assert status(home)["queue"] == {"queued": 1, "claimed": 0, "done": 0, "failed": 0, "dead": 0}
    assert cli("jobs", "dead", "--json").json() == []

    # The requeued job really runs again: three more attempts, dead again.
    res = cli("run", "--drain", "--json", env=FAST_RETRY)
    assert res.code == 0, res.stderr
    assert res.json()["dead"] == 1
    assert cli("jobs", "retry", "--all-dead", "--json").json() == {
        "requeued": [job_id],
        "refused": [],
    }


def test_sigterm_finishes_in_flight_work_and_keeps_the_rest(cli, home: Path, background) -> None:
    assert cli("jobs", "add", "sleep", "--count", "10", "--payload", '{"seconds": 1}').code == 0
    sup = background("run", "--workers", "2", "--json")
    sup.wait_running(workers=2)
    wait_for(lambda: sleeping_workers(home), what="a worker inside a sleep job")
    assert sup.terminate() == 0
    counts = queue_counts(home)
    assert counts["claimed"] == 0, "nothing stays claimed after a graceful stop"
    assert counts["done"] >= 1 and counts["done"] + counts["queued"] == 10
    assert query(home, "SELECT count(*) FROM jobs WHERE state = 'queued' AND attempts > 0") == [
        (0,)
    ], "released claims are not charged an attempt"
    assert orjson.loads(sup.stdout)["done"] == counts["done"]
    # said at once, not after a silent wait
    assert "stopping on SIGTERM: no new claims; in-flight jobs get up to" in sup.stderr

    res = cli("run", "--workers", "2", "--drain")
    assert res.code == 0, res.stderr
    assert_each_done_once(home, 10)


def retention_pass(home: Path) -> int:
    """Enqueue a retention pass (the job the periodic tick enqueues); its id."""
    md = Memoryd(home)
    try:
        return md.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": "retention_run", "args": {}}))
    finally:
        md.close()


def test_sigterm_waits_for_the_retention_workers_job_past_the_grace(
    cli, home: Path, background
) -> None:
    """Past the grace period a stopping supervisor gives up its job
    workers' in-flight jobs but waits for the retention worker's (its archive work is
    bounded). The worker is SIGSTOPped with a retention pass in hand (a pass that
    outlasts the grace and the pool's 2 s join), then let go: the pass completes,
    once, and the supervisor exits cleanly."""
    env = {"MEMORYD_SHUTDOWN_GRACE_SECONDS": "0.5", "MEMORYD_RETENTION_TICK_SECONDS": "3600"}
    first = retention_pass(home)  # the retention worker starts for it
    sup = background("run", "--workers", "1", "--json", env=env)
    sup.wait_running(workers=1)
    done = "SELECT state FROM jobs WHERE id = ?"
    wait_for(lambda: query(home, done, (first,)) == [("done",)], what="the first pass")
    worker = status(home)["supervisor"]["retention_worker"]
    os.kill(worker, signal.SIGSTOP)
    try:
        job = retention_pass(home)
        claimed = "SELECT state FROM jobs WHERE id = ?"
        wait_for(lambda: query(home, claimed, (job,)) == [("claimed",)], what="the pass claimed")
        sup.proc.send_signal(signal.SIGTERM)
        time.sleep(4.0)  # past the 0.5 s grace and the 2 s join: main killed the worker here
        assert sup.alive(), "the supervisor stopped without the retention worker's pass"
        assert psutil.Process(worker).status() == psutil.STATUS_STOPPED
    finally:
        os.kill(worker, signal.SIGCONT)
    assert sup.wait() == 0, sup.stderr
    assert query(home, "SELECT state, attempts FROM jobs WHERE id = ?", (job,)) == [("done", 1)]
    assert "waiting for the retention worker's job" in sup.stderr
