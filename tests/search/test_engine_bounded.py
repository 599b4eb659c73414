"""The bounded lexical route at scale: common terms checked on the candidates' own
text and path, BM25 summed in scratch arrays shared by queries."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.ingest.chunking import prepare_file
from memoryd.search import engine as engine_mod
from memoryd.search import stats as stats_mod
from memoryd.search.engine import Candidate, _load, _phrases_held
from memoryd.search.fts_query import phrase
from memoryd.search.stats import term_stats
from memoryd.storage.corpus import ensure_project, fts_table, project_id, put_files, retire_files
from memoryd.storage.fts import prepare
from memoryd.text.terms import analyze, stem

SHARED = "The scheduler retries a failed upload\nbefore the lease runs out.\n"
FILES = {
    # one text at three paths: one token cache entry, three rows of their own
    "vendor/a/upload.py": SHARED,
    "vendor/b/upload.py": SHARED,
    "vendor/lease/upload.py": SHARED,
    # a phrase held across a line break, and a phrase's words apart
    "docs/wrapped.md": "the upload\nretries happen here\n",
    "docs/apart.md": "retries of the upload\nhappen later\n",
    "src/Straße.txt": "Übergröße of the upload queue\n",
    "src/empty.txt": "nothing relevant\n",
}


def _fts_holding(db, pid: int, ph: str) -> set[int]:
    t = fts_table(pid)
    return {r[0] for r in db.query(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (ph,))}


@pytest.mark.parametrize(
    "forms",
    [
        ["upload"],
        ["lease"],  # in one copy's path only
        ["upload retries"],  # two tokens in a row, across a line break too
        ["retries upload", "upload"],  # only apart: held by none
        ["strasse", "ubergroße", "vendor"],
        ["scheduler", "nowhere"],
    ],
)
def test_phrases_held_equals_fts5(tmp_path, store, forms):
    """Each candidate holds exactly the phrases FTS5 matches in its row, body or path,
    whether looked up in FTS5 (a text of its own, not read yet), read from the text
    (copies at several paths) or from tokens kept by an earlier query."""
    db = store(tmp_path, "p", FILES)
    pid = project_id(db, "p")
    prepare(db)
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    rowids = [r[0] for r in db.query("SELECT id FROM chunks ORDER BY id")]
    phrases = [phrase(f) for f in forms]
    want = {r: 0 for r in rowids}
    for i, ph in enumerate(phrases):
        for r in _fts_holding(db, pid, ph):
            want[r] |= 1 << i
    assert any(want.values())
    cands = [Candidate(r, 0, set()) for r in rowids]
    assert _phrases_held(db, pid, st, [], cands) == {r: 0 for r in rowids}
    assert _phrases_held(db, pid, st, phrases, cands) == want
    assert len(st.extra["tokens"]) == 1  # the three copies' text; the others looked up
    _load(db, st, cands)  # every file read (for the gate, say): now all from tokens
    assert _phrases_held(db, pid, st, phrases, cands) == want
    assert len(st.extra["tokens"]) == len(FILES) - 2
    assert _phrases_held(db, pid, st, phrases, cands) == want


def test_bounded_route_checks_common_terms_on_copies_text(tmp_path, store, monkeypatch):
    """Past the budget, the common term's holders come from the candidates' text
    (copies of one text at several paths): what FTS5 says each row holds, and no
    FTS5 lookup."""
    files = {f"m{i}/notes.txt": f"upload number {i % 3}\nthe queue\n" for i in range(30)}
    files.update({f"x{i}.txt": "queue only\n" for i in range(30)})
    db = store(tmp_path, "p", files)
    pid = project_id(db, "p")
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    terms = analyze("upload queue").terms
    monkeypatch.setattr(engine_mod, "POSTINGS_BUDGET", st.df("upload"))
    monkeypatch.setattr(engine_mod.fts, "phrases_held", None)  # never called
    got = engine_mod._lexical(db, pid, st, terms, 20)
    holding = _fts_holding(db, pid, phrase("queue"))
    assert len(got) == 20 and all("upload" in c.matched for c in got)
    assert all(("queue" in c.matched) == (c.rowid in holding) for c in got)
    assert [c.bm25_rank for c in got] == list(range(20))


def _naive_top(st, groups, pool):
    scores: dict[int, float] = {}
    masks: dict[int, int] = {}
    for i, group in enumerate(groups):
        for s in group:
            p = st.postings(s)
            for r, v in zip(p.rowids.tolist(), p.scores.tolist(), strict=True):
                scores[r] = scores.get(r, 0.0) + v
                masks[r] = masks.get(r, 0) | 1 << i
    best = sorted(scores, key=lambda r: (-scores[r], r))
    edge = scores[best[min(pool, len(best)) - 1]] if best else 0.0
    return [(r, masks[r], scores[r]) for r in best if scores[r] >= edge]  # the edge's ties too


def test_bm25_scratch_is_clean_between_queries(tmp_path, store):
    """Queries of different terms in a row each get exactly their own sums (the
    scratch arrays are all zero again after each), also after a failed one."""
    files = {f"f{i}.txt": " ".join(["alpha"] * (i % 3 + 1) + ["beta"] * (i % 5)) for i in range(40)}
    files.update({f"g{i}.txt": "gamma beta\n" for i in range(10)})
    db = store(tmp_path, "p", files)
    stats_mod.clear()
    st = stats_mod.term_stats(db, project_id(db, "p"))
    for groups in ([("alpha",)], [("beta",), ("gamma",)], [("alpha",), ("beta",)], [("gamma",)]):
        assert st.bm25_scored(groups, 15) == _naive_top(st, groups, 15)
    scores, masks = stats_mod._SCRATCH.arrays(0)
    assert not np.any(scores) and not np.any(masks)
    rowids = st.postings("alpha").rowids[:2]  # scores that do not fit: the sum fails
    st._postings["broken"] = stats_mod.Postings(rowids, np.ones(3))
    with pytest.raises(ValueError):
        st.bm25_scored([("alpha",), ("broken",)], 15)
    assert not np.any(scores) and not np.any(masks)
    assert st.bm25_scored([("gamma",)], 15) == _naive_top(st, [("gamma",)], 15)


def test_maxscore_skips_long_lists_without_changing_the_pool(tmp_path, store, monkeypatch):
    """A rare term's chunks outscore anything the common terms alone can reach: the
    common lists are skipped (only looked up on those chunks), and the pool, its
    masks and scores are exactly the full sum's. When the bound does not hold, the
    full sum answers."""
    files = {f"r{i}.txt": f"rare common {'other ' * (i % 4)}\n" for i in range(40)}
    files.update({f"c{i}.txt": "common other\n" * (1 + i % 3) for i in range(400)})
    db = store(tmp_path, "p", files)
    stats_mod.clear()
    st = stats_mod.term_stats(db, project_id(db, "p"))
    groups = [("common",), ("rare",), ("other",)]
    monkeypatch.setattr(stats_mod, "PRUNE_MIN", 0)  # a project this small sums whole
    parts = [(i, st.postings(g[0])) for i, g in enumerate(groups)]
    pruned = stats_mod._pruned(parts, 20)
    assert pruned is not None, "the common lists were skipped"
    assert pruned == stats_mod._summed(parts, 20) == _naive_top(st, groups, 20)
    assert st.bm25_scored(groups, 20) == pruned
    # a pool larger than the rare term's chunks: the common lists must be summed
    assert stats_mod._pruned(parts, 60) is None
    assert st.bm25_scored(groups, 60) == _naive_top(st, groups, 60)


def test_small_projects_read_lengths_once_with_the_same_postings(tmp_path, store, monkeypatch):
    """A small project's chunk lengths are read once per generation instead of joined
    per term: the postings are the same; a chunk indexed after the lengths were read
    takes the join."""
    db = store(tmp_path, "p", {f"f{i}.txt": "kiln " * (i % 5 + 1) + "glaze\n" for i in range(30)})
    pid = project_id(db, "p")
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    monkeypatch.setattr(stats_mod, "SIZES_MAX", 0)
    joined = stats_mod.term_stats(db, pid)._read_postings("kiln")
    monkeypatch.undo()
    once = st._read_postings("kiln")
    assert st._sizes is not None
    assert once.rowids.tolist() == joined.rowids.tolist()
    assert once.scores.tolist() == joined.scores.tolist()
    late = prepare_file("late.txt", b"kiln kiln kiln stoneware\n")
    db.write(lambda tx: put_files(tx, pid, [late]))
    fresh = st._read_postings(stem("stoneware"))  # the lengths read miss the new chunk
    assert len(fresh.rowids) == 1 and fresh.scores[0] > 0


def test_bm25_sums_of_a_project_with_high_rowids(tmp_path, store):
    """A project whose rowids start far from zero (another project's chunks came
    first) is summed relative to its lowest rowid, with the same answer."""
    db = store(tmp_path, "first", {f"a{i}.txt": f"filler text {i}\n" for i in range(60)})
    pid = db.write(lambda tx: ensure_project(tx, "p", None))
    rows = [prepare_file(f"f{i}.txt", f"kiln {'glaze ' * (i % 3)}\n".encode()) for i in range(8)]
    db.write(lambda tx: put_files(tx, pid, rows))
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    groups = [("kiln",), ("glaze",)]
    assert int(st.postings("kiln").rowids[0]) > 60
    assert st.bm25_scored(groups, 5) == _naive_top(st, groups, 5)
    scores, masks = stats_mod._SCRATCH.arrays(0)
    assert not np.any(scores) and not np.any(masks)


_PATHS = ["src/Csv.py", "lib/csv.py", "csv.py", "docs/a_b.md", "docs/a%b.md", "docs/axb.md",
          "pkg/Ñandú/config.toml", "pkg/ñandú/config.toml", "deep/x/y/Read.Me",
          "read.me.bak"]  # fmt: skip
_NAMED = ["csv.py", "CSV.PY", "lib/csv.py", "src/csv.py", "a_b.md", "a%b.md", "config.toml",
          "ñandú/config.toml", "Ñandú/CONFIG.toml", "y/read.me", "x/y", "read.me", "deep/",
          "docs/axb.md", "nothing.py", ""]  # fmt: skip


def _like(db, pid: int, p: str) -> set[int]:
    """What a named path matched as SQL: the path itself or any path ending in /p,
    SQLite's LIKE folding ASCII case only."""
    like = "%/" + p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    sql = ("SELECT id FROM files WHERE project_id = ? AND live = 1"
           " AND (path = ? OR path LIKE ? ESCAPE '\\')")  # fmt: skip
    return {r[0] for r in db.query(sql, (pid, p, like))}


def test_a_named_path_finds_the_files_sql_like_finds_and_forgets_retired_ones(tmp_path, store):
    """A path in a question names the files whose path is it or ends with /it (ASCII
    case folded, other letters exact, _ and % literal); a retired file is not named
    after its retirement's generation."""
    db = store(tmp_path, "p", {p: f"text of {p}\n" for p in _PATHS})
    pid = project_id(db, "p")
    stats = term_stats(db, pid)
    for p in _NAMED:
        assert engine_mod._named_files(db, pid, stats, p) == _like(db, pid, p), p
    assert len(engine_mod._named_files(db, pid, stats, "csv.py")) == 3
    db.write(lambda tx: retire_files(tx, pid, ["lib/csv.py"]))
    fresh = term_stats(db, pid)
    for p in _NAMED:
        assert engine_mod._named_files(db, pid, fresh, p) == _like(db, pid, p), p
    assert len(engine_mod._named_files(db, pid, fresh, "csv.py")) == 2
    db.close()
