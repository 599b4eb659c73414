"""Issue 4, must show 5: the randomized crash drill passes 50 cycles."""

from __future__ import annotations

import pytest

from memoryd.drill import NOOPS_PER_CYCLE, SLEEPS_PER_CYCLE
from tests.conftest import run_cli


@pytest.mark.slow
def test_drill_fifty_cycles_passes(tmp_path, capsys):
    res = run_cli(
        "drill", "--cycles", "50", "--seed", "2026", "--json",
        home=tmp_path / "drill-home", timeout=1200,
    )  # fmt: skip
    report = res.json()
    assert res.code == 0 and report["ok"], report["violations"]
    assert report["cycles"] == 50 and not report["violations"]
    killed = sum(
        n
        for kind, n in report["kills"].items()
        if kind not in ("not_reached", "finished_before_kill")
    )
    assert killed >= 25, report["kills"]  # most cycles really killed something mid-work
    # one effect per noop and sleep job, none twice
    assert report["effects"] == 50 * (NOOPS_PER_CYCLE + SLEEPS_PER_CYCLE)
    with capsys.disabled():
        print(f"\ndrill: {report['kills']} in {report['seconds']}s")


def test_drill_reports_a_violation_and_exits_1(tmp_path):
    """The drill can fail: a home whose index was tampered with is caught by rebuild --verify."""
    home = tmp_path / "home"
    first = run_cli("drill", "--cycles", "1", "--seed", "1", "--json", home=home)
    assert first.code == 0 and first.json()["ok"]
    import apsw

    conn = apsw.Connection(str(home / "authority.db"))
    pid = conn.execute("SELECT id FROM projects").fetchone()[0]
    conn.execute(f"INSERT INTO fts_{pid} (rowid, path, body) VALUES (999999, 'x', 'tampered')")
    conn.close()
    second = run_cli("drill", "--cycles", "1", "--seed", "2", "--json", home=home)
    assert second.code == 1
    report = second.json()
    assert not report["ok"] and any("rebuild --verify" in v for v in report["violations"])
