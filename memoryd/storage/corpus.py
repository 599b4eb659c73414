"""Project memory in the authority: projects, files, chunks and their full-text index.

Each project has its own contentless FTS5 table ``fts_<id>`` (columns ``body``
and ``path``, rowid = ``chunks.id``; body first, because FTS5 spends a column
marker on every posting outside column 0) and an ``fts5vocab`` view ``fts_<id>_vocab``
over it, so term statistics are per project and projects never see each
other. File text is stored once per file, zstd-compressed in blocks of several
files (an older home's frames may name a ``zdicts`` dictionary; new ones have
none); a chunk is a line range of its file. The FTS tables are derived:
:func:`rebuild_index` recreates them from ``files`` and ``chunks``.

Two layouts. A project created with a ``compact_limit`` (the ``compact_max_bytes``
setting) is *compact* while its live source stays within it: its index is not
stored at all; each connection that searches it builds it in its temp schema from
the stored files, once per generation (:func:`ready_index`), where the unqualified
table names search uses find it first. A small project then costs its compressed
files and chunk rows only (an FTS5 index of a few files takes more pages than its
content). The commit that would take it past the limit stores its index first and
the project is *indexed* from then on (never back). Both layouts index the same
rows with the same rowids, so search answers the same either way.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import apsw

from memoryd.base import killpoints
from memoryd.base.config import (
    BLOCK_CACHE_BYTES,
    BODY_BLOCK_BYTES,
    COMPRESSION_LEVEL,
    FILE_LOOKUP_PATHS,
    FTS_AUTOMERGE,
    INDEX_MERGE_WORK,
    SETTINGS,
    SIZES_PER_PAGE,
)
from memoryd.base.errors import MemorydError
from memoryd.base.lazy import lazy_module
from memoryd.storage import index_sizes
from memoryd.storage.lazy import ZDICTS, reading
from memoryd.storage.unsearched import (
    index_text,
    keep_true_sizes,
    rewrite_sizes,
    varints,
    with_context,
)

zstandard = lazy_module("zstandard")  # loaded when a body is (de)compressed, not by a listing
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
# zstd (de)compressor objects must not be used by two threads at once (a control
# socket's request threads search one home together): each thread keeps its own.
_ZSTD = threading.local()


def _per_thread(name: str) -> dict:
    """This thread's cache ``name`` (dictionary id or level -> (de)compressor)."""
    cache = getattr(_ZSTD, name, None)
    if cache is None:
        cache = {}
        setattr(_ZSTD, name, cache)
    return cache


def forget_dictionaries() -> None:
    """Drop this thread's dictionary decompressors (a test reading a home's own)."""
    _per_thread("dict_dctx").clear()


class UnknownProject(MemorydError):
    code = "UNKNOWN_PROJECT"


class ChunkRow(NamedTuple):  # a tuple: cheap to send from a worker to the supervisor
    start_line: int  # 1-based, inclusive
    end_line: int
    content_hash: bytes  # 8 bytes (:func:`memoryd.ingest.chunking.chunk_hash`)
    text: str  # what the index holds (never stored: the file body holds the chunk)
    left_out: int = 0  # tokens of the chunk ``text`` leaves out (its index text's)


class FileRows(NamedTuple):
    """Everything a worker prepares for one file; the supervisor writes it."""

    path: str
    content_hash: bytes  # 16 bytes (:func:`memoryd.ingest.chunking.digest`)
    size: int
    lines: int
    body: bytes  # zstd-compressed text; b"" in a block
    chunks: Sequence[ChunkRow]
    block: int = -1  # index of its body block in the batch (-1: ``body`` is its own frame)
    block_start: int = 0  # its text's UTF-8 bytes in the decompressed block
    block_end: int = 0


#: A join condition: chunk ``c`` is one of file ``f``'s (the id range its row keeps;
#: there is no index on ``chunks.file_id``).
CHUNKS_OF_FILE = "c.id BETWEEN f.chunk_first AND f.chunk_first + f.chunk_count - 1"


def fts_table(project_id: int) -> str:
    return f"fts_{int(project_id)}"


def instance_view(project_id: int) -> str:
    """The connection's temp ``fts5vocab`` ``instance`` view over the project's index."""
    return f"temp.{fts_table(project_id)}_inst"


def _create_index(tx: apsw.Connection, project_id: int, schema: str = "main") -> None:
    table = fts_table(project_id)
    tx.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.{table} USING fts5(body, path, content='',"
        f" contentless_delete=1, tokenize='{FTS_TOKENIZER}')"
    )
    tx.execute(f"INSERT INTO {schema}.{table} ({table}, rank) VALUES ('automerge', ?)",
               (FTS_AUTOMERGE,))  # fmt: skip
    tx.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.{table}_vocab"
        f" USING fts5vocab({table}, row)"  # two arguments: the table of its own schema
    )


def _drop_index(tx: apsw.Connection, project_id: int, schema: str = "main") -> None:
    table = fts_table(project_id)
    for name in (f"{table}_inst", f"{table}_vocab", table):
        if schema == "temp" or name != f"{table}_inst":  # the _inst view lives in temp only
            tx.execute(f"DROP TABLE IF EXISTS {schema}.{name}")


# -- projects -------------------------------------------------------------------


def ensure_project(tx: apsw.Connection, name: str, root: str | None, compact_limit: int = 0) -> int:
    """The project's id, creating it on first use: compact while its live source is at
    most ``compact_limit`` bytes (0: indexed from the start, its index created now)."""
    row = tx.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()
    if row:
        if root:
            tx.execute("UPDATE projects SET root = ? WHERE id = ?", (root, row[0]))
        return row[0]
    pid = tx.execute(
        "INSERT INTO projects (name, root, created_at, compact_limit) VALUES (?, ?, ?, ?)"
        " RETURNING id",
        (name, root, time.time(), max(0, int(compact_limit))),
    ).fetchone()[0]
    if not compact_limit:
        _create_index(tx, pid)
    return pid


def compact_limit(db, pid: int) -> int:
    """The project's compact limit in source bytes; 0 for an indexed project."""
    return _query(db, "SELECT compact_limit FROM projects WHERE id = ?", (pid,))[0][0]


def live_source_bytes(db, pid: int) -> int:
    """Source bytes of the project's live files (what a compact limit bounds)."""
    return _query(
        db, "SELECT coalesce(sum(size), 0) FROM files WHERE project_id = ? AND live = 1", (pid,)
    )[0][0]


