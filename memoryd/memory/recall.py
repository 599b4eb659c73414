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
