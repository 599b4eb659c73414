"""Storage: bodies compressed in blocks of several files (no dictionary),
compact chunk rows, no free pages left after a run, and an index that rebuilds equal
from the bodies."""

from __future__ import annotations

from pathlib import Path

import apsw
import zstandard

from memoryd.base.config import PAGE_SIZE
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.storage import corpus, lazy
from tests.conftest import query


def _repo(root: Path, files: int) -> Path:
    for i in range(files):
        body = "\n".join(
            f"def handler_{i}_{j}(request, response):\n    return render(request, 'page_{j}')\n"
            for j in range(30)
        )
        (root / f"mod_{i:03d}.py").write_text(f'"""Module {i}."""\n\n{body}\n', encoding="utf-8")
    return root


FILES = 40


def test_block_bodies_and_rebuild(home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", FILES)
    md = Memoryd(home)
    summary = Projects(md).ingest(repo, wait=True, workers=2)
    assert summary["complete"] and summary["files_ingested"] == FILES

    # Bodies are compressed in blocks of several files, each block a frame without a
    # dictionary (none is trained); a file's own body is then empty.
    assert not lazy.present(md.db, lazy.ZDICTS)  # nor its table
    blocks = query(home, "SELECT data, files FROM body_blocks")
    assert {zstandard.get_frame_parameters(b).dict_id for b, _ in blocks} == {0}
    assert sum(n for _, n in blocks) == FILES > len(blocks)
    assert query(home, "SELECT count(*) FROM files WHERE body != x'' OR block_id IS NULL") == [(0,)]
    assert query(home, "PRAGMA page_size")[0][0] == PAGE_SIZE
    assert query(home, "PRAGMA freelist_count")[0][0] == 0
    # A chunk's hash is 8 bytes (search's key of identical chunk texts).
    hashes = query(home, "SELECT content_hash FROM chunks")
    assert hashes and all(len(h) == 8 for (h,) in hashes)

    # A file's text comes back exactly, from a bare connection and (a block read
    # only up to the end of the last file asked for) through an Authority's cache.
    conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        files = dict(conn.execute("SELECT id, path FROM files").fetchall())
        for fid, text in corpus.file_texts(conn, files).items():
            assert text == (repo / files[fid]).read_text(encoding="utf-8")
    finally:
        conn.close()
    for fid in sorted(files):
        [text] = corpus.file_texts(md.db, [fid]).values()
        assert text == (repo / files[fid]).read_text(encoding="utf-8")

    # A later ingest; the index rebuilds equal.
    (repo / "mod_000.py").write_text("def changed():\n    return 1\n", encoding="utf-8")
    again = Projects(md).ingest(repo, wait=True, workers=1)
    assert again["files_ingested"] == 1
    assert Home(md).rebuild(verify=True)["equal"]
    res = Search(md).search("changed", limit=3)
    assert any(item["path"] == "mod_000.py" for item in res["items"])
    md.close()


def with_dictionary(tx: apsw.Connection) -> zstandard.ZstdCompressor:
    """Every block's frame written again with a dictionary trained on the blocks (a
    ``zdicts`` row of project 1), as homes before this version wrote them; its
    compressor."""
    blocks = tx.execute("SELECT id, data FROM body_blocks").fetchall()
    texts = {bid: zstandard.ZstdDecompressor().decompress(data) for bid, data in blocks}
    zdict = zstandard.train_dictionary(8192, list(texts.values()) * 8)
    lazy.ensure(tx, lazy.ZDICTS)
    tx.execute(
        "INSERT INTO zdicts (id, project_id, data, created_at) VALUES (?, 1, ?, 0)",
        (zdict.dict_id(), zdict.as_bytes()),
    )
    cctx = zstandard.ZstdCompressor(dict_data=zdict, write_checksum=True)
    for bid, text in texts.items():
        tx.execute("UPDATE body_blocks SET data = ? WHERE id = ?", (cctx.compress(text), bid))
    return cctx


def test_an_older_homes_dictionary_frames_still_read(home: Path, tmp_path: Path) -> None:
    """Homes before this version compressed blocks with a trained project dictionary
    (``zdicts``; the frame names it): their texts read back exactly, whole (a bare
    connection) and up to one file's end (an Authority's cache)."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", FILES)
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    md.db.write(with_dictionary)
    md.close()
    frames = query(home, "SELECT data FROM body_blocks")
    assert all(zstandard.get_frame_parameters(f).dict_id for (f,) in frames)
    corpus.forget_dictionaries()
    md = Memoryd(home)
    files = dict(md.db.query("SELECT id, path FROM files"))
    for fid in sorted(files):
        [text] = corpus.file_texts(md.db, [fid]).values()
        assert text == (repo / files[fid]).read_text(encoding="utf-8")
    conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for fid, text in corpus.file_texts(conn, files).items():
            assert text == (repo / files[fid]).read_text(encoding="utf-8")
    finally:
        conn.close()
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()
