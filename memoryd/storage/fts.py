"""Every FTS5 query of project search, in one place.

Each project's chunks are indexed in an FTS5 table (``fts_<project id>``, see
:mod:`memoryd.storage.corpus`). Search reads it four ways: ranked matches of
a MATCH string (built by :mod:`memoryd.search.fts_query`, never raw user
text), document frequencies from an ``fts5vocab`` ``row`` table, per-term
postings (with each holding chunk's token count from the ``docsize`` shadow
table) from an ``fts5vocab`` ``instance`` view in the connection's temp schema,
and the chunk and token totals from FTS5's averages record. This module knows
SQL and FTS5, not the gate.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memoryd.storage.corpus import fts_table, instance_view
from memoryd.storage.unsearched import varints

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


def ranked(db, pid: int, match: str, limit: int) -> list[tuple[int, float]]:
    """(rowid, rank) of the ``limit`` best chunks for ``match`` by FTS5's BM25 rank,
    best first, and every chunk tied with the last of them (:func:`_through_ties`)."""
    t = fts_table(pid)
    sql = f"SELECT rowid, rank FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT ?"
    return [(r[0], r[1]) for r in _through_ties(db, sql, match, limit)]


def ranked_with_phrases(db, pid: int, match: str, limit: int) -> list[tuple[int, int, float]]:
    """(rowid, bit mask of the phrases of ``match`` it holds, rank) of the ``limit``
    best chunks by rank and every chunk tied with the last of them
    (:func:`_through_ties`); :func:`prepare` must have run on ``db``."""
    t = fts_table(pid)
    sql = f"SELECT rowid, {MATCHED}({t}), rank FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT ?"
    return [(r[0], r[1], r[2]) for r in _through_ties(db, sql, match, limit)]


def _through_ties(db, sql: str, match: str, limit: int) -> list[tuple]:
    """The first ``limit`` rows of ``sql`` (ordered by rank, the last column) and the
    rows after them of the same rank as the last. FTS5 orders equal ranks by rowid,
    which follows the order files were written in: the caller breaks ties by content,
    so it needs the whole tie. The query is asked again with twice the limit while
    the row past the limit still ties (each asking ranks every match anyway)."""
    if limit <= 0:
        return []
    ask = limit + 1
    while True:
        rows = db.query(sql, (match, ask))
        if len(rows) <= limit:
            return rows
        edge = rows[limit - 1][-1]
        if len(rows) < ask or rows[-1][-1] != edge:
            return [r for r in rows if r[-1] <= edge]
        ask *= 2


def phrases_held(db, pid: int, match: str, rowids: Sequence[int]) -> dict[int, int]:
    """For each of ``rowids`` holding any phrase of ``match``: the bit mask of the
    phrases it holds. One rowid lookup per chunk (FTS5 seeks each in the phrases'
    doclists), so the cost follows ``rowids``, not how common the phrases are;
    :func:`prepare` must have run on ``db``."""
    if not rowids:
        return {}
    t = fts_table(pid)
    marks = ",".join("?" * len(rowids))
    return dict(
        db.query(
            f"SELECT rowid, {MATCHED}({t}) FROM {t} WHERE {t} MATCH ? AND rowid IN ({marks})",
            (match, *rowids),
        )
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


def totals(db, pid: int) -> tuple[int, int]:
    """(chunks, tokens over all columns) of the index, from FTS5's own averages
    record: one row, whatever the project's size, kept by FTS5 in every commit that
    changes the index (a ``count(*)`` or a sum over ``docsize`` would read every
    chunk)."""
    return totals_of(averages(db, pid))


def averages(db, pid: int) -> bytes | None:
    """FTS5's averages record of the project's index (None: none yet)."""
    rows = db.query(f"SELECT block FROM {fts_table(pid)}_data WHERE id = 1")
    return bytes(rows[0][0]) if rows and rows[0][0] else None


def totals_of(record: bytes | None) -> tuple[int, int]:
    """(chunks, tokens over all columns) an averages record says (:func:`totals`)."""
    values = varints(record) if record else []
    if not values:
        return 0, 0
    return values[0], sum(values[1:])


def row_count(db, pid: int) -> int:
    """Chunks in the index (see :func:`totals`)."""
    return totals(db, pid)[0]


def _instance_view(db, pid: int) -> str:
    """The project's ``fts5vocab`` instance view in the connection's temp schema. A
    compact project's view (over its temp index) exists already: see
    corpus.ready_index; an indexed project's is made here, over the stored one."""
    t, view = fts_table(pid), instance_view(pid)
    db.query(f"CREATE VIRTUAL TABLE IF NOT EXISTS {view} USING fts5vocab(main, {t}, instance)")
    return view


def sizes(db, pid: int) -> list[tuple[int, bytes]] | None:
    """(rowid, docsize blob) of every chunk of the index: read whole only for small
    projects (the statistics' choice). None when the index keeps no sizes."""
    try:
        return db.query(f"SELECT id, sz FROM {fts_table(pid)}_docsize")
    except apsw.SQLError:
        return None


def postings(db, pid: int, stem: str) -> list[tuple[int, int, bytes]] | None:
    """(rowid, occurrences, docsize blob) of every chunk holding ``stem``, in rowid
    order: what BM25 needs of a term, read in one query whose cost is the term's
    postings, not the project. None when the index stores no positions
    (``detail=none/column``) or no sizes (``columnsize=0``)."""
    t = fts_table(pid)
    try:
        view = _instance_view(db, pid)
        # CROSS JOIN keeps the term's postings as the outer loop: one docsize lookup
        # by rowid per chunk holding the term.
        return db.query(
            f"SELECT p.doc, p.n, d.sz FROM (SELECT doc, count(*) AS n FROM {view}"
            f" WHERE term = ? GROUP BY doc) AS p CROSS JOIN {t}_docsize AS d"
            " ON d.id = p.doc ORDER BY p.doc",
            (stem,),
        )
    except apsw.SQLError:
        return None


def occurrences(db, pid: int, stem: str):
    """(rowids ascending, occurrences) of every chunk holding ``stem`` as two int64
    arrays (:func:`postings` without the sizes), or None.

    The instance view's rows are concatenated in SQL and counted in numpy: ``GROUP BY
    doc`` over the view sorts every occurrence in a temporary B-tree (SQLite cannot
    know the view yields them in rowid order), which cost 2-4x the read itself; numpy
    counts runs of equal rowids, after checking the order (else it sorts)."""
    import numpy as np  # only the search engine reads postings

    try:
        view = _instance_view(db, pid)
        rows = db.query(f"SELECT group_concat(doc) FROM {view} WHERE term = ?", (stem,))
    except apsw.SQLError:
        return None
    text = rows[0][0] if rows else None
    if not text:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return counted(np.fromstring(text, dtype=np.int64, sep=","))


def counted(each):
    """(distinct values ascending, how often each occurs) of an int64 array, as
    ``np.unique(each, return_counts=True)``: runs are counted without a sort when the
    array is in order already (a term's rows of the instance view are)."""
    import numpy as np

    if not len(each) or np.any(each[1:] < each[:-1]):
        docs, counts = np.unique(each, return_counts=True)
        return docs, counts.astype(np.int64)
    starts = np.flatnonzero(np.concatenate(([True], each[1:] != each[:-1])))
    return each[starts], np.diff(starts, append=len(each)).astype(np.int64)
