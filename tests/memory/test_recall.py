"""Memory records as a search candidate source (wired into search by the integrator)."""

from __future__ import annotations

from memoryd.memory.recall import find_records
from tests.memory.conftest import lines

OLD = "Deploys of the billing service go to the blue cluster in region west"
NEW = "Deploys of the billing service go to the green cluster in region west"


def test_active_records_by_default_superseded_when_asked(memoryd, judge) -> None:
    md = memoryd(memory_adjudicator=judge({"green": {"verdict": "supersedes"}}))
    md.memory_add(lines({"kind": "decision", "text": OLD}), "app", wait=True)
    (new,) = md.memory_add(lines({"kind": "decision", "text": NEW}), "app", wait=True)["outcomes"]
    md.memory_add(lines({"kind": "fact", "text": "Unrelated words about tea"}), "app", wait=True)
    found = find_records(md.reader, "app", ["billing", "cluster"], 5)
    assert [(r["id"], r["status"], r["source"]) for r in found] == [
        (new["record_id"], "active", "memory")
    ]
    assert found[0]["kind"] == "decision" and found[0]["text"] == NEW and found[0]["score"] > 0
    both = find_records(md.reader, "app", ["blue"], 5, statuses=("active", "superseded"))
    assert [r["status"] for r in both] == ["superseded"]
    assert find_records(md.reader, "app", ['quote"s', "nothing"], 5) == []
    assert find_records(md.reader, "app", [], 5) == []
