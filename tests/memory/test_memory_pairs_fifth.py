"""The fifth generator of memory statement pairs (ops/bench/memory_pairs_fifth.py), on its
structure only: deterministic, ``n`` pairs of each label, no repeated pair, each label's
facts as the label says, values spelt by their quantity. The adjudicator is not run on
these pairs (they are an untouched evaluation split; ``bench_memory.py --pairs-only``
scores it).
What every generator does (a seed's pairs, their shape, the CLI) is in
test_pair_generators.py."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.memory.conftest import bench_module

WORD = re.compile(r"[\w.:/@#$%°-]+")


@pytest.fixture(scope="module")
def gen():
    yield from bench_module("memory_pairs_fifth")


def words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def test_every_domain_and_kind_is_drawn(gen):
    rows = gen.pairs(200)
    assert {r["domain"] for r in rows} == {d.name for d in gen.DOMAINS}
    assert {r["kind"] for r in rows} == set(gen.KINDS)


def test_updates_keep_subject_and_attribute_and_change_the_value_in_words(gen):
    for p in gen.facts(150):
        if p.label not in ("update", "reframed"):
            continue
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.new.value != p.old.value
        assert words(p.new.core) != words(p.old.core)
        if p.label == "update":
            assert (p.new.frame, p.new.sname, p.new.aname, p.new.style) == (
                p.old.frame,
                p.old.sname,
                p.old.aname,
                p.old.style,
            )
        else:
            assert p.new.frame != p.old.frame and p.new.frame.kind == p.old.frame.kind


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


def test_distinct_pairs_use_siblings_and_other_subjects_and_keep_the_value_at_times(gen):
    distinct = [p for p in gen.facts(200) if p.label == "distinct"]
    siblings = sum(p.new.subject == p.old.subject for p in distinct)
    same_value = sum(p.new.value == p.old.value for p in distinct)
    assert 0.3 * len(distinct) < siblings < 0.7 * len(distinct)
    assert 0.3 * len(distinct) < same_value < 0.7 * len(distinct)


def test_older_statements_never_use_a_newer_only_frame_nor_does_an_update(gen):
    rows = gen.facts(150)
    assert not any(p.old.frame.newer for p in rows)
    assert not any(p.new.frame.newer for p in rows if p.label == "update")
    assert any(p.new.frame.newer for p in rows if p.label == "paraphrase")


def test_a_no_longer_frame_says_the_opposite_state_word(gen):
    frame = next(f for f in gen.FRAMES if f.negated and f.kind == "fact")
    subject = gen.Subject(("the kiosks",))
    attribute = gen.Attribute(("click tracking",), gen.STATE)
    said = gen.Said(subject, attribute, False, frame, 0, 0, 0)
    assert said.render() == "The kiosks no longer have click tracking enabled"


def test_verbs_agree_with_a_plural_subject_and_a_singular_one(gen):
    frame = gen.Frame("lesson", "Gotcha: {s} {misbehaves} unless the {a} {a_is} {v}")
    attribute = gen.Attribute(("board limit",), gen.counted("boards", 4))
    plural = gen.Said(gen.Subject(("the smart locks",)), attribute, 4, frame, 0, 0, 1)
    single = gen.Said(gen.Subject(("rig A",)), attribute, 4, frame, 0, 0, 0)
    assert (
        plural.render() == "Gotcha: the smart locks misbehave unless the board limit is four boards"
    )
    assert single.render() == "Gotcha: rig A misbehaves unless the board limit is 4 boards"


@pytest.mark.parametrize(
    ("make", "quantity"),
    [
        (lambda g: g.duration(7200), 7200),
        (lambda g: g.interval(14), 14),
        (lambda g: g.voltage(33), 33),
        (lambda g: g.temperature(-40), -40),
        (lambda g: g.money(2500), 2500),
        (lambda g: g.date(2027), (2027, 3, 14)),
        (lambda g: g.clock((17, 30)), (17, 30)),
    ],
)
def test_a_value_is_spelt_in_several_styles_each_naming_one_quantity(gen, make, quantity):
    vtype = make(gen)
    spellings = [vtype.say(quantity, i) for i in vtype.fitting(quantity)]
    assert len(set(spellings)) == len(spellings) >= 3


def test_siblings_share_a_value_type_and_wordings_name_one_thing(gen):
    for domain in gen.DOMAINS:
        wordings = [n for s in domain.subjects for n in s.names]
        assert len(set(wordings)) == len(wordings)
        wordings = [n for a in domain.attributes for n in a.names]
        assert len(set(wordings)) == len(wordings)
        for a in domain.attributes:
            assert all(s.vtype is a.vtype for s in domain.siblings(a))
