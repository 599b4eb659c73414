"""The same files give the same answers whatever order they were written in: equal
scores go by path, then start line, never by the rowid the commit order gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.search import stats as stats_mod
from memoryd.search.engine import _lexical, search
from memoryd.search.ties import chunk_info
from memoryd.storage import open_authority, vectors
from memoryd.storage.corpus import ensure_project, project_id, put_files
from memoryd.text.terms import analyze

# Equal BM25 scores: copies of one text at several paths (no path word is asked),
# and different texts of equal length holding the asked words as often.
COPY = "The scheduler retries a failed upload before the lease runs out.\n"
FILES = {f"vendor/{name}/upload.py": COPY for name in ("zeta", "alpha", "mid", "beta")}
FILES.update({f"pkg/m{i:02d}.py": f"upload retries in worker {i} of the pool\n" for i in range(30)})
FILES.update({f"docs/n{i:03d}.md": f"filler note {i} about weekly meetings\n" for i in range(300)})
FILES["src/retry_upload.py"] = "def retry_upload(path):\n    return path\n" * 3
FILES["src/other.py"] = "def retry_upload(other):\n    return other\n" * 3
# A meaning without the words: copies a short query's nearest codes tie on.
MEANING = "The oven runs hot, so bread bakes ten minutes shorter than the recipe.\n"
MEANT = {f"kitchen/{name}.md": MEANING for name in ("oven", "bake", "aga")}
MEANT.update({"garden.md": "Tomatoes want full sun, deep watering and a stake.\n"})

QUERIES = ["upload retries", "scheduler lease", "upload", "retry_upload", "worker pool upload"]


def _home(home: Path, files: dict[str, str], batches: list[list[str]], encoder: str = "hashing"):
    """A store whose files were written in ``batches`` (one commit each, in order)."""
    home.mkdir()
    config = load_config(home, {"encoder": encoder, "dense_rescue_similarity": 0.25})
    db = open_authority(home, config)
    pid = db.write(lambda tx: ensure_project(tx, "p", None))
    for batch in batches:
        rows = [prepare_file(p, files[p].encode()) for p in batch]
        db.write(lambda tx, rows=rows: put_files(tx, pid, rows))
        if vectors.stores(config):
            payload = vectors.job_payload(pid, [(r.path, r.content_hash) for r in rows])
            codes = vectors.encode_job(db, config, payload)
            db.write(lambda tx, codes=codes: vectors.put(tx, pid, config, codes))
    return db


def _orders(files: dict[str, str]) -> tuple[list[list[str]], list[list[str]]]:
    """One commit of every file in order; the reverse order in three commits (another
    worker count, an earlier ingest of part of the tree)."""
    paths = sorted(files)
    back = paths[::-1]
    return [paths], [back[:5], back[5:20], back[20:]]


def _answer(db, q: str) -> list:
    r = search(db, "p", q, limit=10)
    return [r["status"]] + [
        (i["path"], i["start_line"], i["score"], i.get("also_at", [])) for i in r["items"]
    ]


@pytest.fixture(scope="module")
def two_homes(tmp_path_factory):
    first, second = _orders(FILES)
    a = _home(tmp_path_factory.mktemp("a") / "home", FILES, first)
    b = _home(tmp_path_factory.mktemp("b") / "home", FILES, second)
    yield a, b
    a.close()
    b.close()


@pytest.mark.parametrize("q", QUERIES)
def test_answers_do_not_depend_on_the_order_files_were_written(two_homes, q):
    a, b = two_homes
    stats_mod.clear()
    assert _answer(a, q) == _answer(b, q)
    assert _answer(a, q)[0] == "ok"


def test_copies_fold_under_the_first_path(two_homes):
    for db in two_homes:
        first = search(db, "p", "scheduler lease", limit=3)["items"][0]
        assert first["path"] == "vendor/alpha/upload.py"
        assert first["also_at"] == ["vendor/beta/upload.py", "vendor/mid/upload.py",
                                    "vendor/zeta/upload.py"]  # fmt: skip


def test_a_pool_cut_inside_a_tie_keeps_the_first_paths(two_homes):
    """Thirty chunks tie on the asked words; a pool of ten holds the first ten paths."""
    for db in two_homes:
        pid = project_id(db, "p")
        stats_mod.clear()
        st = stats_mod.term_stats(db, pid)
        got = _lexical(db, pid, st, analyze("worker pool").terms, 10)
        info = chunk_info(db, st, [c.rowid for c in got])
        assert [info[c.rowid][2] for c in got] == [f"pkg/m{i:02d}.py" for i in range(10)]
        assert [c.bm25_rank for c in got] == list(range(10))


def test_nearest_codes_tie_by_path(tmp_path):
    """A short query answered by meaning alone: its nearest codes tie (copies), and
    the answer is the first path in both orders."""
    first, second = _orders(MEANT)
    answers = []
    for name, batches in (("a", first), ("b", second)):
        db = _home(tmp_path / name, MEANT, batches, encoder="wordllama")
        stats_mod.clear()
        r = search(db, "p", "cooking temperature", limit=3)
        answers.append([(i["path"], i.get("also_at", [])) for i in r["items"]])
        db.close()
    assert answers[0] == answers[1] == [("kitchen/aga.md", ["kitchen/bake.md", "kitchen/oven.md"])]
