"""A project's chunk sizes stored as one array for the generation they were read at:
stored only while that generation is the project's, read only by a search of it, and
the same sizes FTS5's docsize table holds."""

from __future__ import annotations

import numpy as np

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_batch
from memoryd.search import stats as stats_mod
from memoryd.storage import fts, index_sizes, lazy, open_authority
from memoryd.storage.corpus import (
    ensure_project,
    fts_table,
    pack_blocks,
    project_generation,
    put_files,
    rebuild_index,
    retire_files,
    store_packed,
)

FILES = {
    f"notes/{i:03d}.md": f"note {i}: the kiln fires " + "stoneware " * (i % 7) for i in range(40)
}


def _project(tmp_path, packed: bool = True):
    home = tmp_path / "home"
    home.mkdir()
    db = open_authority(home, load_config(home))
    pid = db.write(lambda tx: ensure_project(tx, "p", None))
    files, blocks = prepare_batch(
        [(path, text.encode()) for path, text in FILES.items()], level=3 if packed else None
    )
    db.write(lambda tx: put_files(tx, pid, files, None, blocks, packed))
    return db, pid


def _docsize(db, pid) -> dict[int, int]:
    rows = db.query(f"SELECT id, sz FROM {fts_table(pid)}_docsize")
    sizes = index_sizes.docsize_tokens(b"".join(r[1] for r in rows), [len(r[1]) for r in rows])
    return dict(zip([r[0] for r in rows], sizes.tolist(), strict=True))


def _stored(db, pid):
    return index_sizes.load(db, pid, project_generation(db, pid), fts.averages(db, pid))


def test_the_array_holds_docsizes_sizes_by_rowid(tmp_path):
    db, pid = _project(tmp_path)
    db.write(lambda tx: retire_files(tx, pid, ["notes/003.md"]))  # a gap in the rowids
    snap = index_sizes.snapshot(db, pid)
    assert snap is not None and snap.generation == project_generation(db, pid)
    assert db.write(lambda tx: index_sizes.store_in(tx, pid, snap))
    low, sizes = _stored(db, pid)
    want = _docsize(db, pid)
    got = {low + i: s for i, s in enumerate(sizes.tolist()) if s != 0xFFFF}
    assert got == want and len(got) < len(sizes)  # the retired file's rowids: all bits set
    db.close()


def test_a_snapshot_is_stored_only_while_its_generation_is_the_projects(tmp_path):
    db, pid = _project(tmp_path)
    snap = index_sizes.snapshot(db, pid)
    db.write(lambda tx: retire_files(tx, pid, ["notes/001.md"]))
    assert not db.write(lambda tx: index_sizes.store_in(tx, pid, snap))
    assert not lazy.present(db, lazy.SIZES)
    db.close()


def test_a_later_generation_does_not_read_it_nor_does_a_rebuilt_index(tmp_path):
    db, pid = _project(tmp_path)
    snap = index_sizes.snapshot(db, pid)
    db.write(lambda tx: index_sizes.store_in(tx, pid, snap))
    assert _stored(db, pid) is not None
    files, blocks = prepare_batch([("notes/new.md", b"the kiln again")], level=3)
    db.write(lambda tx: put_files(tx, pid, files, None, blocks, True))
    assert _stored(db, pid) is None
    snap = index_sizes.snapshot(db, pid)
    db.write(lambda tx: index_sizes.store_in(tx, pid, snap))
    assert _stored(db, pid) is not None
    db.write(lambda tx: rebuild_index(tx, pid))
    assert db.query("SELECT count(*) FROM index_sizes") == [(0,)]
    db.close()


def test_indexing_packed_blocks_again_is_a_new_generation(tmp_path):
    """The pack pass's index text replaces the chunks' rows: sizes read before it are
    stale, so the generation moves on."""
    db, pid = _project(tmp_path, packed=False)
    before = project_generation(db, pid)
    packed, _ = pack_blocks(db, pid, 3, 10**9)
    assert db.write(lambda tx: store_packed(tx, pid, packed))
    assert project_generation(db, pid) == before + 1
    db.close()


def test_search_reads_its_generations_array_not_docsize(tmp_path, monkeypatch):
    """With the array stored, a large project's postings take their chunk sizes from it:
    every docsize row gone, the scores stay those of FTS5's sizes."""
    monkeypatch.setattr(stats_mod, "SIZES_MAX", 0)  # as a project past it
    db, pid = _project(tmp_path)

    def scores() -> list[list[float]]:
        stats_mod.clear()
        st = stats_mod.term_stats(db, pid)
        return [st.postings(s).scores.tolist() for s in ("kiln", "stonewar", "note")]

    want = scores()
    assert all(want)
    snap = index_sizes.snapshot(db, pid)
    db.write(lambda tx: index_sizes.store_in(tx, pid, snap))
    db.write(lambda tx: tx.execute(f"DELETE FROM {fts_table(pid)}_docsize"))
    got = scores()
    assert [np.round(g, 12).tolist() for g in got] == [np.round(w, 12).tolist() for w in want]
    db.close()


def test_a_snapshot_read_in_steps_is_the_one_read_at_once(tmp_path):
    db, pid = _project(tmp_path)
    db.write(lambda tx: retire_files(tx, pid, ["notes/010.md"]))
    whole = index_sizes.snapshot(db, pid)
    assert index_sizes.snapshot(db, pid, step=7) == whole and len(whole.data) > 14
    assert not db.conn.in_transaction  # its read transaction is over
    db.close()
