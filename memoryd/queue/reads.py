"""Read-only inspection of the ``jobs`` table (and its ``job_effects``): what operators,
the ingest follower, the drill and the capabilities ask of the queue without changing it.

:class:`JobReads` reads through an :class:`Authority`; the functions named ``*_in``
read through a connection the caller holds (inside its write transaction, or the
supervisor's read connection at start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import orjson

from memoryd.queue.jobs import PENDING, STATES, ClaimedJob
from memoryd.storage.authority import Authority


class JobReads:
    """Reads of the queue over one :class:`Authority` connection (apart from
    :class:`~memoryd.queue.jobs.JobQueue`, which changes it: a reader needs none of its
    settings)."""

    def __init__(self, authority: Authority) -> None:
        self.db = authority

    def outcome(self, job_id: int) -> tuple[str, object, str | None]:
        """(state, decoded result or None, last error) of one job."""
        rows = self.db.query("SELECT state, result, last_error FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            raise KeyError(job_id)
        state, result, error = rows[0]
        return state, (orjson.loads(result) if result else None), error

    def open_count(self, project: str, kinds: Sequence[str] = ()) -> int:
        """The project's jobs (of ``kinds``, when given) not finished yet (queued,
        claimed or failed)."""
        where = f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        return self.db.query(
            f"SELECT count(*) FROM jobs WHERE project = ?{where}"
            " AND state IN ('queued', 'claimed', 'failed')",
            (project, *kinds),
        )[0][0]

    def first_since(self, project: str, since: float, kinds: Sequence[str]) -> int | None:
        """The id of the project's first job of ``kinds`` created since ``since``."""
        marks = ",".join("?" * len(kinds))
        return self.db.query(
            f"SELECT min(id) FROM jobs WHERE project = ? AND created_at >= ? AND kind IN ({marks})",
            (project, since, *kinds),
        )[0][0]

    def finished_from(self, project: str, first_id: int, kinds: Sequence[str]) -> int:
        """The project's jobs of ``kinds`` finished (done or dead) among those from id
        ``first_id`` on: a rowid range, so a follower may ask often."""
        marks = ",".join("?" * len(kinds))
        return self.db.query(
            f"SELECT count(*) FROM jobs WHERE id >= ? AND project = ? AND kind IN ({marks})"
            " AND state IN ('done', 'dead')",
            (first_id, project, *kinds),
        )[0][0]

    def dead_count(self, project: str, since: float) -> int:
        """The project's dead jobs created since ``since``."""
        return self.db.query(
            "SELECT count(*) FROM jobs WHERE project = ? AND state = 'dead' AND created_at >= ?",
            (project, since),
        )[0][0]

    def dead_reasons(self, project: str, since: float, limit: int) -> list[tuple]:
        """``(kind, last error, jobs)`` of the project's dead jobs created since ``since``,
        the ``limit`` most common first."""
        return self.db.query(
            "SELECT kind, last_error, count(*) FROM jobs WHERE project = ? AND state = 'dead'"
            " AND created_at >= ? GROUP BY kind, last_error ORDER BY count(*) DESC, kind"
            " LIMIT ?",
            (project, since, limit),
        )

    def last_finished(self, project: str, since: float) -> float | None:
        """When the last of the project's jobs created since ``since`` finished."""
        return self.db.query(
            "SELECT max(finished_at) FROM jobs WHERE project = ? AND created_at >= ?",
            (project, since),
        )[0][0]

    def counts(self) -> dict[str, int]:
        """How many jobs are in each state."""
        counts = dict.fromkeys(STATES, 0)
        for state, n in self.db.query("SELECT state, count(*) FROM jobs GROUP BY state"):
            counts[state] = n
        return counts

    _COLUMNS = (
        "id", "project", "kind", "payload", "state", "priority", "attempts",
        "max_attempts", "not_before", "created_at", "updated_at", "finished_at",
        "last_error", "dedupe_key", "lease_owner", "lease_expires",
    )  # fmt: skip

    def _rows(self, where: dict[str, Any], limit: int) -> list[dict]:
        """Jobs matching every ``column = value`` in ``where`` (None: unfiltered), newest first."""
        conds = {k: v for k, v in where.items() if v is not None}
        sql = f"SELECT {', '.join(self._COLUMNS)} FROM jobs"
        if conds:
            sql += " WHERE " + " AND ".join(f"{k} = ?" for k in conds)
        rows = self.db.query(sql + " ORDER BY id DESC LIMIT ?", (*conds.values(), limit))
        out = []
        for r in rows:
            job = dict(zip(self._COLUMNS, r, strict=True))
            job["payload"] = orjson.loads(job["payload"])
            out.append(job)
        return out

    def list(
        self,
        state: str | None = None,
        limit: int = 100,
        *,
        kind: str | None = None,
        project: str | None = None,
    ) -> list[dict]:
        """Jobs newest first, filtered by state, kind and project when given."""
        return self._rows({"state": state, "kind": kind, "project": project}, limit)

    def get(self, job_id: int) -> dict | None:
        """One job's row (decoded payload), or None when there is no such job."""
        rows = self._rows({"id": job_id}, 1)
        return rows[0] if rows else None

    # -- reads for the drill and operators ------------------------------------

    def last_ids(self) -> tuple[int, int]:
        """The largest job id and job-effect id so far (0 when there is none)."""
        row = self.db.query(
            "SELECT (SELECT coalesce(max(id), 0) FROM jobs),"
            " (SELECT coalesce(max(id), 0) FROM job_effects)"
        )[0]
        return int(row[0]), int(row[1])

    def totals(self) -> tuple[int, int]:
        """How many jobs and job-effect rows the authority holds."""
        row = self.db.query(
            "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_effects)"
        )[0]
        return int(row[0]), int(row[1])

    def done_since(self, after_id: int) -> dict[int, float]:
        """``{id: finished_at}`` of the done jobs whose id is above ``after_id``."""
        return dict(
            self.db.query(
                "SELECT id, finished_at FROM jobs WHERE id > ? AND state = 'done'", (after_id,)
            )
        )

    def not_done(self) -> list[tuple[int, str, str | None]]:
        """``(id, state, last error)`` of every job not done, through the state index."""
        return self.db.query(
            "SELECT id, state, last_error FROM jobs WHERE state IN ('queued', 'failed')"
            " UNION ALL SELECT id, state, last_error FROM jobs WHERE state = 'claimed'"
            " UNION ALL SELECT id, state, last_error FROM jobs WHERE state = 'dead'"
        )

    def claimed(self, kinds: Sequence[str] = ()) -> list[tuple[ClaimedJob, float]]:
        """The claimed jobs (of ``kinds``, when given) under their current lease tokens,
        each with its lease expiry."""
        rows = self.db.query(
            "SELECT id, kind, payload, lease_token, attempts, project, lease_expires FROM jobs"
            " WHERE state = 'claimed' ORDER BY id"
        )
        return [
            (ClaimedJob(r[0], r[1], r[2], r[3], r[4], r[5]), r[6])
            for r in rows
            if not kinds or r[1] in kinds
        ]

    def effects_since(self, after_effect_id: int) -> dict[int, int]:
        """``{job id: effect rows}`` over the effect rows whose id is above ``after_effect_id``."""
        return dict(
            self.db.query(
                "SELECT job_id, count(*) FROM job_effects WHERE id > ? GROUP BY job_id",
                (after_effect_id,),
            )
        )

    def applied_not_done(self, after_effect_id: int) -> list[int]:
        """Jobs with an effect row above ``after_effect_id`` that are not done.

        A job's effects and its completion commit in one transaction, so any
        such job, at any moment, is a completion lost after its effects.
        """
        return [
            r[0]
            for r in self.db.query(
                "SELECT DISTINCT e.job_id FROM job_effects AS e JOIN jobs AS j ON j.id = e.job_id"
                " WHERE e.id > ? AND j.state != 'done'",
                (after_effect_id,),
            )
        ]

    def effects_of_other_attempts(self, after_effect_id: int) -> list[tuple[int, str, str]]:
        """``(job id, the effect's lease token, the job's)`` of each effect row above
        ``after_effect_id`` that a done job's last claim (the only one that may complete
        it; a completion keeps its lease token) did not write, or that names no attempt:
        a late result applied in place of its job's new attempt."""
        return self.db.query(
            "SELECT e.job_id, e.lease_token, j.lease_token FROM job_effects AS e"
            " JOIN jobs AS j ON j.id = e.job_id"
            " WHERE e.id > ? AND j.state = 'done' AND e.lease_token IS NOT j.lease_token",
            (after_effect_id,),
        )

    def retried_since(self, after_id: int) -> list[tuple[int, str, int, str | None]]:
        """``(id, kind, attempts, last error)`` of the jobs above ``after_id`` that took
        other than one attempt."""
        return self.db.query(
            "SELECT id, kind, attempts, last_error FROM jobs WHERE id > ? AND attempts != 1",
            (after_id,),
        )


