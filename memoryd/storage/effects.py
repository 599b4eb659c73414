"""The ``job_effects`` table: one row per applied drill job, so tests count effects."""

from __future__ import annotations

import time
from collections.abc import Iterable

import apsw


def record_effects(
    tx: apsw.Connection, job_ids: Iterable[int], kind: str, tokens: Iterable[str | None] = ()
) -> None:
    """One effect row per job; ``tokens`` (when given, one per job) the lease token of
    the attempt whose result each row applies."""
    now = time.time()
    ids = list(job_ids)
    attempts = list(tokens) or [None] * len(ids)
    tx.executemany(
        "INSERT INTO job_effects (job_id, kind, at, lease_token) VALUES (?, ?, ?, ?)",
        [(i, kind, now, t) for i, t in zip(ids, attempts, strict=True)],
    )


def effect_counts(db) -> dict[str, int]:
    """Effects per kind and how many jobs have more than one effect."""
    total = db.query("SELECT count(*), count(DISTINCT job_id) FROM job_effects")[0]
    return {"effects": total[0], "jobs_with_effects": total[1]}
