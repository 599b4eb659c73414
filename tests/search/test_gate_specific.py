"""What a question singles out must be in the evidence: its rarest words
and its names of several words, said together. A false premise that changes only
that part ("my cousin's wedding" where the notes hold an aunt's) abstains."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memoryd.search import gate
from memoryd.search.engine import search
from memoryd.text.evidence import multiword_names, name_said, unsaid_names
from memoryd.text.terms import analyze
from tests.search.conftest import FakeStats

TOPICS = ["garden", "invoice", "bicycle", "kitchen", "library", "holiday", "printer", "piano"]
# Enough chunks for a rare word to mean something (gate.Tuning.rare_min_chunks).
FILLER = {
    f"notes/{i:03d}.md": f"Note {i}: the {TOPICS[i % 8]} item {i} was reviewed on day {i % 28}."
    for i in range(120)
}
NOTES = {
    **FILLER,
    "notes/wedding.md": "For my aunt's wedding dinner I cooked a mushroom risotto with thyme.",
    "notes/cousin.md": "My cousin lives in Porto and repairs old clocks.",
    "notes/stall.md": "When a test stalls past its timeout, the plugin dumps the traceback"
    " of every thread.",
    "notes/coat.md": "The coat hangs by the door.",
    "notes/job.md": "I work as a Principal Data Architect at Acme Robotics. "
    "My lead Dana runs the platform team.",
}


@pytest.fixture()
def db(store, tmp_path):
    db = store(tmp_path, "notes", NOTES)
    yield db
    db.close()


def test_a_rare_word_no_admitted_candidate_holds_makes_the_search_abstain(db):
    found = search(db, "notes", "What did I cook for my aunt's wedding dinner?")
    assert found["status"] == "ok" and found["items"][0]["path"] == "notes/wedding.md"
    absent = search(db, "notes", "What did I cook for my cousin's wedding dinner?")
    assert absent["status"] == "abstained" and absent["items"] == []
    assert "'cousin'" in absent["gap"]
    # the rule is what abstains: without it the aunt's wedding answers
    off = replace(gate.DEFAULT, rarest_chunks=0, rarest_fraction=0.0)
    assert search(db, "notes", "What did I cook for my cousin's wedding dinner?", tuning=off)[
        "items"
    ]


def test_a_rare_word_of_a_question_about_documents_may_be_the_askers_paraphrase(db):
    found = search(db, "notes", "dump the traceback of every thread when a test hangs")
    assert found["status"] == "ok" and found["items"][0]["path"] == "notes/stall.md"


def test_a_name_of_several_words_must_be_said_in_order_in_one_sentence(db):
    found = search(db, "notes", "Which company do I work at as Principal Data Architect?")
    assert found["status"] == "ok" and found["items"][0]["path"] == "notes/job.md"
    absent = search(db, "notes", "Which company do I work at as Data Architect Lead?")
    assert absent["status"] == "abstained", absent
    assert "data architect lead" in absent["gap"]


def test_name_said_reads_sentences_not_abbreviations():
    name = ["lumix", "camera"]
    assert name_said("I set up my new Lumix 24-megapixel mirrorless camera today.", name, {})
    assert not name_said("I like Lumix lenses. The camera is old.", name, {})
    assert name_said("We saw Dr. Okafor on Monday.", ["dr", "okafor"], {})
    p = gate.plan(analyze("How often do I see Dr. Okafor?"), FakeStats(5000, 40))
    assert [w for w, _ in multiword_names(p)] == ["dr okafor"]
    assert unsaid_names(p, ["Dr. Smith said Okafor was away."]) == []
    assert unsaid_names(p, ["Okafor was away. Dr. Smith called."]) == ["dr okafor"]


def test_a_rare_number_is_a_value_not_a_missing_subject():
    question = "Which was the 12th step in the list of setup tasks?"
    p = gate.plan(analyze(question), FakeStats(5000, 1))
    assert "12th" not in gate.missing_entities(p, [set()])


def test_small_corpora_have_no_rarest_words():
    p = gate.plan(analyze("What did I cook for my cousin?"), FakeStats(8, 1))
    assert gate.missing_entities(p, [set()]) == []


def test_an_ordering_word_after_from_the_is_the_answers_form():
    q = analyze("List the concerts I attended, starting from the earliest.")
    assert "earliest" in q.context and "earliest" not in [t.word for t in q.terms]
