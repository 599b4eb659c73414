"""The sixth generator of memory statement pairs (ops/bench/memory_pairs_sixth.py), on its
structure only: deterministic, ``n`` pairs of each label, no repeated pair, each label's
facts as the label says, one quantity per spelling. The adjudicator is not run on these
pairs (an untouched evaluation split; ``bench_memory.py --pairs-only`` scores it once).
What every generator does (a seed's pairs, their shape, the CLI) is in
test_pair_generators.py."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import orjson
import pytest

from tests.memory.conftest import bench_module

UNFILLED = re.compile(r"[{}]|\[[^\]]*\|")  # a slot or a [singular|plural] left over


@pytest.fixture(scope="module")
def gen():
    yield from bench_module("memory_pairs_sixth")


@pytest.fixture(scope="module")
def drawn(gen):
    return gen.facts(200)


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(gen):
    assert gen.pairs(30, seed=11) == gen.pairs(30, seed=11)
    assert gen.pairs(30, seed=11) != gen.pairs(30, seed=12)
    assert gen.pairs(5) == gen.pairs(5, seed=gen.DEFAULT_SEED)


def test_n_pairs_of_each_label_in_label_order_and_the_benchmark_shape(gen):
    rows = gen.pairs(40)
    assert gen.LABELS == ("update", "reframed", "distinct", "paraphrase")
    assert [r["label"] for r in rows] == [label for label in gen.LABELS for _ in range(40)]
    for r in rows:
        assert set(r) == {"label", "kind", "old", "new", "domain", "vtype"}
        assert r["kind"] in {"fact", "decision", "preference", "lesson"}
        assert isinstance(r["old"], str) and isinstance(r["new"], str)
        assert r["old"].strip() and r["new"].strip() and r["old"] != r["new"]
        assert not UNFILLED.search(r["old"] + r["new"])


def test_every_domain_kind_and_many_value_types_are_drawn(gen, drawn):
    rows = [p.row() for p in drawn]
    assert {r["domain"] for r in rows} == {d.name for d in gen.DOMAINS}
    assert len(gen.DOMAINS) >= 10
    assert {r["kind"] for r in rows} == set(gen.KINDS)
    for label in gen.LABELS:
        assert {r["kind"] for r in rows if r["label"] == label} == set(gen.KINDS)
    assert len({r["vtype"] for r in rows}) >= 25


def test_updates_keep_subject_attribute_and_saying_and_change_the_value(drawn):
    for p in drawn:
        if p.label != "update":
            continue
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.new.value != p.old.value and p.new.value_text != p.old.value_text
        same = ("frame", "sname", "aname", "style", "tail", "lower", "period")
        assert all(getattr(p.new, f) == getattr(p.old, f) for f in same)
        # said with the older value and remark, the newer statement is the older one
        assert replace(p.new, value=p.old.value, remark=p.old.remark).render() == p.old.render()


def test_reframed_updates_change_the_value_and_how_it_is_said(drawn):
    reframed = [p for p in drawn if p.label == "reframed"]
    for p in reframed:
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.new.value != p.old.value
        assert p.new.frame.kind == p.old.frame.kind
        assert (p.new.frame, p.new.sname, p.new.aname) != (p.old.frame, p.old.sname, p.old.aname)
    assert sum(p.new.frame.newer for p in reframed) > 0.2 * len(reframed)
    assert sum(p.new.frame == p.old.frame for p in reframed) > 0.1 * len(reframed)


def test_paraphrases_keep_subject_attribute_and_quantity_and_say_it_otherwise(drawn):
    paraphrases = [p for p in drawn if p.label == "paraphrase"]
    for p in paraphrases:
        assert (p.new.subject, p.new.attribute) == (p.old.subject, p.old.attribute)
        assert p.new.value == p.old.value
        assert p.new.core != p.old.core
        assert p.new.frame.kind == p.old.frame.kind and not p.new.frame.newer
        assert p.new.tail in ("", p.old.tail)
    restyled = [p for p in paraphrases if p.new.value_text != p.old.value_text]
    assert 0.2 * len(paraphrases) < len(restyled) < 0.9 * len(paraphrases)


def test_distinct_pairs_change_exactly_one_of_subject_and_attribute(gen, drawn):
    distinct = [p for p in drawn if p.label == "distinct"]
    for p in distinct:
        same_subject = p.new.subject is p.old.subject
        same_attribute = p.new.attribute is p.old.attribute
        assert same_subject != same_attribute
        assert p.new.attribute.vtype is p.old.attribute.vtype
        assert not p.new.frame.corrective
        if same_subject:
            assert p.new.attribute in p.domain.siblings(p.old.attribute)
            ranks = (p.old.attribute.rank, p.new.attribute.rank)
            if None not in ranks:  # a minimum never above its maximum
                assert sorted(ranks) != list(ranks) or p.old.value <= p.new.value
                assert sorted(ranks) == list(ranks) or p.old.value >= p.new.value
        else:
            assert p.new.subject in p.domain.subjects
    siblings = sum(p.new.subject is p.old.subject for p in distinct)
    same_value = sum(p.new.value == p.old.value for p in distinct)
    assert 0.35 * len(distinct) < siblings < 0.65 * len(distinct)
    assert 0.25 * len(distinct) < same_value < 0.55 * len(distinct)


def test_older_statements_and_updates_never_use_a_newer_only_frame(drawn):
    assert not any(p.old.frame.newer for p in drawn)
    assert not any(p.new.frame.newer for p in drawn if p.label in ("update", "paraphrase"))
    assert all(p.new.frame.kind == p.old.frame.kind == p.kind for p in drawn)


def test_two_quantities_of_a_value_type_never_share_a_spelling(gen):
    vtypes = {id(a.vtype): a.vtype for d in gen.DOMAINS for a in d.attributes}
    for vtype in vtypes.values():
        owner: dict[str, object] = {}
        for q in vtype.pool:
            spellings = vtype.spellings(q)
            assert len(spellings) >= 2, (vtype.name, q)
            for text in spellings:
                assert owner.setdefault(text, q) == q, (vtype.name, text)


@pytest.mark.parametrize(
    ("name", "quantity", "expected"),
    [
        ("SECONDS", 30, {"30s", "30 seconds", "30 sec", "half a minute"}),
        ("MINUTES", 90, {"90m", "90 minutes", "90 min", "an hour and a half"}),
        ("DAYS", 14, {"14 days", "14d", "fourteen days", "two weeks", "a fortnight"}),
        ("RATIO", 0.1, {"0.1", "10%", "1 in 10", "one in ten"}),
        (
            "RATE",
            100,
            {
                "100 req/s",
                "100 requests per second",
                "100 rps",
                "6,000 requests per minute",
                "6000 req/min",
            },
        ),  # noqa: E501
        ("BIG_COUNT", 10_000, {"10000", "10,000", "10k", "ten thousand"}),
        ("SDK_VERSION", (2, 1, 0), {"v2.1.0", "2.1.0", "version 2.1.0", "release 2.1.0"}),
        ("MEMORY", 2048, {"2048Mi", "2048 MiB", "2048MiB", "2Gi", "2 GiB"}),
        ("SCHEDULE", 5, {"every 5 minutes", "every five minutes", "*/5 * * * *", "every 5 min"}),
        ("CLOCK", (17, 0), {"17:00 UTC", "5pm UTC", "17:00Z"}),
    ],
)
def test_a_quantity_is_spelt_several_ways(gen, name, quantity, expected):
    assert getattr(gen, name).spellings(quantity) == expected


def test_wordings_name_one_thing_and_siblings_share_a_value_type(gen):
    for domain in gen.DOMAINS:
        assert len(domain.subjects) >= 2
        names = [s.name(i) for s in domain.subjects for i in range(len(s.names))]
        assert len(set(names)) == len(names) and all(len(s.names) >= 2 for s in domain.subjects)
        names = [n for a in domain.attributes for n in a.names]
        assert len(set(names)) == len(names) and all(len(a.names) >= 2 for a in domain.attributes)
        keys = [a.key for a in domain.attributes if a.key]
        assert len(set(keys)) == len(keys)
        assert any(domain.siblings(a) for a in domain.attributes)
        for a in domain.attributes:
            assert all(s.vtype is a.vtype for s in domain.siblings(a))
            for kind in gen.KINDS:
                assert gen.frames_for(kind, a.vtype, a), (domain.name, a.names, kind)


def test_verbs_and_articles_agree(gen):
    frame = next(f for f in gen.FRAMES if f.text.startswith("Remember: {S} [wants|want]"))
    one = gen.Subject(("the orders database",))
    many = gen.Subject(("+web sessions",))
    timeout = gen.Attribute(("idle timeout",), gen.MINUTES)
    limit = gen.Attribute(("lockout threshold",), gen.COUNT)
    assert gen.Said(many, timeout, 30, frame, 0, 0, 1).render() == (
        "Remember: web sessions want an idle timeout of 30 minutes."
    )
    assert gen.Said(one, limit, 6, frame, 0, 0, 2).render() == (
        "Remember: the orders database wants a lockout threshold of half a dozen."
    )


def test_states_are_said_only_in_slots_they_fit(gen):
    has = next(f for f in gen.FRAMES if f.text == "{S} [has|have] {A} {V}")
    spelt = {gen.STATE.say(False, i) for i in gen.STATE.fitting(False, has.role)}
    assert spelt == {"disabled", "turned off", "switched off"}
    assert not gen.STATE.fitting(True, "of") and not gen.OWNER.fitting("@mara", "at")


def test_a_sentence_ending_in_a_path_takes_no_period_and_noise_is_kept(gen):
    frame = next(f for f in gen.FRAMES if f.text == "The {A} of {S} is {V}")
    subject = gen.Subject(("the unit suite",))
    path = gen.Attribute(("fixtures directory",), gen.path_type("tests/fixtures"))
    said = gen.Said(subject, path, "tests/fixtures", frame, 0, 0, 2, remark="cc @mara")
    assert said.render() == "The fixtures directory of the unit suite is tests/fixtures/ cc @mara"
    said = gen.Said(subject, path, "tests/fixtures", frame, 0, 0, 1, lower=True, period=False)
    assert said.render() == "the fixtures directory of the unit suite is `tests/fixtures`"


def test_the_cli_writes_one_json_line_per_pair(gen, tmp_path, monkeypatch):
    out = tmp_path / "pairs.jsonl"
    argv = ["memory_pairs_sixth", "--out", str(out), "--pairs", "3", "--seed", "7"]
    monkeypatch.setattr("sys.argv", argv)
    gen.main()
    lines = out.read_bytes().splitlines()
    assert len(lines) == 3 * len(gen.LABELS)
    assert [orjson.loads(line) for line in lines] == gen.pairs(3, seed=7)
    assert Counter(orjson.loads(line)["label"] for line in lines) == dict.fromkeys(gen.LABELS, 3)