def live_chunk_count(db, pid: int) -> int:
    """Chunks of the project's live files (what its index must hold)."""
    return _query(
        db,
        f"SELECT count(*) FROM files f JOIN chunks c ON {CHUNKS_OF_FILE}"
        " WHERE f.project_id = ? AND f.live = 1",
        (pid,),
    )[0][0]


def _indexed_for(tx: apsw.Connection, pid: int, incoming: int) -> bool:
    """Whether the project's index is stored once ``incoming`` more source bytes land;
    a compact project they would take past its limit becomes indexed here, its index
    built from its files before the new ones are written."""
    limit = compact_limit(tx, pid)
    if not limit:
        return True
    if live_source_bytes(tx, pid) + incoming <= limit:
        return False
    tx.execute("UPDATE projects SET compact_limit = 0 WHERE id = ?", (pid,))
    rebuild_index(tx, pid)
    return True


def drop_index_rows(tx: apsw.Connection, pid: int, rowids: Sequence[int]) -> None:
    """Take chunks out of the project's stored index (nothing to do when compact)."""
    if rowids and not compact_limit(tx, pid):
        tx.executemany(f"DELETE FROM {fts_table(pid)} WHERE rowid = ?", [(r,) for r in rowids])


def unknown_project_message(name: str, known: list[str]) -> str:
    """How every command refuses a project name it does not know: the known ones, and
    the explicit ways to start a new one."""
    return (
        f"no project named {name!r}; known projects: {', '.join(known) or 'none'} "
        f"(start one with `memoryd ingest PATH --project {name}`, or archive into a new "
        "one with `memoryd archive add --new-project`)"
    )


def find_project_id(db, name: str) -> int | None:
    """The id of the project named ``name`` (None: no such project). ``db``: an
    Authority, or a connection inside its transaction."""
    rows = _query(db, "SELECT id FROM projects WHERE name = ?", (name,))
    return rows[0][0] if rows else None


def project_id(db, name: str) -> int:
    pid = find_project_id(db, name)
    if pid is None:
        known = [r[0] for r in _query(db, "SELECT name FROM projects ORDER BY name", ())]
        raise UnknownProject(unknown_project_message(name, known))
    return pid


def project_generation(db, pid: int) -> int:
    return db.query("SELECT generation FROM projects WHERE id = ?", (pid,))[0][0]


def project_names(db) -> dict[int, str]:
    """Every project's name, by id (``db``: an Authority, or a connection inside its
    transaction)."""
    return dict(_query(db, "SELECT id, name FROM projects", ()))


def root_of(db, pid: int) -> str | None:
    """The repository root the project was ingested from (None: no such project, or
    none recorded)."""
    rows = _query(db, "SELECT root FROM projects WHERE id = ?", (pid,))
    return rows[0][0] if rows else None


def root_named(db, name: str) -> str | None:
    """The repository root of the project named ``name`` (None: no such project, or
    none recorded)."""
    rows = _query(db, "SELECT root FROM projects WHERE name = ?", (name,))
    return rows[0][0] if rows else None


def project_stats(db) -> list[dict]:
    rows = db.query(
        "SELECT p.name, p.root, count(f.id), coalesce(sum(f.size), 0),"
        " (SELECT coalesce(sum(f.chunk_count), 0) FROM files f WHERE f.project_id = p.id)"
        " FROM projects p LEFT JOIN files f ON f.project_id = p.id AND f.live = 1"
        " GROUP BY p.id ORDER BY p.name"
    )
    return [
        {"project": r[0], "root": r[1], "files": r[2], "source_bytes": r[3], "chunks": r[4]}
        for r in rows
    ]


# -- files and chunks -----------------------------------------------------------


def live_hashes(db, pid: int) -> dict[str, str]:
    """path -> content hash of every live file of the project."""
    return dict(
        db.query("SELECT path, content_hash FROM files WHERE project_id = ? AND live = 1", (pid,))
    )


def live_paths(db, pid: int) -> list[tuple[int, str]]:
    """``(file id, path)`` of every live file of the project."""
    return db.query("SELECT id, path FROM files WHERE project_id = ? AND live = 1", (pid,))


def longest_paths(db, limit: int) -> list[str]:
    """The ``limit`` longest file paths of every project (ties by path)."""
    rows = db.query("SELECT path FROM files ORDER BY length(path) DESC, path LIMIT ?", (limit,))
    return [r[0] for r in rows]


def file_totals(db) -> tuple[int, int]:
    """How many file rows every project holds, and their source bytes."""
    files, size = db.query("SELECT count(*), coalesce(sum(size), 0) FROM files")[0]
    return files, size


def chunks_of_files(db, file_ids: Iterable[int]) -> list[tuple[int, int, int]]:
    """``(chunk id, file id, the chunk's ordinal in its file)`` of every chunk of
    ``file_ids``, by file and chunk."""
    ids = tuple(file_ids)
    marks = ",".join("?" * len(ids))
    return db.query(
        f"SELECT c.id, c.file_id, c.id - f.chunk_first FROM files f JOIN chunks c"
        f" ON {CHUNKS_OF_FILE} WHERE f.id IN ({marks}) ORDER BY c.file_id, c.id",
        ids,
    )


def chunk_rows(db, rowids: Sequence[int]) -> list[tuple]:
    """``(chunk id, file id, path, start line, end line, content hash)`` of ``rowids``."""
    marks = ",".join("?" * len(rowids))
    return db.query(
        "SELECT c.id, c.file_id, f.path, c.start_line, c.end_line, c.content_hash"
        " FROM chunks c"
        f" JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks})",
        tuple(rowids),
    )


def history_since(db, pid: int, job_id: int) -> list[tuple[str, str, str | None]]:
    """``(kind, ref, content hash)`` of the project's history rows written by jobs
    above ``job_id``."""
    return db.query(
        "SELECT kind, ref, content_hash FROM history WHERE project = ? AND job_id > ?",
        (str(pid), job_id),
    )


def _drop_chunks(tx: apsw.Connection, pid: int, file_id: int) -> None:
    """Delete the file's chunks (its row's id range) and their index rows."""
    first, count = tx.execute(
        "SELECT chunk_first, chunk_count FROM files WHERE id = ?", (file_id,)
    ).fetchone()
    drop_index_rows(tx, pid, list(range(first, first + count)))
    tx.execute("DELETE FROM chunks WHERE id BETWEEN ? AND ?", (first, first + count - 1))


def _history(tx: apsw.Connection, kind: str, pid: int, ref: str, digest: str | None, job_id):
    tx.execute(
        "INSERT INTO history (at, kind, project, ref, content_hash, job_id)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (time.time(), kind, str(pid), ref, digest, job_id),
    )


