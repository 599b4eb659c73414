"""Word lists of query analysis and of the index text, as data files with their rule
at the top.

Each ``*.txt`` file here states what may be in it (general-language words
only, nothing chosen for a test question); this module only reads them.
Spanish words are related by the Snowball Spanish stemmer, not by lists of
their forms: :func:`spanish_forms` finds the other inflections of a word and
:func:`english_for` its English alternative.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
#: The stopword lists, English and Spanish (a query's and the index text's).
STOPWORD_FILES = ("stopwords_en.txt", "stopwords_es.txt")


def _lines(name: str) -> list[str]:
    text = (_HERE / name).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def word_list(name: str) -> frozenset[str]:
    """The words of ``name`` (one per line)."""
    return frozenset(_lines(name))


def stopwords() -> frozenset[str]:
    """Every stopword of :data:`STOPWORD_FILES`."""
    return frozenset().union(*(word_list(name) for name in STOPWORD_FILES))


@cache
def word_map(name: str) -> dict[str, str]:
    """``name``'s lines ``WORD VALUE`` as word -> value."""
    return dict(line.split() for line in _lines(name))


@cache
def word_table(name: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """``name``'s lines ``GROUP KEY WORDS...`` as (group, key) -> words."""
    table: dict[tuple[str, str], tuple[str, ...]] = {}
    for line in _lines(name):
        group, key, *words = line.split()
        table[(group, key)] = tuple(words)
    return table


@cache
def _spanish_stemmer() -> Any:  # snowballstemmer's stemmer, or PyStemmer's
    """With PyStemmer installed (a dependency) snowballstemmer hands out its compiled
    stemmer: the same Snowball algorithm, the same stems, about 26x faster than the
    pure-Python one, which a first Spanish question pays for each of its words' ~50
    inflections (2.7 ms a word). Made on first use: a command that stems nothing (as
    ``memoryd status``) does not import it."""
    import snowballstemmer

    return snowballstemmer.stemmer("spanish")


@cache
def spanish_stem(word: str) -> str:
    """Snowball Spanish stem of a lowercase, diacritic-free word."""
    return _spanish_stemmer().stemWord(word)


@cache
def _es_en() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in _lines("es_en.txt"):
        es, en = line.split()
        out.setdefault(spanish_stem(es), en)
    return out


def english_for(word: str) -> str | None:
    """The English alternative of a Spanish word (any inflection), or None."""
    return _es_en().get(spanish_stem(word))


@cache
def _endings() -> tuple[str, ...]:
    return tuple(_lines("es_endings.txt"))


@cache
def spanish_forms(word: str) -> tuple[str, ...]:
    """Other inflections of a Spanish word: its stem plus a Spanish ending, kept when
    the stemmer maps the form back to the same stem."""
    st = spanish_stem(word)
    if len(st) < 3:
        return ()
    forms = (st + e for e in _endings())
    return tuple(f for f in dict.fromkeys(forms) if f != word and spanish_stem(f) == st)
