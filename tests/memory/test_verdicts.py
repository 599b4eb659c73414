"""Each verdict through an external adjudicator (a script the test writes), the default
adjudicator, and what each does to the records (never deleting one)."""

from __future__ import annotations

from pathlib import Path

from memoryd.consolidation.mirror import mirror_dir
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from tests.conftest import query
from tests.memory.conftest import lines

BLUE = "Deploys of the billing service go to the blue cluster in region west"
GREEN = "Deploys of the billing service go to the green cluster in region west"
CACHE = "Billing service deploys warm the cache of the blue cluster in region west"


def fact(text: str, **extra) -> dict:
    return {"kind": "fact", "text": text, **extra}


def records(home: Path) -> dict[str, tuple]:
    rows = query(home, "SELECT id, status, pointer, count, text FROM memory_records")
    return {r[0]: r[1:] for r in rows}


def test_duplicate_reinforces_the_target(memoryd, judge, project_home) -> None:
    md = memoryd(memory_adjudicator=judge({"again": {"verdict": "duplicate"}}))
    first = Memory(md).add(lines(fact(BLUE, source="s1")), "app", wait=True)["outcomes"][0]
    again = Memory(md).add(lines(fact(BLUE + " again", source="s2")), "app", wait=True)
    (out,) = again["outcomes"]
    assert (out["outcome"], out["record_id"]) == ("duplicate", first["record_id"])
    rec = Memory(md).show(first["record_id"])
    assert (rec["count"], rec["sources"], rec["status"]) == (2, ["s1", "s2"], "active")
    assert [h["action"] for h in rec["history"]] == ["added", "reinforced"]
    assert len(records(project_home)) == 1


def test_supersedes_flips_the_old_record_and_points_at_the_new(memoryd, judge, project_home):
    md = memoryd(memory_adjudicator=judge({"green": {"verdict": "supersedes"}}))
    old = Memory(md).add(lines(fact(BLUE)), "app", wait=True)["outcomes"][0]["record_id"]
    (out,) = Memory(md).add(lines(fact(GREEN)), "app", wait=True)["outcomes"]
    assert out["outcome"] == "superseded"
    recs = records(project_home)
    assert recs[old][:2] == ("superseded", out["record_id"])
    assert recs[out["record_id"]][:2] == ("active", None)
    assert [r["id"] for r in Memory(md).listing("app", status="active")] == [out["record_id"]]


def test_merge_creates_a_replacement_and_points_the_old_ones_at_it(memoryd, judge, project_home):
    rules = {"green": {"verdict": "distinct"}, "warm": {"verdict": "merge"}}
    md = memoryd(memory_adjudicator=judge(rules))
    first = Memory(md).add(lines(fact(BLUE)), "app", wait=True)["outcomes"][0]["record_id"]
    second = Memory(md).add(lines(fact(GREEN)), "app", wait=True)["outcomes"][0]
    assert second["outcome"] == "added"  # distinct: its own record
    (merged,) = Memory(md).add(lines(fact(CACHE, refs=["src/a.py"])), "app", wait=True)["outcomes"]
    assert merged["outcome"] == "merged"
    new = merged["record_id"]
    recs = records(project_home)
    assert recs[first][:2] == ("merged", new) and recs[second["record_id"]][:2] == ("merged", new)
    status, pointer, count, text = recs[new]
    assert (status, pointer, count) == ("active", None, 3)
    assert BLUE in text and GREEN in text and CACHE in text
    assert Memory(md).show(new)["refs"] == ["src/a.py"]
    assert len(recs) == 3  # nothing deleted


def test_distinct_adds_beside_the_shortlisted_record(memoryd, judge, project_home) -> None:
    md = memoryd(memory_adjudicator=judge({}))  # answers distinct to everything
    Memory(md).add(lines(fact(BLUE), fact(GREEN)), "app", wait=True)
    assert sorted(r[0] for r in records(project_home).values()) == ["active", "active"]


def test_default_adjudicator_near_duplicates_and_lessons(memoryd, project_home) -> None:
    md = memoryd()
    # case, a stopword, inflection and punctuation: the same content stems
    near = BLUE.upper().replace("REGION", "THE REGIONS") + "!"
    lesson = {"kind": "lesson", "text": GREEN}
    outs = Memory(md).add(lines(fact(BLUE), fact(near), lesson), "app", wait=True)["outcomes"]
    assert [o["outcome"] for o in outs] == ["added", "duplicate", "added"]
    assert outs[1]["record_id"] == outs[0]["record_id"]


def test_an_empty_shortlist_never_calls_the_adjudicator(memoryd, judge, tmp_path) -> None:
    md = memoryd(memory_adjudicator=judge({"": {"how": "crash"}}))  # would fail every call
    outs = Memory(md).add(
        lines(fact(BLUE), fact("Unrelated words entirely here")), "app", wait=True
    )
    assert [o["outcome"] for o in outs["outcomes"]] == ["added", "added"]


def test_mirror_follows_the_records_and_rebuild_verify_covers_it(memoryd, project_home) -> None:
    md = memoryd()
    (out,) = Memory(md).add(lines(fact(BLUE)), "app", wait=True)["outcomes"]
    page = mirror_dir(project_home, "app") / f"{out['record_id']}.md"
    assert BLUE in page.read_text() and "- status: active" in page.read_text()
    assert Home(md).rebuild(verify=True)["equal"]
    page.write_text("edited by hand\n")
    verdict = Home(md).rebuild(verify=True)
    assert not verdict["equal"] and any("memory-mirror" in m for m in verdict["mismatches"])
    Home(md).rebuild()
    assert BLUE in page.read_text() and Home(md).rebuild(verify=True)["equal"]
