"""``memoryd recall``: the recall horizons, the gate, coarse access records."""

from __future__ import annotations

import time
from pathlib import Path

from memoryd.storage.archive import ArchiveStore, parse_locator
from tests.agent.conftest import PROJECT, write_transcript
from tests.conftest import run_cli

DAY = 86400
QUESTION = "which retry backoff did we choose for the uploader"


def archived(home: Path, tmp_path: Path, age_days: float, session: str) -> str:
    path = write_transcript(tmp_path / f"{session}.jsonl", time.time() - age_days * DAY)
    res = run_cli("archive", "add", str(path), "--project", PROJECT, "--session", session,
                  "--json", home=home)  # fmt: skip
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
    deadline = store.version_info(loc).expires_at
    store.close()
    first, second = recall(home), recall(home)
    assert first["status"] == "ok" and first["injected"] == 1
    item = first["items"][0]
    assert item["source"] == "archive" and item["locator"] == loc and "jitter" in item["excerpt"]
    assert first["access_records"] == {"recorded": 1}
    assert second["access_records"] == {"recorded": 0}  # same document, same bucket
    store = secondary(home)
    try:
        assert len(store.access_buckets(parse_locator(loc)[0])) == 1
        assert store.version_info(loc).expires_at == deadline  # recall never extends it
    finally:
        store.close()
