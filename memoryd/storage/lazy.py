"""Tables made by the first write that needs them.

An empty b-tree still costs a page, and a home that only indexes code never writes a
memory record, a vector or a zstd dictionary: their tables (with the FTS5 shadow
tables, indexes and triggers that go with them) are created by the first write
transaction that stores a row in them (:func:`ensure`, idempotent, inside that
transaction: a rollback takes them away again, and two writers never race, as the
write lock is held). A reader finds a group absent with :func:`present` and answers
as for empty tables; :func:`reading` wraps such a reader.

Each group's DDL is its tables' final shape after every numbered migration that
touched them (tests/storage/test_lazy.py checks that the two agree). A migration
that alters one of these tables must do so only where the group is present, and
change the group's DDL here in the same commit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import apsw

from memoryd.storage.ddl import schema_text

T = TypeVar("T")


@dataclass(frozen=True)
class Group:
    """Tables created together: ``marker`` is made last, so it exists only when every
    other object of the group does. A group whose ``tables`` are all empty is not in
    use (and an older home's can be dropped)."""

    name: str
    ddl: str
    marker: str
    tables: tuple[str, ...]
    triggers: tuple[str, ...] = ()  # its triggers on tables of other groups


MEMORY = Group(
    "memory",
    """
    CREATE TABLE memory_records (
        n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, project_id INTEGER NOT NULL,
        scope TEXT NOT NULL, scope_key TEXT NOT NULL, kind TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN
            ('active', 'superseded', 'merged', 'flagged', 'archived')),
        text TEXT NOT NULL, norm_hash TEXT NOT NULL, nterms INTEGER NOT NULL,
        triggers TEXT NOT NULL, refs TEXT NOT NULL, sources TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 1, pointer TEXT, created_at REAL NOT NULL,
        updated_at REAL NOT NULL, last_seen_at REAL NOT NULL, seq INTEGER NOT NULL,
        key TEXT GENERATED ALWAYS AS
            ('p' || project_id || ' ' || scope_key || ' st' || status) VIRTUAL
    );
    CREATE INDEX memory_records_dup ON memory_records (project_id, scope_key, norm_hash)
        WHERE status = 'active';
    CREATE INDEX memory_records_seq ON memory_records (project_id, seq);
    CREATE VIRTUAL TABLE memory_fts USING fts5(text, triggers, key, content='memory_records',
        content_rowid='n', tokenize='porter unicode61 remove_diacritics 2');
    CREATE TRIGGER memory_records_ai AFTER INSERT ON memory_records BEGIN
        INSERT INTO memory_fts (rowid, text, triggers, key)
            VALUES (new.n, new.text, new.triggers, new.key);
    END;
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, text, triggers, key)
            VALUES ('delete', old.n, old.text, old.triggers, old.key);
    END;
    CREATE TRIGGER memory_records_au AFTER UPDATE OF text, triggers, status, scope_key
        ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, text, triggers, key)
            VALUES ('delete', old.n, old.text, old.triggers, old.key);
        INSERT INTO memory_fts (rowid, text, triggers, key)
            VALUES (new.n, new.text, new.triggers, new.key);
    END;
    CREATE TABLE memory_history (
        id INTEGER PRIMARY KEY, record_id TEXT NOT NULL, at REAL NOT NULL,
        action TEXT NOT NULL, candidate_id TEXT, detail TEXT
    );
    CREATE INDEX memory_history_record ON memory_history (record_id);
    CREATE TABLE memory_candidates (
        id TEXT PRIMARY KEY, project_id INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('consumed', 'parked', 'deadletter')),
        outcome TEXT, record_id TEXT, attempts INTEGER NOT NULL DEFAULT 0, reason TEXT,
        due_at REAL NOT NULL DEFAULT 0, candidate BLOB, updated_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX memory_candidates_state ON memory_candidates (project_id, state)
        WHERE state != 'consumed';
    CREATE TABLE memory_runs (
        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, job_id INTEGER, at REAL NOT NULL,
        added INTEGER NOT NULL DEFAULT 0, duplicate INTEGER NOT NULL DEFAULT 0,
        superseded INTEGER NOT NULL DEFAULT 0, merged INTEGER NOT NULL DEFAULT 0,
        parked INTEGER NOT NULL DEFAULT 0, deadlettered INTEGER NOT NULL DEFAULT 0,
        discarded INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE memory_outcomes (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, candidate_id TEXT NOT NULL,
        outcome TEXT NOT NULL, record_id TEXT, reason TEXT, at REAL NOT NULL
    );
    CREATE TABLE memory_terms (
        term TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (term, n)
    ) WITHOUT ROWID;
    CREATE INDEX memory_terms_n ON memory_terms (n);
    CREATE TRIGGER memory_records_terms_ad AFTER DELETE ON memory_records BEGIN
        DELETE FROM memory_terms WHERE n = old.n;
    END;
    CREATE TABLE record_vectors (
        n INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, code BLOB NOT NULL
    );
    CREATE INDEX record_vectors_project ON record_vectors (project_id);
    CREATE TRIGGER record_vectors_stale AFTER UPDATE OF text, triggers, status
        ON memory_records WHEN new.status != 'active' OR new.text IS NOT old.text
        OR new.triggers IS NOT old.triggers BEGIN
        DELETE FROM record_vectors WHERE n = old.n;
    END;
    CREATE TRIGGER record_vectors_gone AFTER DELETE ON memory_records BEGIN
        DELETE FROM record_vectors WHERE n = old.n;
    END;
    CREATE TABLE memory_anchors (
        id INTEGER PRIMARY KEY, record_id TEXT NOT NULL, project_id INTEGER NOT NULL,
        ref TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER, end_line INTEGER,
        file_hash BLOB NOT NULL, span_hash BLOB, line_hashes BLOB,
        occurrence INTEGER NOT NULL DEFAULT 0, occurrences INTEGER NOT NULL DEFAULT 1,
        symbol TEXT, terms TEXT NOT NULL DEFAULT '[]', cur_path TEXT NOT NULL,
        cur_start INTEGER, cur_end INTEGER,
        state TEXT NOT NULL CHECK (state IN ('verified', 'moved', 'changed', 'stale')),
        checked_hash BLOB
    );
    CREATE INDEX memory_anchors_record ON memory_anchors (record_id);
    CREATE INDEX memory_anchors_path ON memory_anchors (project_id, cur_path);
    """,
    "memory_anchors_path",
    (
        "memory_fts",
        "memory_records",
        "memory_history",
        "memory_candidates",
        "memory_runs",
        "memory_outcomes",
        "memory_terms",
        "record_vectors",
        "memory_anchors",
    ),  # fmt: skip
)

VECTORS = Group(
    "vectors",
    """
    CREATE TABLE chunk_vectors (
        file_id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, codes BLOB NOT NULL
    );
    CREATE INDEX chunk_vectors_project ON chunk_vectors (project_id);
    CREATE TABLE vector_encoder (
        id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, dim INTEGER NOT NULL
    );
    CREATE TRIGGER chunk_vectors_stale AFTER UPDATE OF content_hash, live ON files BEGIN
        DELETE FROM chunk_vectors WHERE file_id = old.id;
    END;
    """,
    "chunk_vectors_stale",
    ("chunk_vectors", "vector_encoder"),
    ("chunk_vectors_stale",),
)

#: An older home's zstd dictionaries: nothing writes one any more, so a new home
#: never has the table; an older home keeps it while a frame may name one.
ZDICTS = Group(
    "zdicts",
    """
    CREATE TABLE zdicts (
        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects (id),
        data BLOB NOT NULL, created_at REAL NOT NULL
    );
    """,
    "zdicts",
    ("zdicts",),
)

#: Each indexed project's chunk sizes as one array, written by the end of a pack pass
#: for the generation it read (:mod:`memoryd.storage.index_sizes`): a search's first
#: look-up of a term's chunk sizes reads it instead of one ``docsize`` row a chunk.
SIZES = Group(
    "sizes",
    """
    CREATE TABLE index_sizes (
        project_id INTEGER PRIMARY KEY, generation INTEGER NOT NULL, averages BLOB NOT NULL,
        low INTEGER NOT NULL, width INTEGER NOT NULL, data BLOB NOT NULL
    );
    """,
    "index_sizes",
    ("index_sizes",),
)

#: The groups the numbered migrations before 20 made (an older home has them all).
GROUPS = (MEMORY, VECTORS, ZDICTS)
#: Groups no migration ever made: only their first write makes them.
LATER_GROUPS = (SIZES,)


def _conn(db: Any) -> apsw.Connection:
    """The connection of an Authority, or the connection itself."""
    return getattr(db, "conn", db)


def present(db: Any, group: Group) -> bool:
    """True when the group's tables exist (in the connection's current snapshot)."""
    row = (
        _conn(db)
        .execute("SELECT 1 FROM main.sqlite_schema WHERE name = ?", (group.marker,))
        .fetchone()
    )
    return row is not None


def ensure(tx: apsw.Connection, group: Group) -> None:
    """Create the group's tables unless they exist; call inside the write transaction
    that is about to store a row in them."""
    if not present(tx, group):
        tx.execute(schema_text(group.ddl))


def in_use(conn: apsw.Connection, group: Group) -> bool:
    """True when the group is present and one of its tables holds a row."""
    return present(conn, group) and any(
        conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in group.tables
    )


def drop(tx: apsw.Connection, group: Group) -> None:
    """Drop every object of the group: its tables (their indexes and triggers go with
    them) and its triggers on other tables."""
    for name in group.triggers:
        tx.execute(f"DROP TRIGGER IF EXISTS {name}")
    for name in group.tables:
        tx.execute(f"DROP TABLE IF EXISTS {name}")


def writing(group: Group) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A ``*_in`` writer whose first argument is the write transaction: the group is
    ensured before it runs."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def run(tx: apsw.Connection, *args: Any, **kwargs: Any) -> T:
            ensure(tx, group)
            return fn(tx, *args, **kwargs)

        return run

    return wrap


def reading(group: Group, empty: Callable[[], T]) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A reader (or a delete) whose first argument is a connection or an Authority:
    ``empty()`` is its answer while the group is absent."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def run(db: Any, *args: Any, **kwargs: Any) -> T:
            if not present(db, group):
                return empty()
            return fn(db, *args, **kwargs)

        return run

    return wrap
