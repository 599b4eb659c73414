"""Every FTS5 query of project search, in one place.

Each project's chunks are indexed in an FTS5 table (``fts_<project id>``, see
:mod:`memoryd.storage.corpus`). Search reads it four ways: ranked matches of
a MATCH string (built by :mod:`memoryd.search.fts_query`, never raw user
text), document frequencies from an ``fts5vocab`` ``row`` table, per-term
postings from an ``fts5vocab`` ``instance`` view in the connection's temp
schema, and per-chunk token counts from the ``docsize`` shadow table. This
module knows SQL and FTS5, not the gate.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memoryd.storage.corpus import fts_table

MATCHED = "memoryd_matched"


def _matched_phrases(api, *args) -> int:
    """FTS5 auxiliary function: bit i set when the row holds phrase i."""
    mask = 0
    for i in range(api.phrase_count):
        if any(api.phrase_locations(i)):
            mask |= 1 << i
    return mask


def prepare(db) -> None:
    """Register the auxiliary function :func:`ranked_with_phrases` needs (once per
    connection)."""
    if not getattr(db, "_memoryd_search_ready", False):
        db.conn.register_fts5_function(MATCHED, _matched_phrases)
        db._memoryd_search_ready = True


def ranked(db, pid: int, match: str, limit: int) -> list[int]:
    """Rowids of the ``limit`` best chunks for ``match`` by FTS5's BM25 rank."""
    t = fts_table(pid)
    rows = db.query(
        f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT ?", (match, limit)
    )
    return [r[0] for r in rows]


def ranked_with_phrases(db, pid: int, match: str, limit: int) -> list[tuple[int, int]]:
    """(rowid, bit mask of the phrases of ``match`` it holds) of the ``limit`` best
    chunks by rank; :func:`prepare` must have run on ``db``."""
    t = fts_table(pid)
    return db.query(
        f"SELECT rowid, {MATCHED}({t}) FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT ?",
        (match, limit),
    )


def doc_freqs(db, pid: int, stems: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each stem (absent stems are missing from the answer)."""
    if not stems:
        return {}
    marks = ",".join("?" * len(stems))
    rows = db.query(
        f"SELECT term, doc FROM {fts_table(pid)}_vocab WHERE term IN ({marks})", tuple(stems)
    )
    return dict(rows)


def _first_varint(blob: bytes) -> int:
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


def row_count(db, pid: int) -> int:
    """Chunks in the index, from FTS5's own averages record (one row, whatever the
    project's size; a ``count(*)`` would read every chunk)."""
    rows = db.query(f"SELECT block FROM {fts_table(pid)}_data WHERE id = 1")
    if rows and rows[0][0]:
        return _first_varint(rows[0][0])
    return 0


def chunk_sizes(db, pid: int) -> list[tuple[int, bytes]] | None:
    """(rowid, docsize blob) of every chunk in rowid order; None when the index keeps
    no sizes (``columnsize=0`` or another layout)."""
    try:
        return db.query(f"SELECT id, sz FROM {fts_table(pid)}_docsize ORDER BY id")
    except apsw.SQLError:
        return None


def postings(db, pid: int, stem: str) -> list[tuple[int, int]] | None:
    """(rowid, occurrences) of every chunk holding ``stem``, in rowid order; None when
    the index stores no positions (``detail=none/column``)."""
    t = fts_table(pid)
    view = f"{t}_inst"
    try:
        db.query(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{view} USING fts5vocab(main, {t}, instance)"
        )
        return db.query(
            f"SELECT doc, count(*) FROM temp.{view} WHERE term = ? GROUP BY doc ORDER BY doc",
            (stem,),
        )
    except apsw.SQLError:
        return None
