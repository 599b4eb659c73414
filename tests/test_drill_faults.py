"""Issue 8, "the drill must be able to fail": with each fault of ``memoryd.faults``
switched on in the processes it starts, the drill reports a violation; with none,
the same cycles report none.

The scenarios rotate (each runs once in every block of as many cycles as there are
scenarios, in a seeded order), so one block reaches the stale-result scenario that
``unfenced_completion`` needs; the other two faults break the first cycle.

The control, the same scenarios without a fault reporting nothing, is
``test_drill.py``'s fifty cycles (four whole blocks, every scenario in each).
"""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.test_drill import CI_ARGS, CI_SCENARIOS

SEED = "11"
BLOCK = str(len(CI_SCENARIOS))


def _drill(tmp_path, cycles: str, fault: str) -> dict:
    env = {"MEMORYD_FAULT": fault}
    res = run_cli(
        "drill", "--cycles", cycles, "--seed", SEED, "--json", *CI_ARGS,
        home=tmp_path / "unused", env=env, timeout=600,
    )  # fmt: skip
    report = res.json()
    assert res.code == (0 if report["ok"] else 1)
    return report


@pytest.mark.slow
def test_unfenced_completion_is_caught_within_one_block(tmp_path):
    report = _drill(tmp_path, BLOCK, "unfenced_completion")
    assert not report["ok"]
    assert any("applied 2 times" in v or "ran again" in v for v in report["violations"])


@pytest.mark.slow
def test_double_effect_is_caught_in_the_first_cycle(tmp_path):
    report = _drill(tmp_path, "1", "double_effect")
    assert any("applied 2 times" in v for v in report["violations"]), report["violations"]


@pytest.mark.slow
def test_lost_completion_is_caught_in_the_first_cycle(tmp_path):
    report = _drill(tmp_path, "1", "lost_completion")
    assert any("completion was lost" in v for v in report["violations"]), report["violations"]
