"""Issue 3, storage: compressed bodies with a project dictionary, compact chunk rows,
no free pages left after a run, and an index that rebuilds equal from the bodies."""

from __future__ import annotations

from pathlib import Path

import apsw
import zstandard

from memoryd.api import Memoryd
from memoryd.config import PAGE_SIZE, ZSTD_DICT_MIN_FILES
from memoryd.storage import corpus
from tests.conftest import query


def _repo(root: Path, files: int) -> Path:
    for i in range(files):
        body = "\n".join(
            f"def handler_{i}_{j}(request, response):\n    return render(request, 'page_{j}')\n"
            for j in range(30)
        )
        (root / f"mod_{i:03d}.py").write_text(f'"""Module {i}."""\n\n{body}\n', encoding="utf-8")
    return root


def test_project_dictionary_bodies_and_rebuild(home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", ZSTD_DICT_MIN_FILES + 8)
    md = Memoryd(home)
    summary = md.ingest(repo, wait=True, workers=2)
    assert summary["complete"] and summary["files_ingested"] == ZSTD_DICT_MIN_FILES + 8

    (dict_id, data), *more = query(home, "SELECT id, data FROM zdicts")
    assert not more and zstandard.ZstdCompressionDict(data).dict_id() == dict_id
    bodies = query(home, "SELECT path, body FROM files")
    assert {zstandard.get_frame_parameters(b).dict_id for _, b in bodies} == {dict_id}
    assert query(home, "PRAGMA page_size")[0][0] == PAGE_SIZE
    assert query(home, "PRAGMA freelist_count")[0][0] == 0
    ids = query(home, "SELECT chunk_id, content_hash FROM chunks")
    assert all(len(c) == 12 and len(h) == 16 for c, h in ids)
    assert len({c for c, _ in ids}) == len(ids)

    # A body decodes without being told where its dictionary lives: any open connection
    # to the authority that holds it will do (the search path reads bodies that way).
    corpus._DICT_DCTX.clear()
    conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        path, body = bodies[0]
        assert corpus.file_text(body) == (repo / path).read_text(encoding="utf-8")
    finally:
        conn.close()

    # A later ingest keeps the project's dictionary; the index rebuilds equal.
    (repo / "mod_000.py").write_text("def changed():\n    return 1\n", encoding="utf-8")
    again = md.ingest(repo, wait=True, workers=1)
    assert again["files_ingested"] == 1
    assert query(home, "SELECT count(*) FROM zdicts")[0][0] == 1
    assert md.rebuild(verify=True)["equal"]
    res = md.search("changed", limit=3)
    assert any(item["path"] == "mod_000.py" for item in res["items"])
    md.close()
