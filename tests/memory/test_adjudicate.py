"""The default adjudicator (no command, no model) through a real supervisor drain: a
corrected fact or a changed decision supersedes, a paraphrase reinforces, a pair it
cannot tell apart stays as two records marked ``conflict`` that search shows, a
distinct pair stays two records; a dead letter says what to do about it."""

from __future__ import annotations

from pathlib import Path

from memoryd.operations.memory import Memory
from memoryd.operations.recall import recall
from memoryd.operations.search import Search
from tests.conftest import run_cli
from tests.memory.conftest import lines

OLD_PORT = "The staging Redis listens on port 6380"
NEW_PORT = "The staging Redis server listens on port 6379"
BLUE = "Deploys of the billing service go to the blue cluster in region west"
GREEN = "Deploys of the billing service go to the green cluster in region west"


def add(md, kind: str, text: str) -> dict:
    (out,) = Memory(md).add(lines({"kind": kind, "text": text}), "app", wait=True)["outcomes"]
    return out


def memory_items(result: dict) -> list[dict]:
    return [i for i in result.get("items", []) if i.get("source") == "memory"]


def test_a_corrected_fact_supersedes_and_search_answers_the_new_value(memoryd) -> None:
    md = memoryd()
    old = add(md, "fact", OLD_PORT)
    new = add(md, "fact", NEW_PORT)
    assert (new["state"], new["outcome"]) == ("consumed", "superseded")
    found = memory_items(Search(md).search("which port does the staging Redis listen on?", "app"))
    assert [i["text"] for i in found] == [NEW_PORT]
    shown = Memory(md).show(old["record_id"])
    assert (shown["status"], shown["pointer"]) == ("superseded", new["record_id"])
    assert shown["text"] == OLD_PORT  # the older record stays readable
    assert shown["history"][-1]["action"] == "superseded"
    assert shown["history"][-1]["detail"] == new["record_id"]


def test_a_changed_decision_supersedes_the_earlier_one(memoryd) -> None:
    md = memoryd()
    old = add(md, "decision", "We chose Postgres for the job queue")
    new = add(md, "decision", "We chose Redis for the job queue instead")
    assert new["outcome"] == "superseded"
    active = Memory(md).listing("app", status="active")
    assert [r["text"] for r in active] == ["We chose Redis for the job queue instead"]
    assert Memory(md).show(old["record_id"])["pointer"] == new["record_id"]


def test_a_changed_word_value_supersedes_and_another_subject_stays(memoryd) -> None:
    """A value written as a word ("quiet", "loud") is replaced like a number; the same
    value said of another subject is another record."""
    md = memoryd()
    add(md, "preference", "Set the verbosity of the release linter to quiet")
    new = add(md, "preference", "set the verbosity of the release linter to loud")
    assert new["outcome"] == "superseded"
    other = add(md, "preference", "Set the verbosity of the release packager to loud")
    assert other["outcome"] in ("added", "conflict")
    active = [r["text"] for r in Memory(md).listing("app", status="active")]
    assert "set the verbosity of the release linter to loud" in active
    assert "Set the verbosity of the release packager to loud" in active


def test_a_negated_setting_supersedes(memoryd) -> None:
    md = memoryd()
    add(md, "preference", "Response compression is enabled on the API gateway")
    new = add(md, "preference", "Response compression is disabled on the API gateway")
    assert new["outcome"] == "superseded"


def test_an_undecidable_pair_is_kept_as_two_records_marked_conflict(memoryd, project_home):
    md = memoryd()
    blue = add(md, "fact", BLUE)["record_id"]
    green = add(md, "fact", GREEN)
    assert (green["state"], green["outcome"]) == ("consumed", "conflict")
    assert Memory(md).deadletters("app") == []
    green = green["record_id"]
    statuses = {r["id"]: (r["status"], r["conflicts_with"]) for r in Memory(md).listing("app")}
    assert statuses == {blue: ("active", [green]), green: ("active", [blue])}
    question = "which cluster do billing service deploys go to?"
    for answer in (Search(md).search(question, "app"), recall(md, question, "app")):
        found = memory_items(answer)
        assert {i["id"]: i["conflicts_with"] for i in found} == {blue: [green], green: [blue]}
    md.close()
    shown = run_cli("search", "which cluster do billing deploys go to?", home=project_home)
    assert shown.code == 0
    assert f"conflict with {green}" in shown.stdout and f"conflict with {blue}" in shown.stdout


