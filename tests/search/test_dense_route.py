"""The semantic candidate source: a short conceptual query is answered by
meaning when its words are nowhere; a longer question still needs its words."""

from __future__ import annotations

import sys

import pytest

from memoryd.base.config import load_config
from memoryd.base.errors import EncoderChanged
from memoryd.ingest.chunking import prepare_file
from memoryd.search.engine import search
from memoryd.storage import open_authority, vectors
from memoryd.storage.corpus import ensure_project, put_files

FILES = {
    "notes/deals.md": "Last spring the company acquired a small startup and its three engineers.\n",
    "notes/garden.md": "Tomatoes want full sun, deep watering and a stake for support.\n",
    "notes/kitchen.md": "The oven runs hot, so bread bakes ten minutes shorter than the recipe.\n",
    "notes/travel.md": "The night train leaves at nine and reaches the coast by morning.\n",
    "notes/music.md": "She practises the cello every evening after the children sleep.\n",
    "src/cache.py": "def evict(entries, limit):\n    return sorted(entries)[-limit:]\n",
}


LOW_FLOOR = 0.25  # below the default's calibration: lets this tiny store show a rescue


def _store(home, encoder: str, floor: float = LOW_FLOOR):
    config = load_config(home, {"encoder": encoder, "dense_rescue_similarity": floor})
    db = open_authority(home, config)
    pid = db.write(lambda tx: ensure_project(tx, "notes", None))
    rows = [prepare_file(p, t.encode()) for p, t in FILES.items()]
    db.write(lambda tx: put_files(tx, pid, rows))  # the batch: chunks without codes
    codes = vectors.encode_job(
        db, config, vectors.job_payload(pid, [(r.path, r.content_hash) for r in rows])
    )  # the vectors job
    db.write(lambda tx: vectors.put(tx, pid, config, codes))
    return db


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    db = _store(tmp_path_factory.mktemp("routed"), "wordllama")
    yield db
    db.close()


def test_a_short_query_is_answered_by_meaning_without_its_words(routed):
    r = search(routed, "notes", "cooking temperature")
    assert r["status"] == "ok"
    assert [i["path"] for i in r["items"]] == ["notes/kitchen.md"]


def test_the_lexical_route_alone_leaves_the_stored_codes_out(routed):
    """``encoder=False`` (a search's ``dense=False``) is the lexical route alone: no
    answer by meaning, and the same answer where the words are."""
    assert search(routed, "notes", "cooking temperature", encoder=False)["status"] == "abstained"
    lexical = search(routed, "notes", "oven bread", encoder=False)
    assert [i["path"] for i in lexical["items"]] == ["notes/kitchen.md"]


def test_a_longer_question_without_its_words_still_abstains(routed):
    r = search(routed, "notes", "which cooking temperature suits a sourdough loaf in winter")
    assert r["status"] == "abstained"


def test_the_default_floor_does_not_rescue_a_loose_match(tmp_path):
    """The default floor sits above the best similarity random two-word queries reach
    on a real store (docs/benchmarks-history-2026-12-02.md): a loose paraphrase is not
    enough alone."""
    db = _store(tmp_path, "wordllama", floor=load_config(tmp_path).dense_rescue_similarity)
    assert search(db, "notes", "cooking temperature")["status"] == "abstained"


def test_a_short_query_far_from_everything_abstains(routed):
    r = search(routed, "notes", "volcano eruption")
    assert r["status"] == "abstained"


def test_without_the_route_the_short_query_abstains(tmp_path):
    db = _store(tmp_path, "hashing")
    assert search(db, "notes", "cooking temperature")["status"] == "abstained"
    assert search(db, "notes", "oven bread")["status"] == "ok"


def test_searching_with_another_encoder_than_the_stored_codes_is_refused(tmp_path):
    _store(tmp_path, "wordllama").close()
    script = tmp_path / "enc.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    n = len(json.loads(line)['texts'])\n"
        "    print(json.dumps({'vectors': [[1.0, -1.0] * 8] * n}), flush=True)\n"
    )
    spec = f"command:{sys.executable} {script}"
    other = open_authority(tmp_path, load_config(tmp_path, {"encoder": spec}))
    with pytest.raises(EncoderChanged, match="memoryd rebuild"):
        search(other, "notes", "cooking temperature")


def test_codes_written_after_a_search_are_used_by_the_next_one(tmp_path):
    """Codes arrive after their chunks (their own job): a searcher that already cached
    the project's codes sees the new ones without a new index generation."""
    config = load_config(tmp_path, {"encoder": "wordllama", "dense_rescue_similarity": LOW_FLOOR})
    db = open_authority(tmp_path, config)
    pid = db.write(lambda tx: ensure_project(tx, "notes", None))
    rows = [prepare_file(p, t.encode()) for p, t in FILES.items()]
    db.write(lambda tx: put_files(tx, pid, rows))
    assert search(db, "notes", "cooking temperature")["status"] == "abstained"  # no codes yet
    codes = vectors.encode_job(
        db, config, vectors.job_payload(pid, [(r.path, r.content_hash) for r in rows])
    )
    db.write(lambda tx: vectors.put(tx, pid, config, codes))
    r = search(db, "notes", "cooking temperature")
    assert [i["path"] for i in r["items"]] == ["notes/kitchen.md"]


@pytest.mark.parametrize("question", ["cooking temperature", "which train reaches the coast"])
def test_each_candidate_is_scored_by_its_own_code_short_query_or_long(routed, question):
    """A long query scores only its candidates' codes, a short one every code (for its
    nearest chunks): either way a candidate's similarity is its own row's, and a chunk
    without a code gets none."""
    from memoryd.search import gate, semantic
    from memoryd.search.engine import Candidate
    from memoryd.search.pipeline import analyze
    from memoryd.search.stats import term_stats
    from memoryd.storage.corpus import project_id
    from memoryd.text.dense import code_similarity

    pid = project_id(routed, "notes")
    stats = term_stats(routed, pid)
    q = analyze(question)
    p = gate.plan(q, stats, gate.DEFAULT)
    assert p.short == (len(question.split()) == 2)  # both paths
    rowids, codes, dim, _ = semantic._project_codes(routed, pid, stats)
    want = code_similarity(semantic.query_code(routed.config, q, dim), codes, dim)
    cands = [Candidate(int(r), i, set()) for i, r in enumerate(rowids[::-1])]
    cands.append(Candidate(int(rowids.max()) + 1000, len(cands), set()))  # no code
    semantic.route(routed, pid, stats, q, p, cands, {c.rowid: c for c in cands},
                   gate.DEFAULT, Candidate)  # fmt: skip
    got = {c.rowid: c.cosine for c in cands}
    assert got.pop(int(rowids.max()) + 1000) is None
    assert got == {int(r): float(s) for r, s in zip(rowids, want, strict=True)}
