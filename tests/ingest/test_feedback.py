"""Issue 18 items 7 and 9: the user is told what is happening with an ingest."""

from __future__ import annotations

import pytest

from tests.conftest import query


@pytest.mark.slow
def test_queued_ingest_without_supervisor_is_explained_end_to_end(cli, home, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ledger.py").write_text("def reconcile_quarterly_ledger():\n    return 0\n")

    first = cli("ingest", str(repo))
    assert first.code == 0, first.stderr
    assert "queued: ingest run 1" in first.stdout
    assert "no supervisor is running" in first.stdout and "memoryd run --drain" in first.stdout
    second = cli("ingest", str(repo), "--json")
    assert second.json()["joined"] and second.json()["run"] == 1
    assert query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.scan'") == [(1,)]
    assert "already queued: ingest run 1" in cli("ingest", str(repo)).stdout

    st = cli("status", "--json").json()
    assert st["supervisor"] is None and st["waiting_without_supervisor"] == 1
    assert "no supervisor is running" in " ".join(cli("status").stdout.split())

    for q in ("reconcile quarterly ledger", "zebra"):
        res = cli("search", q, "--project", "repo")
        assert res.code == 1
        assert "first ingest of project 'repo' (run 1) has not finished" in res.message
        assert "memoryd run --drain" in res.message
    assert cli("search", "zebra", "--json").json()["error"] == "INGEST_PENDING"

    assert cli("run", "--drain", "--workers", "1").code == 0
    assert cli("status", "--json").json()["waiting_without_supervisor"] == 0
    res = cli("search", "zebra", "--project", "repo", "--json")
    assert res.code == 0 and res.json()["status"] == "abstained"
    res = cli("search", "reconcile quarterly ledger", "--project", "repo", "--json")
    assert res.json()["items"][0]["path"] == "ledger.py"
    # a later plain ingest queues a new scan: the first one ran
    assert "queued: ingest run 2" in cli("ingest", str(repo)).stdout
