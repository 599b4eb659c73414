"""The `memory` commands through the real CLI: bad input, --json shapes, sweep."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memoryd.memory import staging
from tests.conftest import CLI_TIMEOUT, MEMORYD, Result, clean_env, query, run_cli
from tests.memory.conftest import lines

LESSON = {"kind": "lesson", "text": "Run the migrations before restarting the workers"}


def cli(home: Path, *args: str, data: bytes | None = None) -> Result:
    """``memoryd ARGS`` on ``home``, with ``data`` on stdin."""
    if data is None:
        return run_cli(*args, home=home)
    p = subprocess.run(
        [*MEMORYD, *args], input=data, capture_output=True, env=clean_env(home), timeout=CLI_TIMEOUT
    )
    return Result(p.returncode, p.stdout.decode(), p.stderr.decode())


@pytest.mark.parametrize(
    "data",
    [
        b"{oops\n",
        b'{"kind": "rumour", "text": "x"}\n',
        b'{"kind": "fact", "text": ""}\n',
        b'{"kind": "lesson", "text": "x", "triggers": [3]}\n',
        b'{"kind": "fact", "text": "\xff\xfe"}\n',
        b'{"kind": "fact", "text": "' + b"a" * (1024 * 1024) + b'"}\n',
        b"\n\n",
    ],
    ids=["json", "kind", "empty", "triggers", "utf8", "megabyte", "nothing"],
)
def test_nothing_valid_exits_2_naming_the_line_and_stages_nothing(project_home, data) -> None:
    before = cli(project_home, "memory", "add", "-", "--project", "app", data=lines(LESSON))
    assert before.code == 0, before.stderr
    res = cli(project_home, "memory", "add", "-", "--project", "app", "--json", data=data)
    assert res.code == 2, res.stderr
    err = res.json()
    assert err["error"] == "MALFORMED_CANDIDATE"
    if data.strip():
        assert err["dropped"][0]["line"] == 1 and err["dropped"][0]["reason"]
        assert "line 1" in res.message
    staged = list(staging.staged_files(project_home, "app"))
    assert len(staged) == 1  # only the earlier add's file; nothing from the bad line


def test_unknown_project_is_a_typed_error(project_home) -> None:
    res = cli(project_home, "memory", "add", "-", "--project", "nope", "--json", data=lines(LESSON))
    assert res.code == 1 and res.json()["error"] == "UNKNOWN_PROJECT"
    assert not staging.staging_dir(project_home, "nope").exists()


def test_add_wait_list_show_status_json(project_home, tmp_path) -> None:
    data = lines(LESSON, LESSON) + b"not json\n"
    res = cli(project_home, "memory", "add", "-", "--project", "app", "--wait", "--json", data=data)
    assert res.code == 0, res.stderr
    added = res.json()
    assert added["staged"] == 2 and added["dropped"][0]["line"] == 3
    assert [o["outcome"] for o in added["outcomes"]] == ["added", "duplicate"]
    rid = added["outcomes"][0]["record_id"]
    (listed,) = cli(project_home, "memory", "list", "--project", "app", "--json").json()
    assert listed["id"] == rid and listed["count"] == 2 and listed["created_at"].endswith("Z")
    assert listed["triggers"]  # derived for a lesson that had none
    shown = cli(project_home, "memory", "show", rid, "--json").json()
    assert [h["action"] for h in shown["history"]] == ["added", "reinforced"]
    status = cli(project_home, "memory", "status", "--json").json()
    assert status["backlog"] == {"staged_files": 0, "parked": 0, "deadletter": 0}
    assert status["records"]["active"] == 1 and status["duplicate_rate"] == 0.5
    assert status["last_runs"][0]["at"].endswith("Z")
    missing = cli(project_home, "memory", "show", "m-nope", "--json")
    assert missing.code == 1 and missing.json()["error"] == "NO_SUCH_RECORD"
    human = cli(project_home, "memory", "list", "--project", "app")
    assert rid in human.stdout and "lesson" in human.stdout


def test_sweep_flags_dangling_refs_and_archives_only_through_status(project_home) -> None:
    cands = [
        {"kind": "fact", "text": "The handler lives in a module", "refs": ["src/a.py"]},
        {"kind": "fact", "text": "Old notes were kept elsewhere", "refs": ["docs/gone.md"]},
    ]
    res = cli(project_home, "memory", "add", "-", "--project", "app", "--wait", data=lines(*cands))
    assert res.code == 0, res.stderr
    dry = cli(project_home, "memory", "sweep", "--project", "app", "--dry-run", "--json").json()
    assert len(dry["flagged"]) == 1 and dry["archived"] == []
    assert query(project_home, "SELECT count(*) FROM memory_records WHERE status = 'active'") == [
        (2,)
    ]
    swept = cli(project_home, "memory", "sweep", "--project", "app", "--json").json()
    assert swept["flagged"] == dry["flagged"]
    rows = dict(query(project_home, "SELECT id, status FROM memory_records"))
    assert sorted(rows.values()) == ["active", "flagged"] and len(rows) == 2
    verify = cli(project_home, "rebuild", "--verify", "--json")
    assert verify.code == 0 and verify.json()["equal"], verify.stdout
