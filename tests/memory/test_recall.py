"""Memory records as a source of search: matching words, and judged by the project gate."""

from __future__ import annotations

from memoryd.consolidation.recall import find_records
from memoryd.operations.memory import Memory
from memoryd.operations.search import Search
from tests.memory.conftest import lines

OLD = "Deploys of the billing service go to the blue cluster in region west"
NEW = "Deploys of the billing service go to the green cluster in region west"


def test_active_records_by_default_superseded_when_asked(memoryd, judge) -> None:
    md = memoryd(memory_adjudicator=judge({"green": {"verdict": "supersedes"}}))
    Memory(md).add(lines({"kind": "decision", "text": OLD}), "app", wait=True)
    (new,) = Memory(md).add(lines({"kind": "decision", "text": NEW}), "app", wait=True)["outcomes"]
    Memory(md).add(lines({"kind": "fact", "text": "Unrelated words about tea"}), "app", wait=True)
    found = find_records(md.reader, "app", ["billing", "cluster"], 5)
    assert [(r["id"], r["status"], r["source"]) for r in found] == [
        (new["record_id"], "active", "memory")
    ]
    assert found[0]["kind"] == "decision" and found[0]["text"] == NEW and found[0]["score"] > 0
    both = find_records(md.reader, "app", ["blue"], 5, statuses=("active", "superseded"))
    assert [r["status"] for r in both] == ["superseded"]
    assert find_records(md.reader, "app", ['quote"s', "nothing"], 5) == []
    assert find_records(md.reader, "app", [], 5) == []


def test_records_are_a_source_of_search_through_the_project_gate(memoryd, judge) -> None:
    md = memoryd(memory_adjudicator=judge({}))
    facts = [
        {"kind": "fact", "text": "The staging database is rebuilt every night at two"},
        {"kind": "fact", "text": "Ana configured the backups of the staging database"},
        {"kind": "fact", "text": "Every Friday, Bill Paul runs the namespace cleanup"},
    ]
    Memory(md).add(lines(*facts), "app", wait=True)
    res = Search(md).search("when is the staging database rebuilt", "app", limit=5)
    assert res["status"] == "ok" and res["items"][0]["source"] == "memory"
    assert res["items"][0]["excerpt"] == facts[0]["text"]
    # a person the records never name is not evidenced by a record about someone else,
    # though it holds every other asked term (the gate's named-entity rule)
    res = Search(md).search("what did Bruno configure on the staging database", "app", limit=5)
    assert res["status"] == "abstained" and res["gap"].startswith("insufficient evidence")
    res = Search(md).search("what did Ana configure on the staging database", "app", limit=5)
    assert [i["excerpt"] for i in res["items"]] == [facts[1]["text"]]
    # a name is not the other sense of a word asked in lowercase
    res = Search(md).search("which kubernetes namespace runs the billing cron", "app", limit=5)
    assert res["status"] == "abstained"
    res = Search(md).search("which kubernetes namespace does Bill run", "app", limit=5)
    assert [i["excerpt"] for i in res["items"]] == [facts[2]["text"]]
