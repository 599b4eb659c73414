"""The FTS5 reads of project search, on a real index."""

from __future__ import annotations

from memoryd.search.fts_query import any_of
from memoryd.storage import fts
from memoryd.storage.corpus import project_id
from tests.search.conftest import make_store


def test_reads_of_one_project_index(tmp_path):
    db = make_store(
        tmp_path,
        "p",
        {"a.md": "kiln kiln glaze", "b.md": "glaze only here", "c.md": "nothing relevant"},
    )
    pid = project_id(db, "p")
    assert fts.doc_freqs(db, pid, ["kiln", "glaze", "absent"]) == {"kiln": 1, "glaze": 2}
    top = fts.ranked(db, pid, any_of(["kiln"]), 5)
    assert len(top) == 1
    assert fts.postings(db, pid, "kiln") == [(top[0], 2)]
    sizes = fts.chunk_sizes(db, pid)
    assert sizes is not None and len(sizes) == 3
    fts.prepare(db)
    rows = fts.ranked_with_phrases(db, pid, any_of(["kiln", "glaze"]), 5)
    assert sorted(mask for _, mask in rows) == [0b10, 0b11]
    db.close()


def test_row_count_is_fts5s_own(tmp_path):
    db = make_store(tmp_path, "p", {f"{i}.md": f"note {i}" for i in range(7)})
    pid = project_id(db, "p")
    assert fts.row_count(db, pid) == db.query("SELECT count(*) FROM chunks")[0][0] == 7
    db.close()