def purge_history_in(tx: apsw.Connection, before: float, limit: int) -> int:
    """Delete history rows written before ``before`` among the ``limit`` oldest: rows
    are appended in time order, so the old ones are a prefix by id and a bounded step
    needs no index on ``at``. Returns the rows deleted."""
    tx.execute(
        "DELETE FROM history WHERE id IN (SELECT id FROM history ORDER BY id LIMIT ?) AND at < ?",
        (limit, before),
    )
    return tx.changes()


def next_chunk_id(tx: apsw.Connection) -> int:
    """The first never-used chunk id (``chunks.id`` is AUTOINCREMENT: ids, and so FTS
    rowids, are never reused, not even after the highest chunk is deleted)."""
    row = tx.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
    return (row[0] if row else 0) + 1


def put_files(
    tx: apsw.Connection,
    pid: int,
    files: Iterable[FileRows],
    job_id: int | None = None,
    blocks: Sequence[bytes] = (),
    packed: bool = False,
) -> int:
    """Insert or replace files with their chunks and index rows (each chunk's
    ``text``). Returns files written. ``blocks`` are the batch's body blocks (zstd
    frames) its files' ``block`` index; ``packed``: they are final (compressed at
    ``body_pack_level``, their chunks' texts index text with the tokens left out
    counted: :func:`memoryd.ingest.chunking.prepare_batch`), so no pack job writes
    them again.

    Chunk and index rows are written together at the end, with ids given here: many
    rows per statement, and FTS5 need not pick rowids one at a time. A file's chunks
    get consecutive ids, the range its row keeps (``chunk_first``, ``chunk_count``).
    """
    files = list(files)
    block_ids = _put_blocks(tx, pid, blocks, packed)
    indexed = _indexed_for(tx, pid, sum(f.size for f in files))
    table = fts_table(pid)
    now = time.time()
    written = 0
    chunk_rows: list[tuple] = []
    index_rows: list[tuple] = []
    left_out: list[tuple[int, int]] = []
    history: list[tuple] = []
    pending: set[str] = set()
    left: list[int | None] = []  # blocks old versions left, to write again without them
    joined: Counter[int] = Counter()  # files that joined each block, counted once a flush
    next_id = next_chunk_id(tx)
    known = _file_rows(tx, pid, [f.path for f in files])  # path -> (id, hash, live)
    next_file = _next_file_id(tx)
    new_files: list[tuple] = []

    def flush() -> None:
        tx.executemany(
            "INSERT INTO files (id, project_id, path, content_hash, size, lines, body, updated_at,"
            " block_id, block_start, block_end, chunk_first, chunk_count)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            new_files,
        )
        new_files.clear()
        # one update a block, not one a file: each rewrites the block's row, its frame too
        tx.executemany(
            "UPDATE body_blocks SET files = files + ? WHERE id = ?",
            [(n, block) for block, n in joined.items()],
        )
        joined.clear()
        tx.executemany(
            "INSERT INTO chunks (id, file_id, start_line, end_line, content_hash)"
            " VALUES (?, ?, ?, ?, ?)",
            chunk_rows,
        )
        if indexed:
            tx.executemany(f"INSERT INTO {table} (rowid, body, path) VALUES (?, ?, ?)", index_rows)
            keep_true_sizes(tx, f"main.{table}", left_out)
        chunk_rows.clear()
        left_out.clear()
        index_rows.clear()
        pending.clear()

    for f in files:
        if f.path in pending:
            flush()  # the same path twice: the first one's chunks must exist to be dropped
        old = known.get(f.path)
        if old and old[1] == f.content_hash and old[2]:
            continue  # already current: a redone job changes nothing
        where = (block_ids[f.block], f.block_start, f.block_end) if f.block >= 0 else (None,) * 3
        where += (next_id if f.chunks else 0, len(f.chunks))  # none: 0, 0 (as migration 14)
        if old:
            _drop_chunks(tx, pid, old[0])
            left.append(_leave_block(tx, old[0], block_ids))
            tx.execute(
                "UPDATE files SET content_hash = ?, size = ?, lines = ?, body = ?, live = 1,"
                " updated_at = ?, block_id = ?, block_start = ?, block_end = ?,"
                " chunk_first = ?, chunk_count = ? WHERE id = ?",
                (f.content_hash, f.size, f.lines, f.body, now, *where, old[0]),
            )
            file_id = old[0]
        else:
            file_id, next_file = next_file, next_file + 1
            new_files.append((file_id, pid, f.path, f.content_hash, f.size, f.lines, f.body, now,
                              *where))  # fmt: skip
        known[f.path] = (file_id, f.content_hash, 1)
        if where[0] is not None:
            joined[where[0]] += 1
        for c in f.chunks:
            chunk_rows.append((next_id, file_id, c.start_line, c.end_line, c.content_hash))
            index_rows.append((next_id, c.text, f.path))
            left_out.append((next_id, c.left_out))
            next_id += 1
        pending.add(f.path)
        history.append((now, "file.put", str(pid), f.path, f.content_hash, job_id))
        written += 1
    if chunk_rows or joined or new_files:
        flush()
    _rewrite_blocks(tx, filter(None, left))
    if block_ids:  # a block none of whose files was written (all current already)
        marks = ",".join("?" * len(block_ids))
        tx.execute(f"DELETE FROM body_blocks WHERE files = 0 AND id IN ({marks})", block_ids)
    if history:
        tx.executemany(
            "INSERT INTO history (at, kind, project, ref, content_hash, job_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            history,
        )
    if written:
        tx.execute("UPDATE projects SET generation = generation + 1 WHERE id = ?", (pid,))
    return written


def _file_rows(tx: apsw.Connection, pid: int, paths: Sequence[str]) -> dict[str, tuple]:
    """``path -> (id, content hash, live)`` of the project's stored files among
    ``paths``: a statement for every ``FILE_LOOKUP_PATHS`` of them, not one a file."""
    found: dict[str, tuple] = {}
    for i in range(0, len(paths), FILE_LOOKUP_PATHS):
        part = paths[i : i + FILE_LOOKUP_PATHS]
        rows = tx.execute(
            "SELECT path, id, content_hash, live FROM files"
            f" WHERE project_id = ? AND path IN ({','.join('?' * len(part))})",
            (pid, *part),
        )
        found.update((path, tuple(rest)) for path, *rest in rows)
    return found


