"""All SQL of memory anchors: where each path ref of a memory record points now.

A row of ``memory_anchors`` keeps a cited span's fingerprint (written once, with
the record) and its current place and state (rewritten by an ingest that changes
its file). The policy (what a fingerprint is, how a span is found again) is
:mod:`memoryd.consolidation.anchors`; this module only reads and writes rows.
Functions named ``*_in`` take a connection inside an open write transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import apsw
import orjson

from memoryd.storage.corpus import fts_table
from memoryd.storage.lazy import MEMORY, reading, writing

FINGERPRINT = (
    "record_id", "project_id", "ref", "path", "start_line", "end_line", "file_hash",
    "span_hash", "line_hashes", "occurrence", "occurrences", "symbol", "terms",
)  # fmt: skip
PLACE = ("cur_path", "cur_start", "cur_end", "state", "checked_hash")
COLUMNS = ("id", *FINGERPRINT, *PLACE)
# the anchor and its current file: (file id, live, content hash), NULLs when none
_SELECT = (
    f"SELECT {', '.join('a.' + c for c in COLUMNS)}, f.id, f.live, f.content_hash"
    " FROM memory_anchors a LEFT JOIN files f"
    " ON f.project_id = a.project_id AND f.path = a.cur_path"
)
FILE = ("file_id", "live", "content_hash")


def _anchor(row: tuple) -> dict:
    out = dict(zip((*COLUMNS, *FILE), row, strict=True))
    out["terms"] = orjson.loads(out["terms"])
    return out


@writing(MEMORY)
def insert_in(tx: apsw.Connection, rows: Iterable[dict]) -> int:
    """Store anchors (each dict has the fingerprint and place columns). Returns rows."""
    cols = (*FINGERPRINT, *PLACE)
    values = [
        tuple(orjson.dumps(r[c]).decode() if c == "terms" else r[c] for c in cols) for r in rows
    ]
    tx.executemany(
        f"INSERT INTO memory_anchors ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        values,
    )
    return len(values)


@reading(MEMORY, list)
def of_records(conn: Any, record_ids: Sequence[str]) -> list[dict]:
    """The anchors of these records with their current file, by record then id."""
    if not record_ids:
        return []
    rows = conn.execute(
        f"{_SELECT} WHERE a.record_id IN (SELECT value FROM json_each(?)) ORDER BY a.id",
        (orjson.dumps(list(record_ids)).decode(),),
    )
    return [_anchor(r) for r in rows]


@reading(MEMORY, list)
def on_paths(conn: Any, pid: int, paths: Sequence[str]) -> list[dict]:
    """The anchors of active records whose span is now in one of ``paths``."""
    if not paths:
        return []
    rows = conn.execute(
        f"{_SELECT} JOIN memory_records r ON r.id = a.record_id AND r.status = 'active'"
        " WHERE a.project_id = ? AND a.cur_path IN (SELECT value FROM json_each(?))"
        " ORDER BY a.id",
        (pid, orjson.dumps(list(paths)).decode()),
    )
    return [_anchor(r) for r in rows]


@reading(MEMORY, list)
def outdated(conn: Any, pid: int) -> list[dict]:
    """The anchors of the project's active records whose state was found against
    another file than the one now at their place (changed, retired, or back)."""
    rows = conn.execute(
        f"{_SELECT} JOIN memory_records r ON r.id = a.record_id AND r.status = 'active'"
        " WHERE a.project_id = ?"
        " AND (CASE WHEN f.live = 1 THEN f.content_hash END) IS NOT a.checked_hash"
        " ORDER BY a.id",
        (pid,),
    )
    return [_anchor(r) for r in rows]


@reading(MEMORY, lambda: None)
def place_in(tx: apsw.Connection, anchor_id: int, place: dict) -> None:
    """Move an anchor: its current path, lines, state and the file hash they hold for."""
    tx.execute(
        "UPDATE memory_anchors SET cur_path = ?, cur_start = ?, cur_end = ?, state = ?,"
        " checked_hash = ? WHERE id = ?",
        (*(place[c] for c in PLACE), anchor_id),
    )


def live_file(conn: Any, pid: int, path: str) -> tuple[int, bytes] | None:
    """(file id, content hash) of the project's live file at ``path``, or None."""
    row = conn.execute(
        "SELECT id, content_hash FROM files WHERE project_id = ? AND path = ? AND live = 1",
        (pid, path),
    ).fetchone()
    return (row[0], row[1]) if row else None


def live_with_hash(conn: Any, pid: int, content_hash: bytes) -> list[tuple[int, str]]:
    """(file id, path) of the project's live files with this content hash."""
    return conn.execute(
        "SELECT id, path FROM files WHERE project_id = ? AND content_hash = ? AND live = 1"
        " ORDER BY path",
        (pid, content_hash),
    ).fetchall()


def files_of_chunks(conn: Any, rowids: Sequence[int]) -> list[tuple[int, str, bytes]]:
    """(file id, path, content hash) of the live files holding these chunks."""
    if not rowids:
        return []
    return conn.execute(
        "SELECT DISTINCT f.id, f.path, f.content_hash FROM chunks c JOIN files f"
        " ON f.id = c.file_id AND f.live = 1 WHERE c.id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(list(rowids)).decode(),),
    ).fetchall()


def stored_index(conn: Any, pid: int) -> bool:
    """Whether the project's full-text index is stored (a compact project's is not)."""
    return (
        conn.execute(
            "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (fts_table(pid),)
        ).fetchone()
        is not None
    )


def chunks_matching(conn: Any, pid: int, match: str, limit: int) -> list[int]:
    """Rowids of the stored index's chunks matching an FTS5 expression (any order)."""
    t = fts_table(pid)
    rows = conn.execute(f"SELECT rowid FROM main.{t} WHERE {t} MATCH ? LIMIT ?", (match, limit))
    return [r[0] for r in rows]


def doc_freqs(conn: Any, pid: int, stems: Sequence[str]) -> dict[str, int]:
    """Chunks of the stored index holding each stem ({} when none is stored)."""
    if not stems or not stored_index(conn, pid):
        return {}
    rows = conn.execute(
        f"SELECT term, doc FROM main.{fts_table(pid)}_vocab"
        " WHERE term IN (SELECT value FROM json_each(?))",
        (orjson.dumps(list(stems)).decode(),),
    )
    return dict(rows)


@reading(MEMORY, list)
def project_anchors(conn: Any, pid: int) -> list[dict]:
    """Every anchor of the project's active records (a sweep's look)."""
    rows = conn.execute(
        f"{_SELECT} JOIN memory_records r ON r.id = a.record_id AND r.status = 'active'"
        " WHERE a.project_id = ? ORDER BY a.id",
        (pid,),
    )
    return [_anchor(r) for r in rows]
