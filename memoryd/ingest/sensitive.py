"""Which files hold credentials: dotenv and key files by their name, every other file
by its content.

A name rule (``rules/secret_files.txt``) can only say what a file *is*: ``.env``,
``id_rsa``, ``*.pem``. A name like ``secrets.py`` says what a module is *about* (the
standard library's secure tokens), so source files are judged by what they hold
instead (:func:`content_reason`), and a file is skipped when it holds any of:

* a private key block: a ``-----BEGIN ... PRIVATE KEY-----`` header followed by key
  material (a base64 line), in a file or inside a string literal (``\\n`` escapes);
  a parser that only names the header holds no key;
* a dotenv-style line ``NAME=value`` (``export`` allowed, no spaces around ``=``)
  whose name ends with a credential's name (``rules/secret_names.txt``: DB_PASSWORD,
  API_TOKEN; not TOKEN_TYPE) and whose value is a literal, not a placeholder
  (``rules/placeholders.txt``) nor a reference (``$VAR``, ``{{ var }}``);
* any other assignment (``name = "..."``, ``name: ...``, ``"name": "..."``) to such
  a name of a value that looks generated: at least ``SECRET_VALUE_MIN_CHARS``
  characters of a token's alphabet, letters and digits, and at least
  ``SECRET_VALUE_MIN_BITS`` bits of Shannon entropy a character.

The checks run on the bytes a batch read anyway; a lowercase copy is searched for the
rules' words first (in C), so a file that names none costs one ``bytes.lower``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache
from pathlib import Path

from memoryd.base.config import (
    SECRET_ENV_MIN_CHARS,
    SECRET_VALUE_MIN_BITS,
    SECRET_VALUE_MIN_CHARS,
)

_RULES = Path(__file__).resolve().parent / "rules"
SECRET_CONTENT = "secret_content"  # the skip reason of a file its content makes a secret

# A line break inside a file, or written as an escape inside a string literal, with
# the quotes and concatenation a key split over source lines has between its lines.
_BREAK = rb"(?:\\[rn]|[\s\"'+,])+"
_KEY_BLOCK = re.compile(
    rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    + _BREAK
    + rb"(?:[A-Za-z-]+: [^\n\\]*"  # armor headers (Proc-Type, DEK-Info, Version)
    + _BREAK
    + rb")*[A-Za-z0-9+/=]{40,}"
)
# What follows a credential's name in an assignment: an optional closing quote, the
# operator, an optional opening quote and the value (the name itself is read backwards
# from the match: :func:`_name_start`).
_ASSIGNED = (
    rb"s?(?P<close>[\"']?)(?P<op>[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*)"
    rb"(?P<quote>[\"'`]?)(?P<value>[^\s\"'`,;)\]}]*)"
)
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_TOKEN_ALPHABET = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-.~")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _lines(name: str) -> list[str]:
    text = (_RULES / name).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def secret_file_patterns() -> list[str]:
    """The name rules (gitignore syntax, matched against a file's name)."""
    return _lines("secret_files.txt")


@cache
def _secret_names() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(line.split()) for line in _lines("secret_names.txt"))


@cache
def _not_secret() -> frozenset[str]:
    return frozenset(_lines("not_secret_names.txt"))


@cache
def _placeholders() -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    """(whole words, prefixes, infixes) of ``rules/placeholders.txt``."""
    words = _lines("placeholders.txt")
    return (
        frozenset(w for w in words if "*" not in w),
        tuple(w[:-1] for w in words if w.endswith("*") and not w.startswith("*")),
        tuple(w.strip("*") for w in words if w.startswith("*")),
    )


