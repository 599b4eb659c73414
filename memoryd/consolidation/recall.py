"""Memory records as a search candidate source: scored records for query terms.

:class:`RecordSource` is the search pipeline's source of records (beside the
project's chunks, through the same gate); :func:`find_records` lists records
matching words. Each item carries ``"source": "memory"`` and ``"conflicts_with"``:
the active records it is in conflict with (the default adjudicator could not tell
which of two statements is current: both are shown, each naming the other), empty
when none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.consolidation import anchors
from memoryd.consolidation.shortlist import match_expression
from memoryd.search import gate, semantic
from memoryd.search.pipeline import Found, Fusion, Stats, scored
from memoryd.storage import records
from memoryd.storage.corpus import project_id
from memoryd.text.evidence import held, other_sense
from memoryd.text.terms import Query, stems

if TYPE_CHECKING:
    from memoryd.search.engine import ProjectSource


def find_records(
    db: Any, project: str, terms: list[str], limit: int, *, statuses: tuple[str, ...] = ("active",)
) -> list[dict]:
    """Records of ``project`` (any scope) in ``statuses`` matching any of ``terms`` in
    their text or triggers, best bm25 first: ``{"source", "id", "kind", "status",
    "text", "score"}`` (score: negated bm25, higher is better)."""
    words = [t for t in dict.fromkeys(terms) if t.strip()]
    if not words or limit < 1:
        return []
    keys = ("id", "kind", "status", "text", "score")
    found = _matches(db, project_id(db, project), words, limit, statuses)
    marks = records.conflicts(db.conn, [r["id"] for r in found])
    return [
        {"source": "memory", **{k: r[k] for k in keys}, "conflicts_with": marks.get(r["id"], [])}
        for r in found
    ]


def _matches(
    db: Any, pid: int, words: list[str], limit: int, statuses: tuple[str, ...] = ("active",)
) -> list[dict]:
    """Records (with their triggers) of project ``pid`` matching any of ``words``, best
    bm25 first."""
    found: list[dict] = []
    for status in statuses:
        found += records.fts_matches(db.conn, match_expression(pid, "", words, status), limit)
    found.sort(key=lambda r: (-r["score"], r["id"]))
    return found[:limit]


class RecordSource:
    """Active memory records of a project as a source of the search pipeline
    (:mod:`memoryd.search.pipeline`): judged on the project's plan (its term
    statistics: records belong to the project and are few), so a record answers
    only what a chunk holding the same words would answer. Items carry
    ``"source": "memory"``, the record's text as excerpt and its refs marked where
    the cited code is now (``"refs"``). The project's id is the chunks source's
    (looked up once for both)."""

    exact = False
    kind = "records"

    def __init__(self, db: Any, project: str, chunks: ProjectSource) -> None:
        self.db, self.project, self.chunks, self.pid = db, project, chunks, chunks.pid
        self.where = chunks.where  # its statistics are the project's
        self.review: list[dict] = []  # records found whose cited code is all gone

    def stats(self, q: Query) -> Stats:
        return self.chunks.stats(q)

    def find(self, q: Query, p: gate.Plan, limit: int) -> Found:
        """Records holding any form of a focus term, admitted by the gate on the focus
        terms their text and triggers hold (named entities evidenced, a word's other
        sense not counted), or for a short query on the code similarity of its
        record vector alone (:mod:`memoryd.search.semantic`). No gap: the chunks'
        source says what is missing."""
        asked = [w for t in p.focus for w in (t.word, *t.forms)]
        dense = self.chunks.enc is not None  # the chunks' dense route is the records' too
        sims = semantic.record_similarities(self.db, self.pid, self.stats(q), q, p) if dense else {}
        pool = _matches(self.db, self.pid, asked, limit * 4)
        pool += semantic.near_records(self.db, sims, p, {r["n"] for r in pool})
        admitted = []
        evidence: dict[int, float] = {}  # record n -> gate.evidence
        for record in pool:
            text = "\n".join([record["text"], *record["triggers"]])
            matched = held(p, stems(text))
            matched -= other_sense(text, p, matched)
            verdict = gate.admit(p, matched, cosine=sims.get(record["n"]))
            if verdict.admitted and not gate.missing_entities(p, [matched]):
                admitted.append(record)
                evidence[record["n"]] = gate.evidence(verdict, sims.get(record["n"]))
        ranked = semantic.fuse_records(admitted, sims)[:limit]
        marks = records.conflicts(self.db.conn, [r["id"] for r in ranked])
        items = [_item(r, marks.get(r["id"], [])) for r in ranked]
        return Found(self.checked(_scored(ranked, items, evidence)))

    def checked(self, items: list[dict]) -> list[dict]:
        """The items with their refs marked where the cited code is now
        (:mod:`.anchors`); a record whose refs are all stale is set apart in
        ``review`` (it needs a look, it is no active evidence)."""
        kept, review = anchors.split_review(self.db.conn, items)
        self.review += review
        return kept


def _scored(ranked: list[dict], items: list[dict], evidence: dict[int, float]) -> list[dict]:
    """``items`` of the ``ranked`` records, each scored as project chunks are
    (:func:`pipeline.scored`): its evidence times its fused rank score, here of the
    records' own order and their evidence's."""
    fusion = Fusion()
    fusion.add(ranked, key=lambda r: r["n"])
    fusion.add(sorted(ranked, key=lambda r: -evidence[r["n"]]), key=lambda r: r["n"])
    for record, item in zip(ranked, items, strict=True):
        scored(item, evidence[record["n"]], fusion.score(record["n"]))
    return items


def _item(record: dict, conflicts_with: list[str]) -> dict:
    keys = ("id", "kind", "status", "text", "score")
    item = {"source": "memory", **{k: record[k] for k in keys}, "excerpt": record["text"]}
    return {**item, "conflicts_with": conflicts_with}
