"""The FTS5 reads of project search, on a real index."""

from __future__ import annotations

from memoryd.ingest.chunking import prepare_file
from memoryd.search.fts_query import any_of
from memoryd.search.stats import _lengths
from memoryd.storage import corpus, fts
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
    ((rowid, occurrences, size),) = fts.postings(db, pid, "kiln")
    assert (rowid, occurrences) == (top[0][0], 2)
    assert size[0] == 3  # the docsize blob: tokens of the body column first
    docs, counts = fts.occurrences(db, pid, "glaze")
    assert list(zip(docs.tolist(), counts.tolist(), strict=True)) == [
        r[:2] for r in fts.postings(db, pid, "glaze")
    ]
    assert dict(fts.sizes(db, pid))[rowid] == size
    fts.prepare(db)
    rows = fts.ranked_with_phrases(db, pid, any_of(["kiln", "glaze"]), 5)
    assert sorted(mask for _, mask, _ in rows) == [0b10, 0b11]
    db.close()


def test_row_count_is_fts5s_own(tmp_path):
    db = make_store(tmp_path, "p", {f"{i}.md": f"note {i}" for i in range(7)})
    pid = project_id(db, "p")
    assert fts.row_count(db, pid) == db.query("SELECT count(*) FROM chunks")[0][0] == 7
    db.close()


def test_totals_follow_inserts_replacements_and_deletes(tmp_path):
    """FTS5's averages record stays equal to the sum of every chunk's size through
    replaced and retired files (the contentless index decrements it from docsize)."""
    files = {f"{i}.md": " ".join(["word"] * (i + 1)) for i in range(12)}
    db = make_store(tmp_path, "p", files)
    pid = project_id(db, "p")
    db.write(lambda tx: corpus.retire_files(tx, pid, ["3.md", "7.md"]))
    changed = prepare_file("5.md", b"one two three four five six seven")
    db.write(lambda tx: corpus.put_files(tx, pid, [changed]))
    chunks, tokens = fts.totals(db, pid)
    blobs = [r[0] for r in db.query(f"SELECT sz FROM {corpus.fts_table(pid)}_docsize")]
    assert chunks == len(blobs) == db.query("SELECT count(*) FROM chunks")[0][0] == 10
    assert tokens == int(_lengths(blobs).sum())
    db.close()
