"""Query analysis rules, the postings-based BM25 route and the numpy encoder."""

from __future__ import annotations

import math
import zlib
from collections import Counter

import numpy as np
import pytest

from memoryd.search import engine as engine_mod
from memoryd.search import search
from memoryd.search import stats as stats_mod
from memoryd.search.engine import _excerpt, _lexical
from memoryd.search.fts_query import any_of
from memoryd.search.gate import admit, plan
from memoryd.storage.corpus import fts_table, project_id, put_files
from memoryd.storage.fts import prepare
from memoryd.text.dense import HashingEncoder
from memoryd.text.evidence import focus_prefixes
from memoryd.text.terms import STOPWORDS, analyze, stems
from tests.search.conftest import FakeStats

# -- query analysis ---------------------------------------------------------------


def test_conversation_questions_ask_no_speaker():
    assert analyze("Can you remind me what we discussed about the tomatoes?").speaker is None
    assert analyze("In our previous chat, which hotel did I pick?").speaker is None
    assert analyze("What did I say about my dog in our last conversation?").speaker == "user"
    assert analyze("What colour is my bicycle?").speaker == "user"
    assert analyze("Which recipe did you recommend?").speaker == "assistant"


def test_answer_form_is_context():
    q = analyze("Tell me the total number of hours I spent in Lisbon?")
    assert [t.stem for t in q.terms] == ["spent", "lisbon"]
    q = analyze("Give the order of the castles I toured from earliest to latest?")
    assert [t.stem for t in q.terms] == ["castl", "tour"]
    q = analyze("Who arrived first, Tom or Alex?")
    assert "first" not in {t.word for t in q.terms}
    assert "first" in {t.word for t in analyze("What was my first car?").terms}


def test_relative_time_is_context():
    q = analyze("Who did I meet at the chess club last Tuesday?")
    assert [t.stem for t in q.terms] == ["meet", "chess", "club"]
    q = analyze("What painting activity did I do three weeks ago?")
    assert [t.stem for t in q.terms] == ["paint", "activ"]
    assert "morn" in {t.stem for t in analyze("What is my morning routine?").terms}


def test_coordinated_names_are_sides():
    q = analyze("How many days did I sleep in Oslo and in Bergen?")
    assert {"sleep", "oslo"} in q.alternatives and {"sleep", "bergen"} in q.alternatives


def test_name_particles_and_possessives():
    q = analyze("Who is Guido van Rossum's wife?")
    assert q.entities == [["guido", "van", "rossum"]] and q.possessive
    assert analyze("Who is the wife of Guido van Rossum?").possessive
    assert not analyze("What did I cook for my cousin's graduation dinner?").possessive
    assert analyze("the van was red, Tom said").entities == [["tom"]]


def test_spanish_alternatives_only_when_not_english():
    (media,) = [t for t in analyze("What social media app did I use?").terms if t.word == "media"]
    assert media.alts == ()
    (red,) = [t for t in analyze("I bought a red car").terms if t.word == "red"]
    assert red.alts == ()
    assert "archivos" in {t.word for t in analyze("¿Qué módulo comprime archivos?").terms}


def test_irregular_verbs_relate_their_forms():
    (t,) = [t for t in analyze("When did I buy the blender?").terms if t.word == "buy"]
    assert t.alts == ("bought",)
    assert not analyze("a bit of a ring").terms[0].alts  # ambiguous forms stay apart


def test_attribute_of_a_name_needs_a_non_name_term():
    stats = FakeStats(1000, {"guido": 20, "van": 30, "rossum": 20, "wife": 5})
    p = plan(analyze("Who is Guido van Rossum's wife?"), stats)
    assert p.attributes == {"wife"}
    assert not admit(p, {"guido", "van", "rossum"}).admitted
    assert admit(p, {"guido", "rossum", "wife"}).admitted
    # without a possessive, a name with an attribute the project holds is not narrowed
    assert not plan(
        analyze("Where does Guido van Rossum live?"), FakeStats(1000, {"live": 9})
    ).attributes


