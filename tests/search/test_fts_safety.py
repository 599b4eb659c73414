"""User text never reaches FTS5 MATCH unescaped: any query is safe."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.search import search
from memoryd.search.fts_query import any_of, phrase, quote

NASTY = [
    "",
    " ",
    '"',
    '""',
    'unbalanced "quote',
    "a AND b",
    "a OR b NOT c",
    "NEAR(a b, 3)",
    "(parse",
    "json)",
    "pars*",
    "*",
    "body:secret",
    "path:json",
    "^start",
    "-minus",
    "+plus",
    "日本語のテキスト",
    "Привет мир",
    "مرحبا",
    "\x00\x01",
    "'; DROP TABLE chunks; --",
    "{a b}",
    "a:b:c",
    "🙂 emoji",
]


@pytest.fixture()
def db(tmp_path, store):
    files = {
        "pkg/queue.py": "class Queue:\n    '''A durable job queue with leases.'''\n",
        "pkg/parse.py": "def parse(text):\n    return text.split()  # NEAR AND OR\n",
        "docs/ja.md": "日本語のテキスト について\n",
    }
    return store(tmp_path, "p", files)


@pytest.mark.parametrize("text", NASTY)
def test_builders_never_emit_bare_syntax(text):
    p = phrase(text)
    assert p is None or (p.startswith('"') and p.endswith('"'))
    q = any_of([text, "queue"])
    assert q is not None and q.startswith('"')
    assert quote(text).count('"') % 2 == 0


@pytest.mark.parametrize("text", NASTY)
def test_search_with_fts_syntax_is_safe(db, text):
    result = search(db, "p", text)
    assert set(result) == {"status", "items", "gap"}
    assert result["status"] in ("ok", "abstained")
    if result["status"] == "abstained":
        assert result["items"] == [] and result["gap"]


def test_non_latin_query_finds_non_latin_text(db):
    result = search(db, "p", "日本語のテキスト")
    assert result["status"] == "ok"
    assert result["items"][0]["path"] == "docs/ja.md"


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=60))
def test_fuzzed_queries_never_raise(db, text):
    result = search(db, "p", text)
    assert result["status"] in ("ok", "abstained")
    assert (result["items"] == []) == (result["status"] == "abstained")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=6))
def test_any_of_is_always_valid_fts(texts):
    import apsw

    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    conn.execute("INSERT INTO f VALUES ('some text')")
    match = any_of(texts)
    if match is not None:
        conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (match,)).fetchall()
