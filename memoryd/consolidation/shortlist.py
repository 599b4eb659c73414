"""The lexical shortlist: which active records of the same project and scope a
candidate might repeat, before any adjudicator is asked.

For the distinct content stems of the candidate (search's tokenizer and
stopwords; at most ``MAX_QUERY_WORDS``) one statement over ``memory_terms``
(each record's indexed terms of text and triggers, porter over unicode61, the
very terms ``memory_fts`` holds for those columns) gives one row per (record,
shared term); counting them gives, for every record, how many of the
candidate's stems it shares. A record is shortlisted
when it is active in the candidate's project and scope and shares at least
``memory_shortlist_min_overlap`` of the smaller side's stems (overlap
coefficient, with ``nterms`` stored per record), and at least two stems unless
a side has only one; exact duplicates of the normalized text always are. The
best ``memory_shortlist_size`` by estimated Jaccard stay.

A plain (term, record) index, not FTS5: one ranked OR query (bm25 over every
match, and an AND with a project token matching every record) costs
milliseconds per candidate at 100,000 records, and even per-term FTS5 lookups
cost about three times one index range per term in ``memory_terms``.

A hit's ``similarity`` (its rank on the shortlist, and what an external
adjudicator sees) is the Jaccard similarity of the two texts' content-stem sets
(:func:`stem_set`): case, punctuation, spacing, stopwords, inflection and word
order never count; one different content word in eight gives 7/9 = 0.78. The
default adjudicator reads each pair further (:mod:`.compare`).

Records this run already decided on (added, or flipped away from active) are
not committed yet when the next candidate is shortlisted; the :class:`Overlay`
keeps them in memory so a run sees its own decisions.

A record's text never changes (a merge makes a new record), so :func:`stem_set`
is memoized per text (bounded): a record shortlisted again costs no stemming,
and a hit's exact-duplicate test compares the stored ``norm_hash``.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from memoryd.consolidation.candidates import norm_hash, scope_key
from memoryd.search.fts_query import quote
from memoryd.storage import records
from memoryd.text.terms import STOPWORDS, stem, stems, words

MAX_QUERY_WORDS = 32  # the first distinct content words of a long candidate
CANDIDATE_ROWS = 256  # most records (by shared stems) checked against project and scope
STEM_CACHE = 32_768  # texts whose stem sets a worker keeps (records are shortlisted again)


def content_words(text: str) -> list[str]:
    """Distinct non-stopword words of ``text``, in order."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS))


@functools.lru_cache(maxsize=STEM_CACHE)
def stem_set(text: str) -> frozenset[str]:
    """The stems of the text's content words; of all its words when it has none (a text
    of stopwords only)."""
    content = " ".join(content_words(text))
    return frozenset(stems(content or text))


def index_terms(text: str, triggers: list[str]) -> list[str]:
    """The terms memory_fts indexes for a record's text and triggers columns (the
    triggers column holds their JSON array): what ``memory_terms`` keeps per record."""
    return sorted({*stems(text), *stems(orjson.dumps(triggers).decode())})


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def match_expression(pid: int, skey: str, terms: list[str], status: str = "active") -> str:
    """FTS5: the key tokens of project, scope (optional) and status, and any of ``terms``."""
    key = " AND ".join(t for t in (f"p{pid}", skey, f"st{status}") if t)
    return f"key : ({key}) AND {{text triggers}} : ({' OR '.join(quote(t) for t in terms)})"


@dataclass
class Overlay:
    """A run's own decisions, not yet committed: new records (indexed by stem) and
    records no longer active."""

    added: dict[str, dict] = field(default_factory=dict)  # id -> record
    by_stem: dict[str, list[str]] = field(default_factory=dict)  # stem -> ids
    gone: set[str] = field(default_factory=set)

    def add(self, rec: dict) -> None:
        self.added[rec["id"]] = rec
        for s in stem_set(rec["text"]):
            self.by_stem.setdefault(s, []).append(rec["id"])

    def retire(self, ids: list[str]) -> None:
        self.gone.update(ids)

    def sharing(self, stems_: frozenset[str], skey: str) -> list[dict]:
        """Added, still active records of scope ``skey`` sharing a stem with ``stems_``."""
        ids = {i for s in stems_ for i in self.by_stem.get(s, ())}
        found = (self.added[i] for i in sorted(ids) if i not in self.gone)
        return [r for r in found if r["scope_key"] == skey]


@dataclass
class Shortlister:
    conn: Any  # a reader of the authority
    pid: int
    size: int
    min_overlap: float
    overlay: Overlay = field(default_factory=Overlay)

    def shortlist(self, candidate: dict) -> list[dict]:
        """Colliding active records, most similar first, each with ``similarity``
        (Jaccard of content-stem sets) and ``score`` (shared stems)."""
        skey = scope_key(candidate["scope"])
        mine, digest = stem_set(candidate["text"]), norm_hash(candidate["text"])
        hits: dict[str, dict] = {}  # id -> record with its norm_hash
        for rec in self._stored(skey, len(mine), candidate["text"]):
            hits[rec["id"]] = rec
        for rid in records.exact_duplicates(self.conn, self.pid, skey, digest):
            if rid not in hits and (rec := records.get_record(self.conn, rid)):
                hits[rid] = {**rec, "norm_hash": digest}
        for rec in self.overlay.sharing(mine, skey):
            hits.setdefault(rec["id"], rec)
        out = []
        for hit in hits.values():
            if hit["id"] in self.overlay.gone:
                continue
            theirs = stem_set(hit["text"])
            shared = len(mine & theirs)
            if hit["norm_hash"] == digest or _collides(
                shared, len(mine), len(theirs), self.min_overlap
            ):
                similarity = round(jaccard(mine, theirs), 4)
                out.append({**_public(hit), "score": shared, "similarity": similarity})
        out.sort(key=lambda h: (-h["similarity"], h["id"]))
        return out[: self.size]

    def _stored(self, skey: str, n_mine: int, text: str) -> list[dict]:
        """Committed records sharing enough stems, best estimated Jaccard first."""
        terms = list(dict.fromkeys(stem(w) for w in content_words(text)))[:MAX_QUERY_WORDS]
        shared = Counter(records.term_rows(self.conn, terms))
        floor = min(2, n_mine)
        likely = [n for n, c in shared.most_common(CANDIDATE_ROWS) if c >= floor]
        found = records.active_in_scope(self.conn, likely, self.pid, skey) if likely else []
        keep = [
            r for r in found if _collides(shared[r["n"]], n_mine, r["nterms"], self.min_overlap)
        ]
        keep.sort(key=lambda r: -shared[r["n"]] / (n_mine + r["nterms"] - shared[r["n"]]))
        return keep[: self.size]


def _collides(shared: int, a: int, b: int, min_overlap: float) -> bool:
    """Overlap coefficient at least ``min_overlap``, and two shared stems unless a side
    has a single one."""
    if not a or not b:
        return False
    return shared >= min(2, a, b) and shared / min(a, b) >= min_overlap


def _public(rec: dict) -> dict:
    """What an adjudicator sees of a record."""
    return {k: rec[k] for k in ("id", "kind", "status", "text", "triggers")}