def test_excerpt_picks_the_line_with_most_focus_terms():
    q = analyze("retry the queue jobs")
    text = "first line\n\nthe queue is here\nwe retried jobs in the QUEUE\nlast"
    focus, prefixes = {t.stem for t in q.terms}, focus_prefixes(q.terms)
    assert _excerpt(text, focus, prefixes, {}) == "we retried jobs in the QUEUE\nlast"
    assert _excerpt("\n\n  x\ny", focus, prefixes, {}) == "x\ny"
    # a letter whose lowercase is longer (İ) neither hides nor shifts a line
    turkish = "İİİ preface\nthe QUEUE jobs retried"
    assert _excerpt(turkish, focus, prefixes, {}) == "the QUEUE jobs retried"


# -- postings BM25 == FTS5 ORDER BY rank ------------------------------------------

WORDS = [
    "queue",
    "lease",
    "job",
    "retry",
    "worker",
    "token",
    "claim",
    "batch",
    "index",
    "chunk",
    "file",
    "path",
]


def _corpus(n: int, seed: int) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    return {
        f"f{i:03d}.txt": "\n".join(
            " ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(rng.integers(1, 6))
        )
        + "\n"
        for i in range(n)
    }


def _fts_rank(db, pid: int, words: list[str], pool: int) -> list[int]:
    t = fts_table(pid)
    rows = db.query(
        f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rank, rowid LIMIT ?",
        (any_of(words), pool),
    )
    return [r[0] for r in rows]


@pytest.mark.parametrize("query", ["queue lease", "retry worker token", "claim", "chunk file path"])
def test_postings_bm25_equals_fts5_rank(tmp_path, store, query):
    db = store(tmp_path, "p", _corpus(60, 7))
    pid = project_id(db, "p")
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    terms = [t for t in analyze(query).terms]
    got = _lexical(db, pid, st, terms, 30)
    assert [c.rowid for c in got] == _fts_rank(db, pid, [t.word for t in terms], 30)
    t = fts_table(pid)
    for term in terms:  # matched terms: exactly the chunks FTS5 matches for the term
        holding = {
            r[0]
            for r in db.query(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (any_of([term.word]),))
        }
        assert {c.rowid for c in got if term.stem in c.matched} == holding & {c.rowid for c in got}


@pytest.mark.parametrize("query", ["retry worker token", "queue lease claim"])
def test_common_terms_past_the_budget_are_looked_up_on_the_candidates(
    tmp_path, store, monkeypatch, query
):
    """With a budget only the rarest term fits in, the commoner terms are not read
    whole: every candidate holds the rarest term, each candidate's matched terms are
    exactly the ones FTS5 finds in it, and the best chunk holds what the unbounded
    best holds (the order among such chunks may differ: common terms count at tf 1)."""
    db = store(tmp_path, "p", _corpus(60, 7))
    pid = project_id(db, "p")
    prepare(db)
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    terms = analyze(query).terms
    full = _lexical(db, pid, st, terms, 30)
    rarest = min(terms, key=lambda t: st.df(t.stem))
    monkeypatch.setattr(engine_mod, "POSTINGS_BUDGET", st.df(rarest.stem))
    read = []
    monkeypatch.setattr(st, "postings", lambda s, real=st.postings: read.append(s) or real(s))
    got = _lexical(db, pid, st, terms, 30)
    assert read == [rarest.stem], "only the rarest term's postings were read"
    assert got and all(rarest.stem in c.matched for c in got)
    t = fts_table(pid)
    for term in terms:
        holding = {
            r[0]
            for r in db.query(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (any_of([term.word]),))
        }
        assert {c.rowid for c in got if term.stem in c.matched} == holding & {c.rowid for c in got}
    assert got[0].matched == full[0].matched  # as complete as the unbounded best


