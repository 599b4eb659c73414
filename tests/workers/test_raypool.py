"""The Ray executor on a real local Ray cluster: the supervisor stays the only claimer
and writer, so a Ray worker killed mid-task costs an attempt, never a double effect."""

from __future__ import annotations

import os
import signal

import orjson
import psutil
import pytest

from tests.conftest import FAST_RETRY, in_sleep, query, wait_for

pytest.importorskip("ray", reason="the Ray extra: pip install 'memoryd[ray]'")
pytestmark = pytest.mark.slow

RAY_ENV = {**FAST_RETRY, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}


def _effects(home) -> dict[int, int]:
    return dict(query(home, "SELECT job_id, count(*) FROM job_effects GROUP BY job_id"))


def _ray_task_in_sleep() -> int | None:
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd and cmd[0].startswith("ray::_run_batch") and in_sleep(proc.pid):
            return proc.pid
    return None


def test_a_drain_on_ray_with_a_worker_killed_mid_task_applies_every_effect_once(
    cli, home, background
) -> None:
    """A drain of 301 jobs on Ray (many batches on both slots) while the Ray worker
    running the sleep job is SIGKILLed: that job is redone, every job applied once."""
    assert cli("jobs", "add", "sleep", "--payload", '{"seconds": 4}').code == 0
    assert cli("jobs", "add", "noop", "--count", "300").code == 0
    sup = background("run", "--drain", "--executor", "ray", "--workers", "2", "--json", env=RAY_ENV)
    victim = wait_for(_ray_task_in_sleep, what="a Ray worker running the sleep job", timeout=180)
    os.kill(victim, signal.SIGKILL)
    assert sup.wait(timeout=300) == 0, sup.stderr
    assert "Ray task of slot 0 lost" in sup.stderr or "Ray task of slot 1 lost" in sup.stderr
    # the report is the last thing on stdout (Ray's raylet prints the death of a worker
    # it ran above it: a line of Ray's, not memoryd's)
    report = sup.stdout[sup.stdout.rindex("\n{") + 1 :] if "\n{" in sup.stdout else sup.stdout
    assert orjson.loads(report)["done"] == 301, sup.stdout
    [(state, attempts)] = query(home, "SELECT state, attempts FROM jobs WHERE kind = 'sleep'")
    assert state == "done" and attempts == 2  # the killed attempt was charged, then redone
    effects = _effects(home)
    assert len(effects) == 301 and set(effects.values()) == {1}
