"""BM25, proximity, speakers and excerpts over the archive's postings.

The archive store (:mod:`memoryd.storage.archive`) keeps the postings (term
frequency, positions and turn structure: :mod:`memoryd.storage.archive.positions`),
the per-project statistics and the live versions holding a term
(:meth:`~memoryd.storage.archive.postings.Postings.live_matches`); scoring them,
ranking and excerpting are search's work and live here. Archive search
(:mod:`memoryd.archive.search`) draws its candidates from :func:`search`.

:func:`search` ranks by BM25; its best :data:`RERANK_POOL` hits are re-scored
with what the positions say: **proximity** (occurrences of two different
query terms at most :data:`PROXIMITY_SPAN` tokens apart add a BM25TP term,
Rasolofo & Savoy 2003: each pair's ``sum 1/d^2`` saturated like a term
frequency, weighted by the smaller idf of the two) and, when asked,
**speakers** (versions where the asked persons or role said a query term in
their own turns come first, those terms scoring a second time; ``own_turns_only``
drops the versions where they said none).
:func:`turn_postings` hands the stored structure of one version to callers
that judge it themselves (the gate).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace

from memoryd.storage.archive.ledgers import Ledgers
from memoryd.storage.archive.positions import Posting, TurnHits, tokenize
from memoryd.storage.archive.postings import Postings
from memoryd.storage.archive.records import Hit

#: BM25 parameters of the archive's exact-term search.
BM25_K1, BM25_B = 1.2, 0.75
#: Occurrences of two query terms at most this many tokens apart are "close".
PROXIMITY_SPAN = 5
#: The best BM25 hits re-scored with positions and speakers (the rest follow, in
#: BM25 order: a re-score only adds, so none of them could pass a pool member's BM25).
RERANK_POOL = 100


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
    postings: Postings,
    project: str,
    query: str | Sequence[str],
    *,
    limit: int = 10,
    classes: Iterable[str] | None = None,
    session: str | None = None,
    created_after: dict[str, float | None] | None = None,
    max_postings_per_term: int = 50_000,
    concepts: Mapping[str, str] | None = None,
    persons: Collection[str] = (),
    role: str | None = None,
    own_turns_only: bool = False,
) -> list[Hit]:
    """Exact-term BM25 over live versions of ``project``, best first (ties by locator),
    the best :data:`RERANK_POOL` re-scored with proximity and speakers (module
    docstring).

    ``query`` is text (tokenized like payloads) or a list of terms; the filters are
    :meth:`~memoryd.storage.archive.postings.Postings.live_matches`'. ``concepts`` maps
    a term to what it stands for (forms of one word: no proximity between them).
    ``persons`` (named speakers' first names, lowercased) and ``role`` ("user",
    "assistant", "tool") name whose own turns are preferred; ``own_turns_only``
    keeps only versions where they said a query term (every match is then
    re-scored, not only the pool). Read-only: the caller takes retrieval leases on
    what it returns.
    """
    stats = postings.corpus_stats(project)  # checks the project name first
    terms = list(dict.fromkeys(tokenize(query) if isinstance(query, str) else query))
    if not terms:
        return []
    matches = postings.live_matches(
        project,
        terms,
        classes=classes,
        session=session,
        created_after=created_after,
        max_postings_per_term=max_postings_per_term,
    )
    n_docs = stats.versions
    avgdl = stats.length / n_docs if n_docs else 1.0
    df = postings.term_stats(project, terms)
    scored = [
        (bm25(h.matched, df, n_docs=n_docs, avgdl=avgdl, length=h.length), h) for h in matches
    ]
    scored.sort(key=lambda sh: (-sh[0], sh[1].locator))
    speakers = _Speakers(set(persons), role)
    pool = len(scored) if own_turns_only and speakers else RERANK_POOL
    scorer = _Rescore(postings, project, df, n_docs, avgdl, concepts or {}, speakers)
    rescored = scorer.scored(scored[:pool], own_turns_only)
    rescored.sort(key=lambda osh: (not osh[0], -osh[1], osh[2].locator))
    rest = [] if own_turns_only and speakers else scored[pool:]
    ranked = [(score, h) for _, score, h in rescored] + rest
    return [replace(h, score=round(score, 6)) for score, h in ranked[:limit]]


class _Speakers:
    """Whose own turns a search prefers: named persons and/or a role."""

    def __init__(self, persons: set[str], role: str | None) -> None:
        self.persons, self.role = persons, role

    def __bool__(self) -> bool:
        return bool(self.persons or self.role)

    def own(self, h: TurnHits) -> bool:
        if self.persons and h.turn.speaker not in self.persons:
            return False
        return self.role is None or h.turn.role == self.role


class _Rescore:
    """BM25 plus proximity and own-turn scores of hits, from their stored postings."""

    def __init__(
        self,
        postings: Postings,
        project: str,
        df: Mapping[str, int],
        n_docs: int,
        avgdl: float,
        concepts: Mapping[str, str],
        speakers: _Speakers,
    ) -> None:
        self.postings, self.project, self.df = postings, project, df
        self.n_docs, self.avgdl = n_docs, avgdl
        self.concepts, self.speakers = concepts, speakers

        self.idf = {t: math.log(1 + (n_docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def scored(
        self, scored: list[tuple[float, Hit]], own_turns_only: bool
    ) -> list[tuple[bool, float, Hit]]:
        """``(score, hit)`` pairs re-scored, each with whether the asked speakers said
        a query term in it (True when none are asked); with ``own_turns_only`` the
        hits where they did not are dropped."""
        wanted = [(h.locator, t) for _, h in scored for t in h.matched]
        got = iter(self.postings.read_postings(self.project, wanted))
        out: list[tuple[bool, float, Hit]] = []
        for score, h in scored:
            postings = {t: p for t in h.matched if (p := next(got)) is not None}
            score += self.proximity(postings, h.length)
            own = self.own_tfs(postings) if self.speakers else {}
            if self.speakers and own_turns_only and not own:
                continue
            score += bm25(own, self.df, n_docs=self.n_docs, avgdl=self.avgdl, length=h.length)
            out.append((bool(own) or not self.speakers, score, h))
        return out

    def own_tfs(self, postings: Mapping[str, Posting]) -> dict[str, int]:
        """Occurrences of each term in the asked speakers' own turns (none: left out)."""
        tfs = {
            t: sum(len(th.positions) for th in p.turns if self.speakers.own(th))
            for t, p in postings.items()
        }
        return {t: n for t, n in tfs.items() if n}

    def proximity(self, postings: Mapping[str, Posting], length: int) -> float:
        """BM25TP: per pair of different concepts, ``sum 1/d^2`` over their occurrences
        at most PROXIMITY_SPAN apart, saturated like a term frequency and weighted by
        the pair's smaller idf."""
        if len(postings) < 2:
            return 0.0
        weight: dict[str, float] = {}
        for t in postings:
            a = self.concepts.get(t, t)
            weight[a] = max(weight.get(a, 0.0), self.idf.get(t, 0.0))
        if len(weight) < 2:
            return 0.0
        occ = sorted(
            (pos, self.concepts.get(t, t)) for t, p in postings.items() for pos in p.positions
        )
        acc: dict[tuple[str, str], float] = defaultdict(float)
        for i, (pos, a) in enumerate(occ):
            for pos2, b in occ[i + 1 : i + 1 + PROXIMITY_SPAN]:
                if pos2 - pos > PROXIMITY_SPAN:
                    break
                if a != b:
                    acc[(a, b) if a < b else (b, a)] += 1.0 / (pos2 - pos) ** 2
        k = BM25_K1 * (1 - BM25_B + BM25_B * (length or 1) / self.avgdl)
        return sum(
            min(weight[a], weight[b]) * v * (BM25_K1 + 1) / (v + k) for (a, b), v in acc.items()
        )