def test_postings_follow_the_generation(tmp_path, store):
    from memoryd.ingest.chunking import prepare_file

    db = store(tmp_path, "p", {"a.txt": "queue lease\n", "b.txt": "worker token\n"})
    assert search(db, "p", "queue lease")["items"][0]["path"] == "a.txt"
    pid = project_id(db, "p")
    db.write(lambda tx: put_files(tx, pid, [prepare_file("b.txt", b"queue lease lease\n")]))
    paths = [it["path"] for it in search(db, "p", "queue lease")["items"]]
    assert set(paths) == {"a.txt", "b.txt"}


def test_fallback_without_postings_matches(tmp_path, store):
    db = store(tmp_path, "p", _corpus(40, 3))
    pid = project_id(db, "p")
    prepare(db)
    stats_mod.clear()
    st = stats_mod.term_stats(db, pid)
    terms = analyze("retry worker token").terms

    class NoPostings:
        df = st.df  # the statistics stay; only the postings are missing

        extra: dict = {}

        def bm25_scored(self, *_):
            return None

    fast = _lexical(db, pid, st, terms, 25)
    slow = _lexical(db, pid, NoPostings(), terms, 25)
    assert [(c.rowid, c.matched) for c in fast] == [(c.rowid, c.matched) for c in slow]


# -- encoder -------------------------------------------------------------------------


def _reference(text: str, dim: int = 256, tw: float = 0.5) -> np.ndarray:
    """The hashed encoder as first written (pure Python)."""
    v = [0.0] * dim

    def bucket(f: str) -> tuple[int, float]:
        h = zlib.crc32(f.encode())
        return h % dim, (1.0 if (h >> 31) & 1 else -1.0)

    for st, tf in Counter(stems(text)).items():
        if st in STOPWORDS:
            continue
        feats = [bucket("w:" + st)]
        padded = f"<{st}>"
        if len(padded) > 4:
            w = tw / (len(padded) - 2)
            feats += [
                (b, s * w)
                for b, s in (bucket("c:" + padded[i : i + 3]) for i in range(len(padded) - 2))
            ]
        for b, val in feats:
            v[b] += val * (1.0 + math.log(tf))
    n = math.sqrt(sum(x * x for x in v))
    return np.array([x / n for x in v] if n else v)


def test_numpy_encoder_equals_reference():
    texts = [
        "A durable job queue with leases; retries and retries and backoff.",
        "supercalifragilisticexpialidocious_extraordinarily_long_identifier here",
        "",
        "the a of",
    ]
    got = HashingEncoder().encode(texts)
    for v, text in zip(got, texts, strict=True):
        assert np.allclose(v, _reference(text), atol=1e-12)


def test_fts5_rank_route_answers_as_the_postings_route(store, tmp_path, monkeypatch):
    """An index without per-chunk sizes takes FTS5's rank; the answer is the same."""
    files = {f"n/{i}.md": f"ordinary note number {i} about the weekly meeting" for i in range(40)}
    files["docs/kiln.md"] = "The kiln schedule for glazed stoneware is kept in the studio binder."
    db = store(tmp_path, "p", files)
    q = "where is the kiln schedule for stoneware kept"
    small = search(db, "p", q)
    monkeypatch.setattr(stats_mod.fts, "postings", lambda db, pid, stem: None)
    monkeypatch.setattr(stats_mod.fts, "occurrences", lambda db, pid, stem: None)
    stats_mod.clear()
    large = search(db, "p", q)
    st = stats_mod.term_stats(db, project_id(db, "p"))
    assert not st.has_postings  # no postings: the FTS5 route
    assert large["items"][0]["path"] == small["items"][0]["path"] == "docs/kiln.md"
    stats_mod.clear()
    db.close()


def test_keyword_queries_get_no_spanish_inflections():
    (heap,) = [t for t in analyze("heap queue priority algorithm").terms if t.word == "heap"]
    assert heap.forms == ()
    (arch,) = [t for t in analyze("archivo configuracion").terms if t.word == "archivo"]
    assert arch.forms == ("file",)


def test_chunk_lengths_decode_docsize_varints():
    blobs = [b"\x05\x0f", b"\x81\x00\x02", b"", b"\xff\x7f\x01"]
    assert list(stats_mod._lengths(blobs)) == [20, 130, 0, 16384]
