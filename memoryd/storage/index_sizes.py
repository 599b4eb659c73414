"""Each indexed project's chunk sizes, stored as one array by rowid.

BM25 needs the token count of every chunk holding a query term. FTS5 keeps them in
its ``docsize`` table, a row a chunk, and a term's sizes read by rowid cost a B-tree
seek each (about 0.5 µs a posting): most of a new generation's first query on a
large project. So the pack pass's last job reads every size once, in a worker and
from one read snapshot (:func:`snapshot`), and its apply stores them as one array
with the generation and FTS5 averages record they were read at (:func:`store_in`),
only while the project's generation is still that one. A search of that generation
reads the array whole (:func:`load`: a few milliseconds for two million chunks);
any other generation, or an averages record that differs, reads its sizes from
``docsize`` as before, so a stale array is never used.

Every change to a project's index bumps its generation (``put_files``,
``retire_files``, ``store_packed``); ``rebuild_index`` and a project's deletion drop
its array.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from memoryd.base.lazy import lazy_module
from memoryd.storage.lazy import SIZES, ensure, present, reading

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

MAX_SPREAD = 4  # rowid span per chunk past which no array is kept (many chunks replaced)
READ_STEP = 1 << 18  # rowids read a statement


class Snapshot(NamedTuple):
    """A project's chunk sizes as read at one generation: ``data`` holds the size of the
    chunk of rowid ``low + i`` at ``i``, as ``width``-byte unsigned integers (all bits
    set: no chunk of that rowid)."""

    generation: int
    averages: bytes
    low: int
    width: int
    data: bytes


def docsize_tokens(data: bytes, lengths) -> np.ndarray:
    """Tokens of each chunk: the sum of the SQLite varints (one per column) of its FTS5
    docsize blob, for blobs concatenated in ``data`` whose byte lengths are
    ``lengths`` (decoded all at once: a Python loop per byte is several times
    slower)."""
    raw = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    count = len(lengths)
    if not len(raw):
        return np.zeros(count)
    last = (raw & 0x80) == 0  # the last byte of each varint
    ends = np.flatnonzero(last)
    varint = np.concatenate(([0], np.cumsum(last)[:-1]))  # which varint each byte is in
    shift = 7 * (ends[varint] - np.arange(len(raw)))
    value = (raw & 0x7F) << shift
    owner = np.repeat(np.arange(count), lengths)
    return np.bincount(owner, weights=value, minlength=count)


def snapshot(db, pid: int, step: int = READ_STEP) -> Snapshot | None:
    """Every chunk size of the project's stored index with the generation and averages
    record of the same read transaction (``step`` rowids a statement: the worker's
    memory stays bounded); None for a project without a stored index (compact), an
    empty one, or rowids spread too thin for an array."""
    conn: apsw.Connection = getattr(db, "conn", db)
    t = f"fts_{int(pid)}"
    own = not conn.in_transaction  # else the caller's transaction is the one snapshot
    if own:
        conn.execute("BEGIN")  # one snapshot for every statement below
    try:
        head = conn.execute(
            "SELECT (SELECT generation FROM projects WHERE id = ? AND compact_limit = 0),"
            f" (SELECT block FROM {t}_data WHERE id = 1), min(id), max(id), count(*)"
            f" FROM {t}_docsize",
            (pid,),
        ).fetchone()
        generation, averages, low, high, count = head
        if generation is None or not averages or not count:
            return None
        span = high - low + 1
        if span > MAX_SPREAD * count:
            return None
        parts = [_sizes(conn, t, start, start + step) for start in range(low, high + 1, step)]
    except apsw.SQLError:  # no stored index
        return None
    finally:
        if own:
            conn.execute("COMMIT")
    width = 2 if max(int(sizes.max()) for _, sizes in parts if len(sizes)) < 0xFFFF else 4
    dtype = np.dtype(f"<u{width}")
    out = np.full(span, np.iinfo(dtype).max, dtype=dtype)
    for rowids, sizes in parts:
        out[rowids - low] = sizes
    return Snapshot(generation, bytes(averages), low, width, out.tobytes())


def _sizes(conn: apsw.Connection, table: str, start: int, stop: int) -> tuple:
    """(rowids, sizes) of the index's chunks of rowids from ``start`` to before ``stop``:
    three strings concatenated in SQL, parsed by numpy (a row object each costs more)."""
    ids, lengths, hexed = conn.execute(
        f"SELECT group_concat(id), group_concat(length(sz)), group_concat(hex(sz), '')"
        f" FROM {table}_docsize WHERE id >= ? AND id < ?",
        (start, stop),
    ).fetchone()
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rowids = np.fromstring(ids, dtype=np.int64, sep=",")
    sizes = docsize_tokens(bytes.fromhex(hexed), np.fromstring(lengths, dtype=np.int64, sep=","))
    return rowids, sizes


def store_in(tx: apsw.Connection, pid: int, snap: Snapshot) -> bool:
    """Store ``snap`` as the project's array when its generation and averages record
    are still the project's (else nothing: a write since made it stale)."""
    row = tx.execute("SELECT generation FROM projects WHERE id = ?", (pid,)).fetchone()
    if row is None or row[0] != snap.generation:
        return False
    record = tx.execute(f"SELECT block FROM fts_{int(pid)}_data WHERE id = 1").fetchone()
    if record is None or bytes(record[0]) != snap.averages:
        return False
    ensure(tx, SIZES)
    tx.execute(
        "INSERT OR REPLACE INTO index_sizes (project_id, generation, averages, low, width, data)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (pid, *snap),
    )
    return True


def drop_in(tx: apsw.Connection, pid: int) -> None:
    """Forget the project's array (its index rebuilt, or the project deleted)."""
    if present(tx, SIZES):
        tx.execute("DELETE FROM index_sizes WHERE project_id = ?", (pid,))


@reading(SIZES, lambda: None)
def load(db, pid: int, generation: int, averages: bytes | None) -> tuple[int, np.ndarray] | None:
    """(lowest rowid, size of each chunk by rowid less it) of the project's array when
    it was read at ``generation`` with this ``averages`` record, None otherwise; the
    sizes as stored (unsigned, all bits set where no chunk is: 2 bytes a rowid, not a
    float's 8)."""
    rows = db.query(
        "SELECT low, width, data FROM index_sizes WHERE project_id = ? AND generation = ?"
        " AND averages = ?",
        (pid, generation, averages),
    )
    if not rows or averages is None:
        return None
    low, width, data = rows[0]
    return low, np.frombuffer(data, dtype=np.dtype(f"<u{width}"))
