"""Phrases checked against the chunks' text answer as a positional FTS5 index did."""

from __future__ import annotations

import pytest

from memoryd.search import phrases
from memoryd.search import stats as stats_mod
from memoryd.search.fts_query import phrase
from memoryd.storage.corpus import project_id
from tests.search.conftest import make_store
from tests.storage.fts_reference import positional_index

FILES = {
    "src/retry/queue.py": "the retry queue\nretry retry retry queue\nqueue retry queue retry\n",
    "src/queue/worker.py": "a worker takes the queue lease\nthe lease ends\n",
    "docs/notes.md": "retry the retry retry queue later\n" * 3,
    "docs/apart.md": "queue of retries\nretry happens later\n",
    "lib/retry_queue.txt": "nothing else here\n",
    "lib/other.txt": "unrelated words only\n",
}


@pytest.mark.parametrize(
    "text",
    ["retry queue", "retry retry", "queue lease", "src retry", "retry", "lease", "absent words"],
)
def test_ranked_equals_fts5_rank_of_the_phrase(tmp_path, text):
    """The best chunks for one phrase, in order: a phrase repeated within a chunk and
    overlapping itself ('retry retry' in 'retry retry retry'), in a path, of one token
    and absent, as FTS5 ranks them with positions (ties by rowid)."""
    db = make_store(tmp_path, "p", FILES)
    pid = project_id(db, "p")
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    ref = positional_index(db, pid)
    match = phrase(text)
    want = [
        r[0]
        for r in db.query(
            f"SELECT rowid FROM {ref} WHERE {ref} MATCH ? ORDER BY rank, rowid LIMIT 5", (match,)
        )
    ]
    assert phrases.ranked(db, st, match, 5) == want
    db.close()


def test_held_equals_fts5_match(tmp_path):
    db = make_store(tmp_path, "p", FILES)
    pid = project_id(db, "p")
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    ref = positional_index(db, pid)
    forms = [phrase(t) for t in ["retry queue", "queue retry", "src queue", "lib retry queue"]]
    rowids = [r[0] for r in db.query("SELECT id FROM chunks ORDER BY id")]
    want = dict.fromkeys(rowids, 0)
    for i, m in enumerate(forms):
        for (r,) in db.query(f"SELECT rowid FROM {ref} WHERE {ref} MATCH ?", (m,)):
            want[r] |= 1 << i
    assert any(want.values())
    assert phrases.held(db, st, forms, rowids) == want
    db.close()
