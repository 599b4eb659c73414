"""The third generator of memory statement pairs (ops/bench/memory_pairs_fresh.py), on its
own: deterministic, ``n`` pairs of each label, and the facts behind each label as the
label says. The adjudicator is not run on these pairs (they are the untouched held-out
set; ``bench_memory.py --pairs-only`` measures it)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.memory.conftest import bench_module


@pytest.fixture(scope="module")
def gen():
    yield from bench_module("memory_pairs_fresh")


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(gen):
    assert gen.pairs(30, seed=5) == gen.pairs(30, seed=5)
    assert gen.pairs(30, seed=5) != gen.pairs(30, seed=6)


def test_n_pairs_of_each_label_in_the_benchmark_shape(gen):
    rows = gen.pairs(25)
    assert Counter(r["label"] for r in rows) == {label: 25 for label in gen.LABELS}
    kinds = {"fact", "decision", "preference", "lesson"}
    for r in rows:
        assert set(r) == {"label", "kind", "old", "new"} and r["kind"] in kinds
        assert r["old"].strip() and r["new"].strip() and r["old"] != r["new"]


def test_update_pairs_share_subject_and_attribute_and_differ_in_value(gen):
    updates = [p for p in gen.facts(100) if p.label in ("update", "reframed")]
    for p in updates:
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.value_type.measure(p.new.value) != p.value_type.measure(p.old.value)


def test_paraphrases_keep_the_triple_and_distinct_pairs_change_one_side_of_it(gen):
    for p in gen.facts(100):
        if p.label == "paraphrase":
            assert p.new == p.old
        elif p.label == "distinct":
            changed = (p.new.subject != p.old.subject) + (p.new.attribute != p.old.attribute)
            assert changed == 1


def test_the_cli_writes_one_json_line_per_pair(gen, tmp_path, monkeypatch):
    out = tmp_path / "pairs.jsonl"
    monkeypatch.setattr("sys.argv", ["memory_pairs_fresh", "--out", str(out), "--pairs", "3"])
    gen.main()
    assert len(out.read_bytes().splitlines()) == 3 * len(gen.LABELS)
