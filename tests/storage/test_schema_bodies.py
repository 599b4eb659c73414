"""File bodies compressed in blocks of several files (migration 12). A block
counts its files and goes with the last; an older home's per-file bodies move into
blocks when it opens, in the migration's transaction (a kill leaves the old schema,
and the next open finishes it); texts, answers and derived tables stay equal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.storage import corpus, lazy
from memoryd.storage.schema import CURRENT_VERSION
from tests.conftest import downgrade_sql, query
from tests.ingest.test_store import _repo

QUERIES = ("render page_7", "handler_20_4 request", "render page_12 response")


def _blocks(home: Path) -> dict[int, int]:
    return dict(query(home, "SELECT id, files FROM body_blocks"))


def _texts(home: Path) -> dict[str, str]:
    md = Memoryd(home)
    try:
        ids = dict(md.db.query("SELECT id, path FROM files WHERE live = 1"))
        return {ids[fid]: text for fid, text in corpus.file_texts(md.db, ids).items()}
    finally:
        md.close()


def _answers(md: Memoryd) -> list:
    return [Search(md).search(q, limit=5)["items"] for q in QUERIES]


def test_blocks_count_their_files_and_go_with_the_last(home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 5)
    # Offsets are UTF-8 bytes: multi-byte text and replaced invalid bytes come back whole.
    (repo / "mod_zz.md").write_bytes("naïve café, Ünïcode → ok\n".encode() + b"bad \xff byte\n")
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    (first, n), *more = _blocks(home).items()
    assert not more and n == 6  # one batch, one block
    sources = {p.name: p.read_bytes().decode(errors="replace") for p in repo.iterdir()}
    assert _texts(home) == sources
    assert Search(md).search("naïve café", limit=3)["items"][0]["path"] == "mod_zz.md"

    # A changed file leaves the block for a block of its own, and the block is written
    # again without its old text; a redone batch of unchanged files stores no block.
    (repo / "mod_000.py").write_text("def changed():\n    return 1\n")
    Projects(md).ingest(repo, wait=True, workers=1)
    blocks = _blocks(home)
    assert first not in blocks and sorted(blocks.values()) == [1, 5]
    Projects(md).ingest(repo, wait=True, workers=1)
    assert _blocks(home) == blocks
    assert _texts(home) == {**sources, "mod_000.py": "def changed():\n    return 1\n"}

    # The block goes with its last file.
    for p in sorted(repo.iterdir())[1:]:
        p.unlink()
    Projects(md).ingest(repo, wait=True, workers=1)
    assert first not in _blocks(home) and len(_blocks(home)) == 1
    assert [i["path"] for i in Search(md).search("changed", limit=3)["items"]] == ["mod_000.py"]
    md.close()


def _block_texts(home: Path) -> list[bytes]:
    md = Memoryd(home)
    try:
        return [
            corpus._decompress(d, md.db) for (d,) in md.db.query("SELECT data FROM body_blocks")
        ]
    finally:
        md.close()


def test_a_block_mostly_dead_is_written_again_with_its_live_files(
    home: Path, tmp_path: Path
) -> None:
    """Changed and retired files' bytes never outweigh the live ones in a block: once
    less than half of a block's text is live, the live files move to a block of their
    own and the old one, with the dead texts, goes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(6):
        (repo / f"note_{i}.md").write_text(f"secret_{i} " * 200 + "\n")
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    assert list(_blocks(home).values()) == [6]

    for i in range(3):  # half the text leaves: not less than half is live yet
        (repo / f"note_{i}.md").unlink()
    Projects(md).ingest(repo, wait=True, workers=1)
    assert list(_blocks(home).values()) == [3]
    (repo / "note_3.md").write_text("rewritten\n")
    Projects(md).ingest(repo, wait=True, workers=1)  # 2 of 6 files' text live: written again
    blob = b"".join(_block_texts(home))
    assert sorted(_blocks(home).values()) == [1, 2]
    assert all(f"secret_{i}".encode() not in blob for i in range(4))
    assert _texts(home) == {p.name: p.read_text() for p in repo.iterdir()}
    assert Search(md).search("secret_5", limit=1)["items"][0]["path"] == "note_5.md"
    md.close()


def _as_schema_11(home: Path) -> None:
    """Turn the home back into what memoryd wrote before body blocks: each live file's
    text its own frame with the project's zstd dictionary (which memoryd trained then;
    the frame names it), schema 11."""

    def unpack(tx) -> None:
        for (pid,) in tx.execute("SELECT id FROM projects").fetchall():
            texts = [(fid, text.encode()) for fid, _, text in corpus.live_texts(tx, pid)]
            zdict = zstandard.train_dictionary(8192, [t for _, t in texts])
            lazy.ensure(tx, lazy.ZDICTS)  # an older home had the table from its start
            tx.execute(
                "INSERT INTO zdicts (id, project_id, data, created_at) VALUES (?, ?, ?, 0)",
                (zdict.dict_id(), pid, zdict.as_bytes()),
            )
            cctx = zstandard.ZstdCompressor(dict_data=zdict, write_checksum=True)
            for fid, text in texts:
                tx.execute("UPDATE files SET body = ? WHERE id = ?", (cctx.compress(text), fid))
        tx.execute(downgrade_sql(11))

    md = Memoryd(home)
    md.db.write(unpack)
    md.close()


def _migrate_killed(home: Path) -> int:
    """Open the home in a process SIGKILLed after the migration's first block."""
    env = {**os.environ, "MEMORYD_KILL_AT": "bodies_mid_pack"}
    code = "import sys; from memoryd.operations.api import Memoryd; Memoryd(sys.argv[1]).db"
    return subprocess.run([sys.executable, "-c", code, str(home)], env=env, timeout=120).returncode


@pytest.mark.slow
def test_an_older_home_moves_its_bodies_into_blocks(home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 40)
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=2)
    before = _answers(md)
    md.close()
    _as_schema_11(home)
    assert query(home, "PRAGMA user_version") == [(11,)]
    own_frames = query(home, "SELECT count(*) FROM files WHERE length(body) > 0")
    assert own_frames == [(40,)] and all(before)

    # Killed mid-migration: nothing of it committed, the home still at schema 11.
    assert _migrate_killed(home) == -9
    assert query(home, "PRAGMA user_version") == [(11,)]
    assert "body_blocks" not in {r[0] for r in query(home, "SELECT name FROM sqlite_schema")}

    md = Memoryd(home)  # the next open migrates
    assert md.db.user_version() == CURRENT_VERSION
    assert query(home, "SELECT count(*) FROM files WHERE body != x'' OR block_id IS NULL") == [(0,)]
    assert sum(_blocks(home).values()) == 40
    assert _answers(md) == before
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()
    assert _texts(home) == {p.name: p.read_text() for p in repo.iterdir()}