def test_a_correction_of_either_side_clears_the_conflict_mark(memoryd) -> None:
    md = memoryd()
    say = "Nightly deploys of the billing service go to the {} cluster at {} UTC"
    blue = add(md, "fact", say.format("blue", "02:00"))["record_id"]
    green = add(md, "fact", say.format("green", "03:00"))
    assert green["outcome"] == "conflict"
    later = add(md, "fact", say.format("green", "04:00"))
    assert later["outcome"] == "superseded"
    assert Memory(md).show(green["record_id"])["pointer"] == later["record_id"]
    assert Memory(md).show(blue)["conflicts_with"] == []
    assert Memory(md).show(later["record_id"])["conflicts_with"] == []


def test_a_paraphrase_reinforces_the_record_and_keeps_its_text(memoryd, project_home) -> None:
    md = memoryd()
    first = "Run bun test with --timeout 20000 or the e2e suites time out"
    again = "On slow machines the e2e suites time out unless bun test runs with a 20000 ms timeout"
    rec = add(md, "lesson", first)["record_id"]
    (out,) = Memory(md).add(
        lines({"kind": "lesson", "text": again, "source": "session-9"}), "app", wait=True
    )["outcomes"]
    assert (out["outcome"], out["record_id"]) == ("duplicate", rec)
    assert [r["id"] for r in Memory(md).listing("app")] == [rec]
    shown = Memory(md).show(rec)
    assert shown["count"] == 2 and shown["text"] == first
    assert shown["history"][-1]["action"] == "reinforced"
    assert shown["history"][-1]["detail"] == f"session-9: {again}"
    more = first.replace("20000", "20000 --bail 3")  # a number only it says: not a repeat
    assert add(md, "lesson", more)["outcome"] == "added"


def test_a_distinct_pair_stays_two_records(memoryd) -> None:
    md = memoryd()
    staging = add(md, "fact", OLD_PORT)
    production = add(md, "fact", "The production Redis listens on port 6380")
    other = add(md, "fact", "The billing-api listens on port 8080")
    again = add(md, "fact", "The auth-api listens on port 8080")
    assert [o["outcome"] for o in (staging, production, other, again)] == ["added"] * 4
    recs = Memory(md).listing("app")
    assert len(recs) == 4
    assert all(r["status"] == "active" and not r["conflicts_with"] for r in recs)


def test_a_dead_letter_says_what_to_do(memoryd, judge, project_home: Path) -> None:
    command = judge({"": {"how": "crash"}})
    md = memoryd(memory_adjudicator=command, memory_max_attempts=1)
    add(md, "fact", OLD_PORT)  # an empty shortlist: no adjudicator call
    out = add(md, "fact", NEW_PORT)
    assert out["state"] == "deadletter"
    (letter,) = Memory(md).deadletters("app")
    assert f"`memoryd memory retry {out['id']}`" in letter["action"]
    assert "memory_adjudicator" in letter["action"] and command in letter["action"]
    md.close()
    env = {"MEMORYD_MEMORY_ADJUDICATOR": command}
    shown = run_cli("memory", "deadletter", "--project", "app", home=project_home, env=env)
    assert shown.code == 0 and f"to do: {letter['action']}" in shown.stdout


def test_a_phrase_standing_where_a_value_stands_supersedes(memoryd) -> None:
    """A value of several words ('cold storage') replaced by another after a word that
    introduces a value is an update, through a real drain."""
    md = memoryd()
    add(md, "fact", "The nightly backup of the ledger database has to be cold storage")
    new = add(md, "fact", "The nightly backup of the ledger database has to be warm standby")
    assert new["outcome"] == "superseded"


def test_a_duration_said_in_parts_is_the_same_value(memoryd) -> None:
    """'90 minutes' and '1h30m' are one quantity: the second statement is no update."""
    md = memoryd()
    add(md, "fact", "The lock timeout of the deploy pipeline is 90 minutes")
    again = add(md, "fact", "The lock timeout of the deploy pipeline is 1h30m")
    assert again["outcome"] not in ("superseded", "conflict"), again
    active = [r["text"] for r in Memory(md).listing("app", status="active")]
    assert len(active) == 1, active
