"""Numbered migrations of the authority. Each applies once, in one transaction.

Append new migrations; never edit one that has shipped.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "job queue, job effects, history",
        """
        CREATE TABLE jobs (
            id            INTEGER PRIMARY KEY,
            project       TEXT,
            kind          TEXT NOT NULL,
            payload       BLOB NOT NULL,
            state         TEXT NOT NULL DEFAULT 'queued'
                          CHECK (state IN ('queued', 'claimed', 'done', 'failed', 'dead')),
            priority      INTEGER NOT NULL DEFAULT 0,
            attempts      INTEGER NOT NULL DEFAULT 0,
            max_attempts  INTEGER NOT NULL,
            not_before    REAL NOT NULL DEFAULT 0,
            lease_owner   TEXT,
            lease_token   TEXT,
            lease_expires REAL,
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL,
            finished_at   REAL,
            last_error    TEXT,
            dedupe_key    TEXT
        );
        CREATE INDEX jobs_ready ON jobs (priority DESC, id) WHERE state IN ('queued', 'failed');
        CREATE INDEX jobs_leased ON jobs (lease_expires) WHERE state = 'claimed';
        CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead';
        CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key)
            WHERE dedupe_key IS NOT NULL AND state IN ('queued', 'claimed', 'failed');

        CREATE TABLE job_effects (
            id     INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            kind   TEXT NOT NULL,
            at     REAL NOT NULL
        );

        CREATE TABLE history (
            id           INTEGER PRIMARY KEY,
            at           REAL NOT NULL,
            kind         TEXT NOT NULL,
            project      TEXT,
            ref          TEXT,
            content_hash TEXT,
            job_id       INTEGER
        );
        """,
    ),
]

CURRENT_VERSION = MIGRATIONS[-1][0]
