"""Archive search reads the stored positions and turns: query terms close together
rank higher, and a search can prefer, or keep only, the asked persons' own turns."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore

NOW = 1_700_000_000.0
FILLER = "we talked about the weather and the traffic on the way home"


@pytest.fixture
def store(tmp_path: Path):
    with closing(ArchiveStore.open_primary(tmp_path / "archive", sync=False)) as s:
        yield s


def add(store, doc_id: str, text: str) -> str:
    return store.ledgers.append(
        "p", "conversation", text, created_at=NOW, expires_at=None, doc_id=doc_id, now=NOW
    ).locator


def test_proximity_puts_the_version_with_the_terms_together_first(store):
    # Same words, same counts, same length: BM25 ties (and the locator order puts
    # the scattered one first); only the positions tell them apart.
    apart = add(store, "a-apart", f"the copper kettle {FILLER} whistled loudly")
    together = add(store, "b-together", f"the kettle whistled {FILLER} copper loudly")
    for i in range(4):
        add(store, f"other-{i}", f"{FILLER} {i}")
    plain = archive_bm25.bm25
    hits = archive_bm25.search(store.postings, "p", "kettle whistled", limit=2)
    assert [h.locator for h in hits] == [together, apart]
    assert hits[0].score > hits[1].score
    # the scattered version keeps its plain BM25: proximity only adds
    df = store.postings.term_stats("p", ["kettle", "whistled"])
    stats = store.postings.corpus_stats("p")
    base = plain(hits[1].matched, df, n_docs=stats.versions,
                 avgdl=stats.length / stats.versions, length=hits[1].length)  # fmt: skip
    assert hits[1].score == round(base, 6)


def test_forms_of_one_word_are_not_proximity(store):
    a = add(store, "a", f"paint painted {FILLER} wall")
    b = add(store, "b", f"paint {FILLER} painted wall")
    concepts = {"paint": "paint", "painted": "paint"}
    hits = archive_bm25.search(
        store.postings, "p", ["paint", "painted"], limit=2, concepts=concepts
    )
    assert {h.locator for h in hits} == {a, b} and hits[0].score == hits[1].score
    unrelated = archive_bm25.search(store.postings, "p", ["paint", "painted"], limit=2)
    assert unrelated[0].locator == a and unrelated[0].score > unrelated[1].score


def dialogue(first: str, said_first: str, second: str, said_second: str) -> str:
    return f"user: {first}: {said_first}\nassistant: {second}: {said_second}"


def test_a_named_person_own_turns_rank_first_and_can_be_required(store):
    # Mara mentions pottery to Jonas in one session; Jonas talks pottery in the other.
    jonas = add(store, "a-jonas", dialogue("Mara", "How was your week?", "Jonas",
                                           "I took a pottery class and made bowls."))  # fmt: skip
    mara = add(store, "b-mara", dialogue("Jonas", "How was your week?", "Mara",
                                         "I took a pottery class and made bowls."))  # fmt: skip
    plain = archive_bm25.search(store.postings, "p", "pottery class bowls", limit=5)
    assert [h.locator for h in plain] == [jonas, mara]  # a tie: the locator decides
    asked = archive_bm25.search(
        store.postings, "p", "pottery class bowls", limit=5, persons={"mara"}
    )
    assert [h.locator for h in asked] == [mara, jonas]
    gated = archive_bm25.search(
        store.postings, "p", "pottery class bowls", limit=5, persons={"mara"}, own_turns_only=True
    )
    assert [h.locator for h in gated] == [mara]
    by_role = archive_bm25.search(
        store.postings, "p", "pottery", limit=5, role="user", own_turns_only=True
    )
    assert by_role == []  # in both sessions the assistant's turn holds it


def test_turn_postings_hands_the_gate_each_terms_speakers_turns(store):
    loc = add(store, "s", dialogue("Mara", "I bake rye bread.", "Jonas", "Rye bread is good"))
    got = archive_bm25.turn_postings(store.postings, "p", loc, ["rye", "bake", "absent"])
    assert set(got) == {"rye", "bake"}
    assert [(h.turn.speaker, h.turn.role, h.turn.index) for h in got["rye"].turns] == [
        ("mara", "user", 0),
        ("jonas", "assistant", 1),
    ]
    assert got["bake"].tf == 1 and not got["bake"].turns[0].turn.tool
