"""The lexical shortlist: which active records of the same project and scope a
candidate might repeat, before any adjudicator is asked.

One FTS5 query over ``memory_fts`` (the record text and triggers, tokenized as
project search tokenizes: porter over unicode61) restricted by the key tokens
of project, scope and status, OR over the candidate's content words (search's
stopwords dropped), best ``memory_shortlist_size`` by bm25. A hit stays on the
shortlist when it shares at least ``memory_shortlist_min_overlap`` of the
smaller side's distinct stems (overlap coefficient); exact duplicates of the
normalized text are always on it.

The near-duplicate measure (documented in the README) is the Jaccard
similarity of the two texts' content-stem sets (:func:`stem_set`): case,
punctuation, spacing, stopwords, inflection and word order never count; one
different content word in eight gives 7/9 = 0.78.

Records this run already decided on (added, or flipped away from active) are
not committed yet when the next candidate is shortlisted; the :class:`Overlay`
keeps them in memory so a run sees its own decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryd.memory.candidates import norm_hash, scope_key
from memoryd.search.fts_query import quote
from memoryd.search.terms import STOPWORDS, stems, words
from memoryd.storage import records

MAX_QUERY_WORDS = 32  # the first distinct content words of a long candidate


def content_words(text: str) -> list[str]:
    """Distinct non-stopword words of ``text``, in order."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS))


def stem_set(text: str) -> frozenset[str]:
    """The stems of the text's content words; of all its words when it has none (a text
    of stopwords only)."""
    content = " ".join(content_words(text))
    return frozenset(stems(content or text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / min(|a|, |b|): how much of the smaller text the other contains."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


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
        for stem in stem_set(rec["text"]):
            self.by_stem.setdefault(stem, []).append(rec["id"])

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
        (Jaccard of stem sets) and ``score`` (bm25, higher is better; 0 for records
        of this run)."""
        skey = scope_key(candidate["scope"])
        mine = stem_set(candidate["text"])
        hits = {h["id"]: h for h in self._fts(skey, candidate["text"])}
        for rid in records.exact_duplicates(
            self.conn, self.pid, skey, norm_hash(candidate["text"])
        ):
            hits.setdefault(rid, self._hit(rid))
        for rec in self.overlay.sharing(mine, skey):
            hits.setdefault(rec["id"], {**_public(rec), "score": 0.0})
        out = []
        for hit in hits.values():
            if hit is None or hit["id"] in self.overlay.gone:
                continue
            theirs = stem_set(hit["text"])
            exact = norm_hash(hit["text"]) == norm_hash(candidate["text"])
            if exact or overlap(mine, theirs) >= self.min_overlap:
                out.append({**hit, "similarity": round(jaccard(mine, theirs), 4)})
        out.sort(key=lambda h: (-h["similarity"], -h["score"], h["id"]))
        return out[: self.size]

    def _fts(self, skey: str, text: str) -> list[dict]:
        terms = content_words(text)[:MAX_QUERY_WORDS]
        if not terms:
            return []
        return records.fts_matches(self.conn, match_expression(self.pid, skey, terms), self.size)

    def _hit(self, rid: str) -> dict | None:
        rec = records.get_record(self.conn, rid)
        return {**_public(rec), "score": 0.0} if rec else None


def _public(rec: dict) -> dict:
    """What an adjudicator sees of a record."""
    return {k: rec[k] for k in ("id", "kind", "status", "text", "triggers")}
