"""``memory_terms``, the shortlist's (term, record) index: kept in each candidate's
commit, equal to what memory_fts holds for text and triggers, covered by
``rebuild --verify``, refilled by ``rebuild`` and by migration 9 on an older home."""

from __future__ import annotations

from pathlib import Path

import apsw

from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from tests.conftest import db_path, downgrade_sql, query
from tests.memory.conftest import lines

TEXTS = [
    "Run the migrations before starting the billing workers",
    "Billing workers read the ledger through the replica",
    "Never retry a payment capture without its idempotency key",
]


def _consolidate(md: Memoryd) -> list[str]:
    cands = [{"kind": "lesson", "text": t, "triggers": ["billing"]} for t in TEXTS]
    outs = Memory(md).add(lines(*cands), "app", wait=True)["outcomes"]
    return [o["record_id"] for o in outs]


def _terms(home: Path, record_id: str) -> set[str]:
    rows = query(
        home,
        "SELECT t.term FROM memory_terms t JOIN memory_records r ON r.n = t.n WHERE r.id = ?",
        (record_id,),
    )
    return {r[0] for r in rows}


def test_each_record_commits_its_terms_and_verify_compares_them(memoryd, project_home) -> None:
    md = memoryd()
    ids = _consolidate(md)
    assert {"ledger", "replica", "bill", "worker"} <= _terms(project_home, ids[1])
    assert Home(md).rebuild(verify=True)["equal"]
    conn = apsw.Connection(str(db_path(project_home)))
    conn.execute("DELETE FROM memory_terms WHERE term = 'ledger'")
    conn.close()
    verdict = Home(md).rebuild(verify=True)
    assert not verdict["equal"] and any("memory/terms" in m for m in verdict["mismatches"])
    Home(md).rebuild()
    assert "ledger" in _terms(project_home, ids[1]) and Home(md).rebuild(verify=True)["equal"]


def test_a_shortlist_finds_records_through_the_terms(memoryd) -> None:
    md = memoryd()
    _consolidate(md)
    again = {"kind": "lesson", "text": "Billing workers READ the ledger through the replica!"}
    (out,) = Memory(md).add(lines(again), "app", wait=True)["outcomes"]
    assert out["outcome"] == "duplicate"


def test_migration_9_fills_the_terms_of_existing_records(memoryd, project_home) -> None:
    md = memoryd()
    _consolidate(md)
    md.close()
    conn = apsw.Connection(str(db_path(project_home)))
    conn.execute(downgrade_sql(8))
    conn.close()
    md = memoryd()  # opening the home migrates it
    assert Home(md).rebuild(verify=True)["equal"]
    assert query(project_home, "SELECT count(DISTINCT n) FROM memory_terms") == [(len(TEXTS),)]