def pending_in(conn: apsw.Connection, project: str) -> int:
    """The project's jobs queued, backing off or claimed."""
    marks = ",".join("?" * len(PENDING))
    return conn.execute(
        f"SELECT count(*) FROM jobs WHERE project = ? AND state IN ({marks})", (project, *PENDING)
    ).fetchone()[0]


def queued_payloads_in(conn: apsw.Connection, kind: str, project: str) -> list[Any]:
    """The decoded payloads of the project's jobs of ``kind`` waiting in the queue."""
    return [
        orjson.loads(payload)
        for (payload,) in conn.execute(
            "SELECT payload FROM jobs WHERE kind = ? AND project = ? AND state = 'queued'",
            (kind, project),
        ).fetchall()
    ]


def last_state_in(conn: apsw.Connection, project: str, kind: str) -> str | None:
    """The state of the project's last job of ``kind`` (None: none, or purged)."""
    row = conn.execute(
        "SELECT state FROM jobs WHERE project = ? AND kind = ? ORDER BY id DESC LIMIT 1",
        (project, kind),
    ).fetchone()
    return row[0] if row else None


def last_error_in(conn: apsw.Connection, job_id: int) -> str | None:
    """The error a job's last failed attempt kept (None: no such job, or none kept)."""
    row = conn.execute("SELECT last_error FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return row[0] if row else None
