"""Numbered migrations of the authority. Each applies once, in one transaction.

Append new migrations; never edit one that has shipped. The memory, vector and
dictionary tables are made when first written (:mod:`memoryd.storage.lazy`): a
migration touching them must allow for their absence and change their DDL there.
Statements run as :func:`~memoryd.storage.ddl.schema_text` gives them (SQLite keeps
each CREATE statement's text in ``sqlite_schema``: without comments and runs of spaces).
"""

from __future__ import annotations

from memoryd.base.errors import SchemaUnmigratable
from memoryd.storage import lazy

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
            dedupe_key    TEXT,
            result        BLOB   -- orjson answer of a job whose caller waits for it
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
    (
        2,
        "projects, files and chunks (project memory)",
        """
        CREATE TABLE projects (
            id         INTEGER PRIMARY KEY,
            name       TEXT NOT NULL UNIQUE,
            root       TEXT,
            created_at REAL NOT NULL,
            generation INTEGER NOT NULL DEFAULT 0  -- bumped by every change to its index
        );

        CREATE TABLE files (
            id           INTEGER PRIMARY KEY,
            project_id   INTEGER NOT NULL REFERENCES projects (id),
            path         TEXT NOT NULL,           -- relative, '/'-separated
            content_hash TEXT NOT NULL,           -- blake2b of the raw bytes
            size         INTEGER NOT NULL,        -- source bytes
            lines        INTEGER NOT NULL,
            body         BLOB NOT NULL,           -- zstd of the decoded UTF-8 text
                                                  -- (with the zdicts dictionary its frame names)
            live         INTEGER NOT NULL DEFAULT 1,
            updated_at   REAL NOT NULL,
            UNIQUE (project_id, path)
        );

        -- chunk_id is unique by construction (a hash of project, path, ordinal and
        -- content); no index is kept on it: nothing looks a chunk up by it.
        CREATE TABLE chunks (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- rowid in the FTS table, never reused
            chunk_id     BLOB NOT NULL,           -- 12 bytes, stable: from path and content
            project_id   INTEGER NOT NULL,
            file_id      INTEGER NOT NULL REFERENCES files (id),
            ordinal      INTEGER NOT NULL,
            start_line   INTEGER NOT NULL,
            end_line     INTEGER NOT NULL,
            content_hash BLOB NOT NULL            -- 16 bytes, blake2b of the chunk text
        );
        CREATE INDEX chunks_file ON chunks (file_id);

        -- zstd dictionaries, one trained per project on its first large ingest. A
        -- body's frame header names its dictionary (id); rows are never deleted,
        -- so every body stays decodable.
        CREATE TABLE zdicts (
            id         INTEGER PRIMARY KEY,       -- the zstd dictionary id
            project_id INTEGER NOT NULL REFERENCES projects (id),
            data       BLOB NOT NULL,
            created_at REAL NOT NULL
        );

        CREATE TABLE ingest_runs (
            id            INTEGER PRIMARY KEY,
            project_id    INTEGER NOT NULL REFERENCES projects (id),
            root          TEXT NOT NULL,
            started_at    REAL NOT NULL,
            scanned_at    REAL,
            finished_at   REAL,
            files_total   INTEGER NOT NULL DEFAULT 0,  -- new or changed files to ingest
            bytes_total   INTEGER NOT NULL DEFAULT 0,
            files_done    INTEGER NOT NULL DEFAULT 0,
            bytes_done    INTEGER NOT NULL DEFAULT 0,
            batches       INTEGER NOT NULL DEFAULT 0,  -- ingest.batch jobs enqueued
            batches_done  INTEGER NOT NULL DEFAULT 0,
            finalized     INTEGER NOT NULL DEFAULT 0,
            unchanged     INTEGER NOT NULL DEFAULT 0,
            retired       INTEGER NOT NULL DEFAULT 0,
            skipped       BLOB                          -- JSON: reason -> count
        );
        CREATE INDEX jobs_project ON jobs (project) WHERE state IN ('queued', 'claimed', 'failed');
        """,
    ),
    (
        3,
        "supervisor deaths per job (poison jobs are dead-lettered)",
        """
        ALTER TABLE jobs ADD COLUMN supervisor_deaths INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        4,
        "jobs by project without the state: claims and completions no longer rewrite it",
        """
        DROP INDEX jobs_project;
        CREATE INDEX jobs_project ON jobs (project) WHERE project IS NOT NULL;
        """,
    ),
    (
        5,
        "memory records, their history, staged candidates and the bounded run log",
        """
        -- One row per memory record; records are never deleted (status flips instead).
        CREATE TABLE memory_records (
            n            INTEGER PRIMARY KEY,      -- rowid in memory_fts
            id           TEXT NOT NULL UNIQUE,     -- 'm-' + 16 hex, from the candidate that made it
            project_id   INTEGER NOT NULL,
            scope        TEXT NOT NULL,
            scope_key    TEXT NOT NULL,            -- 's' + hex hash of scope: one FTS token
            kind         TEXT NOT NULL,
            status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN
                             ('active', 'superseded', 'merged', 'flagged', 'archived')),
            text         TEXT NOT NULL,
            norm_hash    TEXT NOT NULL,            -- hash of the normalized text
            nterms       INTEGER NOT NULL,         -- distinct content stems (shortlist)
            triggers     TEXT NOT NULL,            -- JSON array of strings, joined for FTS
            refs         TEXT NOT NULL,            -- JSON array
            sources      TEXT NOT NULL,            -- JSON array
            count        INTEGER NOT NULL DEFAULT 1,
            pointer      TEXT,                     -- the record that superseded or merged it
            created_at   REAL NOT NULL,
            updated_at   REAL NOT NULL,
            last_seen_at REAL NOT NULL,
            seq          INTEGER NOT NULL,         -- change sequence (the markdown mirror's cursor)
            key          TEXT GENERATED ALWAYS AS
                             ('p' || project_id || ' ' || scope_key || ' st' || status) VIRTUAL
        );
        CREATE INDEX memory_records_dup ON memory_records (project_id, scope_key, norm_hash)
            WHERE status = 'active';
        CREATE INDEX memory_records_seq ON memory_records (project_id, seq);

        -- Full text over record text and triggers; ``key`` holds project, scope and
        -- status tokens (to filter a search). Derived: kept by the triggers below.
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
            id           INTEGER PRIMARY KEY,
            record_id    TEXT NOT NULL,
            at           REAL NOT NULL,
            action       TEXT NOT NULL,  -- added, reinforced, superseded, merged, flagged, ...
            candidate_id TEXT,
            detail       TEXT
        );
        CREATE INDEX memory_history_record ON memory_history (record_id);

        -- Every staged candidate that reached a decision: consumed ones for good (a
        -- staging file whose id is here is never consumed twice), parked ones with
        -- their next try, dead letters with their reason.
        CREATE TABLE memory_candidates (
            id         TEXT PRIMARY KEY,
            project_id INTEGER NOT NULL,
            state      TEXT NOT NULL CHECK (state IN ('consumed', 'parked', 'deadletter')),
            outcome    TEXT,
            record_id  TEXT,
            attempts   INTEGER NOT NULL DEFAULT 0,
            reason     TEXT,
            due_at     REAL NOT NULL DEFAULT 0,
            candidate  BLOB,                     -- JSON, kept while parked or dead-lettered
            updated_at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX memory_candidates_state ON memory_candidates (project_id, state)
            WHERE state != 'consumed';

        -- Bounded run log: per-run rates and per-candidate outcomes (oldest rows dropped).
        CREATE TABLE memory_runs (
            id           INTEGER PRIMARY KEY,
            project_id   INTEGER NOT NULL,
            job_id       INTEGER,
            at           REAL NOT NULL,
            added        INTEGER NOT NULL DEFAULT 0,
            duplicate    INTEGER NOT NULL DEFAULT 0,
            superseded   INTEGER NOT NULL DEFAULT 0,
            merged       INTEGER NOT NULL DEFAULT 0,
            parked       INTEGER NOT NULL DEFAULT 0,
            deadlettered INTEGER NOT NULL DEFAULT 0,
            discarded    INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE memory_outcomes (
            id           INTEGER PRIMARY KEY,
            run_id       INTEGER NOT NULL,
            candidate_id TEXT NOT NULL,
            outcome      TEXT NOT NULL,
            record_id    TEXT,
            reason       TEXT,
            at           REAL NOT NULL
        );
        """,
    ),
    (
        6,
        "compact projects: no stored index while the live source is small",
        """
        -- > 0: the project is compact (its index is built per connection, in memory)
        -- while its live source is at most this many bytes; 0: its index is stored.
        ALTER TABLE projects ADD COLUMN compact_limit INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        7,
        "chunk vectors (derived, issue 15)",
        """
        -- Derived: the sign codes of a file's chunks in ordinal order (memoryd.storage.
        -- vectors), made by the encoder named in vector_encoder; `memoryd rebuild`
        -- recomputes them. A file's row goes when its content changes or it retires.
        CREATE TABLE chunk_vectors (
            file_id    INTEGER PRIMARY KEY,   -- files.id
            project_id INTEGER NOT NULL,
            codes      BLOB NOT NULL
        );
        CREATE INDEX chunk_vectors_project ON chunk_vectors (project_id);
        CREATE TABLE vector_encoder (
            id   INTEGER PRIMARY KEY CHECK (id = 1),
            name TEXT NOT NULL,
            dim  INTEGER NOT NULL
        );
        CREATE TRIGGER chunk_vectors_stale AFTER UPDATE OF content_hash, live ON files BEGIN
            DELETE FROM chunk_vectors WHERE file_id = old.id;
        END;
        """,
    ),
    (
        8,
        "supervisor samples for the dashboard (bounded: the oldest are dropped)",
        """
        -- One row per sample: queue, WAL, pause, workers, archive size (JSON), written
        -- in the supervisor's group commit; the same write drops the oldest beyond the bound.
        CREATE TABLE samples (
            id   INTEGER PRIMARY KEY,
            at   REAL NOT NULL,
            data BLOB NOT NULL
        );
        """,
    ),
    (
        9,
        "memory shortlist terms",
        """
        -- The indexed terms of each record's text and triggers, one row per (term,
        -- record): the shortlist counts a candidate's shared terms per record with
        -- one index range per term. Derived (the same terms as memory_fts holds for
        -- those columns; filled from it here and by ``memoryd rebuild``).
        CREATE TABLE memory_terms (
            term TEXT NOT NULL,
            n    INTEGER NOT NULL,                 -- memory_records.n
            PRIMARY KEY (term, n)
        ) WITHOUT ROWID;
        CREATE INDEX memory_terms_n ON memory_terms (n);
        CREATE TRIGGER memory_records_terms_ad AFTER DELETE ON memory_records BEGIN
            DELETE FROM memory_terms WHERE n = old.n;
        END;
        CREATE VIRTUAL TABLE temp.memory_fts_terms USING fts5vocab(main, memory_fts, instance);
        INSERT OR IGNORE INTO memory_terms (term, n)
            SELECT term, doc FROM temp.memory_fts_terms WHERE col IN ('text', 'triggers');
        DROP TABLE temp.memory_fts_terms;
        """,
    ),
    (
        10,
        "chunk vectors written by their own job: a per-project count of vector writes",
        """
        -- Bumped by every write of a project's chunk vectors (memoryd.storage.vectors):
        -- codes arrive after their chunks (a low-priority job), and search's cached
        -- codes of a project are fresh while this number is the one they were read at.
        ALTER TABLE projects ADD COLUMN vectors_generation INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        11,
        "memory record vectors (derived, issue 15)",
        """
        -- Derived: the sign code of an active record's text and triggers (memoryd.storage.
        -- record_vectors), made by the encoder named in vector_encoder by a vectors.encode
        -- job after consolidation; `memoryd rebuild` recomputes them. A record's code goes
        -- when its text or triggers change or it stops being active (superseded, merged).
        CREATE TABLE record_vectors (
            n          INTEGER PRIMARY KEY,   -- memory_records.n
            project_id INTEGER NOT NULL,
            code       BLOB NOT NULL
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
        """,
    ),
    (
        12,
        "file bodies compressed in blocks of several files (issue 13)",
        """
        -- One zstd frame holds the bodies of several files of one ingest batch (about
        -- BODY_BLOCK_BYTES of text): their shared licence headers and imports compress
        -- once. A file in a block has body x'' and its text's UTF-8 bytes at
        -- [block_start, block_end) of the decompressed block; block_id NULL: body is its
        -- own frame (files written before this migration, or alone in their batch).
        -- files counts the block's files; the block goes with its last one, and a block
        -- left with less live text than dead is written again with its live files. Ids are never
        -- reused (AUTOINCREMENT): a reader's cached block is never stale.
        CREATE TABLE body_blocks (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            project_id INTEGER NOT NULL,
            files      INTEGER NOT NULL,
            data       BLOB NOT NULL
        );
        ALTER TABLE files ADD COLUMN block_id INTEGER;
        ALTER TABLE files ADD COLUMN block_start INTEGER;
        ALTER TABLE files ADD COLUMN block_end INTEGER;
        -- a block's files, found when one leaves (a block mostly dead is written again)
        CREATE INDEX files_block ON files(block_id) WHERE block_id IS NOT NULL;
        """,
    ),
    (
        13,
        "project indexes without the words search never looks up alone (issue 13)",
        """
        -- packed = 1: an ingest.pack job (after the block's run) compressed the block
        -- again at body_pack_level and indexed its files' chunks without their
        -- free-standing stopwords and single characters, sizes kept whole
        -- (memoryd.storage.unsearched); the other blocks' chunks are indexed whole.
        -- The index finds unpacked blocks without reading them (a column after a
        -- large blob is read through its overflow pages). migrate_data enqueues one
        -- ingest.pack job per project that has blocks.
        ALTER TABLE body_blocks ADD COLUMN packed INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX body_blocks_unpacked ON body_blocks(project_id) WHERE packed = 0;
        """,
    ),
    (
        14,
        "chunks by their file's id range; no hash id, content hashes of 8 bytes",
        """
        -- A file's chunks are one id range (put_files gives them consecutive ids, in
        -- ordinal order, in one transaction): the file row keeps it, in place of an
        -- index on chunks.file_id. A file without chunks (retired, empty) has 0, 0.
        ALTER TABLE files ADD COLUMN chunk_first INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE files ADD COLUMN chunk_count INTEGER NOT NULL DEFAULT 0;
        UPDATE files SET chunk_first = g.first, chunk_count = g.n
            FROM (SELECT file_id, min(id) AS first, count(*) AS n FROM chunks GROUP BY file_id) g
            WHERE g.file_id = files.id;
        -- A table rebuild. Its ids (the FTS rowids) and the AUTOINCREMENT high-water
        -- mark are kept: ids are never reused. content_hash keeps the first 8 bytes
        -- of the 16-byte blake2b, which is what ingest now computes: search keys
        -- identical chunk texts by it (a 64-bit key: a collision among n chunks has
        -- odds of about n^2/2^65). It reads only the columns both layouts have.
        CREATE TABLE temp_chunks (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- rowid in the FTS table, never reused
            project_id   INTEGER NOT NULL,
            file_id      INTEGER NOT NULL REFERENCES files (id),
            ordinal      INTEGER NOT NULL,
            start_line   INTEGER NOT NULL,
            end_line     INTEGER NOT NULL,
            content_hash BLOB NOT NULL            -- 8 bytes, blake2b of the chunk text
        );
        INSERT INTO temp_chunks
            SELECT id, project_id, file_id, ordinal, start_line, end_line,
                   substr(content_hash, 1, 8)
            FROM chunks ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'temp_chunks';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'temp_chunks', seq FROM sqlite_sequence WHERE name = 'chunks';
        DROP TABLE chunks;
        ALTER TABLE temp_chunks RENAME TO chunks;
        """,
    ),
    (
        15,
        "chunks without what their file's row gives; content hashes as 16 bytes",
        """
        -- A chunk's project is its file's, and its ordinal its id less the file's
        -- chunk_first (a file's chunks are one id range, in ordinal order): a table
        -- rebuild without the two columns, ids and AUTOINCREMENT high-water mark kept.
        CREATE TABLE temp_chunks (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- rowid in the FTS table, never reused
            file_id      INTEGER NOT NULL REFERENCES files (id),
            start_line   INTEGER NOT NULL,
            end_line     INTEGER NOT NULL,
            content_hash BLOB NOT NULL            -- 8 bytes, blake2b of the chunk text
        );
        INSERT INTO temp_chunks
            SELECT id, file_id, start_line, end_line, content_hash FROM chunks ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'temp_chunks';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'temp_chunks', seq FROM sqlite_sequence WHERE name = 'chunks';
        DROP TABLE chunks;
        ALTER TABLE temp_chunks RENAME TO chunks;
        -- A file's blake2b (files, history) is kept as its 16 bytes, not 32 hex
        -- characters; the columns' declared TEXT affinity leaves a BLOB as it is. A
        -- value that is not hex (none is written) stays as it was.
        UPDATE files SET content_hash = coalesce(unhex(content_hash), content_hash)
            WHERE typeof(content_hash) = 'text';
        UPDATE history SET content_hash = coalesce(unhex(content_hash), content_hash)
            WHERE typeof(content_hash) = 'text';
        """,
    ),
    (
        16,
        "job effects name the attempt whose result they apply",
        """
        -- The lease token of the claim whose result wrote the row (noop and sleep
        -- jobs return it): the drill checks it is the claim that completed the job,
        -- so a late result applied in place of its job's new attempt is seen.
        ALTER TABLE job_effects ADD COLUMN lease_token TEXT;
        """,
    ),
    (
        17,
        "memory refs anchored to the content they cite",
        """
        -- One row per path ref of a memory record that named a live file of its project
        -- when the record was stored: the cited span's fingerprint, where the span is
        -- now (cur_*), and what it is there (state), found against the file whose
        -- content hash is checked_hash (NULL: no live file). A read whose file still
        -- has that hash takes the state as it is; an ingest that changes the file checks
        -- it again in its own commit (memoryd.consolidation.anchors).
        CREATE TABLE memory_anchors (
            id          INTEGER PRIMARY KEY,
            record_id   TEXT NOT NULL,
            project_id  INTEGER NOT NULL,
            ref         TEXT NOT NULL,            -- as the record cites it
            path        TEXT NOT NULL,            -- the cited file
            start_line  INTEGER,                  -- the cited span's first and last
            end_line    INTEGER,                  -- non-blank lines (NULL: the whole file)
            file_hash   BLOB NOT NULL,            -- the file's content hash when anchored
            span_hash   BLOB,                     -- blake2b of the normalized span
            line_hashes BLOB,                     -- 4 bytes per normalized non-blank line
            occurrence  INTEGER NOT NULL DEFAULT 0,  -- which of the file's equal spans
            occurrences INTEGER NOT NULL DEFAULT 1,
            symbol      TEXT,                     -- the enclosing definition's name
            terms       TEXT NOT NULL DEFAULT '[]',  -- JSON: the span's rarest words
            cur_path    TEXT NOT NULL,
            cur_start   INTEGER,
            cur_end     INTEGER,
            state       TEXT NOT NULL CHECK (state IN ('verified', 'moved', 'changed', 'stale')),
            checked_hash BLOB
        );
        CREATE INDEX memory_anchors_record ON memory_anchors (record_id);
        CREATE INDEX memory_anchors_path ON memory_anchors (project_id, cur_path);
        """,
    ),
    (
        18,
        "a project remembers how it was ingested",
        """
        -- The choices of files its last ingest made (orjson: excludes, include_hidden,
        -- include_secrets), which a plain re-run reuses; NULL: never stored (a project
        -- of an older home, whose next ingest stores its own).
        ALTER TABLE projects ADD COLUMN ingest_options BLOB;
        """,
    ),
    (
        19,
        "configuration and markdown chunks indexed with their key paths and headings",
        """
        -- Data only (migrate_data): the index text of a structured file's chunk now
        -- carries the words of its key paths or headings its lines lack.
        SELECT 1;
        """,
    ),
    (
        20,
        "memory, vector and dictionary tables made when first written",
        """
        -- Data only (migrate_data): a group of them that holds no row is dropped.
        SELECT 1;
        """,
    ),
]

CURRENT_VERSION = MIGRATIONS[-1][0]


def migrate_data(version: int, tx) -> None:
    """The data step of a migration, after its SQL and in its transaction (a kill
    before the commit leaves the older schema, and the next open runs both again).
    12: every project's per-file bodies are moved into blocks. 13: none (the blocks it
    leaves unpacked are packed by the jobs the next supervisor enqueues as it starts:
    :func:`~memoryd.storage.corpus.stranded_unpacked`). 14: a check that each file's
    chunks are the id range its row now names, and the pages the former chunks table
    held go back to the file system. 15: those pages again. 19: the chunks of every
    project's configuration and markdown files indexed again with their context words
    (``rebuild --verify`` stays equal; their line ranges stay as they were cut). 20:
    each lazily made group of tables that holds no row is dropped (a new home's too:
    its earlier migrations made them) and its pages go back to the file system."""
    if version == 12:
        from memoryd.storage.corpus import pack_bodies  # the corpus needs the new schema

        for (pid,) in tx.execute("SELECT id FROM projects ORDER BY id").fetchall():
            pack_bodies(tx, pid)
    if version == 14:
        _check_chunk_ranges(tx)
    if version == 19:
        from memoryd.storage.corpus import reindex_structured

        for (pid,) in tx.execute("SELECT id FROM projects ORDER BY id").fetchall():
            reindex_structured(tx, pid)
    if version == 20:
        for group in lazy.GROUPS:
            if lazy.present(tx, group) and not lazy.in_use(tx, group):
                lazy.drop(tx, group)
    if version in (14, 15, 20):
        from memoryd.storage.corpus import reclaim_free_pages

        reclaim_free_pages(tx)  # the former chunks table (14: and its index); 20: groups


def _check_chunk_ranges(tx) -> None:
    """Every file's chunks are the id range its row now names (true by construction:
    a file's chunks were always written together, with consecutive ids); a home where
    they are not would lose chunks, so its migration stops before the commit."""
    bad = tx.execute(
        "SELECT count(*) FROM files f WHERE f.chunk_count != (SELECT count(*) FROM chunks c"
        " WHERE c.id BETWEEN f.chunk_first AND f.chunk_first + f.chunk_count - 1"
        " AND c.file_id = f.id)"
    ).fetchone()[0]
    if bad:
        raise SchemaUnmigratable(
            f"{bad} files' chunks are not one id range, which schema 14 needs; keep the"
            " older memoryd for this home and report the problem with its authority.db"
        )
