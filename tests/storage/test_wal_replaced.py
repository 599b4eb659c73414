"""A WAL or shared-memory file deleted under a running supervisor (a clean-up script):
the supervisor notices, stops writing and says so; `doctor` reports it; writes other
processes acknowledged meanwhile are not lost."""

from __future__ import annotations

import os
import signal

import orjson
import pytest

from tests.conftest import queue_counts, run_cli, wait_for

pytestmark = pytest.mark.slow
JOBS = 300


def test_a_deleted_wal_stops_the_supervisor_and_loses_no_acknowledged_write(
    home, background
) -> None:
    assert run_cli("init", home=home).code == 0
    sup = background("run", "--workers", "1")
    sup.wait_running(1)
    os.kill(sup.pid, signal.SIGSTOP)  # held still while the files go, so doctor sees it
    try:
        for suffix in ("-wal", "-shm"):
            os.unlink(home / f"authority.db{suffix}")
        added = run_cli("jobs", "add", "noop", "--count", str(JOBS), home=home)
        assert added.code == 0, added
        doctor = run_cli("doctor", "--json", home=home)
        findings = orjson.loads(doctor.stdout)["findings"]
        wal = [f for f in findings if f["check"] == "wal" and f["status"] == "action"]
        assert wal and f"pid {sup.pid}" in wal[0]["message"], findings
    finally:
        os.kill(sup.pid, signal.SIGCONT)
    assert sup.wait(timeout=60) != 0
    assert "supervisor stopped on error (WalReplaced" in sup.stderr, sup.stderr
    # every acknowledged job is there, and a new supervisor does them all
    assert run_cli("run", "--drain", home=home).code == 0
    assert queue_counts(home)["done"] == JOBS
    assert run_cli("doctor", home=home).code == 0


def test_doctor_says_what_to_do_about_claims_a_killed_supervisor_holds(home, background):
    assert run_cli("init", home=home).code == 0
    assert run_cli("jobs", "add", "sleep", "--payload", '{"seconds": 30}', "--count", "2",
                   home=home).code == 0  # fmt: skip
    sup = background("run", "--workers", "2")
    wait_for(lambda: queue_counts(home)["claimed"] == 2, what="both jobs claimed")
    sup.kill_tree()
    doctor = run_cli("doctor", "--json", home=home)
    assert doctor.code != 0
    claimed = [
        f
        for f in orjson.loads(doctor.stdout)["findings"]
        if "claimed by a supervisor" in f["message"]
    ]
    assert claimed and claimed[0]["status"] == "action", doctor.stdout
    assert "memoryd run" in claimed[0]["action"]
