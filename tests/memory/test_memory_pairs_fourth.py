"""The fourth generator of memory statement pairs (ops/bench/memory_pairs_fourth.py), on
its structure only: deterministic, ``n`` pairs of each label, no repeated pair, and each
label's facts as the label says. The adjudicator is not run on these pairs (they are an
untouched held-out set; ``bench_memory.py --pairs-only`` scores it).
What every generator does (a seed's pairs, their shape, the CLI) is in
test_pair_generators.py."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.memory.conftest import bench_module

WORD = re.compile(r"[\w.:/@#$%-]+")


@pytest.fixture(scope="module")
def gen():
    yield from bench_module("memory_pairs_fourth")


def words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def test_updates_keep_subject_and_attribute_and_change_the_value_in_words(gen):
    for p in gen.facts(150):
        if p.label not in ("update", "reframed"):
            continue
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.new.value != p.old.value
        assert words(p.new.core) != words(p.old.core)  # some token says the new value
        if p.label == "update":
            assert (p.new.frame, p.new.sname, p.new.aname) == (
                p.old.frame,
                p.old.sname,
                p.old.aname,
            )


def test_paraphrases_keep_the_fact_and_distinct_pairs_change_one_side_of_it(gen):
    for p in gen.facts(150):
        same_subject = p.new.subject == p.old.subject
        same_attribute = p.new.attribute == p.old.attribute
        if p.label == "paraphrase":
            assert same_subject and same_attribute and p.new.value == p.old.value
            assert p.new.core != p.old.core
        elif p.label == "distinct":
            assert same_subject != same_attribute
            assert p.new.attribute.vtype is p.old.attribute.vtype


def test_siblings_share_a_value_type(gen):
    for domain in gen.DOMAINS:
        for a in domain.attributes:
            assert all(s.vtype is a.vtype for s in domain.siblings(a))