def _next_file_id(tx: apsw.Connection) -> int:
    """The id SQLite would give the next file row (``files.id`` is a plain rowid), so a
    batch's new files are inserted in one statement with their ids known."""
    return tx.execute("SELECT coalesce(max(id), 0) + 1 FROM files").fetchone()[0]


def _put_blocks(tx: apsw.Connection, pid: int, blocks: Sequence[bytes], packed: bool) -> list[int]:
    """Store a batch's body blocks; their ids, by index (each counts its files later)."""
    if not blocks:
        return []
    return [
        tx.execute(
            "INSERT INTO body_blocks (project_id, files, data, packed) VALUES (?, 0, ?, ?)"
            " RETURNING id",
            (pid, data, int(packed)),
        ).fetchone()[0]
        for data in blocks
    ]


def _leave_block(tx: apsw.Connection, file_id: int, batch: Sequence[int] = ()) -> int | None:
    """The file's body leaves its block: the block goes with its last file, unless it is
    one of the ``batch``'s own (the same path twice in a batch: files after it may still
    join it). Returns the block when it stays: its frame still holds the leaving file's
    text, which :func:`_rewrite_blocks` takes out."""
    row = tx.execute("SELECT block_id FROM files WHERE id = ?", (file_id,)).fetchone()
    if not row or row[0] is None:
        return None
    (block_id,) = row
    tx.execute("UPDATE body_blocks SET files = files - 1 WHERE id = ?", (block_id,))
    if block_id not in batch:
        tx.execute("DELETE FROM body_blocks WHERE id = ? AND files <= 0", (block_id,))
    left = tx.execute("SELECT files FROM body_blocks WHERE id = ?", (block_id,)).fetchone()
    return block_id if left else None


def _rewrite_blocks(tx: apsw.Connection, block_ids: Iterable[int]) -> None:
    """Write each block again with the files still in it (once the files that left it
    point elsewhere): no byte of a changed or retired file's text stays in a frame. The
    new block keeps the old one's ``packed`` flag, which says how its files' chunks are
    indexed (:func:`_packed_files`): their index rows are not touched, so the flag must
    not change. It is compressed at the ingest level (this runs in the writer's
    transaction, once per block however many of its files left)."""
    for block_id in dict.fromkeys(block_ids):
        row = tx.execute(
            "SELECT data, packed, project_id FROM body_blocks WHERE id = ?", (block_id,)
        ).fetchone()
        if row is None:
            continue
        data, packed, pid = row
        rest = tx.execute(
            "SELECT id, block_start, block_end FROM files WHERE block_id = ?", (block_id,)
        ).fetchall()
        if rest:  # else a batch's own block every file of which left it
            text = _decompress(data, tx)
            new_id = _store_block(tx, pid, [(f, text[a:b]) for f, a, b in rest])
            tx.execute("UPDATE body_blocks SET packed = ? WHERE id = ?", (packed, new_id))
        tx.execute("DELETE FROM body_blocks WHERE id = ?", (block_id,))


def _frame_size(frame: bytes) -> int:
    """The decompressed size a zstd frame declares (every block is written with it)."""
    return zstandard.get_frame_parameters(frame).content_size


def retire_files(
    tx: apsw.Connection, pid: int, paths: Iterable[str], job_id: int | None = None
) -> int:
    """Take files out of search; the row stays (live = 0) as a record, without its text
    (nor does any block it shared keep it)."""
    retired = 0
    left: list[int | None] = []
    for path in paths:
        row = tx.execute(
            "SELECT id, content_hash FROM files WHERE project_id = ? AND path = ? AND live = 1",
            (pid, path),
        ).fetchone()
        if not row:
            continue
        _drop_chunks(tx, pid, row[0])
        left.append(_leave_block(tx, row[0]))
        tx.execute("UPDATE files SET live = 0, body = x'', updated_at = ?, block_id = NULL,"
                   " block_start = NULL, block_end = NULL, chunk_first = 0, chunk_count = 0"
                   " WHERE id = ?",
                   (time.time(), row[0]))  # fmt: skip
        _history(tx, "file.retire", pid, path, row[1], job_id)
        retired += 1
    _rewrite_blocks(tx, filter(None, left))
    if retired:
        tx.execute("UPDATE projects SET generation = generation + 1 WHERE id = ?", (pid,))
    return retired


# -- compression (an older home's dictionaries only decode) ---------------------------


def _query(db, sql: str, args: tuple) -> list[tuple]:
    """Rows from an Authority or a bare connection (inside a transaction)."""
    if isinstance(db, apsw.Connection):
        return db.execute(sql, args).fetchall()
    return db.query(sql, args)


class MissingDictionary(MemorydError):
    code = "MISSING_DICTIONARY"


def _dict_decompressor(dict_id: int, db=None) -> zstandard.ZstdDecompressor:
    dctx = _per_thread("dict_dctx").get(dict_id)
    if dctx is not None:
        return dctx
    data = None
    # Without a connection (a caller that only has the body), ask every open one:
    # the body was just read through one of them.
    for source in ([db] if db is not None else []) + apsw.connections():
        conn = getattr(source, "conn", source)
        with contextlib.suppress(apsw.Error):
            row = conn.execute("SELECT data FROM zdicts WHERE id = ?", (dict_id,)).fetchone()
            if row:
                data = row[0]
                break
    if data is None:
        raise MissingDictionary(f"zstd dictionary {dict_id} not found in any open authority")
    dctx = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(data))
    _per_thread("dict_dctx")[dict_id] = dctx
    return dctx


def compressor(level: int = COMPRESSION_LEVEL) -> zstandard.ZstdCompressor:
    """The body compressor at ``level``, reused per thread (a frame without a
    dictionary: ``config.BODY_BLOCK_BYTES`` says why)."""
    cctx = _per_thread("cctx").get(level)
    if cctx is None:
        cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
        _per_thread("cctx")[level] = cctx
    return cctx


# -- packing: body blocks compressed again, after their run -----------------------


class Packed(NamedTuple):
    """A block packed by a worker (:func:`pack_blocks`), for :func:`store_packed`."""

    block_id: int
    length: int  # of the frame read: the block stored is still that one
    data: bytes | None  # the frame compressed again; None: not smaller, or level 0
    rows: list[tuple]  # its live files' chunks as index text (:func:`_chunk_rows`)


