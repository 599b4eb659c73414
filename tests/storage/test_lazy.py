"""Memory, vector and dictionary tables are made by their first write: a home that
only indexes code has none of them, answers every command as if they were empty,
and keeps the schema its migrations would have made once they exist."""

from __future__ import annotations

import apsw
import pytest

from memoryd.base.config import PAGE_SIZE, load_config
from memoryd.storage import lazy, record_vectors, records, vectors
from memoryd.storage.authority import Authority, open_authority
from memoryd.storage.ddl import schema_text
from memoryd.storage.schema import CURRENT_VERSION, MIGRATIONS
from tests.conftest import downgrade_sql

REC = {
    "id": "m-0123456789abcdef", "project_id": 1, "scope": "repo", "scope_key": "s1",
    "kind": "lesson", "text": "Run the migrations before the web workers start",
    "norm_hash": "h", "nterms": 5, "triggers": [], "refs": [], "sources": [],
    "terms": ["migrat", "web"], "seq": 1,
}  # fmt: skip


def _open(home) -> Authority:
    return open_authority(home, load_config(home))


def _objects(conn: apsw.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_schema")}


def _group_objects(group: lazy.Group) -> set[str]:
    """Every name the group's DDL makes, FTS5 shadow tables included."""
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE files (id INTEGER PRIMARY KEY, content_hash, live);"
        "CREATE TABLE projects (id INTEGER PRIMARY KEY)"
    )
    before = _objects(conn)
    conn.execute(schema_text(group.ddl))
    return _objects(conn) - before


def _insert_record(tx: apsw.Connection) -> None:
    records.insert_record_in(tx, dict(REC), 0.0)


def test_a_new_home_has_none_of_them_and_small_pages(tmp_path):
    db = _open(tmp_path)
    names = _objects(db.conn)
    for group in (*lazy.GROUPS, *lazy.LATER_GROUPS):
        assert not lazy.present(db, group)
        assert not (_group_objects(group) & names), group.name
    assert db.query("PRAGMA page_size")[0][0] == PAGE_SIZE == 1024
    assert db.query("PRAGMA freelist_count")[0][0] == 0
    assert not [s for (s,) in db.query("SELECT sql FROM sqlite_schema") if s and "--" in s]
    db.close()


def test_readers_answer_as_for_empty_tables(tmp_path):
    db = _open(tmp_path)
    conn = db.conn
    assert records.totals(conn, None) == {"records": {}, "candidates": {}}
    assert records.list_records(conn, 1) == [] and records.get_record(conn, "m-x") is None
    assert records.fts_matches(conn, "kiln", 5) == []
    assert records.fts_digest(conn) == records.scratch_fts_digest(conn)
    assert records.terms_mismatches(conn) == 0 and records.sightings(conn) == 0
    assert vectors.stored_encoder(db) is None and vectors.matrix(db, 1)[2] == 0
    assert record_vectors.matrix(db, 1)[2] == 0 and record_vectors.state(db, 1)[1] == 0
    assert db.write(records.rebuild_fts_in) == 0
    assert not any(lazy.present(db, g) for g in lazy.GROUPS)  # reading made nothing
    db.close()


def test_the_first_write_makes_them_in_its_transaction(tmp_path):
    db = _open(tmp_path)

    def fails(tx):
        _insert_record(tx)
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        db.write(fails)
    assert not lazy.present(db, lazy.MEMORY)  # the rollback took the tables too
    db.write(_insert_record)
    assert lazy.present(db, lazy.MEMORY) and not lazy.present(db, lazy.VECTORS)
    assert [r["id"] for r in records.fts_matches(db.conn, "migrations", 5)] == [REC["id"]]
    db.write(lambda tx: vectors.claim(tx, "enc", 64))
    assert vectors.stored_encoder(db) == "enc"
    db.close()


def _shape(conn: apsw.Connection, names: set[str]) -> dict[str, object]:
    """Columns of each table and index, and the normalized text of every object."""
    out: dict[str, object] = {}
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_schema"):
        if name not in names:
            continue
        out[name] = schema_text(sql or "").replace("IF NOT EXISTS ", "")
        if kind in ("table", "index"):
            pragma = "table_xinfo" if kind == "table" else "index_xinfo"
            out[f"{name}:columns"] = conn.execute(f"PRAGMA {pragma}({name})").fetchall()
    return out


def test_their_ddl_is_what_the_migrations_made(tmp_path):
    """The shipped migrations' tables, column by column, index by index, against the
    groups' DDL; CREATE texts compared without their comments and spacing."""
    migrated = apsw.Connection(str(tmp_path / "old.db"))
    for version, _name, sql in MIGRATIONS:
        if version < 20:
            migrated.execute(sql)
    (tmp_path / "new").mkdir()
    fresh = _open(tmp_path / "new")
    for group in lazy.GROUPS:
        fresh.write(lambda tx, g=group: lazy.ensure(tx, g))
    for group in lazy.GROUPS:
        names = _group_objects(group)
        want = _shape(migrated, names)
        assert set(want) >= names, group.name
        assert _shape(fresh.conn, names) == want, group.name
    fresh.close()


@pytest.mark.parametrize("with_rows", [False, True])
def test_migration_20_drops_only_unused_groups(tmp_path, with_rows):
    db = _open(tmp_path)
    if with_rows:
        db.write(_insert_record)
    db.write(lambda tx: tx.execute(downgrade_sql(19)))  # every group, as an older home
    assert all(lazy.present(db, g) for g in lazy.GROUPS)
    db.close()
    db = _open(tmp_path)
    assert db.user_version() == CURRENT_VERSION
    assert lazy.present(db, lazy.MEMORY) is with_rows
    assert not lazy.present(db, lazy.VECTORS) and not lazy.present(db, lazy.ZDICTS)
    if with_rows:
        assert [r["id"] for r in records.fts_matches(db.conn, "workers", 5)] == [REC["id"]]
    assert db.query("PRAGMA freelist_count")[0][0] == 0  # their pages went back
    db.close()


def test_schema_text_drops_comments_and_spacing_not_quoted_text():
    sql = "CREATE TABLE t (\n  a TEXT DEFAULT '-- kept  here', -- gone\n  b /* gone */ INT\n);"
    assert schema_text(sql) == "CREATE TABLE t ( a TEXT DEFAULT '-- kept  here', b INT );"


def test_commands_on_a_home_without_memories(cli, tmp_path):
    """Every command that reads memory answers on a home that never wrote one."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "kiln.py").write_text("def kiln_schedule():\n    return 'the studio binder'\n")
    assert cli("ingest", str(tree), "--wait", "--json").code == 0
    for args in (
        ("search", "kiln schedule", "--project", "tree"),
        ("recall", "kiln schedule", "--project", "tree"),
        ("status",),
        ("memory", "list", "--project", "tree"),
        ("rebuild", "--verify"),
        ("rebuild",),
        ("doctor",),
    ):
        res = cli(*args, "--json")
        assert res.code == 0, (args, res.stdout, res.stderr)
