"""Building FTS5 MATCH strings so that user text never reaches MATCH unescaped.

Every piece of user text becomes an FTS5 *string* (a double-quoted phrase,
inner quotes doubled). Inside a string FTS5 treats nothing as syntax: no
``AND``/``OR``/``NOT``/``NEAR``, no parentheses, no ``*`` prefix, no ``:``
column filter, no ``^`` initial-token anchor, no ``-`` negation. Strings are
joined only by the literal operator ``OR`` written here. A phrase whose text
the tokenizer reduces to nothing (punctuation, symbols) is dropped, because
FTS5 rejects an empty phrase in some positions; when nothing is left the
builder returns ``None`` and the caller must not run a MATCH at all.
"""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.text.terms import words


def quote(text: str) -> str:
    """One FTS5 string: safe for any text."""
    return '"' + text.replace('"', '""') + '"'


def phrase(text: str) -> str | None:
    """A phrase query for ``text`` (its tokens in order), or None when it has no tokens."""
    toks = words(text)
    if not toks:
        return None
    return quote(" ".join(toks))


def any_of(texts: Iterable[str]) -> str | None:
    """``"a" OR "b" OR ...`` over the non-empty phrases of ``texts``; None if none."""
    parts: list[str] = []
    seen: set[str] = set()
    for t in texts:
        p = phrase(t)
        if p and p not in seen:
            seen.add(p)
            parts.append(p)
    return " OR ".join(parts) if parts else None