def pack_blocks(db, pid: int, level: int, text_bytes: int) -> tuple[list[Packed], bool]:
    """The project's blocks not compressed again yet, in id order, each compressed again
    at ``level`` (0: not), without a dictionary even if its frame had one, with its
    files' chunks as index text: as many as hold at most ``text_bytes`` of text
    together (the first whatever its size; the size its frame's header says). And
    whether others are left. Runs in a worker: CPU only, no write."""
    packed: list[Packed] = []
    size = 0
    for block_id, frame in _unpacked_frames(db, pid):
        length = max(zstandard.frame_content_size(frame), len(frame))  # -1: not written
        if packed and size + length > text_bytes:
            return packed, True
        packed.append(_pack_frame(db, block_id, frame, level))
        size += length
    return packed, False


def _unpacked_frames(db, pid: int) -> Iterator[tuple[int, bytes]]:
    """(id, frame) of the project's blocks not compressed again yet, in id order, each
    read when asked for."""
    after = 0
    while rows := _query(
        db,
        "SELECT id, data FROM body_blocks WHERE project_id = ? AND packed = 0 AND id > ?"
        " ORDER BY id LIMIT 1",
        (pid, after),
    ):
        after, frame = rows[0]
        yield after, frame


def stranded_unpacked(conn: apsw.Connection, pack_kind: str) -> list[tuple[int, str]]:
    """(id, name) of the projects whose blocks wait to be packed with no job to do it:
    their latest ingest run has finished (a run still going enqueues its pack job as it
    finishes) and no ``pack_kind`` job of theirs is live, nor dead (that one is left to
    ``memoryd jobs retry``: a new job could die the same way). An older home's
    projects after migration 13 are such projects."""
    return conn.execute(
        "SELECT p.id, p.name FROM projects p"
        " WHERE EXISTS (SELECT 1 FROM body_blocks b WHERE b.project_id = p.id AND b.packed = 0)"
        " AND coalesce((SELECT r.finished_at IS NOT NULL FROM ingest_runs r"
        "   WHERE r.project_id = p.id ORDER BY r.id DESC LIMIT 1), 1)"
        " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.project = p.name AND j.kind = ?"
        "   AND j.state IN ('queued', 'claimed', 'failed'))"
        " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.state = 'dead' AND j.kind = ?"
        "   AND j.project = p.name)"
        " ORDER BY p.id",
        (pack_kind, pack_kind),
    ).fetchall()


def _pack_frame(db, block_id: int, frame: bytes, level: int) -> Packed:
    text = _decompress(frame, db)
    data = compressor(level).compress(text) if level else None
    files = _query(
        db,
        "SELECT id, path, block_start, block_end FROM files WHERE block_id = ? AND live = 1",
        (block_id,),
    )
    chunks = [
        row
        for fid, path, start, end in files
        for row in _chunk_rows(db, fid, path, text[start:end].decode("utf-8"), True)
    ]
    # A frame naming a dictionary is written again even if not smaller: once none
    # names it, the dictionary itself goes (drop_unnamed_dictionaries).
    better = data is not None and (len(data) < len(frame) or _names_dictionary(frame))
    return Packed(block_id, len(frame), data if better else None, chunks)


def _names_dictionary(frame: bytes) -> bool:
    return zstandard.get_frame_parameters(frame).dict_id != 0


def store_packed(tx: apsw.Connection, pid: int, packed: Iterable[Packed]) -> int:
    """Write blocks compressed again (the same text: a block's id never changes its
    text, so a reader's cached copy stays right) and index their files' chunks as
    index text; a block written again or gone since (its frame's length differs or it
    has no row) is left alone, and so is a chunk gone since. Returns blocks packed."""
    done, rows = 0, []
    for p in packed:
        tx.execute(
            "UPDATE body_blocks SET data = coalesce(?, data), packed = 1"
            " WHERE id = ? AND length(data) = ?",
            (p.data, p.block_id, p.length),
        )
        if tx.changes():
            done += 1
            rows.extend(p.rows)
    if rows and not compact_limit(tx, pid):
        marks = ",".join("?" * len(rows))
        live = {r[0] for r in tx.execute(f"SELECT id FROM chunks WHERE id IN ({marks})",
                                         [r[0] for r in rows])}  # fmt: skip
        rows = [r for r in rows if r[0] in live]
        drop_index_rows(tx, pid, [r[0] for r in rows])
        _index(tx, f"main.{fts_table(pid)}", rows)
        if rows:  # their index text changed: the statistics of before are stale
            tx.execute("UPDATE projects SET generation = generation + 1 WHERE id = ?", (pid,))
    return done


def pack_bodies(tx: apsw.Connection, pid: int, block_bytes: int = BODY_BLOCK_BYTES) -> int:
    """Move the project's live files whose body is its own frame (stored before body
    blocks, or by a caller that wrote files one by one) into blocks of about
    ``block_bytes`` of text, in file order (their chunks' index rows are whole: the
    blocks are not packed).
    Returns the files moved. Texts are read back exactly, so search answers and the
    derived tables do not change."""
    rows = tx.execute(
        "SELECT id, body FROM files WHERE project_id = ? AND live = 1 AND block_id IS NULL"
        " ORDER BY id",
        (pid,),
    ).fetchall()
    group: list[tuple[int, bytes]] = []
    size = 0
    for n, (fid, body) in enumerate(rows, 1):
        text = _decompress(body, tx)
        group.append((fid, text))
        size += len(text)
        if size >= block_bytes or n == len(rows):
            _store_block(tx, pid, group)
            group, size = [], 0
    return len(rows)


def _store_block(tx: apsw.Connection, pid: int, group: list[tuple[int, bytes]]) -> int:
    """A new block of ``group``'s (file id, text), each file's row pointed at it; its id.
    (Migration 12 calls it before migration 13 adds ``packed``: not named here.)"""
    block_id = tx.execute(
        "INSERT INTO body_blocks (project_id, files, data) VALUES (?, ?, ?) RETURNING id",
        (pid, len(group), compressor().compress(b"".join(text for _, text in group))),
    ).fetchone()[0]
    at = 0
    for fid, text in group:
        tx.execute(
            "UPDATE files SET body = x'', block_id = ?, block_start = ?, block_end = ?"
            " WHERE id = ?",
            (block_id, at, at + len(text), fid),
        )
        at += len(text)
    killpoints.reach("bodies_mid_pack")  # drills: a migration killed between blocks
    return block_id


def _decompressor(frame: bytes, db=None) -> zstandard.ZstdDecompressor:
    """The frame's decompressor: with the dictionary it names (an older home's frames)."""
    dict_id = zstandard.get_frame_parameters(frame).dict_id
    if dict_id:
        return _dict_decompressor(dict_id, db)
    plain = _per_thread("dctx")
    if 0 not in plain:
        plain[0] = zstandard.ZstdDecompressor()
    return plain[0]


