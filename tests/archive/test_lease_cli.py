"""Through the real CLI: ``archive lease renew`` works embedded and
through a supervisor, and a rejected acquire returns and prints which locators and why."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import archive_lines, query

DAY = 86400.0


def add(cli, tmp_path: Path, name: str, project: str) -> str:
    path = tmp_path / f"{name}.jsonl"
    line = {"role": "user", "content": f"note {name}", "timestamp": time.time() - 60}
    path.write_bytes(orjson.dumps(line) + b"\n")
    res = cli("archive", "add", str(path), "--project", project, "--new-project", "--json")
    assert res.code == 0, res.stderr
    return res.json()["locators"][0]


def lease(cli, *args: str):
    return cli("archive", "lease", *args, "--client", "agent-1")


def check_renew_cycle(cli, tmp_path: Path) -> None:
    loc = add(cli, tmp_path, "ctx", "demo")
    got = lease(cli, "acquire", "--project", "demo", "--ttl", "60", loc, "--json")
    assert got.code == 0, got.stderr
    first = got.json()
    assert first["locators"] == [loc] and first["expires_at"].endswith("Z")
    renewed = lease(cli, "renew", "--ttl", "3600", "--json")
    assert renewed.code == 0, renewed.stderr
    r = renewed.json()
    assert r["client"] == "agent-1" and r["epoch"] == first["epoch"]
    assert r["expires_at"] > first["expires_at"]
    text = lease(cli, "renew")
    assert text.code == 0 and "renewed until" in text.stdout and "{" not in text.stdout
    assert lease(cli, "release").code == 0
    gone = cli("archive", "lease", "renew", "--client", "nobody", "--json")
    assert gone.code == 1 and gone.json()["error"] == "LEASE_NOT_FOUND"


def test_renew_embedded(cli, tmp_path):
    check_renew_cycle(cli, tmp_path)


@pytest.mark.slow
def test_renew_through_a_supervisor(cli, home, tmp_path, background):
    assert cli("init").code == 0
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)
    check_renew_cycle(cli, tmp_path)
    assert query(home, "SELECT count(*) FROM jobs WHERE state = 'dead'") == [(0,)]


def test_a_rejected_acquire_returns_and_prints_what_and_why(cli, tmp_path):
    mine = add(cli, tmp_path, "mine", "demo")
    foreign = add(cli, tmp_path, "theirs", "elsewhere")
    args = ("acquire", "--project", "demo", mine, foreign, "nosuch-doc@1", "bad locator")
    res = lease(cli, *args, "--json")
    assert res.code == 1
    body = res.json()
    assert body["error"] == "LEASE_REJECTED"
    assert body["rejected"] == {
        foreign: "foreign_project",
        "nosuch-doc@1": "missing",
        "bad locator": "malformed",
    }
    text = lease(cli, *args)
    assert text.code == 1
    assert f"{foreign} (foreign_project)" in text.message and "nothing leased" in text.message


def test_a_lease_on_a_session_keeps_its_current_versions_through_retention(cli, tmp_path):
    from tests.retention.test_run_cli import archive, status_of

    kept = archive(cli, tmp_path, "work", "the session an agent still has open", 200)
    gone = archive(cli, tmp_path, "idle", "a session nobody holds", 200)
    got = lease(cli, "acquire", "--project", "demo", "--session", "work", "--ttl", "600")
    assert got.code == 0, got.stderr
    assert "current versions of 1 session " in got.stdout
    assert cli("retention", "run", "--force").code == 0
    assert [status_of(cli, loc) for loc in kept] == ["live", "live"]
    assert [status_of(cli, loc) for loc in gone] == ["expired", "expired"]
    missing = lease(cli, "acquire", "--project", "demo", "--session", "nope", "--json")
    assert missing.code == 1 and missing.json()["error"] == "LEASE_REJECTED"


def test_a_session_lease_says_what_had_expired_and_does_not_bring_it_back(cli, tmp_path):
    from tests.retention.test_run_cli import status_of

    path = tmp_path / "late.jsonl"
    now = time.time()
    lines = [  # a turn 5 s past its 90-day age (its segment, today's, stays), a fresh tool
        {"role": "user", "content": "a turn just past its age", "timestamp": now - 90 * DAY - 5},
        {"role": "tool", "content": "a tool result of today", "timestamp": now - 60},
    ]
    turn, tool = archive_lines(cli, path, lines).json()["locators"]
    assert cli("retention", "run", "--force").code == 0  # the retention clock passes it
    assert status_of(cli, turn) == "expired" and status_of(cli, tool) == "live"
    got = lease(cli, "acquire", "--project", "demo", "--session", "late", "--json")
    assert got.code == 0, got.stderr
    assert got.json()["unprotected"] == [turn]
    assert status_of(cli, turn) == "expired" and status_of(cli, tool) == "live"
    text = lease(cli, "acquire", "--project", "demo", "--session", "late")
    assert "not protected (past their deadline): 1 version:" in text.stdout
