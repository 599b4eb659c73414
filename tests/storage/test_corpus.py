"""The same tree under a second project name ingests fully (each
project's bodies in blocks of its own)."""

from __future__ import annotations

import orjson
import pytest

from tests.conftest import query
from tests.ingest.test_store import _repo


def _summary(res) -> dict:
    assert res.code == 0, res.stderr
    return orjson.loads(res.stdout.splitlines()[-1])


@pytest.mark.slow
def test_same_tree_under_two_project_names(cli, home, tmp_path):
    (tmp_path / "src").mkdir()
    src = _repo(tmp_path / "src", 41)
    (src / "ledger.py").write_text(
        "def reconcile_ledger_balances(ledger):\n"
        '    """Reconcile the quarterly ledger balances against the bank statement."""\n'
        "    return sum(entry.amount for entry in ledger)\n"
    )
    for name in ("a", "b"):
        summary = _summary(cli("ingest", str(src), "--project", name, "--wait", "--json"))
        assert summary["complete"] and summary["dead_jobs"] == 0
        assert summary["files_ingested"] == 42
    per_project = query(home, "SELECT project_id, sum(files) FROM body_blocks GROUP BY 1")
    assert [n for _, n in per_project] == [42, 42]
    for name in ("a", "b"):
        res = cli("search", "reconcile quarterly ledger balances", "--project", name, "--json")
        assert res.code == 0, res.stderr
        assert res.json()["items"][0]["path"] == "ledger.py"
    verify = cli("rebuild", "--verify", "--json")
    assert verify.code == 0 and verify.json()["equal"], verify.stdout
