"""A failing adjudicator parks only its candidate; past memory_max_attempts the
candidate is dead-lettered; `memory retry` re-stages it. Wrong-project files stay."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.consolidation import staging
from memoryd.operations.memory import Memory
from tests.conftest import query
from tests.memory.conftest import lines

OLD = "Release builds are signed with the hardware token kept in the office safe"
NEW = "Release builds are signed with the hardware token kept in the server room"
OTHER = "Tabs indent the makefiles because make requires them"


def fact(text: str) -> dict:
    return {"kind": "fact", "text": text}


@pytest.mark.parametrize("how", ["hang", "crash", "garbage"])
def test_a_broken_adjudicator_parks_then_dead_letters(memoryd, judge, project_home, how) -> None:
    md = memoryd(
        memory_adjudicator=judge({"server room": {"how": how}}),
        memory_adjudicator_timeout_seconds=0.5,
        memory_max_attempts=2,
    )
    Memory(md).add(lines(fact(OLD)), "app", wait=True)
    outs = Memory(md).add(lines(fact(NEW), fact(OTHER)), "app", wait=True)["outcomes"]
    bad, good = outs
    assert good["outcome"] == "added"  # the run went on past the broken candidate
    assert bad["state"] == "deadletter"
    expected = {"hang": "within 0.5s", "crash": "exited with 3", "garbage": "no JSON verdict"}
    assert expected[how] in bad["reason"]
    # parked once (attempt 1), dead-lettered at the cap (attempt 2): both in the run log
    logged = query(
        project_home,
        "SELECT outcome FROM memory_outcomes WHERE candidate_id = ? ORDER BY id",
        (bad["id"],),
    )
    assert [r[0] for r in logged] == ["parked", "deadlettered"]
    letter = orjson.loads(Path(project_home, "deadletter", "app", f"{bad['id']}.json").read_bytes())
    assert letter["candidate"]["text"] == NEW and letter["attempts"] == 2
    assert not list(staging.staged_files(project_home, "app"))


def test_retry_restages_a_dead_letter_under_its_id(memoryd, judge, project_home) -> None:
    broken = memoryd(
        memory_adjudicator=judge({"server room": {"how": "crash"}}), memory_max_attempts=1
    )
    Memory(broken).add(lines(fact(OLD)), "app", wait=True)
    (bad,) = Memory(broken).add(lines(fact(NEW)), "app", wait=True)["outcomes"]
    assert bad["state"] == "deadletter"
    broken.close()
    fixed = memoryd(memory_adjudicator=judge({"server room": {"verdict": "supersedes"}}))
    r = Memory(fixed).retry([bad["id"], "nope"])
    assert r["restaged"] == [bad["id"]]
    assert r["refused"] == [{"id": "nope", "reason": "not a dead letter"}]
    assert not Path(project_home, "deadletter", "app", f"{bad['id']}.json").exists()
    fixed.run(drain=True)
    state = query(project_home, "SELECT state, outcome FROM memory_candidates WHERE id = ?",
                  (bad["id"],))  # fmt: skip
    assert state == [("consumed", "superseded")]
    assert Memory(fixed).deadletters("app") == []


def test_wrong_project_files_are_left_for_their_owner(memoryd, project_home) -> None:
    md = memoryd()
    foreign = staging.stage(project_home, "app", [("f00dfeedf00dfeed", fact(OTHER))])
    head, rest = foreign.read_bytes().split(b"\n", 1)  # the first line names the project
    foreign.write_bytes(orjson.dumps({**orjson.loads(head), "project": "other"}) + b"\n" + rest)
    damaged = staging.staging_dir(project_home, "app") / "00000000000000000001-dead.jsonl"
    damaged.write_bytes(b'{"id": "trunc')
    (out,) = Memory(md).add(lines(fact(OLD)), "app", wait=True)["outcomes"]
    assert out["outcome"] == "added"
    assert foreign.exists() and staging.read(foreign)[0].project == "other"
    assert not damaged.exists()  # a damaged file is discarded into deadletter/, kept
    kept = Path(project_home, "deadletter", "app", "00000000000000000001-dead.damaged.json")
    assert orjson.loads(kept.read_bytes())["content"] == '{"id": "trunc'
    assert Memory(md).status("app")["totals"]["discarded"] == 1
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(1,)]


def test_a_file_stays_until_every_candidate_in_it_is_decided(memoryd, judge, project_home):
    """One add, one staging file: it goes only when its last candidate is terminal."""
    md = memoryd(memory_adjudicator=judge({"server room": {"how": "crash"}}), memory_max_attempts=3)
    Memory(md).add(lines(fact(OLD)), "app", wait=True)
    added = Memory(md).add(lines(fact(OTHER), fact(NEW)), "app")
    folder = staging.staging_dir(project_home, "app")
    (path,) = list(staging.staged_files(project_home, "app"))
    md.run(drain=True)
    states = dict(query(project_home, "SELECT id, state FROM memory_candidates"))
    assert [states[i] for i in added["candidates"]] == ["consumed", "deadletter"]
    assert not path.exists() and not folder.exists(), "the emptied directory goes too"


def test_a_failing_apply_is_that_candidates_alone(memoryd, judge, project_home) -> None:
    """The adjudicator answers duplicate, but another writer archives the target before
    the apply: that candidate's savepoint is undone and it is parked (uncharged) and
    decided again; the other candidate of the same run commits."""
    db = str(project_home / "authority.db")
    rules = {"server room": {"how": "archive_first", "verdict": "duplicate", "db": db}}
    md = memoryd(memory_adjudicator=judge(rules))
    (old,) = Memory(md).add(lines(fact(OLD)), "app", wait=True)["outcomes"]
    stale, other = Memory(md).add(lines(fact(NEW), fact(OTHER)), "app", wait=True)["outcomes"]
    assert other["outcome"] == "added"
    assert stale["outcome"] == "added"  # decided again: its target was no longer active
    logged = query(
        project_home,
        "SELECT run_id, outcome, reason FROM memory_outcomes WHERE candidate_id = ? ORDER BY id",
        (stale["id"],),
    )
    assert [r[1] for r in logged] == ["parked", "added"]
    assert "no longer active" in logged[0][2]
    first_run = query(project_home, "SELECT outcome FROM memory_outcomes WHERE run_id = ?",
                      (logged[0][0],))  # fmt: skip
    assert sorted(r[0] for r in first_run) == ["added", "parked"]
    assert Memory(md).show(old["record_id"])["status"] == "archived"
