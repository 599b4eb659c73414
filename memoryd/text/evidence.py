"""Reading evidence text: who said a line, which focus terms a text holds.

Generic helpers shared by project search (:mod:`memoryd.search.engine`) and
archive search (:mod:`memoryd.archive.search`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from memoryd.text.lazy_re import Lazy
from memoryd.text.lexicon import word_list
from memoryd.text.terms import STOPWORDS, Query, Term, stem, stems, words


class FocusPlan(Protocol):
    """What these readers need of a query's plan (:class:`memoryd.search.gate.Plan`):
    its focus terms, the inflections that stand for them, and a memo of per-plan work."""

    query: Query
    focus: list[Term]
    focus_stems: list[str]
    alias: dict[str, str]  # stem of another inflection -> the focus term's stem
    memo: dict


SPEAKER_LINE = Lazy(r"^\s*\**(user|human|me|assistant|ai|bot|system)\**\s*:", re.I)
ANY_SPEAKER_LINE = Lazy(SPEAKER_LINE.pattern, re.I | re.M)
_ROLE = {"user": "user", "human": "user", "me": "user"}


# A named speaker opening a turn, after an optional role: "Ana: ...", "user: Ana: ...",
# "**Ana Lima**: ...". One or two capitalized words, then a colon and a space.
_NAMED = Lazy(
    r"^\s*(?:\**(?:user|human|me|assistant|ai|bot|system)\**\s*:\s*)?"
    r"\**([A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30})?)\**\s*:\s"
)
FIRST_PERSON = word_list("first_person.txt")
# A sentence that asks: what its speaker asks about is not evidence about them.
_QUESTION = Lazy(r"[^.!?]*\?")


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


def asks(text: str) -> bool:
    """Whether ``text`` holds a question (a sentence ending in "?")."""
    return _QUESTION.search(text) is not None


def person_said(said: str, speaker: str | None, persons: set[str], before: str = "") -> str:
    """What a turn's words (``said``, after its prefixes) tell *by or about* the asked
    persons: a person's own statements (:func:`own_statements`; ``before`` is the
    other speaker's turn just before), and the sentences of other speakers' turns
    that name the person other than to address them (:func:`mentions`); "" when
    neither."""
    if speaker in persons:
        return own_statements(said, before)
    return mentions(said, persons)


def own_statements(said: str, before: str = "") -> str:
    """A speaker's statements (not their questions: "How was the trip?" says nothing
    about who asks). A turn without a first-person word that repeats words of the
    other speaker's turn just before (``before``) reacts to it ("A choir!", "Perfect
    name for a cat" after "I adopted a cat"): those words are the other speaker's
    news, so they are left out; the rest stays ("About twelve kilometres" answering
    "How far are you running?")."""
    text = statements(said)
    if before and not FIRST_PERSON.intersection(words(text)):
        echoed = set(stems(before))
        text = " ".join(w for w in words(text) if stem(w) not in echoed)
    asked = answered(before) if text.strip() else ""
    return f"{text} {asked}" if asked else text


def answered(before: str) -> str:
    """The questions of the other speaker's turn just before, which a turn answers:
    an answer leaves out the words of its question ("Who proposed?" - "Sam did, at
    the party"; "What does the company do?" - "Software for farms"), so the question
    and its answer are one statement of the answering speaker."""
    return " ".join(m.group().strip() for m in _QUESTION.finditer(before))


# A name followed by a comma or an exclamation mark addresses the person ("Hey Ana!",
# "Congratulations, uncle Tom!", "Ana, look"); it says nothing about them.
_ADDRESS = ",!"


def mentions(said: str, persons: set[str]) -> str:
    """The sentences of ``said`` naming one of ``persons`` (lowercase first names)
    other than to address them: "I think Iris broke the saw" is about Iris, "Hey
    Iris! I signed up for pottery" is not."""
    low = said.lower()
    if not any(p in low for p in persons):
        return ""
    out = []
    for sentence in _SENTENCE.findall(said):
        for m in _WORD.finditer(sentence):
            if m.group().lower() in persons and sentence[m.end() : m.end() + 1] not in _ADDRESS:
                out.append(sentence)
                break
    return " ".join(out)


_SENTENCE = Lazy(r"[^.!?]+[.!?]*")
_WORD = Lazy(r"[^\W_]+")


def person_text(text: str, persons: set[str]) -> str:
    """The parts of a transcript chunk by or about the asked persons (turns without a
    name prefix continue the previous speaker's)."""
    lines = text.split("\n")
    names: list[str | None] = []
    said: list[str] = []
    name = None
    for line in lines:
        who, role_end = speaker_of(line)
        named, named_end = named_speaker(line)
        name = named or (None if who else name)
        names.append(name)
        said.append(line[max(role_end, named_end) :])
    out: list[str] = []
    for i, before in enumerate(turn_before(names)):
        part = person_said(said[i], names[i], persons, "" if before is None else said[before])
        if part:
            out.append(part)
    return "\n".join(out)


def turn_before(names: Sequence[str | None]) -> list[int | None]:
    """For each line of a transcript, the last earlier line of another named speaker
    (None for the first turn, and for lines without a named speaker)."""
    out: list[int | None] = []
    last: dict[str | None, int] = {}  # speaker -> their last line
    for i, n in enumerate(names):
        others = [j for who, j in last.items() if who != n and who is not None]
        out.append(max(others) if n is not None and others else None)
        last[n] = i
    return out


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


def held(p: FocusPlan, tokens: Sequence[str]) -> set[str]:
    """The focus terms (by their stem) among indexed ``tokens``, inflections included."""
    if p.alias:
        tokens = [p.alias.get(s, s) for s in tokens]
    return set(p.focus_stems).intersection(tokens)


def focus_prefixes(focus: Sequence[Term]) -> list[str]:
    """Lowercase leading letters shared by each focus word as asked and its stem: a
    line without any of them cannot hold the term (up to rare spelling variants)."""
    prefixes = {
        os.path.commonprefix([w, stem(w)])[:6] or stem(w) for t in focus for w in (t.word, *t.forms)
    }
    return sorted(x for x in prefixes if x)


def focus_hint(focus: Sequence[Term]) -> re.Pattern:
    """:func:`focus_prefixes` as one pattern, each at a word's start (for scanning
    many lines: compiling costs about half a millisecond)."""
    alts = "|".join(re.escape(x) for x in focus_prefixes(focus))
    return re.compile(f"(?<![a-z])(?:{alts})" if alts else "$^")


def other_sense(text: str, p: FocusPlan, matched: set[str]) -> set[str]:
    """The ``matched`` focus stems that ``text`` holds only as a name in another form
    than asked: "Bill Paul" in a licence header for a question about "billing".

    The question wrote the term in lowercase (not an explicit name), and every
    occurrence in the text is the first word of a person's name (a capitalized word
    followed by a capitalized surname, inside a line: not where a line or a sentence
    starts, nor in a title-case line) whose lowercase form is neither an asked form
    nor its singular. Porter stems conflate a name with a common word ("Bill",
    "billing"; "Marks", "mark"); their form and case tell the senses apart."""
    asked = _plain_terms(p)
    capitals = [(s, c) for s in matched if s in asked for c in asked[s][1]]
    present = {s for s, c in capitals if c in text}  # the common case: no such capital
    if not present:
        return set()
    named: dict[str, int] = {}
    for s, word, at in _capitalized(text, [(s, c) for s, c in capitals if s in present]):
        forms = asked[s][0]
        if _inflected(word, forms) or not _given_name(text, at) or _starts_sentence(text, at):
            continue
        w = stem(word)
        if p.alias.get(w, w) == s:
            named[s] = named.get(s, 0) + 1
    if not named:
        return set()
    held: dict[str, int] = {}
    for s in stems(text):
        s = p.alias.get(s, s)
        if s in named:
            held[s] = held.get(s, 0) + 1
    return {s for s, n in named.items() if held.get(s, 0) <= n}


_LOWER_RUN = Lazy(r"[a-z]*")


def _capitalized(text: str, prefixes: list[tuple[str, str]]):
    """(stem, lowercased word, offset) of each whole word of ``text`` that starts with
    one of the capitalized ``prefixes`` and goes on in lowercase letters."""
    for s, prefix in prefixes:
        at = text.find(prefix)
        while at >= 0:
            end = _LOWER_RUN.match(text, at + len(prefix)).end()
            before = text[at - 1] if at else " "
            after = text[end] if end < len(text) else " "
            if not (before.isalnum() or before in "_.@/" or after.isalnum() or after in "_@"):
                yield s, text[at:end].lower(), at
            at = text.find(prefix, end)


def _plain_terms(p: FocusPlan) -> dict[str, tuple[set[str], set[str]]]:
    """stem -> (forms asked, capitalized prefixes a name of another sense would start
    with) of the focus terms the question wrote in lowercase (memoized on the plan)."""
    got = p.memo.get("plain_terms")
    if got is None:
        got = p.memo["plain_terms"] = {}
        for t in p.focus:
            if t.explicit:
                continue
            forms = {t.word, *t.forms}
            capitals = set()
            for w in forms:
                prefix = os.path.commonprefix([w, stem(w)])[:6]
                if len(prefix) >= 2 and prefix.isalpha() and prefix.isascii():
                    capitals.add(prefix[0].upper() + prefix[1:])
            got[t.stem] = (forms, capitals)
    return got


def _inflected(word: str, forms: set[str]) -> bool:
    """``word`` is one of the asked ``forms`` or its plural ("Museum" for "museums"):
    the same word, not a name that shares a stem with a derived one ("Bill",
    "billing")."""
    return any(f in (word, word + "s", word + "es") for f in forms)


_SURNAME = Lazy(r"[A-Z][\w'’-]*\b")
_NAME_BEFORE = Lazy(r"[A-Z][\w'’.-]*\s*$")


def _given_name(text: str, at: int) -> bool:
    """The word at ``at`` opens a person's name: a capitalized word follows it after
    one space ("Bill Paul") and none stands just before it ("History Museum" ends a
    name, it does not open one)."""
    end = at
    while end < len(text) and (text[end].isalnum() or text[end] in "'’-"):
        end += 1
    if text[end : end + 1] != " " or not _SURNAME.match(text, end + 1):
        return False
    return not _NAME_BEFORE.search(text, max(0, at - 40), at)


# What opens a sentence, a heading, a list item or a quoted title.
_OPENERS = (".", "!", "?", ":", "*", '"', "“", "#", "•", "-", "(", "[")


def _starts_sentence(text: str, at: int) -> bool:
    """A capital there is the sentence's, not a name's: the first word of a line (after
    punctuation such as a comment's) that opens a paragraph or follows a sentence
    end; a word after a sentence end, a list mark, a heading mark or an opening
    quote; a word in a title-case line."""
    line_start = text.rfind("\n", 0, at) + 1
    before = text[line_start:at].rstrip()
    if not re.search(r"\w", before):
        if line_start == 0:
            return True
        prev = text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1].rstrip()
        if not re.search(r"\w", prev) or prev.endswith((".", "!", "?", ":")):
            return True
    elif before.endswith(_OPENERS):
        return True
    end = text.find("\n", at)
    line = text[line_start : len(text) if end < 0 else end]
    return all(w[0].isupper() for w in re.findall(r"[^\W\d_]{4,}", line))


