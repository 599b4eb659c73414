"""The supervisor's side of a kind's hooks: ``poisoned`` also takes the jobs that fail
their last attempt, and ``at_start`` jobs are enqueued as it starts (a hook that raises
is logged and never stops the start). This module is the test's capability: its worker
processes import it by name, the supervisor runs in this process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from memoryd.operations.api import Memoryd
from memoryd.queue import JobSpec
from memoryd.workers import builtin
from memoryd.workers.contract import JobKind
from memoryd.workers.registry import Registry
from tests.conftest import query

recovered: list[tuple[int, int, int]] = []  # (id, attempts, deaths) per job recovered
starts: list[Path] = []


def _recover(actx, jobs) -> None:
    recovered.extend((j.id, j.attempts, j.deaths) for j in jobs)


def _start(home: Path, config, conn) -> list[JobSpec]:
    starts.append(home)
    return [JobSpec("noop", dedupe_key="hooks:started")]


def _broken_start(home: Path, config, conn) -> list[JobSpec]:
    raise RuntimeError("this hook is broken")


KINDS = [
    JobKind("hooks.fail", builtin.KINDS[2].run, poisoned=_recover, doc="always raises"),
    JobKind("hooks.broken", builtin.KINDS[0].run, at_start=_broken_start, doc="noop"),
    JobKind("hooks.start", builtin.KINDS[0].run, at_start=_start, doc="noop"),
]


@pytest.fixture
def md(tmp_path: Path):
    recovered.clear()
    starts.clear()
    registry = Registry.from_modules(["memoryd.workers.builtin", __name__])
    fast = {"workers": 1, "retry_backoff_base": 0.01, "retry_backoff_max": 0.05}
    lib = Memoryd(tmp_path / "home", fast, registry=registry)
    yield lib
    lib.close()


def test_a_job_out_of_attempts_goes_to_its_kinds_recovery(md) -> None:
    md.ensure_home()
    job = md.queue.enqueue(JobSpec("hooks.fail", max_attempts=2))
    md.run(drain=True)
    assert query(md.home, "SELECT state, attempts FROM jobs WHERE id = ?", (job,)) == [("dead", 2)]
    assert recovered == [(job, 2, 0)], "recovered once, in the turn that dead-lettered it"


def test_each_start_enqueues_what_its_hooks_find(md, caplog) -> None:
    md.run(drain=True)
    md.run(drain=True)
    assert starts == [md.home, md.home]
    assert query(md.home, "SELECT kind, state FROM jobs") == [("noop", "done")] * 2
    broken = [r for r in caplog.records if getattr(r, "event", "") == "start_recovery_failed"]
    assert len(broken) == 2 and "this hook is broken" in broken[0].getMessage()


def test_a_job_dead_lettered_by_its_lease_expiring_goes_to_its_kinds_recovery(md, caplog):
    """A claimer that stays alive but stops renewing (a hung worker's job): its lease
    runs out and the reclaim charges the attempt; the last one dead-letters the job
    through the same recovery and report as a job whose worker crashed."""
    md.ensure_home()
    job = md.queue.enqueue(JobSpec("hooks.fail", max_attempts=1))
    parent = psutil.Process(os.getppid())  # alive, and not this supervisor
    owner = f"{parent.pid}:{parent.create_time()}"
    assert [j.id for j in md.queue.db.write(lambda tx: md.queue.claim_in(tx, owner, 1, 0.01))] == [
        job
    ]
    time.sleep(0.05)
    md.run(drain=True)
    assert query(md.home, "SELECT state, attempts FROM jobs WHERE id = ?", (job,)) == [("dead", 1)]
    assert recovered == [(job, 1, 0)]
    dead = [r for r in caplog.records if getattr(r, "event", "") == "job_dead"]
    assert len(dead) == 1 and "lease expired" in dead[0].getMessage()
