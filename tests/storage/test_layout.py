"""Compact projects (no stored index while small) cost less than their
source, answer exactly as indexed ones, and become indexed when they grow."""

from __future__ import annotations

import apsw

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.search import search
from memoryd.search import stats as stats_mod
from memoryd.storage import rebuild
from memoryd.storage.authority import Authority, open_authority
from memoryd.storage.corpus import (
    compact_limit,
    ensure_project,
    fts_table,
    put_files,
    retire_files,
)
from memoryd.storage.schema import CURRENT_VERSION
from tests.conftest import downgrade_sql
from tests.search.conftest import stdlib_files

QUERIES = [
    "read a configuration file",
    "convert a string to bytes",
    "error when the value is invalid",
    "iterate over the items of a list",
    "which kubernetes namespace hosts the billing service",
    "ValueError",
    "__init__.py",
]
SMALL = 50_000  # bytes of source: the small project


def _open(home) -> Authority:
    return open_authority(home, load_config(home))


def _small_project() -> list[tuple[str, bytes]]:
    """About 50 KB in several files: stdlib modules of 4 to 7 KB (many small files are
    the costly shape: each file's compressed body and index rows round up to pages)."""
    out, total = [], 0
    for rel, full in stdlib_files():
        data = full.read_bytes()
        if 4_000 <= len(data) <= 7_000 and total + len(data) <= SMALL:
            out.append((rel, data))
            total += len(data)
    return out


def _ingest(db: Authority, name: str, files, limit: int) -> int:
    pid = db.write(lambda tx: ensure_project(tx, name, None, limit))
    rows = [prepare_file(rel, data) for rel, data in files]
    db.write(lambda tx: put_files(tx, pid, rows))
    return pid


def _answers(db: Authority, project: str) -> list:
    """What a user sees, minus the project's own name."""
    stats_mod.clear()
    out = []
    for q in QUERIES:
        r = search(db, project, q)
        items = [{k: v for k, v in i.items() if k != "project"} for i in r["items"]]
        out.append((r["status"], items))
    return out


def _stored_bytes(path) -> int:
    """Database + WAL after a TRUNCATE checkpoint."""
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def test_compact_and_indexed_projects_answer_the_same(tmp_path):
    files = _small_project()
    db = _open(tmp_path)
    _ingest(db, "indexed", files, 0)
    pid = _ingest(db, "compact", files, 10 * SMALL)
    assert compact_limit(db, pid) and not db.query(
        "SELECT 1 FROM sqlite_schema WHERE name = ?", (fts_table(pid),)
    )
    answers = _answers(db, "compact")
    assert any(status == "ok" and items for status, items in answers)
    assert any(status == "abstained" for status, _ in answers)
    assert answers == _answers(db, "indexed")
    db.close()


def test_a_small_project_costs_less_than_its_source(tmp_path):
    """Marginal store after a TRUNCATE checkpoint: at most the source's size."""
    files = _small_project()
    source = sum(len(data) for _, data in files)
    assert len(files) >= 4 and SMALL * 0.9 < source <= SMALL
    db = _open(tmp_path)
    path = db.path
    db.close()
    before = _stored_bytes(path)
    db = _open(tmp_path)
    _ingest(db, "small", files, load_config(tmp_path).compact_max_bytes)
    db.close()
    assert _stored_bytes(path) - before <= source


def test_growing_past_the_limit_stores_the_index(tmp_path):
    files = _small_project()
    db, reader = _open(tmp_path), open_authority(tmp_path, load_config(tmp_path), readonly=True)
    pid = _ingest(db, "p", files[:2], sum(len(d) for _, d in files[:3]))
    before = _answers(reader, "p")  # the reader builds the compact index in its temp schema
    assert compact_limit(db, pid)
    db.write(lambda tx: put_files(tx, pid, [prepare_file(r, d) for r, d in files[2:]]))
    assert not compact_limit(db, pid)
    assert db.query("SELECT 1 FROM sqlite_schema WHERE name = ?", (fts_table(pid),))
    _ingest(db, "ref", files, 0)
    after = _answers(reader, "p")  # now from the stored index (the temp copy is gone)
    assert after == _answers(db, "ref") and after != before
    assert rebuild.verify(db)["equal"]
    reader.close()
    db.close()


def test_compact_search_follows_changes_and_rebuild(tmp_path):
    db = _open(tmp_path)
    pid = _ingest(db, "p", [("a.md", b"the kiln schedule is in the studio binder\n")], SMALL)
    assert search(db, "p", "kiln schedule")["items"][0]["path"] == "a.md"
    db.write(lambda tx: put_files(tx, pid, [prepare_file("b.md", b"glaze kiln schedule\n")]))
    db.write(lambda tx: retire_files(tx, pid, ["a.md"]))
    assert [i["path"] for i in search(db, "p", "kiln schedule")["items"]] == ["b.md"]
    assert rebuild.rebuild(db)["p"]["fts"] == 0  # no stored index to rebuild
    assert compact_limit(db, pid) and rebuild.verify(db)["equal"]
    assert [i["path"] for i in search(db, "p", "kiln schedule")["items"]] == ["b.md"]
    db.close()


def test_threads_sharing_a_connection_build_the_compact_index_once(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    db = _open(tmp_path)
    _ingest(db, "p", _small_project(), SMALL * 2)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: search(db, "p", q)["status"], QUERIES * 4))
    assert got == [search(db, "p", q)["status"] for q in QUERIES] * 4
    db.close()


def test_projects_of_an_older_home_stay_indexed(tmp_path):
    """Migration 6 on a schema-5 home: its projects keep their stored index."""
    db = _open(tmp_path)
    _ingest(db, "old", [("a.md", b"the kiln schedule is in the studio binder\n")], 0)

    db.write(lambda tx: tx.execute(downgrade_sql(5)))
    db.close()
    db = _open(tmp_path)
    assert db.user_version() == CURRENT_VERSION and compact_limit(db, 1) == 0
    assert search(db, "old", "kiln schedule")["items"][0]["path"] == "a.md"
    db.close()
