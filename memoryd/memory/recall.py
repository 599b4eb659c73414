"""Memory records as a search candidate source: scored records for query terms.

The search pipeline (issue 10) calls :func:`find_records` beside its code
candidates and puts the results through the same gate; each item carries
``"source": "memory"``.
"""

from __future__ import annotations

from typing import Any

from memoryd.memory.shortlist import match_expression
from memoryd.storage import records
from memoryd.storage.corpus import project_id


def find_records(
    db: Any, project: str, terms: list[str], limit: int, *, statuses: tuple[str, ...] = ("active",)
) -> list[dict]:
    """Records of ``project`` (any scope) in ``statuses`` matching any of ``terms`` in
    their text or triggers, best bm25 first: ``{"source", "id", "kind", "status",
    "text", "score"}`` (score: negated bm25, higher is better)."""
    words = [t for t in dict.fromkeys(terms) if t.strip()]
    if not words or limit < 1:
        return []
    pid = project_id(db, project)
    found: list[dict] = []
    for status in statuses:
        found += records.fts_matches(db.conn, match_expression(pid, "", words, status), limit)
    found.sort(key=lambda r: (-r["score"], r["id"]))
    keys = ("id", "kind", "status", "text", "score")
    return [{"source": "memory", **{k: r[k] for k in keys}} for r in found[:limit]]


MIN_COVERAGE = 0.5  # the gate's half coverage: a record must hold half the asked terms


def admitted_records(db: Any, project: str, query: str, limit: int) -> list[dict]:
    """Records that pass the project gate's coverage rule for ``query``: at least half
    of its content stems (and two of them when it has two or more) in the record's text
    or triggers. Items carry ``"source": "memory"`` and the record's text as excerpt."""
    from memoryd.search.terms import STOPWORDS, stem, words

    asked = [w for w in dict.fromkeys(words(query)) if w not in STOPWORDS]
    wanted = {stem(w) for w in asked}
    if not wanted:
        return []
    need = max(min(2, len(wanted)), MIN_COVERAGE * len(wanted))
    items = []
    for record in find_records(db, project, asked, limit * 4):
        triggers = (records.get_record(db.conn, record["id"]) or {}).get("triggers") or []
        held = {stem(w) for w in words(" ".join([record["text"], *triggers]))}
        if len(wanted & held) >= need:
            items.append({**record, "excerpt": record["text"]})
    return items[:limit]
