"""Per-generation term statistics: what the first query after an ingest reads."""

from __future__ import annotations

import numpy as np

from memoryd.ingest.chunking import prepare_file
from memoryd.search import stats as stats_mod
from memoryd.search.fts_query import any_of
from memoryd.storage import fts
from memoryd.storage.corpus import fts_table, project_id, put_files, retire_files
from memoryd.text.terms import analyze

FILLER = {f"notes/{i:03d}.md": f"ordinary note {i} about the weekly meeting" for i in range(80)}
KILN = {
    "studio/kiln.md": "kiln schedule: the kiln fires stoneware on mondays",
    "studio/glaze.md": "glaze recipes for stoneware and porcelain",
    "studio/log.md": "the kiln log lists every firing",
}


def _top(db, words: list[str]) -> list[tuple[int, int]] | None:
    stats_mod.clear()
    st = stats_mod.term_stats(db, project_id(db, "p"))
    return st.bm25_top([t.all_stems for t in analyze(" ".join(words)).terms], 10)


def _scores(db, words: list[str]) -> list[list[float]]:
    st = stats_mod.term_stats(db, project_id(db, "p"))
    return [
        st.postings(s).scores.tolist() for t in analyze(" ".join(words)).terms for s in t.all_stems
    ]


def _fts_rank(db, words: list[str]) -> list[int]:
    t = fts_table(project_id(db, "p"))
    rows = db.query(
        f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rank, rowid", (any_of(words),)
    )
    return [r[0] for r in rows]


def test_a_query_reads_no_size_of_a_chunk_it_does_not_match(store, tmp_path):
    """Only the sizes of the chunks holding a query term are read: with every other
    chunk's size gone from the index, the ranking is unchanged (the chunk count and
    the average length come from FTS5's one-row averages record)."""
    db = store(tmp_path, "p", {**FILLER, **KILN})
    words = ["kiln", "stoneware"]
    before = _top(db, words)
    scores = _scores(db, words)
    assert before and [r for r, _ in before] == _fts_rank(db, words)
    t = fts_table(project_id(db, "p"))
    matched = ",".join(str(r) for r, _ in before)
    db.write(lambda tx: tx.execute(f"DELETE FROM {t}_docsize WHERE id NOT IN ({matched})"))
    assert _top(db, words) == before
    assert _scores(db, words) == scores
    db.close()


def test_ranking_equals_fts5_after_replacements_and_retirements(store, tmp_path):
    db = store(tmp_path, "p", {**FILLER, **KILN})
    pid = project_id(db, "p")
    db.write(lambda tx: retire_files(tx, pid, [f"notes/{i:03d}.md" for i in range(0, 80, 3)]))
    longer = prepare_file("studio/log.md", b"the kiln log: " + b"firing " * 40)
    db.write(lambda tx: put_files(tx, pid, [longer]))
    for words in (["kiln"], ["kiln", "stoneware"], ["weekly", "kiln", "firing"]):
        assert [r for r, _ in _top(db, words)][:10] == _fts_rank(db, words)[:10]
    db.close()


def test_an_empty_project_ranks_nothing(store, tmp_path):
    db = store(tmp_path, "p", {})
    assert _top(db, ["kiln"]) == []
    db.close()


def test_a_terms_postings_count_every_occurrence_in_body_and_path_as_fts5_does(store, tmp_path):
    """The postings read for BM25 (occurrences per chunk, rowids ascending) equal
    FTS5's own per-chunk instance counts, in the body and the path column, for a term
    held nowhere, and after replacements and retirements."""
    db = store(tmp_path, "p", {**FILLER, **KILN, "kiln/kiln.md": "kiln kiln kiln and a kiln"})
    pid = project_id(db, "p")
    longer = prepare_file("studio/log.md", b"the kiln log: " + b"firing kiln " * 40)
    db.write(lambda tx: put_files(tx, pid, [longer]))
    db.write(lambda tx: retire_files(tx, pid, ["studio/kiln.md", "notes/004.md"]))
    for stem in ("kiln", "note", "fire", "stonewar", "absent"):
        read = fts.occurrences(db, pid, stem)
        assert read is not None
        pairs = list(zip(read[0].tolist(), read[1].tolist(), strict=True))
        assert pairs == [tuple(r[:2]) for r in fts.postings(db, pid, stem)], stem
        assert read[0].dtype == read[1].dtype == np.int64
    kiln = dict(zip(*(a.tolist() for a in fts.occurrences(db, pid, "kiln")), strict=True))
    assert sorted(kiln.values())[-2:] == [6, 41]  # 4 in the body + 2 in the path; 1 + 40
    db.close()


def test_occurrences_are_counted_as_numpy_unique_counts_them_in_any_order():
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 50, 3000):
        each = np.sort(rng.integers(1, 400, n)).astype(np.int64)
        for arr in (each, rng.permutation(each)):  # the view's order, and any other
            docs, counts = fts.counted(arr)
            want = np.unique(arr, return_counts=True)
            assert docs.tolist() == want[0].tolist() and counts.tolist() == want[1].tolist()
            assert docs.dtype == counts.dtype == np.int64
