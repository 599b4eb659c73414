"""Speaker-attributed evidence: a question naming a person is answered by
what that person said about themselves or what others said about them -- not by their
reactions to the other speaker's news, nor by a turn that only addresses them."""

from __future__ import annotations

import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.base.config import load_config
from memoryd.search.engine import search
from memoryd.text.evidence import mentions, own_statements, person_text
from memoryd.text.terms import words
from tests.conftest import archive_conversations, small_talk

NOW = 1_800_000_000.0

SESSIONS = {
    "s1": [
        ("Nora", "Ivo! Guess what, I joined a rowing club on the river."),
        ("Ivo", "Nice! What made you pick rowing?"),
        ("Nora", "I wanted to be outdoors. We row at six in the morning."),
        ("Ivo", "I have been busy too, I started building a bookshelf for the hallway."),
    ],
    "s2": [
        ("Nora", "I adopted a dog from the shelter, a spaniel named Pepper."),
        ("Ivo", "Pepper! Great name for a dog."),
        ("Nora", "He already chewed both of my slippers."),
        ("Ivo", "The bookshelf is finished, it holds all my cookbooks now."),
    ],
    "s3": [
        ("Nora", "Ivo, who repaired your kayak?"),
        ("Ivo", "My neighbour did, in ten minutes. I have been teaching her daughter chess."),
    ],
    **small_talk("Nora", "Ivo"),
}

ANSWERED = [
    ("What is the name of Nora's dog?", "s2"),
    ("Which club did Nora join?", "s1"),
    ("What is Ivo building for the hallway?", "s1"),
    # the answer leaves out its question's words: Nora asked, Ivo answered
    ("Who repaired Ivo's kayak?", "s3"),
]
# Ivo only reacted to Nora's dog, and was only addressed when she told of her club;
# Nora asked about a kayak, she said nothing of hers.
ABSENT = [
    "What is the name of Ivo's dog?",
    "Which club did Ivo join?",
    "Who repaired Nora's kayak?",
]


def test_a_reaction_without_first_person_leaves_out_the_echoed_words():
    before = "I adopted a dog from the shelter, a spaniel named Pepper."
    assert own_statements("Pepper! Great name for a dog.", before).split() == ["great", "for"]
    # in the first person the turn is about its speaker, echo or not
    mine = "I want a dog too."
    assert own_statements(mine, before) == mine
    # an answer to the other's question keeps its words, and the question's: an
    # answer leaves out what was asked
    got = own_statements("About twelve kilometres.", "Wow. How far do you run?")
    assert words(got) == ["about", "twelve", "kilometres", "how", "far", "do", "you", "run"]
    # the speaker's own questions say nothing about them
    assert own_statements("Was it hard? It was.").strip() == "It was."


def test_a_mention_is_the_sentence_naming_the_person_not_an_address():
    assert mentions("Hey Ivo! I joined a club.", {"ivo"}) == ""
    assert mentions("Congratulations, uncle Ivo! How is she?", {"ivo"}) == ""
    assert mentions("Ivo, look. I think Ivo broke it. We ate.", {"ivo"}) == " I think Ivo broke it."
    assert mentions("Nothing about him.", {"ivo"}) == ""


def test_an_answer_holds_the_words_of_the_question_it_answers():
    text = "Nora: Ivo, who repaired your kayak?\nIvo: My neighbour did."
    assert "repaired" in person_text(text, {"ivo"})
    assert "kayak" not in person_text(text, {"nora"})  # her question is not about her


def test_person_text_reads_each_turn_after_the_other_speakers_turn():
    text = "Nora: I adopted a dog named Pepper.\nIvo: Pepper! Great name for a dog."
    assert "dog" not in person_text(text, {"ivo"})
    assert "dog" in person_text(text, {"nora"})


@pytest.fixture(scope="module")
def owner(tmp_path_factory):
    home = tmp_path_factory.mktemp("attributed")
    own = ArchiveOwner(home, load_config(home))
    archive_conversations(own, "chat", SESSIONS, NOW)
    yield own
    own.close()


@pytest.mark.parametrize(("question", "session"), ANSWERED)
def test_archive_answers_from_the_named_persons_turns(owner, question, session):
    r = search_archive(owner, "chat", question, 3, NOW)
    assert r["status"] == "ok", r
    assert r["items"][0]["path"] == session


def test_archive_finds_a_word_said_only_in_another_inflection(owner):
    """The archive indexes exact words: "teach" is looked up as "teaching" too."""
    r = search_archive(owner, "chat", "Who did Ivo teach?", 3, NOW)
    assert r["status"] == "ok", r
    assert r["items"][0]["path"] == "s3"


@pytest.mark.parametrize("question", ABSENT)
def test_archive_abstains_when_the_person_only_reacted_or_was_addressed(owner, question):
    r = search_archive(owner, "chat", question, 3, NOW)
    assert r["status"] == "abstained", r
    assert r["items"] == []


@pytest.fixture()
def db(store, tmp_path):
    files = {
        f"chats/{name}.txt": "".join(f"{who}: {said}\n" for who, said in turns)
        for name, turns in SESSIONS.items()
    }
    db = store(tmp_path, "chat", files)
    yield db
    db.close()


def test_project_search_applies_the_same_attribution(db):
    for question, session in ANSWERED:
        r = search(db, "chat", question)
        assert r["status"] == "ok", (question, r)
        assert r["items"][0]["path"] == f"chats/{session}.txt"
    for question in ABSENT:
        assert search(db, "chat", question)["status"] == "abstained", question
