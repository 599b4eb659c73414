"""Every FTS5 query of project search, in one place.

Each project's chunks are indexed in an FTS5 table (``fts_<project id>``, see
:mod:`memoryd.storage.corpus`: rowid lists without positions, plus tables of
each term's occurrences in binary). Search reads it four ways: ranked matches of
a MATCH string (built by :mod:`memoryd.search.fts_query`, never raw user
text), document frequencies from an ``fts5vocab`` ``row`` table, per-term
postings (the chunks from an ``fts5vocab`` ``instance`` view in the connection's
temp schema, their occurrences from the frequency tables, each holding chunk's
token count from the ``docsize`` shadow table), and the chunk and token totals
from FTS5's averages record. This module knows SQL and FTS5, not the gate.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import numpy as np

from memoryd.storage.corpus import fts_table, instance_view, tf_table


def holding(db, pid: int, match: str, rowids: Sequence[int]) -> list[int]:
    """Which of ``rowids`` hold ``match`` (one token: the index has no positions); one
    rowid lookup per chunk, so the cost follows ``rowids``, not the term."""
    t = fts_table(pid)
    marks = ",".join("?" * len(rowids))
    rows = db.query(
        f"SELECT rowid FROM {t} WHERE {t} MATCH ? AND rowid IN ({marks})", (match, *rowids)
    )
    return [r[0] for r in rows]


def doc_freqs(db, pid: int, stems: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each stem (absent stems are missing from the answer)."""
    if not stems:
        return {}
    marks = ",".join("?" * len(stems))
    rows = db.query(
        f"SELECT term, doc FROM {fts_table(pid)}_vocab WHERE term IN ({marks})", tuple(stems)
    )
    return dict(rows)


def _varints(blob: bytes) -> list[int]:
    """Every SQLite varint of ``blob`` (FTS5's records use SQLite's format)."""
    values, value, length = [], 0, 0
    for byte in blob:
        length += 1
        if length == 9:
            values.append((value << 8) | byte)
            value, length = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value, length = 0, 0
    return values


def totals(db, pid: int) -> tuple[int, int]:
    """(chunks, tokens over all columns) of the index, from FTS5's own averages
    record: one row, whatever the project's size, kept by FTS5 in every commit that
    changes the index (a ``count(*)`` or a sum over ``docsize`` would read every
    chunk)."""
    rows = db.query(f"SELECT block FROM {fts_table(pid)}_data WHERE id = 1")
    values = _varints(rows[0][0]) if rows and rows[0][0] else []
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


def tf_bits(db, pid: int) -> list[int]:
    """The frequency bits whose table the project's index has (see
    :mod:`memoryd.storage.corpus`): a compact project's in temp, else in main."""
    prefix = fts_table(pid) + "_tf"
    rows = db.query(
        "SELECT name FROM temp.sqlite_schema WHERE name GLOB ?1 AND sql LIKE 'CREATE VIRTUAL%'"
        " UNION SELECT name FROM main.sqlite_schema WHERE name GLOB ?1"
        " AND sql LIKE 'CREATE VIRTUAL%'",
        (prefix + "*",),
    )
    return sorted(int(r[0][len(prefix) :]) for r in rows if r[0][len(prefix) :].isdigit())


def _frequencies(db, pid: int, stem: str, docs: np.ndarray, bits: Sequence[int]) -> np.ndarray:
    """Occurrences of ``stem`` in each of the chunks ``docs`` (ascending, each holding
    it): one, plus ``2**k`` for each bit table ``k`` that lists the chunk for it."""
    tf = np.ones(len(docs))
    needle = '"' + stem.replace('"', '""') + '"'
    for k in bits:
        t = tf_table(pid, k)
        rows = db.query(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (needle,))
        if rows:
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            tf[np.searchsorted(docs, ids)] += 1 << k
    return tf


def occurrences(
    db, pid: int, stem: str, bits: Sequence[int]
) -> tuple[np.ndarray, np.ndarray] | None:
    """(rowids, occurrences) of the chunks holding ``stem``, in rowid order: the
    postings without the chunks' sizes (see :func:`postings`); ``bits`` from
    :func:`tf_bits`."""
    try:
        view = _instance_view(db, pid)
        rows = db.query(f"SELECT DISTINCT doc FROM {view} WHERE term = ?", (stem,))
    except apsw.SQLError:
        return None
    docs = np.unique(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
    return docs, _frequencies(db, pid, stem, docs, bits)


def postings(
    db, pid: int, stem: str, bits: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, list[bytes]] | None:
    """(rowids, occurrences, docsize blobs) of the chunks holding ``stem``, in rowid
    order: what BM25 needs of a term, read in queries whose cost is the term's
    postings, not the project. None when the index keeps no sizes."""
    t = fts_table(pid)
    try:
        view = _instance_view(db, pid)
        # CROSS JOIN keeps the term's postings as the outer loop: one docsize lookup
        # by rowid per chunk holding the term.
        rows = db.query(
            f"SELECT p.doc, d.sz FROM (SELECT DISTINCT doc FROM {view} WHERE term = ?) AS p"
            f" CROSS JOIN {t}_docsize AS d ON d.id = p.doc ORDER BY p.doc",
            (stem,),
        )
    except apsw.SQLError:
        return None
    docs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return docs, _frequencies(db, pid, stem, docs, bits), [r[1] for r in rows]


def size_blobs(db, pid: int, rowids: Sequence[int]) -> dict[int, bytes]:
    """rowid -> docsize blob of the given chunks."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    t = fts_table(pid)
    return dict(db.query(f"SELECT id, sz FROM {t}_docsize WHERE id IN ({marks})", tuple(rowids)))
