"""The FTS5 reads of project search, on a real index."""

from __future__ import annotations

from memoryd.ingest.chunking import prepare_file
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
    docs, tf, (size,) = fts.postings(db, pid, "kiln", fts.tf_bits(db, pid))
    assert tf.tolist() == [2]
    assert size[0] == 3  # the docsize blob: tokens of the body column first
    rowid = int(docs[0])
    docs, tf, _ = fts.postings(db, pid, "glaze", fts.tf_bits(db, pid))
    got = fts.occurrences(db, pid, "glaze", fts.tf_bits(db, pid))
    assert got[0].tolist() == docs.tolist() and got[1].tolist() == tf.tolist() == [1, 1]
    assert dict(fts.sizes(db, pid))[rowid] == size
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
    changed = prepare_file("p", "5.md", b"one two three four five six seven")
    db.write(lambda tx: corpus.put_files(tx, pid, [changed]))
    chunks, tokens = fts.totals(db, pid)
    blobs = [r[0] for r in db.query(f"SELECT sz FROM {corpus.fts_table(pid)}_docsize")]
    assert chunks == len(blobs) == db.query("SELECT count(*) FROM chunks")[0][0] == 10
    assert tokens == int(_lengths(blobs).sum())
    db.close()


def _positional_counts(db, pid: int) -> dict[tuple[str, int], int]:
    """(stem, rowid) -> occurrences, from a positional FTS5 index of the very rows the
    project's index holds (its text from the stored bodies): the layout it replaced."""
    conn = db.conn
    rowids = [r[0] for r in db.query("SELECT id FROM chunks WHERE project_id = ?", (pid,))]
    rows = corpus.chunk_rows(conn, rowids)
    conn.execute(
        "CREATE VIRTUAL TABLE temp.ref USING fts5(body, path, content='',"
        f" tokenize='{corpus.FTS_TOKENIZER}')"
    )
    conn.executemany("INSERT INTO temp.ref (rowid, body, path) VALUES (?, ?, ?)", rows)
    conn.execute("CREATE VIRTUAL TABLE temp.ref_inst USING fts5vocab(temp, ref, instance)")
    counts = conn.execute("SELECT term, doc, count(*) FROM temp.ref_inst GROUP BY term, doc")
    out = {(t, d): n for t, d, n in counts}
    conn.execute("DROP TABLE temp.ref_inst")
    conn.execute("DROP TABLE temp.ref")
    return out


def _stored_counts(db, pid: int) -> dict[tuple[str, int], int]:
    bits = fts.tf_bits(db, pid)
    out = {}
    for (term,) in db.query(f"SELECT term FROM {corpus.fts_table(pid)}_vocab"):
        docs, tf, _ = fts.postings(db, pid, term, bits)
        out.update({(term, int(d)): int(n) for d, n in zip(docs, tf, strict=True)})
    return out


def test_occurrences_equal_a_positional_index_through_changes(tmp_path):
    """Each term's occurrences in each chunk (up to 300 times: nine bits) are what a
    positional index of the same rows counts, after inserts, a replaced file (its bit
    rows deleted by their values) and a retired one; a path's words count too."""
    files = {f"dir{i}/kiln{i}.md": " ".join(["glaze"] * (i * 37 + 1) + ["kiln"]) for i in range(9)}
    files["dir0/other.md"] = "glazes glazing glazed kiln dir0"
    db = make_store(tmp_path, "p", files)
    pid = project_id(db, "p")
    assert _stored_counts(db, pid) == _positional_counts(db, pid)
    assert max(_stored_counts(db, pid).values()) == 8 * 37 + 1  # bits 3, 5 and 8
    changed = prepare_file("p", "dir3/kiln3.md", b"glaze glaze kiln kiln kiln")
    db.write(lambda tx: corpus.put_files(tx, pid, [changed]))
    db.write(lambda tx: corpus.retire_files(tx, pid, ["dir5/kiln5.md"]))
    stored = _stored_counts(db, pid)
    assert stored == _positional_counts(db, pid)
    db.close()
