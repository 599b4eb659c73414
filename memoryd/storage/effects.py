"""The ``job_effects`` table: one row per applied drill job, so tests count effects."""

from __future__ import annotations

import time
from collections.abc import Iterable

import apsw


def record_effects(tx: apsw.Connection, job_ids: Iterable[int], kind: str) -> None:
    now = time.time()
    tx.executemany(
        "INSERT INTO job_effects (job_id, kind, at) VALUES (?, ?, ?)",
        [(i, kind, now) for i in job_ids],
    )


def effect_counts(db) -> dict[str, int]:
    """Effects per kind and how many jobs have more than one effect."""
    total = db.query("SELECT count(*), count(DISTINCT job_id) FROM job_effects")[0]
    return {"effects": total[0], "jobs_with_effects": total[1]}
