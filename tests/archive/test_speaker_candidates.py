"""A question naming a person finds that person's own turn even when many sessions
where someone else talks about the same thing outrank it on BM25 alone: the stored
speaker of each posting lifts the person's own turns into the candidates."""

from __future__ import annotations

import pytest

from memoryd.archive.ops import run_op
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.archive.search import CANDIDATE_POOL
from memoryd.base.config import load_config
from memoryd.operations.control_client import unwrap

NOW = 1_800_000_000.0
OTHERS = CANDIDATE_POOL + 10  # more sessions than the BM25 candidates archive search judges


def session(turns: list[tuple[str, str]]) -> str:
    return "\n".join(
        f"{'user' if i % 2 == 0 else 'assistant'}: {who}: {said}"
        for i, (who, said) in enumerate(turns)
    )


@pytest.fixture(scope="module")
def owner(tmp_path_factory):
    home = tmp_path_factory.mktemp("speaker-candidates")
    own = ArchiveOwner(home, load_config(home))
    sessions = {
        f"b{i:03d}": session([("Bruno", f"My kayak trip {i}: the kayak flipped, kayak lost."),
                              ("Alma", "Oh no, glad you are fine.")])
        for i in range(OTHERS)
    }  # fmt: skip
    quiet = [("Alma", "I read a novel at home."), ("Bruno", "I cooked soup and watched a film.")]
    # sessions without the asked word, so that it is specific
    sessions.update((f"f{i:03d}", session(quiet)) for i in range(3 * OTHERS))
    sessions["alma"] = session(
        [("Bruno", "How was your weekend at the lake with your cousins and the dog?"),
         ("Alma", "We rented a red kayak for the afternoon and then grilled fish by the water."),
         ("Bruno", "That sounds like a lovely and relaxing way to spend a long weekend.")]
    )  # fmt: skip
    for name, content in sessions.items():
        args = {"project": "chat", "session": name, "created_at": NOW - 3600, "now": NOW,
                "content": content, "turns": content.count("\n") + 1}  # fmt: skip
        unwrap(run_op(own, "add", args))
    yield own
    own.close()


def test_the_named_persons_own_turn_is_found_below_the_bm25_pool(owner):
    got = search_archive(owner, "chat", "What did Alma say about the kayak?", 5, NOW)
    assert got["status"] == "ok", got
    assert got["items"][0]["path"] == "alma"
    assert "red kayak" in got["items"][0]["excerpt"]
