"""`memoryd doctor`: each finding reproduced with real processes and files."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import wal_reader


def findings(res) -> dict[str, dict]:
    return {f["check"]: f for f in res.json()["findings"]}


def test_missing_home_is_reported_not_created(cli, home: Path) -> None:
    res = cli("doctor")
    assert res.code == 1, res
    assert f"no memoryd home at {home}" in res.stdout and "memoryd init" in res.stdout
    assert not home.exists()
    res = cli("doctor", "--json")
    assert res.code == 1 and res.json()["ok"] is False
    assert findings(res)["home"]["status"] == "action"


def test_stray_home_without_authority(cli, home: Path) -> None:
    home.mkdir()
    (home / "notes.txt").write_text("not a memoryd home\n")
    res = cli("doctor", "--json")
    assert res.code == 1
    assert "holds no authority.db" in findings(res)["home"]["message"]
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt"], "doctor changes nothing"


def test_healthy_home_exits_0(cli, home: Path) -> None:
    assert cli("init").code == 0
    res = cli("doctor", "--json")
    assert res.code == 0, res.stdout
    body = res.json()
    assert body["ok"] is True and body["home"] == str(home)
    assert {f["status"] for f in body["findings"]} == {"ok"}
    assert {"home", "supervisor", "queue", "wal", "disk"} <= set(findings(res))
    human = cli("doctor")
    assert human.code == 0 and "ACTION" not in human.stdout


@pytest.mark.slow
def test_queued_work_without_supervisor_and_dead_jobs(cli, home: Path) -> None:
    args = ["--payload", '{"message": "boom"}', "--max-attempts", "1"]
    assert cli("jobs", "add", "fail", *args).code == 0
    assert cli("run", "--drain", "--workers", "1").code == 0
    assert cli("jobs", "add", "noop", "--count", "3").code == 0
    res = cli("doctor", "--json")
    assert res.code == 1
    found = findings(res)
    assert found["queue"]["status"] == "action"
    assert "3 job(s) queued with no supervisor" in found["queue"]["message"]
    assert "memoryd run" in found["queue"]["action"]
    assert found["dead jobs"]["message"] == "1 dead job(s)"
    assert "memoryd jobs retry --all-dead" in found["dead jobs"]["action"]


@pytest.mark.slow
def test_stale_supervisor_state_after_sigkill(cli, home: Path, background) -> None:
    sup = background("run", "--workers", "1")
    sup.wait_running(workers=1)
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait()
    assert (home / "supervisor.json").exists()
    res = cli("doctor", "--json")
    found = findings(res)["supervisor"]
    assert found["status"] == "warn" and "stale supervisor.json" in found["message"]
    assert res.code == 0, "a stale state file alone needs no action"


@pytest.mark.slow
def test_wal_pinned_names_the_reader(cli, home: Path) -> None:
    assert cli("init").code == 0
    with wal_reader(home) as reader:
        assert cli("jobs", "add", "noop", "--count", "2000").code == 0
        res = cli("doctor", "--json", env={"MEMORYD_WAL_PAUSE_BYTES": "4096"})
        assert res.code == 1
        wal = findings(res)["wal"]
        assert wal["status"] == "action" and str(reader.pid) in wal["message"]
        assert "checkpoint-wal" in wal["action"]


def test_low_disk_and_config_problems(cli, home: Path) -> None:
    assert cli("init").code == 0
    (home / "memoryd.toml").write_text("wrokers = 3\n")
    res = cli("doctor", "--json", env={"MEMORYD_RETENTION_DISK_LOW_BYTES": str(2**62)})
    assert res.code == 1
    found = findings(res)
    assert found["disk"]["status"] == "action" and "bytes free" in found["disk"]["message"]
    assert "did you mean workers?" in found["config"]["message"]


@pytest.mark.slow
def test_unfinished_archive_migration(cli, home: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    line = {"role": "user", "content": "we picked port 8765", "timestamp": time.time() - 3600}
    chat.write_text(json.dumps(line) + "\n")
    assert cli("archive", "add", str(chat), "--project", "p", "--new-project").code == 0
    res = cli("archive", "migrate", "--copy")
    assert res.code == 0, res.stderr
    res = cli("doctor", "--json")
    assert res.code == 1
    found = findings(res)["archive migration"]
    assert found["status"] == "action" and "retention waits" in found["message"]
    assert "--rollback" in found["action"]