def turn_postings(
    postings: Postings, project: str, locator: str, terms: Sequence[str]
) -> dict[str, Posting]:
    """The stored structure of ``terms`` in one version: per term its frequency and,
    per turn holding it, the turn's index, role, named speaker, whether it is tool
    output, and the term's positions (:class:`~memoryd.storage.archive.positions.Posting`).
    Terms the version does not hold are left out. For judging evidence by who said
    it without re-reading the text (a name asked in a question: ``turn.speaker``)."""
    terms = list(dict.fromkeys(terms))
    got = postings.read_postings(project, [(locator, t) for t in terms])
    return {t: p for t, p in zip(terms, got, strict=True) if p is not None}


def excerpt_window(text: str, terms: Sequence[str], *, width: int = 240) -> str:
    """A verbatim window of ``text`` around the first occurrence of any term."""
    low = text.lower()
    pos = min((i for t in terms if (i := low.find(t.lower())) >= 0), default=0)
    start = max(0, pos - width // 3)
    return text[start : start + width]


def excerpt(
    ledgers: Ledgers, locator: str, terms: Sequence[str], *, width: int = 240
) -> str | None:
    """A verbatim window of a live version around its first matching term (None if
    not live)."""
    got = ledgers.get(locator)
    if got.get("status") != "live":
        return None
    return excerpt_window(got["content"], terms, width=width)