def _decompress(frame: bytes, db=None) -> bytes:
    return _decompressor(frame, db).decompress(frame) if frame else b""


def file_text(body: bytes, db=None) -> str:
    """The decoded text of a body stored as its own frame. ``db`` (an Authority or
    connection) is where its dictionary is looked up the first time; without it,
    every open connection."""
    return _decompress(body, db).decode("utf-8")


class _Blocks:
    """Decompressed body blocks of one Authority, the most recently read ones up to
    ``BLOCK_CACHE_BYTES`` (a block is immutable and its id never reused, so a kept one
    is never stale). A block is decompressed only up to the end its reader needs and
    kept as that prefix; a reader needing more decompresses it again, further."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: OrderedDict[int, bytes] = OrderedDict()
        self.size = 0

    def get(self, db, block_id: int, end: int) -> bytes:
        """At least the block's first ``end`` bytes of text."""
        with self.lock:
            data = self.kept.get(block_id)
            if data is not None and len(data) >= end:
                self.kept.move_to_end(block_id)
                return data
        data = _read_block(db, block_id, end)
        with self.lock:
            self.size += len(data) - len(self.kept.pop(block_id, b""))
            self.kept[block_id] = data
            while self.size > BLOCK_CACHE_BYTES and len(self.kept) > 1:
                self.size -= len(self.kept.popitem(last=False)[1])
        return data


def _read_block(db, block_id: int, end: int | None = None) -> bytes:
    """The block's text, or its first ``end`` bytes (decompressed that far only).

    When the dictionary the frame names is missing, a pack pass's commit deleted it
    between the two reads (:func:`drop_unnamed_dictionaries`), after writing every frame
    naming it again without it: the block is read again."""
    try:
        return _block_text(db, block_id, end)
    except MissingDictionary:
        return _block_text(db, block_id, end)


def _block_text(db, block_id: int, end: int | None) -> bytes:
    rows = _query(db, "SELECT data FROM body_blocks WHERE id = ?", (block_id,))
    if not rows:
        raise MemorydError(f"body block {block_id} is missing from the authority; run"
                           " `memoryd rebuild --verify` and re-ingest the project")  # fmt: skip
    frame = rows[0][0]
    if end is None or end >= _frame_size(frame):
        return _decompress(frame, db)
    with _decompressor(frame, db).stream_reader(frame, read_across_frames=False) as reader:
        return reader.read(end)


def _blocks(db) -> _Blocks | None:
    """The Authority's block cache; None for a bare connection (a writer's, not cached)."""
    if isinstance(db, apsw.Connection):
        return None
    return db.__dict__.setdefault("_memoryd_blocks", _Blocks())


def file_texts(db, file_ids: Iterable[int]) -> dict[int, str]:
    """file id -> decoded text of each of ``file_ids`` (a search page's few files), its
    body its own frame or a slice of a block (each block decompressed once)."""
    ids = tuple(set(file_ids))
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = _query(
        db,
        f"SELECT id, body, block_id, block_start, block_end FROM files WHERE id IN ({marks})",
        ids,
    )
    cache = _blocks(db)
    ends: dict[int, int] = {}  # block id -> the end of its last file read here
    for _, _, block_id, _, end in rows:
        if block_id is not None:
            ends[block_id] = max(end, ends.get(block_id, 0))
    read = {
        b: cache.get(db, b, end) if cache else _read_block(db, b, end) for b, end in ends.items()
    }
    return {
        fid: read[block_id][start:end].decode("utf-8")
        if block_id is not None
        else file_text(body, db)
        for fid, body, block_id, start, end in rows
    }


def read_costs(db, file_ids: Iterable[int]) -> dict[int, int]:
    """file id -> bytes :func:`file_texts` would decompress to read it: its block's text
    up to the file's end (none once the block's cache holds that much), or its own
    frame's."""
    ids = tuple(set(file_ids))
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = _query(
        db, f"SELECT id, block_id, block_end, length(body) FROM files WHERE id IN ({marks})", ids
    )
    cache = _blocks(db)
    kept = cache.kept if cache else {}
    return {
        fid: (0 if len(kept.get(block_id, b"")) >= end else end) if block_id is not None else size
        for fid, block_id, end, size in rows
    }


def live_texts(conn: apsw.Connection, pid: int) -> Iterator[tuple[int, str, str]]:
    """(file id, path, text) of every live file of the project, in block order: each
    block is decompressed once and only one is held at a time."""
    rows = conn.execute(
        "SELECT id, path, body, block_id, block_start, block_end FROM main.files"
        " WHERE project_id = ? AND live = 1 ORDER BY block_id, id",
        (pid,),
    ).fetchall()  # a file in a block has an empty body
    held: tuple[int | None, bytes] = (None, b"")
    for fid, path, body, block_id, start, end in rows:
        if block_id is None:
            yield fid, path, file_text(body, conn)
            continue
        if held[0] != block_id:
            held = (block_id, _read_block(conn, block_id))
        yield fid, path, held[1][start:end].decode("utf-8")


def reclaim_free_pages(tx: apsw.Connection, limit: int | None = None) -> int:
    """Give free pages (left by FTS segment merges) back to the file system, at most
    ``limit`` of them (None: all). Returns the pages still free; 0 on an authority
    created without incremental auto-vacuum.

    Each page released moves one from the file's end into a free slot, a page written
    to the WAL: the end of a merge that freed a large segment released it all in one
    commit (52 MiB of WAL on a 3.4 GB tree), so a step is bounded and the rest left to
    the next."""
    if tx.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        return 0
    # FTS5 keeps recent inserts in memory and writes (and merges) them at commit,
    # freeing pages after this point; a savepoint makes it write them now (it must,
    # to be able to roll back to it).
    tx.execute("SAVEPOINT reclaim_free_pages")
    free = tx.execute("PRAGMA freelist_count").fetchone()[0]
    if free:
        n = free if limit is None else min(free, limit)
        tx.execute(f"PRAGMA incremental_vacuum({int(n)})").fetchall()
        free = tx.execute("PRAGMA freelist_count").fetchone()[0]
    tx.execute("RELEASE reclaim_free_pages")
    return free


