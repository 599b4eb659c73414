"""BM25 and excerpts over the archive's exact-term postings.

The archive store (:mod:`memoryd.storage.archive`) keeps the postings, the
per-project statistics and the live versions holding a term
(:meth:`~memoryd.storage.archive.ArchiveStore.live_matches`); scoring them,
ranking and excerpting are search's work and live here. Archive search
(:mod:`memoryd.archive.search`) draws its candidates from :func:`search`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from memoryd.storage.archive.postings import tokenize
from memoryd.storage.archive.records import Hit

#: BM25 parameters of the archive's exact-term search.
BM25_K1, BM25_B = 1.2, 0.75


def bm25(
    tfs: Mapping[str, int], df: Mapping[str, int], *, n_docs: int, avgdl: float, length: int
) -> float:
    """BM25 of one version holding ``tfs`` (term -> frequency) among ``n_docs`` live
    versions of average length ``avgdl``; ``df`` is each term's document frequency."""
    score = 0.0
    dl = length or 1
    for term, tf in tfs.items():
        n = df.get(term, 0)
        idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
        score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))
    return score


def search(
    store: Any,
    project: str,
    query: str | Sequence[str],
    *,
    limit: int = 10,
    classes: Iterable[str] | None = None,
    session: str | None = None,
    created_after: dict[str, float | None] | None = None,
    max_postings_per_term: int = 50_000,
) -> list[Hit]:
    """Exact-term BM25 over live versions of ``project``, best first (ties by locator).

    ``query`` is text (tokenized like payloads) or a list of terms; the filters are
    :meth:`~memoryd.storage.archive.ArchiveStore.live_matches`'. Read-only: the
    caller takes retrieval leases on what it returns.
    """
    stats = store.corpus_stats(project)  # checks the project name first
    terms = list(dict.fromkeys(tokenize(query) if isinstance(query, str) else query))
    if not terms:
        return []
    matches = store.live_matches(
        project,
        terms,
        classes=classes,
        session=session,
        created_after=created_after,
        max_postings_per_term=max_postings_per_term,
    )
    n_docs = stats.versions
    avgdl = stats.length / n_docs if n_docs else 1.0
    df = store.term_stats(project, terms)
    hits = [
        replace(h, score=round(bm25(h.matched, df, n_docs=n_docs, avgdl=avgdl, length=h.length), 6))
        for h in matches
    ]
    hits.sort(key=lambda h: (-h.score, h.locator))
    return hits[:limit]


def excerpt_window(text: str, terms: Sequence[str], *, width: int = 240) -> str:
    """A verbatim window of ``text`` around the first occurrence of any term."""
    low = text.lower()
    pos = min((i for t in terms if (i := low.find(t.lower())) >= 0), default=0)
    start = max(0, pos - width // 3)
    return text[start : start + width]


def excerpt(store: Any, locator: str, terms: Sequence[str], *, width: int = 240) -> str | None:
    """A verbatim window of a live version around its first matching term (None if
    not live)."""
    got = store.get(locator)
    if got.get("status") != "live":
        return None
    return excerpt_window(got["content"], terms, width=width)
