"""Derived tables: drop and rebuild them from the authority rows, or prove a rebuild matches.

Derived tables are the per-project full-text indexes (and with them the
fts5vocab term statistics) and the chunk and memory record vectors of the
configured encoder (:mod:`memoryd.storage.vectors`,
:mod:`memoryd.storage.record_vectors`); search's caches live in memory, per
index generation. Their content digest is
what ``rebuild --verify`` compares between the live store and a rebuilt
scratch copy.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import orjson

from memoryd.storage import lazy, record_vectors, vectors
from memoryd.storage.authority import Authority
from memoryd.storage.corpus import compact_limit, fts_table, rebuild_index
from memoryd.storage.record_vectors import rebuild_record_vectors, record_vectors_digest
from memoryd.storage.vectors import rebuild_vectors, vectors_digest


@dataclass(frozen=True)
class Derived:
    """A derived table family: how to rebuild it for a project (with the authority's
    configuration) and how to digest it."""

    name: str
    rebuild: Callable[[apsw.Connection, int, Any], int]
    digest: Callable[[apsw.Connection, int], str]


def fts_digest(conn: apsw.Connection, pid: int) -> str:
    """Every (term, chunk, column, offset) of the project's index, its chunks' sizes
    and its totals, hashed in order (a compact project stores no index: its digest
    says so)."""
    if compact_limit(conn, pid):
        return "compact"
    vocab = f"temp.memoryd_instances_{int(pid)}"
    conn.execute(f"DROP TABLE IF EXISTS {vocab}")
    conn.execute(f"CREATE VIRTUAL TABLE {vocab} USING fts5vocab(main, {fts_table(pid)}, instance)")
    try:
        h = hashlib.sha256()
        for row in conn.execute(f"SELECT term, doc, col, offset FROM {vocab} ORDER BY 1, 2, 3, 4"):
            h.update(repr(row).encode())
        # the sizes too: they count the words the index leaves out (storage.unsearched)
        table = fts_table(pid)
        for row in conn.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id"):
            h.update(repr(row).encode())
        h.update(
            repr(conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchall()).encode()
        )
        return h.hexdigest()
    finally:
        conn.execute(f"DROP TABLE {vocab}")


DERIVED: list[Derived] = [
    Derived("fts", lambda tx, pid, _config: rebuild_index(tx, pid), fts_digest),
    Derived("vectors", rebuild_vectors, vectors_digest),  # settles the stored encoder first
    Derived("record_vectors", rebuild_record_vectors, record_vectors_digest),
]


def _projects(conn: apsw.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT id, name FROM projects ORDER BY id").fetchall()


def digests(conn: apsw.Connection) -> dict[str, dict[str, str]]:
    """``{project: {derived name: digest}}``."""
    return {name: {d.name: d.digest(conn, pid) for d in DERIVED} for pid, name in _projects(conn)}


def rebuild(db: Authority) -> dict[str, dict[str, int]]:
    """Drop and rebuild every derived table of every project, one transaction each."""
    out: dict[str, dict[str, int]] = {}
    for pid, name in _projects(db.conn):
        out[name] = db.write(
            lambda tx, pid=pid: {d.name: d.rebuild(tx, pid, db.config) for d in DERIVED}
        )
    return out


def verify(db: Authority) -> dict:
    """Rebuild into a scratch copy and compare digests with the live tables. Writes nothing live."""
    with tempfile.TemporaryDirectory(prefix="memoryd-verify-") as tmp:
        scratch_path = Path(tmp) / "authority.db"
        scratch = apsw.Connection(str(scratch_path))
        with scratch.backup("main", db.conn, "main") as backup:
            backup.step(-1)
        scratch.close()
        copy = Authority(scratch_path, db.config)
        try:
            live = digests(db.conn)
            rebuild(copy)
            pending = _set_pending_aside(db, copy)
            rebuilt = digests(copy.conn)
        finally:
            copy.close()
    mismatches = [
        f"{project}/{name}"
        for project, per in live.items()
        for name, digest in per.items()
        if rebuilt.get(project, {}).get(name) != digest
    ]
    return {
        "equal": not mismatches,
        "mismatches": mismatches,
        "pending": pending,
        "live": live,
        "rebuilt": rebuilt,
    }


# -- codes still to come (vectors jobs not yet applied) ---------------------------------


def _set_pending_aside(db: Authority, copy: Authority) -> dict[str, dict[str, int]]:
    """Compare like with like: the rebuilt copy drops the codes the live store does not
    hold yet (live files and active records whose vectors job is still to be applied),
    so they count as pending, not as a mismatch; a stored code that differs from its
    recomputation still is one. Returns ``{project: {derived name: pending count}}``
    (all 0 when the configured encoder stores no codes)."""
    stores = vectors.stores(db.config)
    pending: dict[str, dict[str, int]] = {}
    for pid, name in _projects(db.conn):
        files = [path for path, _hash, _size in vectors.uncoded(db.conn, pid)] if stores else []
        recs = [n for n, _digest in record_vectors.uncoded(db.conn, pid)] if stores else []
        pending[name] = {"vectors": len(files), "record_vectors": len(recs)}
        if files or recs:
            copy.write(lambda tx, pid=pid, f=files, r=recs: _drop_codes(tx, pid, f, r))
    if stores and vectors.stored_encoder(db.conn) is None:  # none stored yet: none rebuilt
        copy.write(_forget_encoder)
    return pending


def _forget_encoder(tx: apsw.Connection) -> None:
    if lazy.present(tx, lazy.VECTORS):
        tx.execute("DELETE FROM vector_encoder")


def _drop_codes(tx: apsw.Connection, pid: int, paths: list[str], ns: list[int]) -> None:
    if not lazy.present(tx, lazy.VECTORS):
        return
    tx.execute(
        "DELETE FROM chunk_vectors WHERE file_id IN (SELECT id FROM files WHERE project_id = ?"
        " AND path IN (SELECT value FROM json_each(?)))",
        (pid, orjson.dumps(paths).decode()),
    )
    if lazy.present(tx, lazy.MEMORY):
        tx.execute(
            "DELETE FROM record_vectors WHERE project_id = ? AND n IN"
            " (SELECT value FROM json_each(?))",
            (pid, orjson.dumps(ns).decode()),
        )
