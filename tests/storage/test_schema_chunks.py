"""Migration 14 rebuilds an older home's chunks table without the 12-byte hash id
nothing read, with 8-byte content hashes and without the index on file_id (a file's row
keeps its chunks' id range); migration 15 without the project and ordinal a chunk's file
row gives, and with files' hashes as bytes. Ids (the FTS rowids) and the AUTOINCREMENT
high-water mark stay, answers and `rebuild --verify` stay equal, and the layout is the
one a new home gets; a kill before its commit leaves the older home, which the next open
migrates; a home whose chunks are not ranges is refused, unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from memoryd.base.config import load_config
from memoryd.base.errors import SchemaUnmigratable
from memoryd.ingest.chunking import prepare_file
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.search import Search
from memoryd.storage.authority import open_authority
from memoryd.storage.corpus import ensure_project, put_files, retire_files
from memoryd.storage.schema import CURRENT_VERSION
from tests.conftest import downgrade_sql, query, rebuilt_sql
from tests.search.conftest import stdlib_files

QUERIES = (
    "read a configuration file",
    "convert a string to bytes",
    "error when the value is invalid",
    "ValueError",
)

#: The chunks table as migrations 2 to 13 left it.
SCHEMA_13_CHUNKS = (
    downgrade_sql(14).removesuffix(" PRAGMA user_version = 14;")
    + rebuilt_sql(
        "chunks",
        "id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id BLOB NOT NULL,"
        " project_id INTEGER NOT NULL, file_id INTEGER NOT NULL REFERENCES files (id),"
        " ordinal INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,"
        " content_hash BLOB NOT NULL",
        "SELECT id, randomblob(12), project_id, file_id, ordinal, start_line, end_line,"
        " unhex(hex(content_hash) || hex(randomblob(8))) FROM chunks",
    )
    + """
    CREATE INDEX chunks_file ON chunks (file_id);
    ALTER TABLE files DROP COLUMN chunk_first;
    ALTER TABLE files DROP COLUMN chunk_count;
    DELETE FROM schema_history WHERE version = 14;
    PRAGMA user_version = 13;
"""
)


def _files() -> list[tuple[str, bytes]]:
    files = [(rel, full.read_bytes()) for rel, full in stdlib_files()]
    return [(rel, data) for rel, data in files if 3_000 <= len(data) <= 6_000][:24]


def _ingest(home: Path) -> Memoryd:
    """A project of small stdlib modules, its last file retired (so the highest id ever
    used is no longer a chunk's)."""
    files = _files()
    md = Memoryd(home)
    pid = md.db.write(lambda tx: ensure_project(tx, "lib", None, 0))
    rows = [prepare_file(rel, data) for rel, data in files]
    md.db.write(lambda tx: put_files(tx, pid, rows))
    md.db.write(lambda tx: retire_files(tx, pid, [files[-1][0]]))
    return md


def _answers(md: Memoryd) -> list:
    return [Search(md).search(q, project="lib", limit=5)["items"] for q in QUERIES]


def _chunks(home: Path) -> tuple:
    return (
        query(home, "SELECT * FROM chunks ORDER BY id"),
        query(home, "SELECT seq FROM sqlite_sequence WHERE name = 'chunks'"),
        query(home, "SELECT sql FROM sqlite_schema WHERE tbl_name = 'chunks' ORDER BY name"),
        query(home, "SELECT id, chunk_first, chunk_count FROM files ORDER BY id"),
    )


def _older(home: Path) -> list:
    """An older home's chunks and schema (to tell that nothing of a migration stayed)."""
    return query(home, "SELECT * FROM chunks ORDER BY id") + query(
        home, "SELECT sql FROM sqlite_schema WHERE tbl_name IN ('chunks', 'files') ORDER BY name"
    )


def _as_schema_13(home: Path) -> None:
    md = Memoryd(home)
    md.db.write(lambda tx: tx.execute(SCHEMA_13_CHUNKS))
    md.close()
    assert query(home, "PRAGMA user_version") == [(13,)]
    columns = [r[1] for r in query(home, "PRAGMA table_info(chunks)")]
    assert "chunk_id" in columns
    assert "chunk_first" not in [r[1] for r in query(home, "PRAGMA table_info(files)")]
    assert {len(h) for (h,) in query(home, "SELECT content_hash FROM chunks")} == {16}


def _built(home: Path) -> tuple[list, tuple]:
    md = _ingest(home)
    answers = _answers(md)
    md.close()
    state = _chunks(home)
    assert state[0] and state[1][0][0] > state[0][-1][0]  # the retired file's ids stay used
    counts = [n for _, _, n in state[3]]
    assert counts[-1] == 0 and all(counts[:-1])  # the retired file has none
    assert all(len(row[-1]) == 8 for row in state[0])
    _as_schema_13(home)
    return answers, state


def _migrated_equal(home: Path, answers: list, state: tuple) -> None:
    md = Memoryd(home)
    assert md.db.user_version() == CURRENT_VERSION
    assert _chunks(home) == state  # same rows, hashes, high-water mark and layout
    assert query(home, "PRAGMA freelist_count") == [(0,)]  # the former table's pages gone
    for table in ("files", "history"):  # 15: a file's hash is its 16 bytes
        sql = f"SELECT DISTINCT typeof(content_hash), length(content_hash) FROM {table}"
        assert query(home, sql) == [("blob", 16)]
    assert _answers(md) == answers
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()


def test_an_older_home_drops_the_chunk_hash_id(tmp_path: Path) -> None:
    home = tmp_path / "home"
    answers, state = _built(home)
    _migrated_equal(home, answers, state)

    # A file written after the migration takes never-used ids, and its chunks the same
    # hashes as the migrated chunks of the same text.
    path, data = _files()[0]
    md = Memoryd(home)
    pid = query(home, "SELECT id FROM projects WHERE name = 'lib'")[0][0]
    md.db.write(lambda tx: put_files(tx, pid, [prepare_file("copy/" + path, data)]))
    md.close()
    sql = (
        "SELECT c.id, c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id"
        " WHERE f.path = ? ORDER BY c.id"
    )
    old, new = query(home, sql, (path,)), query(home, sql, ("copy/" + path,))
    assert old and [h for _, h in new] == [h for _, h in old]
    assert min(i for i, _ in new) == state[1][0][0] + 1


def _migrate_killed(home: Path) -> int:
    """Open the home in a process SIGKILLed before the migration's commit."""
    env = {**os.environ, "MEMORYD_KILL_AT": "before_commit"}
    code = "import sys; from memoryd.operations.api import Memoryd; Memoryd(sys.argv[1]).db"
    return subprocess.run([sys.executable, "-c", code, str(home)], env=env, timeout=120).returncode


@pytest.mark.slow
def test_a_migration_killed_before_its_commit_is_done_by_the_next_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    answers, state = _built(home)
    older = _older(home)
    assert _migrate_killed(home) == -9
    assert query(home, "PRAGMA user_version") == [(13,)]
    assert _older(home) == older  # nothing of the migration committed
    _migrated_equal(home, answers, state)


def test_a_home_whose_chunks_are_not_ranges_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _built(home)
    top = query(home, "SELECT max(id) FROM chunks")[0][0]
    conn = apsw.Connection(str(home / "authority.db"))
    conn.execute("UPDATE chunks SET id = ? WHERE ordinal = 1 AND file_id = 1", (top + 5,))
    conn.close()
    older = _older(home)
    with pytest.raises(SchemaUnmigratable, match="not one id range"):
        open_authority(home, load_config(home))
    assert query(home, "PRAGMA user_version") == [(13,)]
    assert _older(home) == older
