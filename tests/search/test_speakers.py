"""Named speakers in transcripts searched as project files: a question naming a person
is answered by what that person said or what was said about them."""

from __future__ import annotations

import pytest

from memoryd.search import search
from memoryd.text.evidence import person_text

CHATS = {
    "chats/s1.txt": "Iris: I started a woodworking course and built a small oak stool.\n"
    "Karl: That sounds fun! Was the oak hard to cut?\n"
    "Iris: Very hard, my saw got stuck twice.\n",
    "chats/s2.txt": "Karl: I have been learning the cello, I practise scales every evening.\n"
    "Iris: Lovely. Karl, my neighbour Tom also plays the cello.\n",
    **{
        f"chats/f{i}.txt": f"Iris: Day {i} was grey.\nKarl: I stayed in and read.\n"
        for i in range(8)
    },
}


def test_person_text_keeps_their_statements_and_mentions():
    text = (
        "user: Iris: Was it hard? It was.\nKarl: I think Iris broke the saw.\n"
        "Karl: Iris, I rested."  # only addresses her
    )
    got = [part.strip() for part in person_text(text, {"iris"}).split("\n")]
    assert got == ["It was.", "I think Iris broke the saw."]


@pytest.fixture()
def db(store, tmp_path):
    db = store(tmp_path, "chat", CHATS)
    yield db
    db.close()


@pytest.mark.parametrize(
    ("question", "path"),
    [
        ("What did Iris build in the woodworking course?", "chats/s1.txt"),
        ("Which instrument is Karl learning?", "chats/s2.txt"),
    ],
)
def test_answered_by_the_named_persons_turns(db, question, path):
    r = search(db, "chat", question)
    assert r["status"] == "ok", r
    assert r["items"][0]["path"] == path


@pytest.mark.parametrize(
    "question",
    [
        "What did Karl build in the woodworking course?",
        "Which instrument does Iris practise every evening?",
    ],
)
def test_abstains_when_the_other_speaker_did_it(db, question):
    assert search(db, "chat", question)["status"] == "abstained"


def test_a_question_about_a_speaker_keeps_common_words_as_focus():
    from memoryd.text.evidence import without_persons
    from memoryd.text.terms import analyze

    q = without_persons(analyze("What does Iris paint?"), {"iris"}, lambda stem: 5)
    assert [(t.word, t.explicit) for t in q.terms] == [("paint", True)]
    assert q.entities == [] and q.speaker is None
