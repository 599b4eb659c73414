"""Queue semantics over the authority's ``jobs`` table.

Methods named ``*_in`` take a connection inside an open write transaction, so
the supervisor can group completions and claims into one commit; the others
open their own short transaction through :meth:`Authority.write`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import apsw
import orjson

from memoryd.base import faults
from memoryd.storage.authority import Authority, zeroing_freed
from memoryd.storage.maintenance import hold_wal_bound

STATES = ("queued", "claimed", "done", "failed", "dead")
#: The error of an attempt whose lease ran out.
LEASE_EXPIRED = "lease expired"
PENDING = ("queued", "failed", "claimed")
ENQUEUE_SQL = (
    "INSERT OR IGNORE INTO jobs (project, kind, payload, priority, max_attempts,"
    " not_before, created_at, updated_at, dedupe_key)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)


@dataclass(frozen=True)
class JobSpec:
    """What to enqueue. ``payload`` is any JSON-serialisable value."""

    kind: str
    payload: object = None
    project: str | None = None
    priority: int = 0
    max_attempts: int | None = None
    dedupe_key: str | None = None
    not_before: float = 0.0


class ClaimedJob(NamedTuple):
    """A job under a lease. A named tuple: the supervisor makes, pickles and sends
    hundreds of thousands of these, and a tuple costs a tenth of a frozen dataclass."""

    id: int
    kind: str
    payload: bytes  # orjson bytes, decoded by the worker
    token: str
    attempts: int
    project: str | None
    deaths: int = 0  # supervisors that died applying this job's result (poison suspect)

    @property
    def data(self) -> Any:
        """The decoded payload (decoded on each access: read it once)."""
        return orjson.loads(self.payload)


def _token_fence() -> str:
    """A completion's lease-token condition (made always true by a test-only fault)."""
    return (
        "(lease_token = ? OR 1)" if faults.active("complete_ignores_token") else "lease_token = ?"
    )


