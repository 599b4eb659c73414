"""``memoryd recall``: the recall horizons, the gate, coarse access records."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from memoryd.storage.archive import ArchiveStore, parse_locator
from tests.agent.conftest import PROJECT, write_transcript
from tests.conftest import run_cli

DAY = 86400
QUESTION = "which retry backoff did we choose for the uploader"


def archived(home: Path, tmp_path: Path, age_days: float, session: str) -> str:
    path = write_transcript(tmp_path / f"{session}.jsonl", time.time() - age_days * DAY)
    res = run_cli("archive", "add", str(path), "--project", PROJECT, "--session", session,
                  "--new-project", "--json", home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    return res.json()["locators"][0]


def recall(home: Path) -> dict:
    res = run_cli("recall", QUESTION, "--project", PROJECT, "--json", home=home)
    assert res.code == 0, res.stderr
    return res.json()


def secondary(home: Path) -> ArchiveStore:
    return ArchiveStore.open_secondary(home / "archive", home / "test-secondary")


def test_evidence_past_its_horizon_is_not_recalled_and_nothing_is_injected(home, tmp_path):
    old = archived(home, tmp_path, 40, "old")  # conversation: 30-day horizon
    found = run_cli("archive", "search", QUESTION, "--project", PROJECT, "--json", home=home)
    assert [i["locator"] for i in found.json()["items"]] == [old]  # the archive still has it
    r = recall(home)
    assert r["status"] == "abstained" and r["items"] == [] and r["injected"] == 0
    assert "recall horizons" in r["gap"] and "does not show the fact does not exist" in r["gap"]


def test_a_horizon_is_configuration(home, tmp_path):
    archived(home, tmp_path, 40, "old")
    res = run_cli("recall", QUESTION, "--project", PROJECT, "--json", home=home,
                  env={"MEMORYD_RETENTION_CONVERSATION_RECALL_DAYS": "60"})  # fmt: skip
    assert res.json()["status"] == "ok"


def test_recent_evidence_is_recalled_with_one_access_record_per_bucket(home, tmp_path):
    loc = archived(home, tmp_path, 1, "recent")
    store = secondary(home)
    deadline = store.ledgers.version_info(loc).expires_at
    store.close()
    first, second = recall(home), recall(home)
    assert first["status"] == "ok" and first["injected"] == 1
    item = first["items"][0]
    assert item["source"] == "archive" and item["locator"] == loc and "jitter" in item["excerpt"]
    assert first["access_records"] == {"recorded": 1}
    assert second["access_records"] == {"recorded": 0}  # same document, same bucket
    store = secondary(home)
    try:
        assert len(store.access.access_buckets(parse_locator(loc)[0])) == 1
        assert store.ledgers.version_info(loc).expires_at == deadline  # recall never extends it
    finally:
        store.close()


def test_a_strong_archive_turn_comes_before_weaker_chunks_and_min_score_narrows(home, tmp_path):
    """Both sources on one score scale: the archive turn holding the
    whole question comes before project chunks holding part of it (no "choose")."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        (src / f"notes{i}.md").write_text(
            f"# Uploader notes {i}\n\nThe uploader has a retry loop with a backoff of {i} s.\n"
        )
    for i in range(25):  # the rest of the code base: the notes' words stay specific
        (src / f"mod{i}.py").write_text(f"def helper_{i}(value):\n    return value + {i}\n")
    assert run_cli("ingest", str(src), "--project", PROJECT, "--wait", home=home).code == 0
    loc = archived(home, tmp_path, 1, "recent")

    r = recall(home)
    items = r["items"]
    assert {i["source"] for i in items} == {"project", "archive"}
    scores = [i["score"] for i in items]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores
    assert items[0]["source"] == "archive" and items[0]["locator"] == loc

    floor = (scores[0] + max(i["score"] for i in items if i["source"] == "project")) / 2
    res = run_cli("recall", QUESTION, "--project", PROJECT, "--json",
                  "--min-score", f"{floor:.4f}", home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    assert [i["locator"] for i in res.json()["items"]] == [loc]


def said(path: Path, age_days: float, turns: list[tuple[str, str]]) -> Path:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age_days * DAY))
    path.write_bytes(b"".join(
        orjson.dumps({"role": role, "content": text, "timestamp": stamp}) + b"\n"
        for role, text in turns
    ))  # fmt: skip
    return path


def old_strong_and_new_weaker(home: Path, tmp_path: Path) -> dict[str, str]:
    """A 60-day-old session answering the question fully and a 1-day-old one holding
    its words more weakly: their locators by name."""
    strong = said(tmp_path / "old.jsonl", 60, [
        ("user", "Which retry backoff did we choose for the uploader?"),
        ("assistant", "We chose exponential retry backoff with jitter for the uploader: "
                      "the uploader retry backoff doubles up to 30 seconds."),
    ])  # fmt: skip
    weaker = said(tmp_path / "new.jsonl", 1, [
        ("user", "The uploader still uses the retry backoff we chose, capped lower now."),
    ])  # fmt: skip
    locs = {}
    for name, path in (("old", strong), ("new", weaker)):
        res = run_cli("archive", "add", str(path), "--project", PROJECT, "--session", name,
                      "--new-project", "--json", home=home)  # fmt: skip
        assert res.code == 0, res.stderr
        locs[name] = res.json()["locators"][0]
    return locs


def recalled_archive(home: Path) -> list[str]:
    res = run_cli("recall", QUESTION, "--project", PROJECT, "--limit", "1", "--json", home=home)
    assert res.code == 0, res.stderr
    r = res.json()
    assert r["status"] == "ok", r
    return [i["locator"] for i in r["items"] if i["source"] == "archive"]


def test_the_horizon_filters_inside_the_search_so_recent_evidence_keeps_its_slot(home, tmp_path):
    """With ``--limit 1`` a 60-day-old strong match must not take the
    archive's only slot (then be dropped by the horizon) while a matching 1-day-old
    session exists; the old one gets no retrieval lease and no access record."""
    locs = old_strong_and_new_weaker(home, tmp_path)
    assert recalled_archive(home) == [locs["new"]]
    store = secondary(home)
    try:
        assert store.protections.protection(locs["new"]) == "retrieval"
        assert store.protections.protection(locs["old"]) is None, "filtered out: no retrieval lease"
        assert store.access.access_buckets(parse_locator(locs["old"])[0]) == []
        assert len(store.access.access_buckets(parse_locator(locs["new"])[0])) == 1
    finally:
        store.close()
    ranked = run_cli("archive", "search", QUESTION, "--project", PROJECT, "--limit", "1",
                     "--json", home=home).json()  # fmt: skip
    assert [i["locator"] for i in ranked["items"]] == [locs["old"]], "the old one is stronger"


@pytest.mark.slow
def test_the_horizon_filters_inside_the_search_through_the_control_socket(
    home, tmp_path, background
):
    """The same recall answered by a running supervisor's control socket."""
    locs = old_strong_and_new_weaker(home, tmp_path)
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)
    assert recalled_archive(home) == [locs["new"]]
