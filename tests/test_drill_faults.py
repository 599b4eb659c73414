"""The drill must be able to fail: with each fault of ``memoryd.base.faults``
switched on in the processes it starts, the drill reports a violation; with none,
the same cycles report none.

Each fault is driven through the scenario that reaches it, for a cycle or two:
``unfenced_completion`` and ``complete_ignores_token`` need a late result
(``stale``, ``stale_all``), ``staging_removed_early`` a kill while a staging file's
last consolidation run is in flight (``memory_last_run``), ``reclaim_live_leases``
jobs longer than a short lease (``long_jobs``); the other two break any cycle.

The control, the same scenarios without a fault reaching their break and reporting
nothing, is ``test_drill.py``'s :func:`test_drill_every_scenario_twice_passes` (every
scenario twice, each of these breaks asserted reached: ``FAULT_BREAKS``).
"""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.test_drill import CI_ARGS

SEED = "11"
STALE = ["--scenario", "stale", "--scenario", "stale_all"]


def _drill(tmp_path, cycles: str, fault: str, scenarios: list[str]) -> dict:
    env = {"MEMORYD_FAULT": fault} if fault else {}
    res = run_cli(
        "drill", "--cycles", cycles, "--seed", SEED, "--json", *scenarios,
        home=tmp_path / "unused", env=env, timeout=600,
    )  # fmt: skip
    report = res.json()
    assert res.code == (0 if report["ok"] else 1)
    return report


@pytest.mark.slow
def test_unfenced_completion_is_caught_by_a_late_result(tmp_path):
    report = _drill(tmp_path, "2", "unfenced_completion", STALE)
    assert not report["ok"]
    assert any("applied 2 times" in v or "ran again" in v for v in report["violations"])


@pytest.mark.slow
def test_double_effect_is_caught_in_the_first_cycle(tmp_path):
    report = _drill(tmp_path, "1", "double_effect", CI_ARGS)
    assert any("applied 2 times" in v for v in report["violations"]), report["violations"]


@pytest.mark.slow
def test_lost_completion_is_caught_in_the_first_cycle(tmp_path):
    report = _drill(tmp_path, "1", "lost_completion", CI_ARGS)
    assert any("completion was lost" in v for v in report["violations"]), report["violations"]


@pytest.mark.slow
def test_a_completion_that_ignores_the_token_is_caught(tmp_path):
    """A completion fenced by state only lets a late result complete a
    re-claimed job; each job applied once, but with the old attempt's result."""
    report = _drill(tmp_path, "1", "complete_ignores_token", ["--scenario", "stale_all"])
    assert report["kills"].get("stale_result_all"), report["kills"]
    wrong = [v for v in report["violations"] if "the result of another attempt" in v]
    assert wrong, report["violations"]


@pytest.mark.slow
def test_a_staging_file_removed_before_its_run_commits_is_caught(tmp_path):
    """A consolidation run that deletes its staging file before the supervisor
    commits the file's last decisions loses them when the supervisor dies in between."""
    report = _drill(tmp_path, "1", "staging_removed_early", ["--scenario", "memory_last_run"])
    assert report["kills"].get("memory_last_run"), report["kills"]
    lost = [v for v in report["violations"] if "memory candidates were never decided" in v]
    assert lost, report["violations"]


@pytest.mark.slow
def test_a_reclaim_of_live_leases_is_caught(tmp_path):
    """A reclaim that ignores lease expiry takes jobs their supervisor renews."""
    report = _drill(tmp_path, "1", "reclaim_live_leases", ["--scenario", "long_jobs"])
    retried = [v for v in report["violations"] if "more than one attempt" in v]
    assert retried, report["violations"]
