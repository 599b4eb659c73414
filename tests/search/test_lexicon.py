"""The word lists as data files, and Spanish questions over Spanish and English evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.search import search
from memoryd.text.lexicon import english_for, spanish_forms
from memoryd.text.terms import analyze

LEXICON = Path(__file__).resolve().parents[2] / "memoryd" / "text" / "lexicon"

# Unrelated files, so the asked terms are specific in the project.
FILLER = {
    f"notes/{i}.md": f"Meeting note {i}: the team reviewed item {i} of the backlog and agreed."
    for i in range(30)
}


def test_every_word_list_states_its_rule_first():
    for f in sorted(LEXICON.glob("*.txt")):
        head = f.read_text(encoding="utf-8").splitlines()[:8]
        assert head[0].startswith("#") and any("Rule:" in ln for ln in head), f.name


def test_es_en_has_no_identity_pairs():
    pairs = [
        ln.split()
        for ln in (LEXICON / "es_en.txt").read_text(encoding="utf-8").splitlines()
        if ln and not ln.startswith("#")
    ]
    assert pairs and all(len(p) == 2 and p[0] != p[1] for p in pairs)


def test_spanish_inflections_come_from_the_stemmer():
    assert {"ejecutar", "ejecuta"} <= set(spanish_forms("ejecutan"))
    assert english_for("archivos") == english_for("archivo") == "file"
    assert english_for("zzzz") is None


def test_a_spanish_word_stays_a_term_with_its_english_alternative():
    q = analyze("¿Dónde está el archivo de configuración?")
    (t,) = [t for t in q.terms if t.word == "archivo"]
    assert t.stem == "archivo" and "file" in t.all_stems


@pytest.mark.parametrize(
    "evidence",
    [
        "La configuración del servidor se guarda en el archivo config.toml",
        "The server configuration is kept in the file settings.toml",
    ],
)
def test_spanish_question_answered_by_spanish_and_english_evidence(store, tmp_path, evidence):
    db = store(tmp_path, "p", {**FILLER, "docs/server.md": evidence})
    r = search(db, "p", "¿Dónde está el archivo de configuración?")
    assert r["status"] == "ok" and r["items"][0]["path"] == "docs/server.md"
    db.close()


def test_spanish_question_abstains_without_evidence(store, tmp_path):
    db = store(tmp_path, "p", FILLER)
    assert search(db, "p", "¿Dónde está el archivo de configuración?")["status"] == "abstained"
    db.close()


def test_spanish_question_through_fts5_rank_route(store, tmp_path, monkeypatch):
    """The route of an index without sizes (FTS5 rank, a phrase per form) answers too."""
    from memoryd.search import stats as stats_mod
    from memoryd.storage import fts

    db = store(tmp_path, "p", {**FILLER, "docs/server.md": "El servidor guarda su configuración"})
    monkeypatch.setattr(fts, "postings", lambda db, pid, stem: None)
    stats_mod.clear()
    r = search(db, "p", "¿Dónde se guardan las configuraciones del servidor?")
    assert r["status"] == "ok" and r["items"][0]["path"] == "docs/server.md"
    stats_mod.clear()
    db.close()


def test_the_compiled_spanish_stemmer_stems_as_the_snowball_reference():
    """Spanish inflections are found by the compiled Snowball stemmer (PyStemmer);
    every stem it gives equals the pure-Python reference implementation's, for the
    lexicon's words and each of their generated inflections."""
    from snowballstemmer.spanish_stemmer import SpanishStemmer

    from memoryd.text import lexicon

    stemmer = lexicon._spanish_stemmer()
    assert type(stemmer).__module__ == "Stemmer"
    reference = SpanishStemmer()
    endings = lexicon._endings()
    pairs = [ln.split() for ln in (LEXICON / "es_en.txt").read_text(encoding="utf-8").splitlines()]
    words = [p[0] for p in pairs if len(p) == 2 and not p[0].startswith("#")]
    assert len(words) > 100
    for w in words:
        forms = [w] + [reference.stemWord(w) + e for e in endings]
        assert [stemmer.stemWord(f) for f in forms] == reference.stemWords(forms), w
