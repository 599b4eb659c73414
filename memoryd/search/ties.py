"""Equal scores in the order of their content: path, then start line.

A chunk's rowid follows the order the workers committed its file in (their number,
the batch order, an earlier ingest of part of the tree), so a tie broken by rowid
made the same files answer one query differently in two homes. Every ranking a
query cuts or fuses (BM25 pools, an identifier's chunks, the nearest codes) breaks
its ties here instead. Chunk rows are read only for the rows that tie, and kept per
index generation with the term statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.search.stats import TermStats
from memoryd.storage.corpus import chunk_rows

_CHUNK_CACHE = 200_000


def chunk_info(db, stats: TermStats, rowids: Sequence[int]) -> dict[int, tuple]:
    """rowid -> (rowid, file id, path, start line, end line, content hash), cached per
    generation."""
    known: dict[int, tuple] = stats.extra.setdefault("chunks", {})  # type: ignore[assignment]
    need = [r for r in rowids if r not in known]
    if need:
        if len(known) > _CHUNK_CACHE:
            known.clear()
        known.update((r[0], r) for r in chunk_rows(db, need))
    return known


def by_content(db, stats: TermStats, top: list[tuple], keep: int) -> list[tuple]:
    """The ``keep`` best of ``top`` (rows ``(rowid, ..., score)``, higher better;
    every row tied with the last kept one must be among them), equal scores in order
    of path, then start line."""
    count: dict[float, int] = {}
    for row in top:
        count[row[-1]] = count.get(row[-1], 0) + 1
    tied = [row[0] for row in top if count[row[-1]] > 1]
    if not tied:
        return sorted(top, key=lambda row: -row[-1])[:keep]
    info = chunk_info(db, stats, tied)

    def key(row: tuple) -> tuple:
        r = info.get(row[0]) if count[row[-1]] > 1 else None
        return (-row[-1], r[2], r[3]) if r is not None else (-row[-1], "", 0)

    return sorted(top, key=key)[:keep]
