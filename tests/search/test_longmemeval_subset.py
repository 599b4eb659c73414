"""A small LongMemEval subset: recall and abstention floors the full run exceeds.

The full measurement is ops/bench/bench_longmemeval.py (make bench-search).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from memoryd.search import search

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "ops" / "bench" / "bench_longmemeval.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_longmemeval", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not mod.DATA.exists():
        pytest.skip(f"LongMemEval data not present at {mod.DATA}: {mod.DATA_SOURCE}")
    return mod


def test_subset_recall_and_abstention(bench, tmp_path):
    data, sessions = bench.load(bench.DATA)
    db, digest, sid_digest = bench.build(tmp_path, sessions)
    answerable = [i for i, q in enumerate(data) if not q["question_id"].endswith("_abs")][::10]
    absent = [i for i, q in enumerate(data) if q["question_id"].endswith("_abs")]
    runners = {"memoryd": lambda text: search(db, bench.PROJECT, text, bench.DEPTH)}
    res = bench.evaluate(data, runners, digest, sid_digest, answerable + absent)["memoryd"]
    assert res["answerable"] == 47 and res["abs_questions"] == 30
    assert res["recall@10"] >= 0.70, res
    assert res["abstained"] >= 8, res
