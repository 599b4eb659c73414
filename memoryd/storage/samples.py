"""The supervisor's samples (for ``memoryd dashboard``) and the dashboard's other reads.

A sample is one small JSON row written inside the supervisor's group commit;
the same write drops the rows beyond the bound, so the table never grows past
``keep`` rows (a day at the default period). The readers run in the
dashboard's own process on a read-only connection, each statement its own
short read transaction (autocommit): they never pin the WAL for long.
"""

from __future__ import annotations

import math

import apsw
import orjson

from memoryd.storage.authority import Authority
from memoryd.storage.runs import RUN_COLUMNS, split_skipped


def keep_rows(period_seconds: float, keep_seconds: float) -> int:
    """The bound: the samples that cover ``keep_seconds`` at one per period."""
    return max(1, math.ceil(keep_seconds / period_seconds))


def record_in(tx: apsw.Connection, at: float, data: dict, keep: int) -> int:
    """Insert one sample and drop the oldest beyond ``keep`` rows, in the caller's
    transaction. Returns the new sample's id."""
    tx.execute("INSERT INTO samples (at, data) VALUES (?, ?)", (at, orjson.dumps(data)))
    new = tx.last_insert_rowid()
    tx.execute("DELETE FROM samples WHERE id <= ?", (new - keep,))
    return new


def live_counts(conn: apsw.Connection) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The sample's queue: jobs waiting (queued or failed, counted on the ready index
    alone), and claimed and dead jobs by kind (small sets, each on its own partial
    index). Never a scan of the table: done jobs pile up for ``jobs_keep_seconds``."""
    waiting = conn.execute(
        "SELECT count(*) FROM jobs WHERE state IN ('queued', 'failed')"
    ).fetchone()[0]
    totals = {"waiting": waiting, "claimed": 0, "dead": 0}
    kinds: dict[str, dict[str, int]] = {}
    for state in ("claimed", "dead"):
        for kind, n in conn.execute(
            "SELECT kind, count(*) FROM jobs WHERE state = ? GROUP BY kind", (state,)
        ):
            kinds.setdefault(kind, {})[state] = n
            totals[state] += n
    return totals, kinds


def queue_by_kind(conn: apsw.Connection) -> dict[str, dict[str, int]]:
    """``{kind: {state: count}}`` over the whole jobs table (the page's table: one scan
    per refresh, like ``memoryd status``; never in the supervisor)."""
    out: dict[str, dict[str, int]] = {}
    for kind, state, n in conn.execute(
        "SELECT kind, state, count(*) FROM jobs GROUP BY kind, state"
    ):
        out.setdefault(kind, {})[state] = n
    return out


def since(db: Authority, start: float) -> list[dict]:
    """Samples taken at or after ``start``, oldest first (each: its data plus ``at``)."""
    rows = db.query("SELECT at, data FROM samples WHERE at >= ? ORDER BY id", (start,))
    return [{**orjson.loads(data), "at": at} for at, data in rows]


def count(db: Authority) -> int:
    return db.query("SELECT count(*) FROM samples")[0][0]


def recent_runs(db: Authority, limit: int) -> list[dict]:
    """The latest ingest runs, newest first, with their project's name."""
    cols = ", ".join(f"r.{c}" for c in RUN_COLUMNS)
    rows = db.query(
        f"SELECT p.name, {cols} FROM ingest_runs r JOIN projects p ON p.id = r.project_id"
        " ORDER BY r.id DESC LIMIT ?",
        (limit,),
    )
    out = []
    for name, *values in rows:
        run = dict(zip(RUN_COLUMNS, values, strict=True))
        run["skipped"], run["skipped_named"] = split_skipped(run["skipped"])
        out.append({"project": name, **run})
    return out


def last_results(db: Authority, kind: str, dedupe_key: str, limit: int) -> list[dict]:
    """The answers of the latest finished jobs of ``kind`` under ``dedupe_key`` (the
    periodic retention tick), newest first: finish time, state, answer, last error."""
    rows = db.query(
        "SELECT finished_at, state, result, last_error FROM jobs"
        " WHERE kind = ? AND dedupe_key = ? AND state IN ('done', 'dead')"
        " ORDER BY id DESC LIMIT ?",
        (kind, dedupe_key, limit),
    )
    return [
        {
            "finished_at": at,
            "state": state,
            "answer": orjson.loads(result) if result else None,
            "error": error,
        }
        for at, state, result, error in rows
    ]
