"""Reading evidence text: who said a line, which focus terms a text holds.

Generic helpers shared by project search (:mod:`memoryd.search.engine`) and
archive search (:mod:`memoryd.archive.search`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from memoryd.search import gate as gate_mod
from memoryd.search.terms import Query, Term, stem, words

SPEAKER_LINE = re.compile(r"^\s*\**(user|human|me|assistant|ai|bot|system)\**\s*:", re.I)
ANY_SPEAKER_LINE = re.compile(SPEAKER_LINE.pattern, re.I | re.M)
_ROLE = {"user": "user", "human": "user", "me": "user"}


# A named speaker opening a turn, after an optional role: "Ana: ...", "user: Ana: ...",
# "**Ana Lima**: ...". One or two capitalized words, then a colon and a space.
_NAMED = re.compile(
    r"^\s*(?:\**(?:user|human|me|assistant|ai|bot|system)\**\s*:\s*)?"
    r"\**([A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30})?)\**\s*:\s"
)
# A sentence that asks: what its speaker asks about is not evidence about them.
_QUESTION = re.compile(r"[^.!?]*\?")


def named_speaker(line: str) -> tuple[str | None, int]:
    """``(first word of the speaker's name, lowercased; end of the prefix)`` of a turn
    written ``Name: text``, or ``(None, 0)``."""
    m = _NAMED.match(line)
    if m is None:
        return None, 0
    return m.group(1).split()[0].lower(), m.end()


def statements(text: str) -> str:
    """``text`` without its questions ("How was the trip? We went to Rome." -> the
    second sentence): a speaker's questions say nothing about the speaker."""
    return _QUESTION.sub(" ", text)


def person_said(said: str, speaker: str | None, persons: set[str]) -> str:
    """What a turn's words (``said``, after its prefixes) tell *by or about* the asked
    persons: the statements (not the questions) a person said, and other speakers'
    turns naming the person after their first word (not "Ana, look at this", which
    only addresses her); "" when neither."""
    if speaker in persons:
        return statements(said)
    return said if persons.intersection(words(said)[1:]) else ""


def person_text(text: str, persons: set[str]) -> str:
    """The parts of a transcript chunk by or about the asked persons (turns without a
    name prefix continue the previous speaker's)."""
    out: list[str] = []
    name = None
    for line in text.split("\n"):
        who, role_end = speaker_of(line)
        named, named_end = named_speaker(line)
        name = named or (None if who else name)
        part = person_said(line[max(role_end, named_end) :], name, persons)
        if part:
            out.append(part)
    return "\n".join(out)


def is_dialogue(lines: list[str], names: list[str | None]) -> bool:
    """Whether ``Name:`` prefixes make a conversation (at least two speakers, on at
    least half of the lines) rather than labels in prose or code ("Note:", "Returns:")."""
    opened = [n for line, n in zip(lines, names, strict=True) if n and named_speaker(line)[0]]
    filled = sum(1 for line in lines if line.strip())
    return len(set(opened)) >= 2 and 2 * len(opened) >= filled


def speaker_names(text: str) -> set[str]:
    """Named speakers of a transcript text (``Name: ...`` turns); none in other text."""
    lines = text.split("\n")
    names = [named_speaker(line)[0] for line in lines]
    return {n for n in names if n} if is_dialogue(lines, names) else set()


def asked_persons(q: Query, speakers: set[str]) -> set[str]:
    """Names in the question that are speakers of the transcripts: the question is
    about what that person said or did."""
    return {w for run in q.entities for w in run} & speakers


def without_persons(q: Query, persons: set[str], df: Callable[[str], int]) -> Query:
    """The question with the asked persons' names taken out of its terms: every turn
    of theirs carries the name, so the name is who, not what. Words the corpus never
    holds go too (a paraphrase, "race" for "marathon"): who said it is the evidence
    that separates answers from other people's facts, not a word nobody used.
    The remaining words stay focus terms however common."""
    kept = [t for t in q.terms if t.word not in persons]
    held_ = [t for t in kept if df(t.stem) > 0]
    # What a person did is often talked about in many sessions ("painting"): judged on
    # that person's turns, a word is not context for being common in the corpus.
    terms = [replace(t, explicit=True) for t in held_ or kept]
    return replace(
        q,
        terms=terms,
        entities=[r for r in q.entities if not persons.intersection(r)],
        speaker=None,
    )


def speaker_of(line: str) -> tuple[str | None, int]:
    """``("user"|"assistant", end of the speaker prefix)`` of a transcript line, or
    ``(None, 0)`` when the line names no speaker (it continues the previous turn)."""
    m = SPEAKER_LINE.match(line)
    if m is None:
        return None, 0
    return _ROLE.get(m.group(1).lower(), "assistant"), m.end()


def speaker_text(text: str, speaker: str) -> str | None:
    """The lines of ``speaker`` in a transcript chunk, or None if it is no transcript."""
    if not ANY_SPEAKER_LINE.search(text):
        return None
    current = None
    mine: list[str] = []
    found = False
    for line in text.split("\n"):
        who, end = speaker_of(line)
        if who is not None:
            found = True
            current = who
            line = line[end:]
        if current == speaker:
            mine.append(line)
    return "\n".join(mine) if found else None


def held(p: gate_mod.Plan, tokens: Sequence[str]) -> set[str]:
    """The focus terms (by their stem) among indexed ``tokens``, inflections included."""
    if p.alias:
        tokens = [p.alias.get(s, s) for s in tokens]
    return set(p.focus_stems).intersection(tokens)


def focus_hint(focus: Sequence[Term]) -> re.Pattern:
    """Lowercase leading letters shared by each focus word as asked and its stem: a
    line without any of them cannot hold the term (up to rare spelling variants)."""
    prefixes = {
        os.path.commonprefix([w, stem(w)])[:6] or stem(w) for t in focus for w in (t.word, *t.forms)
    }
    alts = "|".join(sorted(re.escape(x) for x in prefixes if x))
    return re.compile(f"(?<![a-z])(?:{alts})" if alts else "$^")
