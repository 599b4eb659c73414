"""A one-shot search of a small project loads no numpy (issue 32 item 6): BM25 is
scored and the hashing vectors made in Python while numpy is not loaded. Both give
numpy's answer bit for bit: each pair here is computed both ways and compared exactly
(scores unrounded)."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from memoryd.search import engine
from memoryd.search import stats as stats_mod
from memoryd.search.engine import search
from memoryd.storage.corpus import project_id
from memoryd.text.dense import HashingEncoder, cosine, numpy_sum
from memoryd.text.terms import analyze, stems

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "logging", "concurrent/futures")
QUERIES = [
    "how are JSON documents decoded?",
    "decoder",
    "parse a MIME multipart message",
    "header encoding charset",
    "rotating file handler",
    "formatter",
    "thread pool executor shutdown",
    "which exception is raised on invalid JSON?",
    "the staging database listens on port 6543",
    "class def return self",
    "logging",
]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A few stdlib packages as project 'p' (a few hundred chunks)."""
    from tests.search.conftest import make_store

    files = {
        f.relative_to(STDLIB).as_posix(): f.read_text(encoding="utf-8")
        for package in PACKAGES
        for f in sorted((STDLIB / package).glob("*.py"))
    }
    db = make_store(tmp_path_factory.mktemp("plain-home"), "p", files)
    yield db
    db.close()


def both_ways(monkeypatch, compute):
    """``compute()`` with numpy's routes, then with the plain ones (fresh caches each)."""
    out = []
    for numpy_loaded in (True, False):
        monkeypatch.setattr(stats_mod, "loaded", lambda _name, v=numpy_loaded: v)
        monkeypatch.setattr(engine, "plain_vectors", lambda v=numpy_loaded: not v)
        monkeypatch.setattr(stats_mod, "PLAIN_POSTINGS", 10**9)  # every query plain
        stats_mod.clear()
        out.append(compute())
    stats_mod.clear()
    return out


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_in_python_is_numpy_s(small, monkeypatch, query) -> None:
    terms = [t.all_stems for t in analyze(query).terms]

    def top():
        return stats_mod.term_stats(small, project_id(small, "p")).bm25_scored(terms, 200)

    numpy_top, plain_top = both_ways(monkeypatch, top)
    assert plain_top == numpy_top
    assert numpy_top


@pytest.mark.parametrize("query", QUERIES)
def test_a_search_without_numpy_answers_as_with_it(small, monkeypatch, query) -> None:
    numpy_answer, plain_answer = both_ways(monkeypatch, lambda: search(small, "p", query))
    assert plain_answer == numpy_answer


def test_hashing_vectors_in_python_are_numpy_s() -> None:
    texts = [
        f.read_text(encoding="utf-8")[i : i + 1500]
        for f in sorted((STDLIB / "json").glob("*.py"))
        for i in range(0, 6000, 1500)
    ]
    texts += ["", "the a of", "x", "supercalifragilisticexpialidocious", "a b a b a"]
    rng = random.Random(5)  # stems of more than 24 features are summed apart: many of them
    for _ in range(20):
        words = ["".join(rng.choices("abcdefghij", k=rng.randrange(2, 40))) for _ in range(60)]
        texts.append(" ".join(words * rng.randrange(1, 3)))
    batch = [stems(t) for t in texts]
    arrays, lists = HashingEncoder().encode_stems(batch), HashingEncoder().encode_plain(batch)
    assert [a.tolist() for a in arrays] == lists
    assert [cosine(arrays[0], a) for a in arrays] == [cosine(lists[0], v) for v in lists]


def test_numpy_sum_adds_in_numpy_s_order() -> None:
    """The plain route's sums are numpy's ``sum`` bit for bit, at every length the
    pairwise summation treats apart (under 8, up to 128, halved above), on values whose
    sum depends on the order of the additions."""
    rng = np.random.default_rng(7)
    for n in [*range(1, 140), 255, 256, 257, 1000]:
        values = rng.standard_normal(n) * rng.uniform(1e-3, 1e3, n)
        rows = np.vstack([values, values[::-1]])
        assert numpy_sum(values.tolist()) == rows.sum(axis=1)[0] == values.sum(), n
