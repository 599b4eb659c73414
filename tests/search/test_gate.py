"""Unit tests of the evidence-coverage gate and the search contract."""

from __future__ import annotations

import pytest

from memoryd.base.errors import UsageError
from memoryd.search import search
from memoryd.search.gate import Tuning, admit, plan
from memoryd.storage.corpus import UnknownProject
from memoryd.text.terms import analyze
from tests.search.conftest import FakeStats


def test_memory_phrasing_is_not_focus():
    q = analyze("Can you remind me what we discussed in our previous conversation about tomatoes?")
    assert [t.stem for t in q.terms] == ["tomato"]
    assert "remind" in q.context and "conversation" in q.context


def test_spanish_terms_keep_their_word_and_gain_english_alternatives():
    q = analyze("¿Qué módulo comprime archivos?")
    by_word = {t.word: t for t in q.terms}
    assert "file" in by_word["archivos"].all_stems and "archivo" in by_word["archivos"].all_stems


def test_ubiquitous_terms_are_context_unless_explicit():
    stats = FakeStats(1000, {"memoryd": 900, "queue": 20, "retri": 10})
    p = plan(analyze("how does memoryd retry the queue"), stats)
    assert [t.stem for t in p.focus] == ["retri", "queue"]
    p = plan(analyze("how does Memoryd retry the queue"), stats)
    assert "memoryd" in p.focus_stems  # a name written as one stays


def test_half_coverage_count_and_specificity():
    stats = FakeStats(1000, {"name": 200, "hamster": 2, "pet": 50})
    p = plan(analyze("name of my pet hamster"), stats)
    assert not admit(p, {"name"}).admitted
    assert not admit(p, {"name", "pet"}).admitted  # misses the specific half
    assert admit(p, {"pet", "hamster"}).admitted
    literal = plan(analyze("name of my pet hamster"), stats, Tuning(weighted=False))
    assert admit(literal, {"name", "pet"}).admitted  # the literal rule lets it through


def test_two_rare_terms_corroborate_in_large_corpora():
    stats = FakeStats(1000, {"wal": 5, "checkpoint": 8, "a1": 300, "a2": 300, "a3": 300})
    q = analyze("why wal checkpoint a1 a2 a3 stalls")
    p = plan(q, stats)
    assert admit(p, {"wal", "checkpoint"}).admitted
    small = plan(q, FakeStats(50, {"wal": 0, "checkpoint": 0}))
    assert not admit(small, {"wal", "checkpoint"}).admitted


def test_verification_contrast_at_thirty_percent():
    stats = FakeStats(1000, {"mongodb": 3, "primari": 30, "store": 40, "job": 100, "record": 100})
    p = plan(analyze("Is MongoDB the primary store for job records?"), stats)
    assert p.query.verification
    held = {"primari", "store"}
    assert not admit(p, held).admitted
    assert admit(p, held, contrast=True).admitted


def test_dense_floor_only_for_short_queries():
    stats = FakeStats(1000, {"durabl": 10, "queue": 10})
    short = plan(analyze("durable queue"), stats)
    assert admit(short, set(), cosine=0.7).admitted
    assert not admit(short, set(), cosine=0.5).admitted
    long = plan(analyze("durable queue leases retries backoff"), stats)
    assert not admit(long, set(), cosine=0.99).admitted


def test_exact_always_admitted():
    stats = FakeStats(1000, {})
    assert admit(plan(analyze("json/decoder.py"), stats), set(), exact=True).admitted


@pytest.fixture()
def db(tmp_path, store):
    files = {
        "store/authority.py": "# The primary store is SQLite, not MongoDB.\nSQLITE = True\n",
        "queue/jobs.py": "def lease(job):\n    # Claim a job with a lease token.\n",
        "README.md": "memoryd keeps project memory for coding agents.\n",
    }
    return store(tmp_path, "p", files)


def test_result_shape_and_abstention(db):
    ok = search(db, "p", "job lease token")
    assert ok["status"] == "ok" and ok["gap"] is None
    assert set(ok["items"][0]) == {"path", "start_line", "end_line", "score", "excerpt"}
    assert ok["items"][0]["path"] == "queue/jobs.py"
    no = search(db, "p", "kubernetes helm chart deployment")
    assert no == {"status": "abstained", "items": [], "gap": no["gap"]}
    assert "does not" in no["gap"] or "may be" in no["gap"]


def test_verification_question_answered_by_contrary_evidence(db):
    result = search(db, "p", "Is MongoDB the primary store?")
    assert result["status"] == "ok"
    assert result["items"][0]["path"] == "store/authority.py"


def test_min_score_only_narrows(db):
    assert search(db, "p", "kubernetes helm", min_score=0.0)["status"] == "abstained"
    full = search(db, "p", "job lease token")
    narrowed = search(db, "p", "job lease token", min_score=0.99)
    assert len(narrowed["items"]) <= len(full["items"])


def test_bad_arguments(db):
    with pytest.raises(UsageError):
        search(db, "p", "x", limit=0)
    with pytest.raises(UnknownProject):
        search(db, "nope", "x")


def test_lexical_only_route(db):
    assert search(db, "p", "job lease token", encoder=False)["status"] == "ok"


def test_two_rare_terms_corroborate_only_above_chance():
    q = "which namespace hosts the billing service of the cluster in production"
    df = {"namespac": 5, "bill": 4, "servic": 150, "host": 200, "cluster": 150, "product": 150}
    small = FakeStats(1000, df)
    assert admit(plan(analyze(q), small), {"namespac", "bill"}).rule == "two rare terms"
    # the same shares of a corpus 2000x larger: 1% is 20,000 chunks, and two such
    # terms fall into the same chunk by chance (10,000 * 8,000 / 2,000,000 = 40 chunks)
    big = FakeStats(2_000_000, {k: v * 2000 for k, v in small._df.items()})
    assert not admit(plan(analyze(q), big), {"namespac", "bill"}).admitted
