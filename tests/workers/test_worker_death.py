"""A worker's death charges the job it was running, not the others it
held; workers killed as they start stop the supervisor with the signal named."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil

from tests.conftest import FAST_RETRY, in_sleep, query, queue_counts, wait_for


def test_a_killed_worker_charges_only_the_job_it_was_running(cli, home, background) -> None:
    sleeps = ["--payload", '{"seconds": 2}', "--count", "3"]
    assert cli("jobs", "add", "sleep", *sleeps).code == 0
    sup = background("run", "--workers", "1", env=FAST_RETRY)
    [pid] = sup.wait_running(1).values()
    wait_for(lambda: in_sleep(pid), what="the worker inside a sleep job")
    # it holds two batches: the one it runs and the next, waiting in its pipe
    wait_for(lambda: queue_counts(home)["claimed"] == 2, what="two jobs held by the worker")
    os.kill(pid, signal.SIGKILL)

    wait_for(lambda: queue_counts(home)["done"] == 3, what="every job done after the death")
    attempts = sorted(n for (n,) in query(home, "SELECT attempts FROM jobs"))
    assert attempts == [1, 1, 2], "only the job it was running was charged an attempt"
    assert "was killed by SIGKILL" in sup.stderr


def _kill_children(parent: psutil.Process, killed: set[int]) -> None:
    """SIGKILL every worker ``parent`` has started and not yet been killed."""
    with contextlib.suppress(psutil.Error):
        for child in parent.children():
            if child.pid not in killed and "resource_tracker" not in " ".join(child.cmdline()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
                killed.add(child.pid)


def test_workers_killed_as_they_start_stop_the_supervisor_naming_the_signal(
    cli, home, background
) -> None:
    assert cli("init").code == 0
    sup = background("run", "--workers", "1")
    parent = psutil.Process(sup.pid)
    killed: set[int] = set()
    deadline = time.monotonic() + 120
    while sup.alive() and time.monotonic() < deadline:
        _kill_children(parent, killed)
        time.sleep(0.005)
    assert not sup.alive() and sup.wait() != 0
    assert "WORKER_CRASH_LOOP" in sup.stderr or "in a row died" in sup.stderr, sup.stderr
    message = " ".join(sup.stderr.split())
    assert "killed by SIGKILL" in message, message
    assert "imports in a fresh interpreter" not in message
