"""The CREATE text SQLite stores: without comments and runs of spaces."""

from __future__ import annotations

_QUOTES = "'\"`["
_CLOSING = {"[": "]"}


def schema_text(sql: str) -> str:
    """``sql`` without its comments and with each run of white space outside quotes
    made one space: the CREATE text SQLite stores (and reads at every open) shrinks
    by half, and the statements mean the same."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in _QUOTES:
            end = sql.index(_CLOSING.get(ch, ch), i + 1)  # doubled quotes: two runs
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("--", i):
            i = sql.find("\n", i)
            i = n if i < 0 else i
        elif sql.startswith("/*", i):
            i = sql.index("*/", i) + 2
        elif ch.isspace():
            while i < n and sql[i].isspace():
                i += 1
            if out and out[-1] != " ":
                out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out).strip()
