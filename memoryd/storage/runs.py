"""Ingest runs: one row per ``memoryd ingest``, the source of progress and summaries."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import apsw
import orjson

RUN_COLUMNS = (
    "id", "project_id", "root", "started_at", "scanned_at", "finished_at", "files_total",
    "bytes_total", "files_done", "bytes_done", "batches", "batches_done", "finalized",
    "unchanged", "retired", "skipped",
)  # fmt: skip


def start_run(tx: apsw.Connection, pid: int, root: str) -> int:
    return tx.execute(
        "INSERT INTO ingest_runs (project_id, root, started_at, skipped) VALUES (?, ?, ?, ?)"
        " RETURNING id",
        (pid, root, time.time(), b"{}"),
    ).fetchone()[0]


def _add_skipped(tx: apsw.Connection, run: int, skipped: dict[str, int]) -> None:
    if not skipped:
        return
    old = tx.execute("SELECT skipped FROM ingest_runs WHERE id = ?", (run,)).fetchone()[0]
    total = Counter(orjson.loads(old or b"{}"))
    total.update(skipped)
    tx.execute(
        "UPDATE ingest_runs SET skipped = ? WHERE id = ?",
        (orjson.dumps(dict(sorted(total.items()))), run),
    )


def record_scan(
    tx: apsw.Connection,
    run: int,
    *,
    files: int,
    nbytes: int,
    batches: int,
    unchanged: int,
    skipped: dict[str, int],
) -> None:
    tx.execute(
        "UPDATE ingest_runs SET scanned_at = ?, files_total = ?, bytes_total = ?, batches = ?,"
        " unchanged = ? WHERE id = ?",
        (time.time(), files, nbytes, batches, unchanged, run),
    )
    _add_skipped(tx, run, skipped)
    _maybe_finish(tx, run)


def record_batch(
    tx: apsw.Connection,
    run: int,
    *,
    files: int,
    nbytes: int,
    skipped: dict[str, int],
    on_finish: Callable[[apsw.Connection], None] | None = None,
) -> None:
    tx.execute(
        "UPDATE ingest_runs SET files_done = files_done + ?, bytes_done = bytes_done + ?,"
        " batches_done = batches_done + 1 WHERE id = ?",
        (files, nbytes, run),
    )
    _add_skipped(tx, run, skipped)
    _maybe_finish(tx, run, on_finish)


def record_finalize(
    tx: apsw.Connection,
    run: int,
    retired: int,
    on_finish: Callable[[apsw.Connection], None] | None = None,
) -> None:
    tx.execute("UPDATE ingest_runs SET finalized = 1, retired = ? WHERE id = ?", (retired, run))
    _maybe_finish(tx, run, on_finish)


def _maybe_finish(
    tx: apsw.Connection, run: int, on_finish: Callable[[apsw.Connection], None] | None = None
) -> None:
    """Mark the run finished once scanned, finalized and every batch done; ``on_finish``
    runs first, in the same transaction."""
    done = tx.execute(
        "SELECT 1 FROM ingest_runs WHERE id = ? AND finished_at IS NULL"
        " AND scanned_at IS NOT NULL AND finalized = 1 AND batches_done >= batches",
        (run,),
    ).fetchone()
    if not done:
        return
    if on_finish:
        on_finish(tx)
    tx.execute("UPDATE ingest_runs SET finished_at = ? WHERE id = ?", (time.time(), run))


def get_run(db, run: int) -> dict:
    row = db.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM ingest_runs WHERE id = ?", (run,))[0]
    out = dict(zip(RUN_COLUMNS, row, strict=True))
    out["skipped"] = orjson.loads(out["skipped"] or b"{}")
    return out


def unfinished_first_run(db, pid: int) -> dict | None:
    """The project's latest run while none of its runs has finished (its files are
    not all indexed yet), else None."""
    latest, finished = db.query(
        "SELECT max(id), count(finished_at) FROM ingest_runs WHERE project_id = ?", (pid,)
    )[0]
    if latest is None or finished:
        return None
    return get_run(db, latest)
