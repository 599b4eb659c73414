"""Memory record SQL against a real authority: what forgetting leaves in its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.storage import open_authority, records
from memoryd.storage.maintenance import checkpoint_truncate
from tests.conftest import holding, marker


@pytest.fixture
def config(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    return load_config(home, {"write_retry_seconds": 1.0})


def record(n: int, text: str, pid: int) -> dict:
    return {
        "id": f"m-{n:016x}", "project_id": pid, "scope": "app", "scope_key": "s0",
        "kind": "fact", "text": text, "norm_hash": str(n), "nterms": 2, "triggers": [],
        "refs": [], "sources": [], "terms": text.split(),
    }  # fmt: skip


def test_forget_leaves_no_copy_of_a_row_an_earlier_update_moved(home: Path, config) -> None:
    """Reinforcements grow a record's row: each moves it within its page (between its
    neighbours), and the bytes it left stay in the page's free space unless every write
    zeroes what it frees (a forget's own secure deletion comes too late for them)."""
    word, rid = marker("moved"), record(100, "", 0)["id"]
    filler = "a neighbouring record of some length " * 4
    with open_authority(home, config) as db:
        pid = db.write(
            lambda tx: tx.execute(
                "INSERT INTO projects (name, created_at) VALUES ('app', 0) RETURNING id"
            ).fetchone()[0]
        )

        def insert(tx, first: int, texts: list[str]) -> None:
            for n, text in enumerate(texts, first):
                records.insert_record_in(tx, record(n, text, pid), 0.0)

        db.write(lambda tx: insert(tx, 1, [f"{filler} {i}" for i in range(3)]))
        db.write(lambda tx: insert(tx, 100, [f"the secret is {word}"]))
        db.write(lambda tx: insert(tx, 200, [f"{filler} {i}" for i in range(3)]))
        for k in range(5):
            source = f"source-{k}-" + "s" * 20
            db.write(lambda tx, s=source: records.reinforce_in(tx, rid, s, 0))
        assert holding(home, word), "precondition: the text is on disk"

        assert db.write(lambda tx: records.forget_in(tx, [rid])) == 1
        assert checkpoint_truncate(db).ok
        assert db.query("SELECT count(*) FROM memory_records") == [(6,)]
    assert holding(home, word) == []
