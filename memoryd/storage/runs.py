"""Ingest runs: one row per ``memoryd ingest``, the source of progress and summaries."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence

import apsw
import orjson

from memoryd.base.config import SKIPPED_PATHS_LISTED

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


#: The key of the ``skipped`` column's JSON that lists files (reason -> the paths, each
#: a path or [path, detail]) beside the counts (reason -> count): no schema change.
NAMED = "named"


def split_skipped(blob: bytes | None) -> tuple[dict[str, int], dict[str, list[str]]]:
    """A run's ``skipped`` column: (reason -> count, reason -> the paths listed)."""
    counts = orjson.loads(blob or b"{}")
    named = counts.pop(NAMED, {})
    return counts, {r: [e if isinstance(e, str) else e[0] for e in v] for r, v in named.items()}


def skipped_files(blob: bytes | None) -> list[dict]:
    """Every file of a run's ``skipped`` column listed, by path: its reason and, when
    a rule said more (a secret's content), the detail."""
    named = orjson.loads(blob or b"{}").get(NAMED, {})
    out = []
    for reason, entries in named.items():
        for e in entries:
            path, detail = (e, "") if isinstance(e, str) else e
            out.append({"path": path, "reason": reason, **({"detail": detail} if detail else {})})
    return sorted(out, key=lambda f: (f["path"], f["reason"]))


def _add_skipped(
    tx: apsw.Connection, run: int, skipped: dict[str, int], listed: Sequence[Sequence[str]]
) -> None:
    """Add a job's skips to its run: the counts, and the files listed (reason, path,
    detail) up to ``SKIPPED_PATHS_LISTED`` in all."""
    if not skipped:
        return
    old = tx.execute("SELECT skipped FROM ingest_runs WHERE id = ?", (run,)).fetchone()[0]
    counts = orjson.loads(old or b"{}")
    named: dict[str, list] = counts.pop(NAMED, {})
    total = Counter(counts)
    total.update(skipped)
    room = SKIPPED_PATHS_LISTED - sum(map(len, named.values()))
    for reason, path, *detail in list(listed)[: max(room, 0)]:
        named.setdefault(reason, []).append([path, detail[0]] if detail and detail[0] else path)
    out: dict = dict(sorted(total.items()))
    if named:
        out[NAMED] = named
    tx.execute("UPDATE ingest_runs SET skipped = ? WHERE id = ?", (orjson.dumps(out), run))


def record_scan(
    tx: apsw.Connection,
    run: int,
    *,
    files: int,
    nbytes: int,
    batches: int,
    unchanged: int,
    skipped: dict[str, int],
    listed: Sequence[Sequence[str]] = (),
) -> None:
    tx.execute(
        "UPDATE ingest_runs SET scanned_at = ?, files_total = ?, bytes_total = ?, batches = ?,"
        " unchanged = ? WHERE id = ?",
        (time.time(), files, nbytes, batches, unchanged, run),
    )
    _add_skipped(tx, run, skipped, listed)
    _maybe_finish(tx, run)


def record_batch(
    tx: apsw.Connection,
    run: int,
    *,
    files: int,
    nbytes: int,
    skipped: dict[str, int],
    listed: Sequence[Sequence[str]] = (),
    retired: int = 0,
    on_finish: Callable[[apsw.Connection], None] | None = None,
) -> None:
    """A batch's outcome; ``retired``: stored files it took out of search (their new
    content holds a secret)."""
    tx.execute(
        "UPDATE ingest_runs SET files_done = files_done + ?, bytes_done = bytes_done + ?,"
        " batches_done = batches_done + 1, retired = retired + ? WHERE id = ?",
        (files, nbytes, retired, run),
    )
    _add_skipped(tx, run, skipped, listed)
    _maybe_finish(tx, run, on_finish)


def record_finalize(
    tx: apsw.Connection,
    run: int,
    retired: int,
    on_finish: Callable[[apsw.Connection], None] | None = None,
) -> None:
    tx.execute(
        "UPDATE ingest_runs SET finalized = 1, retired = retired + ? WHERE id = ?", (retired, run)
    )
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


def get_run(db, run: int, *, files: bool = False) -> dict:
    """The run's row; with ``files``, every file it skipped (``skipped_files``: a
    follower polling the row needs only the counts)."""
    row = db.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM ingest_runs WHERE id = ?", (run,))[0]
    out = dict(zip(RUN_COLUMNS, row, strict=True))
    if files:
        out["skipped_files"] = skipped_files(out["skipped"])
    out["skipped"], out["skipped_named"] = split_skipped(out["skipped"])
    return out


def latest_run(db, pid: int) -> dict | None:
    """The project's latest ingest run (None: it has none)."""
    latest = db.query("SELECT max(id) FROM ingest_runs WHERE project_id = ?", (pid,))[0][0]
    return None if latest is None else get_run(db, latest, files=True)


def unfinished_first_run(db, pid: int) -> dict | None:
    """The project's latest run while none of its runs has finished (its files are
    not all indexed yet), else None."""
    latest, finished = db.query(
        "SELECT max(id), count(finished_at) FROM ingest_runs WHERE project_id = ?", (pid,)
    )[0]
    if latest is None or finished:
        return None
    return get_run(db, latest)


def last_finished(db) -> float | None:
    """When the last ingest run of any project finished (None: none has)."""
    return db.query("SELECT max(finished_at) FROM ingest_runs")[0][0]
