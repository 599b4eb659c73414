"""What every generator of memory statement pairs written apart does, whatever its
content (``ops/bench/memory_pairs_{fresh,fourth,fifth,sixth}.py``): the same pairs for a
seed and others for another, ``n`` pairs of each label in the benchmark's shape, no pair
twice, and a command line that writes one JSON line per pair. Each generator's own test
file checks what its pairs say; the adjudicator is not run on them here."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.memory.conftest import bench_module

BASE_KEYS = {"label", "kind", "old", "new"}
KEYS = {  # generator -> the keys of one of its pairs
    "memory_pairs_fresh": BASE_KEYS,
    "memory_pairs_fourth": BASE_KEYS | {"domain", "vtype"},
    "memory_pairs_fifth": BASE_KEYS | {"domain", "vtype"},
    "memory_pairs_sixth": BASE_KEYS | {"domain", "vtype"},
}
KINDS = {"fact", "decision", "preference", "lesson"}


@pytest.fixture(scope="module", params=sorted(KEYS))
def gen(request):
    yield from bench_module(request.param)


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(gen):
    assert gen.pairs(30, seed=5) == gen.pairs(30, seed=5)
    assert gen.pairs(30, seed=5) != gen.pairs(30, seed=6)


def test_n_pairs_of_each_label_in_the_benchmark_shape(gen):
    rows = gen.pairs(40)
    assert Counter(r["label"] for r in rows) == {label: 40 for label in gen.LABELS}
    assert set(gen.LABELS) == {"update", "reframed", "distinct", "paraphrase"}
    for r in rows:
        assert set(r) == KEYS[gen.__name__]
        assert r["kind"] in KINDS
        assert r["old"].strip() and r["new"].strip() and r["old"] != r["new"]


def test_no_pair_repeats(gen):
    rows = gen.pairs(200)
    assert len({(r["old"], r["new"]) for r in rows}) == len(rows)


def test_the_cli_writes_one_json_line_per_pair(gen, tmp_path, monkeypatch):
    out = tmp_path / "pairs.jsonl"
    monkeypatch.setattr("sys.argv", [gen.__name__, "--out", str(out), "--pairs", "3"])
    gen.main()
    assert len(out.read_bytes().splitlines()) == 3 * len(gen.LABELS)
