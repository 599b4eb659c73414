"""The ``projects`` table as a user manages it: the listing, the ingest options it
keeps, a rename, the tombstone of a removal and the bounded steps that delete a
removed project's rows."""

from __future__ import annotations

import apsw
import orjson

from memoryd.storage import lazy

# The corpus's modules are imported by what reads or deletes a project's rows, not by
# the listing (`memoryd status`, `memoryd projects`: issue 32 item 6).

TOMBSTONE = "~removing~"  # prefix of a project being removed; no user name starts with it
LISTING_KEYS = (
    "project", "root", "created_at", "files", "source_bytes", "chunks", "last_ingest_at",
)  # fmt: skip


def listing(db) -> list[dict]:
    """Every project with its root, live files, source bytes, chunks and last ingest,
    by name."""
    rows = db.query(
        "SELECT p.name, p.root, p.created_at,"
        " (SELECT count(*) FROM files f WHERE f.project_id = p.id AND f.live = 1),"
        " (SELECT coalesce(sum(size), 0) FROM files f WHERE f.project_id = p.id AND f.live = 1),"
        " (SELECT coalesce(sum(chunk_count), 0) FROM files f WHERE f.project_id = p.id),"
        " (SELECT max(finished_at) FROM ingest_runs r WHERE r.project_id = p.id)"
        " FROM projects p ORDER BY p.name"
    )
    return [dict(zip(LISTING_KEYS, r, strict=True)) for r in rows]


def live_listing(db) -> list[dict]:
    """:func:`listing` without the projects being removed (named by their tombstone)."""
    return [p for p in listing(db) if not p["project"].startswith(TOMBSTONE)]


def ingest_options(db, pid: int) -> dict | None:
    """The choices of files the project's last ingest stored (None: none stored)."""
    from memoryd.storage.corpus import _query

    rows = _query(db, "SELECT ingest_options FROM projects WHERE id = ?", (pid,))
    return orjson.loads(rows[0][0]) if rows and rows[0][0] else None


def set_ingest_options(tx: apsw.Connection, pid: int, options: dict) -> None:
    tx.execute(
        "UPDATE projects SET ingest_options = ? WHERE id = ?",
        (orjson.dumps(options, option=orjson.OPT_SORT_KEYS), pid),
    )


def exists(db, pid: int) -> bool:
    """Whether project ``pid`` is still there (``db``: an Authority or a transaction)."""
    from memoryd.storage.corpus import _query

    return bool(_query(db, "SELECT 1 FROM projects WHERE id = ?", (pid,)))


def rename_in(tx: apsw.Connection, pid: int, name: str) -> None:
    tx.execute("UPDATE projects SET name = ? WHERE id = ?", (name, pid))


def _delete_some(tx: apsw.Connection, table: str, where: str, args: tuple, limit: int) -> int:
    return len(
        tx.execute(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} LIMIT ?)"
            " RETURNING id",
            (*args, limit),
        ).fetchall()
    )


# A project's memory records and their bookkeeping (record ids and run ids lead there).
_RECORDS = "record_id IN (SELECT id FROM memory_records WHERE project_id = ?)"
_RUNS = "run_id IN (SELECT id FROM memory_runs WHERE project_id = ?)"
MEMORY_ROWS = (
    ("memory_history", _RECORDS),
    ("memory_outcomes", _RUNS),
    ("memory_records", "project_id = ?"),  # its FTS rows go with it (triggers)
    ("memory_candidates", "project_id = ?"),
    ("memory_runs", "project_id = ?"),
)


def remove_step(tx: apsw.Connection, pid: int, limit: int) -> bool:
    """Delete at most ``limit`` rows of project ``pid``; True once nothing is left."""
    from memoryd.storage import index_sizes, records
    from memoryd.storage.corpus import (
        CHUNKS_OF_FILE,
        drop_index_rows,
        fts_table,
        reclaim_free_pages,
    )

    chunk_ids = [  # through files: (project_id, path) is indexed, a file's chunks a range
        r[0]
        for r in tx.execute(
            f"SELECT c.id FROM files f JOIN chunks c ON {CHUNKS_OF_FILE}"
            " WHERE f.project_id = ? LIMIT ?",
            (pid, limit),
        )
    ]
    if chunk_ids:
        drop_index_rows(tx, pid, chunk_ids)
        tx.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in chunk_ids])
        return False
    for table, where, key in (
        ("files", "project_id = ?", pid),
        ("body_blocks", "project_id = ?", pid),
        ("ingest_runs", "project_id = ?", pid),
        ("history", "project = ?", str(pid)),
        *((table, where, pid) for table, where in MEMORY_ROWS if lazy.present(tx, lazy.MEMORY)),
    ):
        if _delete_some(tx, table, where, (key,), limit):
            return False
    tx.execute(f"DROP TABLE IF EXISTS {fts_table(pid)}_vocab")
    tx.execute(f"DROP TABLE IF EXISTS {fts_table(pid)}")
    if lazy.present(tx, lazy.ZDICTS):
        tx.execute("DELETE FROM zdicts WHERE project_id = ?", (pid,))
    index_sizes.drop_in(tx, pid)
    tx.execute("DELETE FROM projects WHERE id = ?", (pid,))
    # its memory records' terms stay in memory_fts's older segments until written again
    records.optimize_fts_in(tx)
    reclaim_free_pages(tx)
    return True
