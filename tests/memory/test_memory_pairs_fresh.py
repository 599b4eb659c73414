"""The third generator of memory statement pairs (ops/bench/memory_pairs_fresh.py), on its
own: deterministic, ``n`` pairs of each label, and the facts behind each label as the
label says. The adjudicator is not run on these pairs (they are the untouched held-out
set; ``bench_memory.py --pairs-only`` measures it).
What every generator does (a seed's pairs, their shape, the CLI) is in
test_pair_generators.py."""

from __future__ import annotations

import pytest

from tests.memory.conftest import bench_module


@pytest.fixture(scope="module")
def gen():
    yield from bench_module("memory_pairs_fresh")


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