# Where a sentence ends: ".", "!" or "?" before a space (not after an abbreviation
# such as "Dr." or "St."), or a line end.
_SENTENCE_END = Lazy(r"(?<![A-Z][a-z])(?<![A-Z][a-z]{2})[.!?](?=\s)|\n")


def multiword_names(p: FocusPlan) -> list[tuple[str, list[str]]]:
    """The question's names of several words ("Principal Data Architect", "Lumix
    camera"): each as written and as the stems of its content words, memoized on the plan."""
    got = p.memo.get("multiword_names")
    if got is None:
        got = p.memo["multiword_names"] = []
        for run in p.query.entities:
            content = [w for w in run if w not in STOPWORDS]
            if len(content) >= 2:
                got.append((" ".join(content), [stem(w) for w in content]))
    return got


def name_said(text: str, name: list[str], alias: dict[str, str]) -> bool:
    """Whether ``text`` holds the words (stems) of ``name`` in their order within one
    sentence ("my new Lumix 24-megapixel mirrorless camera" holds "Lumix camera";
    "data architect" in one sentence and "lead" in another are no "Data Architect
    Lead")."""
    for sentence in _SENTENCE_END.split(text):
        rest = iter(alias.get(s, s) for s in stems(sentence))
        if all(any(s == w for s in rest) for w in name):
            return True
    return False


def unsaid_names(p: FocusPlan, texts: Sequence[str]) -> list[str]:
    """The question's names of several words that none of ``texts`` says
    (:func:`name_said`): the evidence holds their words about other things."""
    return [
        written
        for written, name in multiword_names(p)
        if not any(name_said(t, name, p.alias) for t in texts)
    ]
