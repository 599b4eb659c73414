"""BM25 over the archive's postings is search's: the store finds live versions
holding a term, :mod:`memoryd.search.archive_bm25` scores and ranks them."""

from __future__ import annotations

import math
from contextlib import closing
from pathlib import Path

import pytest

from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore

NOW = 1_700_000_000.0


@pytest.fixture
def store(tmp_path: Path):
    with closing(ArchiveStore.open_primary(tmp_path / "archive", sync=False)) as s:
        yield s


def _add(store, text: str) -> str:
    return store.ledgers.append(
        "p", "conversation", text, created_at=NOW, expires_at=None, now=NOW
    ).locator


def test_the_store_finds_unscored_matches_and_search_ranks_them(store) -> None:
    rare = _add(store, "the quokka met another quokka at the quokka burrow")
    once = _add(store, "a quokka and a kangaroo share the burrow of the park")
    _add(store, "kangaroo notes without the rare word")
    found = store.postings.live_matches("p", ["quokka"])
    assert {h.locator for h in found} == {rare, once} and {h.score for h in found} == {0.0}
    hits = archive_bm25.search(store.postings, "p", "quokka", limit=5)
    assert [h.locator for h in hits] == [rare, once] and hits[0].score > hits[1].score > 0
    # the score is BM25 over the archive's own statistics (3 versions, 2 holding it)
    stats = store.postings.corpus_stats("p")
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    dl, avgdl, tf, k1, b = hits[1].length, stats.length / 3, 1, 1.2, 0.75
    expected = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    assert hits[1].score == pytest.approx(expected, abs=1e-6)
    assert archive_bm25.search(store.postings, "p", "", limit=5) == []


def test_excerpt_is_a_window_around_the_first_term(store) -> None:
    loc = _add(store, "x " * 200 + "the quokka burrow is near the park")
    got = archive_bm25.excerpt(store.ledgers, loc, ["Quokka"], width=40)
    assert got is not None and "quokka burrow" in got and len(got) == 40
