"""Memory records answer `memoryd search` beside the code, through the coverage rule."""

from __future__ import annotations

from pathlib import Path

import pytest

FACT = '{"kind": "fact", "text": "The staging database is rebuilt every night at two"}\n'


@pytest.mark.slow
def test_a_record_answers_search_and_an_unrelated_question_still_abstains(
    cli, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert cli("ingest", str(src), "--project", "app", "--wait").code == 0
    facts = tmp_path / "facts.jsonl"
    facts.write_text(FACT)
    assert cli("memory", "add", str(facts), "--project", "app", "--wait").code == 0

    res = cli("search", "when is the staging database rebuilt", "--project", "app", "--json")
    [item] = res.json()["items"]
    assert res.json()["status"] == "ok" and item["source"] == "memory"
    assert item["kind"] == "fact" and item["status"] == "active" and item["id"].startswith("m-")
    human = cli("search", "when is the staging database rebuilt", "--project", "app").stdout
    assert f"memory {item['id']} (fact, active)" in human

    recalled = cli("recall", "when is the staging database rebuilt", "--project", "app", "--json")
    assert [i["source"] for i in recalled.json()["items"]] == ["memory"]

    # one shared word is not half of the question: the gate still abstains
    res = cli("search", "which staging kubernetes namespace hosts billing", "--project", "app")
    assert res.code == 0 and res.stdout.startswith("abstained")
