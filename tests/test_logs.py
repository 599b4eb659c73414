"""The supervisor's log: one line per event that matters, as text or JSON lines."""

from __future__ import annotations

import os
import signal

import orjson
import pytest

from tests.conftest import in_sleep, wait_for


def _events(stderr: str) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_json_lines_name_each_event_with_its_fields(cli) -> None:
    assert cli("jobs", "add", "noop", "--count", "3").code == 0
    assert cli("jobs", "add", "fail", "--max-attempts", "1").code == 0
    res = cli("run", "--drain", "--workers", "1", "--log-format", "json")
    assert res.code == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    events = [orjson.loads(line) for line in lines]  # every line is one JSON object
    assert [e["event"] for e in events] == ["supervisor_started", "job_dead", "supervisor_stopped"]
    for e in events:
        assert {"time", "level", "pid", "message"} <= e.keys() and e["time"].endswith("Z")
    dead = events[1]
    assert dead["level"] == "warning" and dead["kind"] == "fail" and dead["attempts"] == 1
    assert events[2]["done"] == 3 and events[2]["dead"] == 1 and events[2]["why"] == "drained"


def test_text_lines_and_levels(cli) -> None:
    assert cli("jobs", "add", "noop").code == 0
    res = cli("run", "--drain", "--workers", "1")
    assert " info    memoryd[" in res.stderr and "supervisor started on" in res.stderr
    assert cli("jobs", "add", "noop").code == 0
    quiet = cli("run", "--drain", "--workers", "1", "--log-level", "warning")
    assert quiet.code == 0 and quiet.stderr.strip() == ""


@pytest.mark.slow
def test_a_killed_worker_is_logged_with_its_reason(cli, background) -> None:
    assert cli("jobs", "add", "sleep", "--payload", '{"seconds": 600}').code == 0
    sup = background("run", "--workers", "1", "--log-format", "json")
    [pid] = sup.wait_running(1).values()
    wait_for(lambda: in_sleep(pid), what="the worker in its sleep job")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: any(e["event"] == "worker_respawned" for e in _events(sup.stderr)))
    [respawn] = [e for e in _events(sup.stderr) if e["event"] == "worker_respawned"]
    assert respawn["pid"] == pid and respawn["jobs_lost"] == 1 and respawn["exit_code"] == -9
    assert f"(pid {pid}) was killed by SIGKILL" in respawn["message"]
    assert sup.terminate() == 0
    stop = [e for e in _events(sup.stderr) if e["event"] == "supervisor_stopped"]
    assert stop and stop[0]["why"] == "stopped by signal"
