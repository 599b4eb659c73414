"""The `memory` commands through the real CLI: bad input, --json shapes, sweep."""

from __future__ import annotations

import pytest

from memoryd.consolidation import staging
from tests.conftest import (
    drains,
    query,
    wait_for,
)
from tests.memory.conftest import cli, lines

LESSON = {"kind": "lesson", "text": "Run the migrations before restarting the workers"}


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
    add = ("memory", "add", "-", "--project", "app")
    before = cli(project_home, *add, "--wait", data=lines(LESSON))  # nothing left running
    assert before.code == 0, before.stderr
    files = list(staging.staged_files(project_home, "app"))
    res = cli(project_home, *add, "--json", data=data)
    assert res.code == 2, res.stderr
    err = res.json()
    assert err["error"] == "MALFORMED_CANDIDATE"
    if data.strip():
        assert err["dropped"][0]["line"] == 1 and err["dropped"][0]["reason"]
        assert "line 1" in res.message
    assert list(staging.staged_files(project_home, "app")) == files  # nothing from the bad line
    assert not drains(project_home)  # and nothing was started for it


def test_add_without_wait_starts_a_drain_that_consolidates_and_exits(project_home) -> None:
    text = "The nightly backup lands in the cold bucket"
    res = cli(
        project_home, "memory", "add", "-", "--project", "app", "--json", data=lines({"text": text})
    )
    assert res.code == 0, res.stderr
    added = res.json()
    assert added["started"] is True and added["supervisor"] > 0
    listed = wait_for(
        lambda: cli(project_home, "memory", "list", "--project", "app", "--json").json(),
        what="the record",
    )
    assert [(r["kind"], r["text"]) for r in listed] == [("fact", text)]  # kind: the default
    wait_for(lambda: not drains(project_home), what="the drain to exit")
    again = cli(project_home, "memory", "add", "-", "--project", "app", data=lines(LESSON))
    assert again.code == 0 and "started a draining supervisor (pid" in again.stdout
    wait_for(lambda: not drains(project_home), what="the drain to exit")


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
    said = cli(project_home, "memory", "sweep", "--project", "app", "--dry-run").stdout
    assert said.strip().splitlines() == [
        "would flag 1, would archive 0 record(s)",
        "cited refs: 1 verified, 0 moved, 0 changed, 0 stale",  # src/a.py, anchored whole
    ], said
    assert query(project_home, "SELECT count(*) FROM memory_records WHERE status = 'active'") == [
        (2,)
    ]
    swept = cli(project_home, "memory", "sweep", "--project", "app", "--json").json()
    assert swept["flagged"] == dry["flagged"]
    rows = dict(query(project_home, "SELECT id, status FROM memory_records"))
    assert sorted(rows.values()) == ["active", "flagged"] and len(rows) == 2
    verify = cli(project_home, "rebuild", "--verify", "--json")
    assert verify.code == 0 and verify.json()["equal"], verify.stdout


def test_show_and_forget_take_the_candidate_id_memory_add_printed(project_home) -> None:
    """The id `memory add` prints is a candidate's; `show` answers with the record it
    became (and `forget` forgets that record), as `m-...` does."""
    line = b'{"kind": "fact", "text": "The nightly backup runs at 02:30 UTC."}\n'
    added = cli(project_home, "memory", "add", "-", "--project", "app", "--wait", "--json",
                data=line)  # fmt: skip
    cid = added.json()["candidates"][0]
    shown = cli(project_home, "memory", "show", cid, "--json")
    assert shown.code == 0, shown
    assert shown.json()["id"] == f"m-{cid}" and "02:30" in shown.json()["text"]
    assert cli(project_home, "memory", "show", f"m-{cid}", "--json").json()["id"] == f"m-{cid}"
    forgot = cli(project_home, "memory", "forget", cid, "--json")
    assert forgot.code == 0 and forgot.json()["forgotten"] == [f"m-{cid}"], forgot


def test_a_short_lesson_is_stored_with_triggers_and_a_wordless_one_is_dropped(
    project_home,
) -> None:
    """A lesson is recalled by its triggers: one whose words are all short or common
    gets them from its words anyway; one without a word is dropped, saying why."""
    data = lines({"kind": "lesson", "text": "Use X."}, {"kind": "lesson", "text": "!!! ..."})
    added = cli(project_home, "memory", "add", "-", "--project", "app", "--wait", "--json",
                data=data)  # fmt: skip
    assert added.code == 0, added
    answer = added.json()
    assert [d["line"] for d in answer["dropped"]] == [2]
    assert "needs a word" in answer["dropped"][0]["reason"]
    rid = answer["outcomes"][0]["record_id"]
    shown = cli(project_home, "memory", "show", rid, "--json").json()
    assert shown["triggers"] == ["x"], shown
