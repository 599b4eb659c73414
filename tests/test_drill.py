"""The crash drill: it passes on a healthy service, fails on a broken home, and never
touches a home it was not explicitly given."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pytest

from memoryd.faces.drill import SCENARIOS
from memoryd.storage.corpus import rebuild_index
from tests.conftest import run_cli

CI_SCENARIOS = list(SCENARIOS)  # every scenario must pass (a fault found is fixed, not skipped)
CI_ARGS = [arg for name in CI_SCENARIOS for arg in ("--scenario", name)]


#: Two whole blocks: every scenario twice, in two seeded orders (the plan's blocks).
CI_CYCLES = 2 * len(CI_SCENARIOS)
#: The breaks of the scenarios ``test_drill_faults.py`` drives its faults through: on a
#: healthy service they are reached and nothing is reported (the faults' control).
FAULT_BREAKS = ("stale_result", "stale_result_all", "memory_last_run", "long_jobs")


@pytest.mark.slow
def test_drill_every_scenario_twice_passes(tmp_path, capsys):
    res = run_cli(
        "drill", "--cycles", str(CI_CYCLES), "--seed", "2026", "--json", *CI_ARGS,
        "--home", str(tmp_path / "drill-home"), home=None, timeout=1200,
    )  # fmt: skip
    report = res.json()
    assert res.code == 0 and report["ok"], report["violations"]
    assert report["cycles_run"] == CI_CYCLES and not report["violations"]
    for reached in FAULT_BREAKS:  # the faults' control: each break reached, nothing reported
        assert report["kills"].get(reached), report["kills"]
    # a job worker SIGKILLed mid-work: the supervisor replaced it and drained to exit 0
    assert report["kills"].get("worker"), report["kills"]
    killed = sum(
        n
        for kind, n in report["kills"].items()
        if kind not in ("not_reached", "finished_before_kill")
    )
    assert killed >= CI_CYCLES // 2, report["kills"]  # most cycles really broke something mid-work
    # the project ran compact, then one cycle's ingest stored its index
    assert report["layouts"]["compact"] >= 1 and report["layouts"]["indexed"] >= 1
    # one effect per noop and sleep job the drill enqueued, none twice
    assert report["effects"] >= report["expected_effects"] > CI_CYCLES * 500
    with capsys.disabled():
        print(f"\ndrill: {report['kills']} in {report['seconds']}s")


def test_drill_reports_a_violation_and_exits_1(tmp_path):
    """The drill can fail: a home whose index was tampered with is caught by rebuild --verify."""
    home = tmp_path / "home"
    args = ("--cycles", "1", "--json", "--scenario", "random_supervisor", "--home", str(home))
    first = run_cli("drill", "--seed", "1", *args, home=None)
    assert first.code == 0 and first.json()["ok"], first.stdout
    conn = apsw.Connection(str(home / "authority.db"))
    pid = conn.execute("SELECT id FROM projects").fetchone()[0]
    with conn:  # the drill's project is still compact: store its index, as growing would
        conn.execute("UPDATE projects SET compact_limit = 0 WHERE id = ?", (pid,))
        rebuild_index(conn, pid)
    conn.execute(f"INSERT INTO fts_{pid} (rowid, path, body) VALUES (999999, 'x', 'tampered')")
    conn.close()
    second = run_cli("drill", "--seed", "2", *args, home=None)
    assert second.code == 1
    report = second.json()
    assert not report["ok"] and any("rebuild --verify" in v for v in report["violations"])
    assert report["home"] == str(home) and not report["scratch"]


def _snapshot(home: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file and directory under ``home``: bytes, mode, modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(home):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            st = path.lstat()
            data = path.read_bytes() if path.is_file() else b""
            out[str(path.relative_to(home))] = (data, st.st_mode, st.st_mtime_ns)
    return out


@pytest.mark.slow
def test_drill_never_drills_the_users_home(tmp_path):
    """With MEMORYD_HOME exported, the drill runs in a scratch home,
    says where, leaves the user's home byte for byte, and ignores the user's dead job."""
    home = tmp_path / "users-home"
    repo = tmp_path / "src"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 'hello'\n")
    assert run_cli("ingest", str(repo), "--project", "mine", "--wait", home=home).code == 0
    added = run_cli("jobs", "add", "fail", "--max-attempts", "1", "--json", home=home)
    assert added.code == 0, added.stderr
    assert run_cli("run", "--drain", home=home).code == 0
    dead = run_cli("jobs", "list", "--state", "dead", "--json", home=home).json()
    assert len(dead) == 1
    before = _snapshot(home)

    args = ("drill", "--cycles", "1", "--seed", "4", *CI_ARGS)
    res = run_cli(*args, home=home, timeout=600)
    assert res.code == 0, res.stdout + res.stderr
    assert "scratch home" in res.stdout and str(home) not in res.stdout
    assert "violation" not in res.stdout
    assert "{'" not in res.stdout + res.stderr  # prose and a table, never a dict repr
    assert _snapshot(home) == before

    report = run_cli(*args, "--json", home=home, timeout=600).json()
    assert report["ok"] and report["scratch"] and report["home"] != str(home)
    assert _snapshot(home) == before


@pytest.mark.slow
def test_drill_migration_scenario():
    """Kills in `archive migrate --copy` and `--verify` (the directory switch), then the
    steps re-run to committed: every transcript must still be there."""
    _assert_scenario_holds("migration", cycles=2, seed=5, kill="migration_mid_switch")


def _assert_scenario_holds(name: str, *, cycles: int, seed: int, kill: str) -> None:
    """``memoryd drill --scenario NAME`` reaches ``kill`` and reports no violation."""
    res = run_cli(
        "drill", "--cycles", str(cycles), "--seed", str(seed), "--json", "--scenario", name,
        home=None, timeout=600,
    )  # fmt: skip
    report = res.json()
    assert report["kills"].get(kill), report["kills"]
    assert report["ok"], report["violations"]


@pytest.mark.slow
def test_drill_clients_scenario_reports_its_figures(tmp_path):
    """Many clients at once: MCP servers, a CLI writer and snapshot readers on
    one home while each kind of process (the supervisor too) is SIGKILLed; every
    acknowledged remember, memory add and archive add is applied exactly once, and the
    report carries the figures (their bounds are findings, not asserted: speed varies).
    Seed 12's kill plan hits every kind by 13.5 s of the 25 (the supervisor at 6.4 s,
    its answer gap inside the run): each kind once, with room for a slow restart."""
    res = run_cli(
        "drill", "--scenario", "clients", "--duration", "25", "--mcp-clients", "4",
        "--cli-writers", "1", "--readers", "2", "--seed", "12", "--think", "0.2", "1", "--json",
        "--home", str(tmp_path / "drill-home"), home=None, timeout=600,
    )  # fmt: skip
    report = res.json()
    assert res.code == 0 and report["ok"], report["violations"]
    figures = report["clients"]
    assert set(figures["kills"]) == {"mcp", "writer", "worker", "supervisor"}, figures["kills"]
    assert figures["lost"] == 0 and figures["doubled"] == 0
    acked = figures["acknowledged"]
    assert acked["candidates"] > 0 and acked["locators"] > 0, acked
    assert figures["requests"]["recall"]["ok"] > 0, figures["requests"]
    assert figures["mcp_starts"] > 4  # a killed MCP server was replaced
    assert figures["workload"]["mcp"]["think_s"] == [0.2, 1.0]
    assert figures["wal_peak_bytes"] > 0
    assert figures["recall_p95_ms"] > 0 and figures["recall_ms"]["all"]["n"] > 0
    assert figures["supervisor_gap_max_s"] > 0  # answers resumed after the supervisor kill
    assert set(figures["bounds"]) == {"wal_peak_bytes", "recall_p95_ms", "supervisor_gap_max_s"}


def test_drill_clients_think_bounds_are_checked(tmp_path):
    """``--think MIN MAX`` with MIN above MAX is refused before anything starts."""
    home = tmp_path / "drill-home"
    res = run_cli(
        "drill", "--scenario", "clients", "--think", "2", "0.5", "--home", str(home), home=None
    )  # fmt: skip
    assert res.code == 2 and "MIN is more than MAX" in res.stderr, res.stderr
    assert not home.exists()