@cache
def _scans() -> tuple[re.Pattern[bytes], ...]:
    """One pattern for each group of credential last words sharing their first four
    letters ("pass(?:word|wd|phrase)"), each a literal prefix the regex engine skips to
    quickly: a few passes over a file's lowercase bytes, and a match only where such a
    word is followed by an assignment (a longer word another one ends with, "apikey",
    is found by that one, "key")."""
    last = {words[-1] for words in _secret_names()}
    kept = sorted(w for w in last if not any(w != o and w.endswith(o) for o in last))
    groups: dict[str, list[str]] = {}
    for word in kept:
        groups.setdefault(word[:4], []).append(word)
    return tuple(
        re.compile(
            re.escape(head).encode()
            + b"(?:"
            + b"|".join(re.escape(w[4:]).encode() for w in sorted(ws, key=len, reverse=True))
            + b")"
            + _ASSIGNED
        )
        for head, ws in sorted(groups.items())
    )


def content_reason(raw: bytes) -> str:
    """Why the file's content makes it a secret (a rule and the line), or ``""``."""
    if b"PRIVATE KEY-----" in raw and (m := _KEY_BLOCK.search(raw)):
        return f"a private key block at line {_line_of(raw, m.start())}"
    low = raw.lower()  # the same offsets as raw
    for pattern in _scans():
        for m in pattern.finditer(low):
            why = _assignment_reason(raw, m)
            if why:
                return f"{why} at line {_line_of(raw, m.start())}"
    return ""


def _assignment_reason(raw: bytes, m: re.Match[bytes]) -> str:
    """What makes this assignment a credential, or ``""``."""
    start = _name_start(raw, m.start())
    name = raw[start : m.start("close")].decode("ascii", "replace")
    if not _names_credential(name):
        return ""
    value = raw[m.start("value") : m.end("value")].decode("utf-8", "replace")
    if _is_placeholder(value):
        return ""
    if len(value) >= SECRET_ENV_MIN_CHARS and _env_line(raw, start, name, m):
        return "a credential assigned on a dotenv-style line"
    if m["quote"] and _looks_generated(value):
        return "a generated-looking string assigned to a credential's name"
    return ""


def _name_start(raw: bytes, end: int) -> int:
    """Where the name that ends at ``end`` starts (its characters read backwards)."""
    start = end
    while start > 0 and raw[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _names_credential(name: str) -> bool:
    """Whether the name's words end with a credential's name (``rules/secret_names``)
    not preceded by a word that makes it something else (``rules/not_secret_names``)."""
    words = tuple(w.lower() for w in _WORDS.findall(name))
    for n in _secret_names():
        if len(words) >= len(n) and words[-len(n) :] == n:
            before = words[-len(n) - 1] if len(words) > len(n) else ""
            return before not in _not_secret()
    return False


def _env_line(raw: bytes, start: int, name: str, m: re.Match[bytes]) -> bool:
    """``NAME=value`` alone on its line: an upper-case name at the line's start (or
    after ``export``), no spaces around ``=``, the value (its quotes closed) running
    to the line's end or a comment."""
    line_start = raw.rfind(b"\n", 0, start) + 1
    if raw[line_start:start] not in (b"", b"export ") or m["op"] != b"=":
        return False
    if not _ENV_NAME.fullmatch(name):
        return False
    end = m.end("value")
    if m["quote"]:
        if raw[end : end + 1] != m["quote"]:
            return False
        end += 1
    stop = raw.find(b"\n", end)
    rest = raw[end : stop if stop >= 0 else len(raw)].strip()
    return not rest or rest.startswith(b"#")


def _is_placeholder(value: str) -> bool:
    """An empty value, a reference to another value, or a word standing for one."""
    if not value or value[0] in "$%{<[(*" or value.endswith("..."):
        return True
    flat = "".join(c for c in value.lower() if c.isalnum())
    words, prefixes, infixes = _placeholders()
    return not flat or flat in words or flat.startswith(prefixes) or any(i in flat for i in infixes)


def _looks_generated(value: str) -> bool:
    """A token's alphabet, letters and digits, long and varied enough to be random."""
    if len(value) < SECRET_VALUE_MIN_CHARS or not set(value) <= _TOKEN_ALPHABET:
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    return entropy_bits(value) >= SECRET_VALUE_MIN_BITS


def entropy_bits(value: str) -> float:
    """Shannon entropy of the value's characters, in bits a character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _line_of(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1