def _index(
    tx: apsw.Connection,
    table: str,
    rows: Sequence[tuple[int, str, int, str]],
    sizes: dict[str, list] | None = None,
) -> None:
    """Insert (rowid, index text, tokens left out, path) rows into the FTS5 ``table``
    (schema-qualified), each row's size its full token count: set now, or, given
    ``sizes``, by the caller's :func:`keep_sizes` once after its last insert."""
    tx.executemany(
        f"INSERT INTO {table} (rowid, body, path) VALUES (?, ?, ?)",
        [(rowid, body, path) for rowid, body, _, path in rows],
    )
    left_out = [(rowid, n) for rowid, _, n, _ in rows]
    if sizes is None:
        keep_true_sizes(tx, table, left_out)
    else:
        sizes.setdefault(table, []).extend(left_out)


def keep_sizes(tx: apsw.Connection, sizes: dict[str, list]) -> None:
    """Give the rows indexed with ``sizes`` (:func:`put_files`) their full sizes: one
    FTS5 sync for a transaction's batches, not one each."""
    for table, left_out in sizes.items():
        keep_true_sizes(tx, table, left_out)


def _chunk_rows(db, file_id: int, path: str, text: str, packed: bool) -> list[tuple]:
    """(rowid, index text, tokens left out, path) of the file's chunks: a packed
    block's files without the words never looked up alone, any other whole; each with
    its context words (a configuration or markdown file's key paths and headings:
    :func:`~memoryd.text.structure.chunk_contexts`), as ingest made them."""
    lines = text.split("\n")
    rows = _query(
        db,
        "SELECT c.id, c.start_line, c.end_line FROM main.files f JOIN main.chunks c"
        f" ON {CHUNKS_OF_FILE} WHERE f.id = ? ORDER BY c.id",
        (file_id,),
    )
    from memoryd.text import structure  # here: a command that only reads never parses

    chunks = [(start, end, "\n".join(lines[start - 1 : end])) for _, start, end in rows]
    contexts = structure.chunk_contexts(path, lines, chunks)
    return [
        (rowid, *with_context(*(index_text(chunk) if packed else (chunk, 0)), context), path)
        for (rowid, _, _), (_, _, chunk), context in zip(rows, chunks, contexts, strict=True)
    ]


def _packed_files(conn: apsw.Connection, pid: int) -> set[int]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT f.id FROM main.files f JOIN main.body_blocks b ON b.id = f.block_id"
            " WHERE f.project_id = ? AND f.live = 1 AND b.packed = 1",
            (pid,),
        )
    }


def _fill_index(conn: apsw.Connection, pid: int, schema: str) -> int:
    """Index every live chunk of the project into its (empty) FTS table in ``schema``,
    as ingest and the pack jobs left them (:func:`_chunk_rows`)."""
    table = f"{schema}.{fts_table(pid)}"
    count = 0
    sizes: dict[str, list] = {}
    packed = _packed_files(conn, pid)
    for file_id, path, text in live_texts(conn, pid):
        rows = _chunk_rows(conn, file_id, path, text, file_id in packed)
        _index(conn, table, rows, sizes)
        count += len(rows)
    keep_sizes(conn, sizes)
    return count


def reindex_structured(tx: apsw.Connection, pid: int) -> int:
    """Index again the chunks of the project's configuration and markdown files (a
    structured format: :func:`~memoryd.text.structure.format_of`), whose index text now
    carries their key paths and headings: what a home indexed before that reads as a
    rebuild would (migration 19). Returns the chunks indexed again; 0 for a compact
    project, whose index is built when searched."""
    from memoryd.text import structure

    if compact_limit(tx, pid):
        return 0
    files = [(fid, path) for fid, path in _query(
        tx, "SELECT id, path FROM main.files WHERE project_id = ? AND live = 1", (pid,)
    ) if structure.format_of(path)]  # fmt: skip
    packed = _packed_files(tx, pid) if files else set()
    texts = file_texts(tx, [fid for fid, _ in files])
    count = 0
    for fid, path in files:
        rows = _chunk_rows(tx, fid, path, texts[fid], fid in packed)
        drop_index_rows(tx, pid, [r[0] for r in rows])
        _index(tx, f"main.{fts_table(pid)}", rows)
        count += len(rows)
    return count


class MergeState(NamedTuple):
    """How far a pack pass's merge of a project's index has gone (a job payload's)."""

    written: int  # pages the pass's merge steps asked FTS5 to write so far
    budget: int | None  # pages the pass may write in all; None: merge into one segment
    sizes_from: int | None = None  # merged; the sizes are written again from this rowid on


def merge_index(
    tx: apsw.Connection,
    pid: int,
    sizes_since: int | None = None,
    state: MergeState | None = None,
    step_pages: int = SETTINGS["index_merge_step_pages"].default,
) -> MergeState | None:
    """One step of the end of a pack pass: merge the project's stored index as far as
    the pass wrote of it, at most ``step_pages`` pages a step (the setting
    ``index_merge_step_pages``: a commit's WAL stays bounded); the state to go on from
    in the next step (its own transaction), or None once done. The last step writes
    its sizes from rowid ``sizes_since`` (the lowest the run indexed) on again in full
    pages. Nothing for a compact project.

    When the rows from ``sizes_since`` on are most of the index (a first ingest), or a
    segment keeps rows deleted since it was written (a changed or retired file's: a
    contentless_delete table deletes by tombstone, the terms stay in the segment's
    pages until it is written again, and FTS5's ``secure-delete`` does not apply to
    such tables), the steps merge it all into one segment (FTS5's ``('merge', -N)``,
    then ``N`` until nothing is left: an ``optimize`` in bounded steps, which drops the
    deleted rows). Otherwise the pass writes about
    as many pages as INDEX_MERGE_WORK times those rows take (``('merge', N)``): a
    level holding enough segments, or mostly deleted rows, is merged as far as that
    goes, and a one-file run adding files to a large project never writes its whole
    index again (one that deletes rows does: 66 ms for the standard library's 2.8 MB
    index)."""
    if compact_limit(tx, pid):
        return None
    table = fts_table(pid)
    if state is not None and state.sizes_from is not None:
        return _sizes_step(tx, table, state, state.sizes_from, step_pages)
    first = state is None
    state = state or MergeState(0, _merge_budget(tx, pid, sizes_since))
    pages = step_pages
    if state.budget is not None:
        pages = max(1, min(pages, state.budget - state.written))
    before = tx.total_changes()
    work = -pages if first and state.budget is None else pages
    tx.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (work,))
    state = MergeState(state.written + pages, state.budget)
    merged = tx.total_changes() - before >= 2  # FTS5's sign of a merge that wrote
    if merged and (state.budget is None or state.written < state.budget):
        return state
    if sizes_since is not None:
        return _sizes_step(tx, table, state, sizes_since, step_pages)
    return None


