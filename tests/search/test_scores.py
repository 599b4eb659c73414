"""Through the real CLI: memory records and project chunks answer
`search` on one 0..1 score scale, in its order, and `--min-score` narrows both."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

QUESTION = "when is the staging database rebuilt"
WHOLE = "The staging database is rebuilt every night at two by the cron job"
PART = "The staging database backups live in the cold bucket"


@pytest.mark.slow
def test_records_and_chunks_share_one_score_scale_and_min_score(cli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "deploy.md").write_text("# Deploy\n\nThe staging database is rebuilt every night.\n")
    # every asked word in two of the three files: equally specific, so a record holding
    # two of them is admitted with part of the question
    (src / "notes.md").write_text(
        "The staging database keeps seven days of backups.\nRebuilt images are pushed.\n"
    )
    (src / "cache.py").write_text("def evict(cache, size):\n    cache.clear()\n")
    assert cli("ingest", str(src), "--project", "app", "--wait").code == 0
    facts = tmp_path / "facts.jsonl"
    facts.write_bytes(
        b"".join(orjson.dumps({"kind": "fact", "text": t}) + b"\n" for t in (WHOLE, PART))
    )
    assert cli("memory", "add", str(facts), "--project", "app", "--wait").code == 0

    res = cli("search", QUESTION, "--project", "app", "--json")
    assert res.code == 0, res.stderr
    items = res.json()["items"]
    records = {i["text"]: i["score"] for i in items if i.get("source") == "memory"}
    assert set(records) == {WHOLE, PART} and any("path" in i for i in items)
    scores = [i["score"] for i in items]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores  # one order across sources
    assert records[WHOLE] > records[PART]  # it holds the whole question, PART a part

    floor = (records[WHOLE] + records[PART]) / 2
    res = cli("search", QUESTION, "--project", "app", "--json", "--min-score", f"{floor:.4f}")
    assert res.code == 0, res.stderr
    narrowed = res.json()["items"]
    assert all(i["score"] >= floor for i in narrowed)
    assert [i["text"] for i in narrowed if i.get("source") == "memory"] == [WHOLE]
    assert [i["score"] for i in narrowed] == [s for s in scores if s >= floor]