class JobQueue:
    """The queue contract. One instance per :class:`Authority` connection."""

    def __init__(self, authority: Authority, clock: Callable[[], float] = time.time) -> None:
        self.db = authority
        self.clock = clock  # every timestamp of the queue: tests move it instead of the rows
        cfg = authority.config
        self.max_attempts = cfg.max_attempts
        self.backoff_base = cfg.retry_backoff_base
        self.backoff_max = cfg.retry_backoff_max
        self.death_cap = cfg.supervisor_death_cap

    # -- enqueue ---------------------------------------------------------------

    def enqueue(self, spec: JobSpec) -> int | None:
        """Enqueue one job; ``None`` when its dedupe key names a live job."""
        return self.enqueue_many([spec])[0]

    def enqueue_many(self, specs: Iterable[JobSpec]) -> list[int | None]:
        """Enqueue several jobs in one transaction."""
        specs = list(specs)
        return self.db.write(lambda tx: self.enqueue_in(tx, specs))

    def enqueue_bulk(self, spec: JobSpec, count: int) -> list[int | None]:
        """Enqueue ``count`` copies of ``spec`` in transactions of ``enqueue_chunk_rows``
        (a crash keeps the chunks committed). Between two chunks a writer that waits gets
        its turn (the supervisor is never starved) and the WAL stays under its bound."""
        chunk = max(1, self.db.config.enqueue_chunk_rows)
        ids: list[int | None] = []
        for start in range(0, count, chunk):
            if start:
                self.db.give_turn()
                hold_wal_bound(self.db)
            ids += self.enqueue_many([spec] * min(chunk, count - start))
        return ids

    def enqueue_in(self, tx: apsw.Connection, specs: Sequence[JobSpec]) -> list[int | None]:
        """Insert ``specs`` in order; an id per spec, ``None`` where a dedupe key names a
        live job. Without dedupe keys every row inserts, so one prepared statement runs
        for them all (a bulk add is bound by this loop)."""
        now = self.clock()
        rows = [
            (
                s.project,
                s.kind,
                orjson.dumps(s.payload),
                s.priority,
                s.max_attempts or self.max_attempts,
                s.not_before,
                now,
                now,
                s.dedupe_key,
            )
            for s in specs
        ]
        if not any(s.dedupe_key for s in specs):
            return [r[0] for r in tx.executemany(ENQUEUE_SQL, rows)]
        ids: list[int | None] = []
        for row in rows:
            hit = tx.execute(ENQUEUE_SQL, row).fetchone()
            ids.append(hit[0] if hit else None)
        return ids

    # -- claim and lease -------------------------------------------------------

    def claim_in(
        self,
        tx: apsw.Connection,
        owner: str,
        limit: int,
        lease_seconds: float,
        *,
        kinds: Sequence[str] = (),
        exclude: bool = False,
    ) -> list[ClaimedJob]:
        """Claim up to ``limit`` ready jobs in one statement, under a fresh lease token.

        ``kinds`` restricts the claim to those kinds (or, with ``exclude``, to all
        others): the supervisor feeds each pool of workers its own kinds.
        """
        if limit <= 0:
            return []
        now = self.clock()
        token = os.urandom(8).hex()  # secrets.token_hex, without its hmac import
        where, args = "", ()
        if kinds:
            marks = ",".join("?" * len(kinds))
            where, args = f" AND kind {'NOT IN' if exclude else 'IN'} ({marks})", tuple(kinds)
        rows = tx.execute(
            "UPDATE jobs SET state = 'claimed', attempts = attempts + 1, lease_owner = ?,"
            " lease_token = ?, lease_expires = ?, updated_at = ?"
            " WHERE id IN (SELECT id FROM jobs WHERE state IN ('queued', 'failed')"
            f"   AND not_before <= ?{where} ORDER BY priority DESC, id LIMIT ?)"
            " RETURNING id, kind, payload, lease_token, attempts, project, supervisor_deaths",
            (owner, token, now + lease_seconds, now, now, *args, limit),
        ).fetchall()
        rows.sort()  # by id: RETURNING's order is unspecified
        return list(map(ClaimedJob._make, rows))

    def claim(self, owner: str, limit: int, lease_seconds: float) -> list[ClaimedJob]:
        return self.db.write(lambda tx: self.claim_in(tx, owner, limit, lease_seconds))

    def renew_in(self, tx: apsw.Connection, jobs: Iterable[ClaimedJob], lease_seconds: float):
        """Extend the leases of jobs still held under their tokens."""
        until = self.clock() + lease_seconds
        tx.executemany(
            "UPDATE jobs SET lease_expires = ? WHERE id = ? AND lease_token = ?"
            " AND state = 'claimed'",
            [(until, j.id, j.token) for j in jobs],
        )

    # -- outcomes (all fenced by the lease token) -----------------------------

    def complete_in(self, tx: apsw.Connection, job: ClaimedJob) -> bool:
        """Mark ``job`` done if its lease is still ours; False means: apply nothing."""
        now = self.clock()
        row = tx.execute(
            "UPDATE jobs SET state = 'done', finished_at = ?, updated_at = ?,"
            " lease_owner = NULL, lease_expires = NULL"
            " WHERE id = ? AND lease_token = ? AND state = 'claimed' RETURNING id",
            (now, now, job.id, job.token),
        ).fetchone()
        return row is not None

    def complete_many_in(
        self, tx: apsw.Connection, jobs: Iterable[ClaimedJob]
    ) -> set[tuple[int, str]]:
        """Mark done every job whose lease is still ours, one statement per lease token.

        Returns the (id, lease token) pairs marked done; a job missing from it lost
        its lease (it was reclaimed and claimed again) and nothing of its result may
        be applied. The token matters: a stale result and the job's new attempt can
        reach one turn together, and only the new one's pair is returned.
        """
        by_token: dict[str, list[int]] = {}
        for job in jobs:
            by_token.setdefault(job.token, []).append(job.id)
        now = self.clock()
        done: set[tuple[int, str]] = set()
        fence = (
            ""
            if faults.active("unfenced_completion")
            else f"{_token_fence()} AND state = 'claimed' AND"
        )
        for token, ids in by_token.items():
            if faults.active("lost_completion"):
                done.update((i, token) for i in ids)  # applied, the completion never written
                continue
            rows = tx.execute(
                "UPDATE jobs SET state = 'done', finished_at = ?, updated_at = ?,"
                " lease_owner = NULL, lease_expires = NULL"
                f" WHERE {fence} id IN (SELECT value FROM json_each(?)) RETURNING id",
                (now, now, *([token] if fence else []), orjson.dumps(ids).decode()),
            )  # the ids as text: a blob would be JSONB
            done.update((r[0], token) for r in rows)
        return done

    def complete(self, job: ClaimedJob) -> bool:
        return self.db.write(lambda tx: self.complete_in(tx, job))

    def settle_payload_in(
        self, tx: apsw.Connection, job: ClaimedJob, data: dict, lists: Iterable[str]
    ) -> None:
        """Replace the named lists of a done job's payload (``data``: the job's, decoded)
        by their lengths, once what the job did is recorded elsewhere (a done job never
        runs again): a queue that keeps done jobs for days does not keep every file list
        of every run twice."""
        settled = {**data, **{k: len(data[k]) for k in lists if isinstance(data.get(k), list)}}
        tx.execute("UPDATE jobs SET payload = ? WHERE id = ?", (orjson.dumps(settled), job.id))

    def set_result_in(self, tx: apsw.Connection, job: ClaimedJob, value: object) -> None:
        """Keep a job's answer for a caller that waits on it (see :meth:`outcome`)."""
        tx.execute("UPDATE jobs SET result = ? WHERE id = ?", (orjson.dumps(value), job.id))

    def take_result(self, job_id: int) -> object:
        """A job's decoded result, cleared in the same short write: the caller takes it once,
        so what it carried (archive content) does not stay in the authority. The row's old
        bytes are zeroed (``secure_delete``), not left in the page's free space."""

        def take(tx: apsw.Connection) -> object:
            row = tx.execute("SELECT result FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise KeyError(job_id)
            with zeroing_freed(tx):
                tx.execute("UPDATE jobs SET result = NULL WHERE id = ?", (job_id,))
            return orjson.loads(row[0]) if row[0] else None

        return self.db.write(take)

    def fail_in(self, tx: apsw.Connection, job: ClaimedJob, error: str) -> str | None:
        """Record a failed attempt: back off, or dead-letter past max attempts.

        Returns the new state, or None when the lease was no longer ours.
        """
        row = tx.execute(
            "SELECT attempts, max_attempts FROM jobs WHERE id = ? AND lease_token = ?"
            " AND state = 'claimed'",
            (job.id, job.token),
        ).fetchone()
        if row is None:
            return None
        attempts, max_attempts = row
        now = self.clock()
        state = "dead" if attempts >= max_attempts else "failed"
        not_before = now + self.backoff(attempts) if state == "failed" else 0.0
        tx.execute(
            "UPDATE jobs SET state = ?, last_error = ?, not_before = ?, updated_at = ?,"
            " finished_at = CASE WHEN ? = 'dead' THEN ? END,"
            " lease_owner = NULL, lease_token = NULL, lease_expires = NULL WHERE id = ?",
            (state, error[:4000], not_before, now, state, now, job.id),
        )
        return state

    def fail(self, job: ClaimedJob, error: str) -> str | None:
        return self.db.write(lambda tx: self.fail_in(tx, job, error))

    def defer_in(self, tx: apsw.Connection, job: ClaimedJob, error: str) -> bool:
        """Requeue a job that met a retryable condition (a busy store or archive).

        No attempt is charged: the job did nothing wrong. It waits one backoff of
        its current attempt count, and ``last_error`` keeps the typed reason.
        Returns False when the lease was no longer ours.
        """
        now = self.clock()
        row = tx.execute(
            "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0),"
            " last_error = ?, not_before = ?, updated_at = ?,"
            " lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
            " WHERE id = ? AND lease_token = ? AND state = 'claimed' RETURNING id",
            (error[:4000], now + self.backoff(job.attempts), now, job.id, job.token),
        ).fetchone()
        return row is not None

    def release_in(self, tx: apsw.Connection, jobs: Iterable[ClaimedJob]) -> None:
        """Give claims back without charging an attempt (shutdown, unstarted work)."""
        now = self.clock()
        tx.executemany(
            "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0),"
            " lease_owner = NULL, lease_token = NULL, lease_expires = NULL, updated_at = ?"
            " WHERE id = ? AND lease_token = ? AND state = 'claimed'",
            [(now, j.id, j.token) for j in jobs],
        )

    def backoff(self, attempts: int) -> float:
        """Jittered exponential delay before attempt ``attempts + 1``."""
        delay = min(self.backoff_max, self.backoff_base * 2 ** max(attempts - 1, 0))
        import random  # here: a retry's jitter, not every command's start

        return delay * random.uniform(0.5, 1.0)

    # -- reclaim ---------------------------------------------------------------

    def reclaim_expired_in(self, tx: apsw.Connection) -> list[tuple[ClaimedJob, str | None]]:
        """Claims whose lease ran out count as failed attempts (their runner is gone or
        hung). Returns each job with its new state (:meth:`fail_in`): a ``dead`` one is
        its kind's to recover from, as a job whose worker crashed is."""
        rows = tx.execute(
            "SELECT id, kind, payload, lease_token, attempts, project FROM jobs"
            " WHERE state = 'claimed' AND lease_expires < ?",
            (math.inf if faults.active("reclaim_live_leases") else self.clock(),),
        ).fetchall()
        out = []
        for r in rows:
            job = ClaimedJob(r[0], r[1], r[2], r[3], r[4], r[5])
            out.append((job, self.fail_in(tx, job, LEASE_EXPIRED)))
        return out

    def reclaim_owners_in(
        self, tx: apsw.Connection, dead_owners: Iterable[str], applying: Iterable[int] = ()
    ) -> int:
        """Requeue at once every claim held by owners known to be dead.

        A supervisor that died lost all of its claims at once, most of them
        never started, so the attempt is refunded instead of charged. The
        poison suspects among them are first charged their death (see
        :meth:`dead_letter_poison_in`).
        """
        owners = list(dead_owners)
        self.dead_letter_poison_in(tx, owners, applying)
        marks = ",".join("?" * len(owners))
        return len(
            tx.execute(
                "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0),"
                " lease_owner = NULL, lease_token = NULL, lease_expires = NULL,"
                f" updated_at = ? WHERE state = 'claimed' AND lease_owner IN ({marks})"
                " RETURNING id",
                (self.clock(), *owners),
            ).fetchall()
        )

    def dead_letter_poison_in(
        self, tx: apsw.Connection, dead_owners: Sequence[str], applying: Iterable[int] = ()
    ) -> list[ClaimedJob]:
        """Count a death on the claims of ``dead_owners`` in ``applying`` (those whose
        results the dead supervisor was committing: poison suspects) and dead-letter
        every claim of theirs past ``supervisor_death_cap`` deaths instead of
        crash-looping the service. Returns the jobs dead-lettered (``deaths``: their
        count), so their kinds may recover what they held (``JobKind.poisoned``)."""
        now = self.clock()
        suspects = orjson.dumps(sorted(set(applying))).decode()
        marks = ",".join("?" * len(dead_owners))
        tx.execute(
            "UPDATE jobs SET supervisor_deaths = supervisor_deaths + 1"
            f" WHERE state = 'claimed' AND lease_owner IN ({marks})"
            " AND id IN (SELECT value FROM json_each(?))",
            (*dead_owners, suspects),
        )
        error = (
            "killed its supervisor while its result was applied, {n} times "
            f"(supervisor_death_cap={self.death_cap}); inspect the job, then `memoryd jobs retry`"
        )
        rows = tx.execute(
            "UPDATE jobs SET state = 'dead', finished_at = ?, updated_at = ?,"
            " last_error = replace(?, '{n}', supervisor_deaths),"
            " lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
            f" WHERE state = 'claimed' AND lease_owner IN ({marks})"
            " AND supervisor_deaths >= ?"
            " RETURNING id, kind, payload, '', attempts, project, supervisor_deaths",
            (now, now, error, *dead_owners, self.death_cap),
        ).fetchall()
        return sorted(map(ClaimedJob._make, rows))

    def claim_owners(self) -> list[str]:
        return [
            r[0]
            for r in self.db.query("SELECT DISTINCT lease_owner FROM jobs WHERE state = 'claimed'")
        ]

    # -- purge -----------------------------------------------------------------

    def purge_done_in(
        self, tx: apsw.Connection, keep_seconds: float, after_id: int, limit: int
    ) -> tuple[int, int]:
        """Delete done jobs finished more than ``keep_seconds`` ago, among the next
        ``limit`` rows by id after ``after_id``: a bounded step without an index
        on finished_at (which would cost a write per completion).

        Returns (rows deleted, the id to continue after; 0 once the end is reached).
        """
        rows = tx.execute(
            "SELECT id, state = 'done' AND finished_at < ? FROM jobs WHERE id > ?"
            " ORDER BY id LIMIT ?",
            (self.clock() - keep_seconds, after_id, limit),
        ).fetchall()
        old = [r[0] for r in rows if r[1]]
        if old:
            tx.execute(
                "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(old).decode(),),
            )
        return len(old), (rows[-1][0] if len(rows) == limit else 0)

    # -- readiness and operator actions ---------------------------------------

    def has_pending(self) -> bool:
        """True while any job may still run: queued, backing off, or claimed."""
        return bool(
            self.db.query(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE state IN ('queued', 'failed'))"
                " OR EXISTS (SELECT 1 FROM jobs WHERE state = 'claimed')"
            )[0][0]
        )

    def ready_exists(self, kinds: Sequence[str] = ()) -> bool:
        """Whether a job (of ``kinds``, when given) is claimable now."""
        where, args = "", ()
        if kinds:
            where, args = f" AND kind IN ({','.join('?' * len(kinds))})", tuple(kinds)
        return bool(
            self.db.query(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE state IN ('queued', 'failed')"
                f" AND not_before <= ?{where})",
                (self.clock(), *args),
            )[0][0]
        )

    def retry(self, ids: Sequence[int] = (), *, all_dead: bool = False) -> list[int]:
        """Requeue dead jobs with a fresh set of attempts. Returns the ids requeued.

        A dead job whose dedupe key names a live job again stays dead: that work
        is already queued, and requeuing it would break the key's uniqueness.
        """

        def op(tx: apsw.Connection) -> list[int]:
            now = self.clock()
            if all_dead:
                ids_ = [r[0] for r in tx.execute("SELECT id FROM jobs WHERE state = 'dead'")]
            else:
                ids_ = list(ids)
            requeued = []
            for i in ids_:  # one at a time: each sees the keys the previous ones revived
                row = tx.execute(
                    "UPDATE jobs SET state = 'queued', attempts = 0, not_before = 0,"
                    " finished_at = NULL, updated_at = ? WHERE id = ? AND state = 'dead'"
                    " AND (dedupe_key IS NULL OR NOT EXISTS (SELECT 1 FROM jobs AS live"
                    "   WHERE live.dedupe_key = jobs.dedupe_key"
                    "   AND live.state IN ('queued', 'claimed', 'failed')))"
                    " RETURNING id",
                    (now, i),
                ).fetchone()
                if row:
                    requeued.append(row[0])
            return requeued

        return self.db.write(op)