def _sizes_step(
    tx: apsw.Connection, table: str, state: MergeState, since: int, step_pages: int
) -> MergeState | None:
    """One bounded step of writing the pass's sizes again (about as many pages as a merge
    step); the state to go on from, or None once done."""
    after = rewrite_sizes(tx, f"main.{table}", since, step_pages * SIZES_PER_PAGE)
    return None if after is None else state._replace(sizes_from=after)


def _merge_budget(tx: apsw.Connection, pid: int, since: int | None) -> int | None:
    """Pages a pass that indexed the rows from rowid ``since`` on may merge; None: all."""
    segments = index_segments(tx, pid)
    live = sum(s.rows - s.dead for s in segments)
    new = 0 if since is None else _rows_since(tx, fts_table(pid), since)
    if 2 * new >= live or any(s.dead for s in segments):
        return None
    per_row = sum(s.pages for s in segments) / max(live, 1)
    return max(1, math.ceil(INDEX_MERGE_WORK * new * per_row))


def _rows_since(tx: apsw.Connection, table: str, rowid: int) -> int:
    """Rows of the index from ``rowid`` on (those the pass indexed, and any since)."""
    sql = f"SELECT count(*) FROM main.{table}_docsize WHERE id >= ?"
    return tx.execute(sql, (rowid,)).fetchone()[0]


_FRAME_HEADER_MAX = 18  # bytes: magic, descriptor, window, dictionary id, size


@reading(ZDICTS, lambda: 0)
def drop_unnamed_dictionaries(tx: apsw.Connection, pid: int) -> int:
    """Delete the project's zstd dictionaries (an older home's) that no frame of its
    blocks or files names any more, once a pack pass compressed them again without
    one. Reads each frame's header only, and only while the project has one. Returns
    the dictionaries deleted."""
    kept = {r[0] for r in tx.execute("SELECT id FROM zdicts WHERE project_id = ?", (pid,))}
    if not kept:
        return 0
    for table, column in (("body_blocks", "data"), ("files", "body")):
        rowids = tx.execute(
            f"SELECT id FROM {table} WHERE project_id = ? AND length({column}) > 0", (pid,)
        ).fetchall()
        kept -= {_frame_dictionary(tx, table, column, rowid) for (rowid,) in rowids}
    tx.executemany("DELETE FROM zdicts WHERE id = ?", [(d,) for d in kept])
    return len(kept)


def _frame_dictionary(tx: apsw.Connection, table: str, column: str, rowid: int) -> int:
    """The dictionary id a stored frame's header names (0: none), read alone."""
    with tx.blob_open("main", table, column, rowid, False) as blob:
        header = blob.read(_FRAME_HEADER_MAX)
    return zstandard.get_frame_parameters(header).dict_id


_STRUCTURE_V2 = b"\xff\x00\x00\x01"  # FTS5 structure records of contentless_delete tables


class Segment(NamedTuple):
    """One b-tree of a project's stored FTS5 index (an entry of its structure record)."""

    id: int
    pages: int  # leaf pages
    rows: int  # rows indexed in it
    dead: int  # of them deleted since (tombstones)


def index_segments(conn: apsw.Connection, pid: int) -> list[Segment]:
    """The segments of the project's stored index, from FTS5's structure record: one
    row whatever the project's size (its format: SQLite's fts5_index.c; a
    contentless_delete table's, version 2, counts each segment's rows and tombstones)."""
    rows = conn.execute(f"SELECT block FROM main.{fts_table(pid)}_data WHERE id = 10").fetchall()
    blob = rows[0][0] if rows else b""
    v2 = blob[4:8] == _STRUCTURE_V2
    values = varints(blob[8:] if v2 else blob[4:])  # after the cookie (and the mark)
    fields, at, segments = (8 if v2 else 3), 3, []  # levels, segments, write counter
    for _ in range(values[0] if values else 0):
        count = values[at + 1]  # after the level's merge count
        at += 2
        for seg in (values[at + i * fields : at + (i + 1) * fields] for i in range(count)):
            # id, first page, last page[, origin, origin, tombstone pages, tombstones, rows]
            rows_dead = (seg[7], seg[6]) if v2 else (0, 0)
            segments.append(Segment(seg[0], seg[2] - seg[1] + 1, *rows_dead))
        at += count * fields
    return segments


def rebuild_index(tx: apsw.Connection, pid: int) -> int:
    """Drop and refill the project's stored FTS table from files and chunks. Returns
    chunks indexed; a compact project stores none (0)."""
    index_sizes.drop_in(tx, pid)
    _drop_index(tx, pid)
    if compact_limit(tx, pid):
        return 0
    _create_index(tx, pid)
    return _fill_index(tx, pid, "main")


def ready_index(db, pid: int) -> None:
    """Make the project's index readable on ``db``'s connection (an Authority): a
    compact project's is built in the connection's temp schema, once per generation,
    from one read snapshot; an indexed project's stored one needs nothing (a temp copy
    left from before it became indexed is dropped: it would hide the stored one)."""
    with db.__dict__.setdefault("_memoryd_temp_lock", threading.Lock()):
        built: dict[int, int] = db.__dict__.setdefault("_memoryd_temp_index", {})
        limit, generation = db.query(
            "SELECT compact_limit, generation FROM projects WHERE id = ?", (pid,)
        )[0]
        if (limit and built.get(pid) == generation) or (not limit and pid not in built):
            return
        conn = db.conn
        conn.execute("SAVEPOINT memoryd_ready_index")
        try:
            _build_temp_index(conn, pid, built)
        except BaseException:
            conn.execute("ROLLBACK TO memoryd_ready_index")
            conn.execute("RELEASE memoryd_ready_index")
            raise
        conn.execute("RELEASE memoryd_ready_index")


def _build_temp_index(conn: apsw.Connection, pid: int, built: dict[int, int]) -> None:
    limit, generation = conn.execute(
        "SELECT compact_limit, generation FROM projects WHERE id = ?", (pid,)
    ).fetchone()
    _drop_index(conn, pid, "temp")
    built.pop(pid, None)
    if limit:
        _create_index(conn, pid, "temp")
        _fill_index(conn, pid, "temp")
        conn.execute(
            f"CREATE VIRTUAL TABLE {instance_view(pid)}"
            f" USING fts5vocab(temp, {fts_table(pid)}, instance)"
        )
        built[pid] = generation
