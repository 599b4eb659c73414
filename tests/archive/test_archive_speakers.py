"""Named speakers in archived conversations: a question naming a person is answered by
what that person said (or what was said about them), and abstains when the asked thing
belongs to the other speaker."""

from __future__ import annotations

import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.base.config import load_config
from memoryd.text.evidence import named_speaker, statements
from tests.conftest import archive_conversations, small_talk

NOW = 1_800_000_000.0

SESSIONS = {
    "s1": [
        ("Iris", "I started a woodworking course and built a small oak stool."),
        ("Karl", "That sounds fun! Was the oak hard to cut?"),
        ("Iris", "Very hard, my saw got stuck twice."),
        ("Karl", "I have been learning the cello, I practise scales every evening."),
    ],
    "s2": [
        ("Karl", "My cello teacher says my bowing improved a lot."),
        ("Iris", "Great. I adopted a parrot called Mango last week."),
        ("Karl", "A parrot! Does Mango talk?"),
        ("Iris", "He whistles the theme of an old cartoon."),
    ],
    **small_talk("Iris", "Karl"),
}


@pytest.fixture(scope="module")
def owner(tmp_path_factory):
    home = tmp_path_factory.mktemp("speakers")
    own = ArchiveOwner(home, load_config(home))
    archive_conversations(own, "chat", SESSIONS, NOW)
    yield own
    own.close()


def test_named_speaker_prefixes():
    assert named_speaker("user: Iris: hello") == ("iris", 12)
    assert named_speaker("Karl: hi")[0] == "karl"
    assert named_speaker("x = Foo: bar") == (None, 0)
    assert statements("Was it hard? It was.").strip() == "It was."


@pytest.mark.parametrize(
    ("question", "session"),
    [
        ("What did Iris build in the woodworking course?", "s1"),
        ("What instrument is Karl learning?", "s1"),
        ("What is the name of Iris's parrot?", "s2"),
    ],
)
def test_question_about_a_speaker_is_answered_by_their_turns(owner, question, session):
    r = search_archive(owner, "chat", question, 3, NOW)
    assert r["status"] == "ok", r
    assert r["items"][0]["path"] == session


@pytest.mark.parametrize(
    "question",
    [
        "What did Karl build in the woodworking course?",  # Iris did
        "What got stuck when Karl was cutting the oak?",  # Iris said it; Karl only asked
        "Which instrument does Iris practise every evening?",  # Karl does
    ],
)
def test_question_about_the_other_speakers_fact_abstains(owner, question):
    r = search_archive(owner, "chat", question, 3, NOW)
    assert r["status"] == "abstained", r
