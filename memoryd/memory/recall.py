"""Memory records as a search candidate source: scored records for query terms.

:class:`RecordSource` is the search pipeline's source of records (beside the
project's chunks, through the same gate); :func:`find_records` lists records
matching words. Each item carries ``"source": "memory"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.memory.shortlist import match_expression
from memoryd.search import gate, semantic
from memoryd.search.evidence import held, other_sense
from memoryd.search.pipeline import Found, Stats
from memoryd.search.terms import Query, stems
from memoryd.storage import records
from memoryd.storage.corpus import project_id

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
    return [{"source": "memory", **{k: r[k] for k in keys}} for r in found]


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
    ``"source": "memory"`` and the record's text as excerpt. The project's id is the
    chunks source's (looked up once for both)."""

    exact = False

    def __init__(self, db: Any, project: str, chunks: ProjectSource) -> None:
        self.db, self.project, self.chunks, self.pid = db, project, chunks, chunks.pid
        self.where = chunks.where  # its statistics are the project's

    def stats(self, q: Query) -> Stats:
        return self.chunks.stats(q)

    def find(self, q: Query, p: gate.Plan, limit: int) -> Found:
        """Records holding any form of a focus term, admitted by the gate on the focus
        terms their text and triggers hold (named entities evidenced, a word's other
        sense not counted), or for a short query on the code similarity of its
        record vector alone (:mod:`memoryd.search.semantic`). No gap: the chunks'
        source says what is missing."""
        asked = [w for t in p.focus for w in (t.word, *t.forms)]
        sims = semantic.record_similarities(self.db, self.pid, self.stats(q), q, p)
        pool = _matches(self.db, self.pid, asked, limit * 4)
        pool += semantic.near_records(self.db, sims, p, {r["n"] for r in pool})
        admitted = []
        for record in pool:
            text = "\n".join([record["text"], *record["triggers"]])
            matched = held(p, stems(text))
            matched -= other_sense(text, p, matched)
            verdict = gate.admit(p, matched, cosine=sims.get(record["n"]))
            if verdict.admitted and not gate.missing_entities(p, [matched]):
                admitted.append(record)
        return Found([_item(r) for r in semantic.fuse_records(admitted, sims)[:limit]])


def _item(record: dict) -> dict:
    keys = ("id", "kind", "status", "text", "score")
    return {"source": "memory", **{k: record[k] for k in keys}, "excerpt": record["text"]}
