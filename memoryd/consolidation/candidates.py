"""Candidate lines: validation, normalization, deterministic triggers and ids.

A candidate is one JSON object per line::

    {"kind": "lesson"|"fact"|"decision"|"preference"?, "text": str,
     "triggers": [str]?, "scope": str?, "refs": [str]?, "source": str?}

Only ``text`` is required. A candidate without ``kind`` is a ``fact``
(:data:`DEFAULT_KIND`): a bare statement an agent saves ("We use apsw, not
sqlite3.") says how things are; a lesson, decision or preference is named as
such. Validation happens before anything is staged; a bad line is dropped with its
line number and reason. A lesson without triggers gets triggers derived from
its text alone (same text, same triggers).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import orjson

from memoryd.base.lazy import lazy_module
from memoryd.consolidation import KINDS
from memoryd.text.terms import STOPWORDS, words

hashlib = lazy_module("hashlib")  # OpenSSL's: loaded by a digest, not by a search

DEFAULT_KIND = "fact"  # the kind of a candidate that names none (part of the format)
FIELDS = frozenset({"kind", "text", "triggers", "scope", "refs", "source"})
MAX_TRIGGERS = 16  # a candidate naming more is malformed (triggers are a short hint list)
MAX_TRIGGER_CHARS = 200
MAX_REFS = 64
MAX_REF_CHARS = 1024
DERIVED_TRIGGERS = 5  # triggers derived for a lesson that has none
MIN_TRIGGER_CHARS = 3  # shorter words are never derived triggers
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Dropped:
    line: int
    reason: str

    def as_dict(self) -> dict:
        return {"line": self.line, "reason": self.reason}


def normalize(text: str) -> str:
    """The text compared for duplicates: NFKC, case-folded, every run of
    punctuation, symbols and whitespace one space."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NON_WORD.sub(" ", folded).strip()


def norm_hash(text: str) -> str:
    return hashlib.blake2b(normalize(text).encode(), digest_size=16).hexdigest()


def scope_key(scope: str) -> str:
    """One FTS token naming a scope (scopes are free text)."""
    return "s" + hashlib.blake2b(scope.encode(), digest_size=8).hexdigest()


def derive_triggers(text: str) -> list[str]:
    """Deterministic triggers of a lesson: its longest distinct content words, in text
    order (ties by first appearance). Content words are the words of at least
    ``MIN_TRIGGER_CHARS`` that are neither stopwords nor numbers; a text without one
    ("Use X.") falls back to its shorter non-stopwords, then to any of its words, so a
    lesson with a word is never stored without a trigger."""
    found = list(words(text))
    tiers = (
        lambda w: len(w) >= MIN_TRIGGER_CHARS and w not in STOPWORDS and not w.isdigit(),
        lambda w: w not in STOPWORDS and not w.isdigit(),
        lambda w: True,
    )
    for keep in tiers:
        first: dict[str, int] = {}
        for pos, word in enumerate(found):
            if keep(word):
                first.setdefault(word, pos)
        if first:
            best = sorted(first, key=lambda w: (-len(w), first[w]))[:DERIVED_TRIGGERS]
            return sorted(best, key=first.__getitem__)
    return []


def _strings(value: object, name: str, most: int, chars: int) -> str | None:
    """Why ``value`` is not a list of at most ``most`` non-empty strings, or None."""
    if not isinstance(value, list):
        return f"{name} must be a list of strings"
    if len(value) > most:
        return f"{name} has {len(value)} items; at most {most}"
    for item in value:
        if not isinstance(item, str) or not item.strip():
            return f"{name} must hold non-empty strings, got {item!r:.40}"
        if len(item) > chars:
            return f"{name} item longer than {chars} characters"
    return None


def _problem(obj: object, max_bytes: int) -> str | None:
    """Why a decoded line is not a valid candidate, or None."""
    if not isinstance(obj, dict):
        return "a candidate must be a JSON object"
    if unknown := sorted(set(obj) - FIELDS):
        return f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(FIELDS))}"
    if (kind := obj.get("kind", DEFAULT_KIND)) not in KINDS:
        return f"kind must be one of {', '.join(KINDS)} (default {DEFAULT_KIND}), got {kind!r:.40}"
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        return "text must be a non-empty string"
    if (
        obj.get("kind", DEFAULT_KIND) == "lesson"
        and not obj.get("triggers")
        and not any(words(text))
    ):
        return "a lesson needs a word to be recalled by: give it triggers, or words in its text"
    if len(text.encode()) > max_bytes:
        return f"text is {len(text.encode())} bytes; at most {max_bytes} (memory_max_text_bytes)"
    for name in ("scope", "source"):
        if name in obj and (not isinstance(obj[name], str) or not obj[name].strip()):
            return f"{name} must be a non-empty string"
    if "triggers" in obj and (
        why := _strings(obj["triggers"] or [], "triggers", MAX_TRIGGERS, MAX_TRIGGER_CHARS)
    ):
        return why
    if "refs" in obj:
        return _strings(obj["refs"], "refs", MAX_REFS, MAX_REF_CHARS)
    return None


def complete(obj: dict, project: str) -> dict:
    """The host-owned shape of a valid candidate: kind defaults to a fact, scope to the
    project, triggers are stripped (and derived for a lesson that has none)."""
    kind = obj.get("kind", DEFAULT_KIND)
    triggers = list(dict.fromkeys(t.strip() for t in obj.get("triggers") or []))
    if not triggers and kind == "lesson":
        triggers = derive_triggers(obj["text"])
    out = {
        "kind": kind,
        "text": obj["text"].strip(),
        "triggers": triggers,
        "scope": (obj.get("scope") or project).strip(),
        "refs": list(obj.get("refs") or []),
    }
    if obj.get("source"):
        out["source"] = obj["source"].strip()
    return out


def parse_lines(data: bytes, project: str, max_bytes: int) -> tuple[list[dict], list[Dropped]]:
    """Valid candidates (completed) and the dropped lines (1-based) with their reason.
    Blank lines are neither."""
    valid: list[dict] = []
    dropped: list[Dropped] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)  # rejects invalid UTF-8 too
        except orjson.JSONDecodeError as exc:
            dropped.append(Dropped(number, f"not valid JSON or not UTF-8 ({exc})"))
            continue
        if why := _problem(obj, max_bytes):
            dropped.append(Dropped(number, why))
        else:
            valid.append(complete(obj, project))
    return valid, dropped


def candidate_id(project: str, candidate: dict, nonce: str) -> str:
    """A staged candidate's id: a hash of its project, content and the add that staged
    it. The same file always has the same id (its consumption is idempotent); the same
    text added again is a new candidate (it reinforces the first)."""
    data = orjson.dumps([project, candidate, nonce], option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def record_id(cid: str) -> str:
    """The id of the record a candidate creates (host-owned, known before commit)."""
    return f"m-{cid}"
