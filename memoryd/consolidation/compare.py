"""How a new memory text relates to an earlier one, read without a model: the default
adjudicator's judgement (:mod:`.adjudicate`).

Typed values first (:func:`value_replaced`, :mod:`.values`): two texts that say the
same thing once their values are masked (but for a note one appends after its
values, "..., see the wiki") supersede when a value changed ("5 minutes", "10
minutes"; "gcc 14", "clang 16") and repeat each other when every value is the same
however written ("5 minutes", "300 seconds", "about 5 minutes"). Otherwise the words
decide, as follows; when both texts hold as many typed values, each of a kind the
other's can change to, a value both hold is first written one way (a name both
hold) and a value one of them holds alone is one value token ("May 21, 2027", not a
month name and a year; "switched off", which the words would read as stopwords).

Each text is read as a sequence of tokens in four classes (stopwords and words
that only mark a change, "now", "instead", "correction", dropped):

* **values**: numbers, versions and times ("6380", "v3.11", "02:00"; a number
  word is its numeral, numbers_en.txt), and
  booleans ("enabled", "false": one token whose polarity the statement carries);
* **units** after a number ("20000 ms"): compared only when both texts give one;
* **names**: identifiers ("e2e", "bun_test", "--no-cache", "api/v2", a quoted
  string) and proper names (a capital inside a sentence, "Redis", "PgBouncer");
* **words**: the rest, compared by stem (porter, as the index stems them).

Before comparing, the two readings are aligned (:func:`align`): two adjacent words
the other text writes as one are that one token ("time out", "timeout"), and in a
text whose case says nothing (no capital inside a sentence, as agents often write)
a word is a name where the other text writes it as a name.

Negations ("not", "never", "doesn't") and "no"-side booleans flip the text's
polarity. Tokens both texts hold (as multisets, wherever they stand) are the
shared **subject**; the others are what changed, read by class:

* the values and names equal, and either the shorter text's tokens nearly all in
  the longer (containment, not Jaccard: a paraphrase may add a clause), or (with
  ``memory_paraphrase_merge = "rephrased"``, off by default: it merged a few
  close-but-distinct pairs of a held-out set) the words only one text holds
  standing in other places than the other's (another
  frame around the same subject and value: "connect to the X on port N", "the X
  is reachable on port N"; no word where the other text has another word, which
  may be another subject; most of both texts' names and words shared): a
  ``duplicate``;
* values replaced (a number by a number, the polarity flipped, a unit by a
  unit) over the same subject: the newer ``supersedes`` the older;
* names replaced in one slot ("we chose Redis" after "we chose Postgres") with
  nothing else changed: ``supersedes``; with a value in common ("auth-api
  listens on 8080" after "billing-api listens on 8080") it is the same value of
  another subject: ``distinct``; beside an identifier both hold (the subject or
  the value?), or with a value changed too: ``conflict``; names replaced in two
  slots are read as words (a correction changes one thing);
* a value written as a phrase of its own replaced in one slot, a word or a name
  with no determiner and no content word binding it in its phrase ("set the level
  to debug", "the owner is Ana", "- branch = main"; first only in "X is the Y ..."
  or "X is what ...": determiners_en.txt, copulas_en.txt, cleft_words_en.txt),
  nothing else changed but what one text adds and no number, boolean or such name
  both hold (a lead-in, "As agreed, ...", says none): ``supersedes`` (a word inside a
  noun phrase, "the staging X", "the log level", names a thing: another subject);
* a phrase of a few words replaced by another, all else the same word for word but
  a note one text appends, where a value stands (:func:`_phrase_swapped`: first in
  its clause with its role after it, "American English is the fallback locale",
  "Decided: X for the Y"; after a word that introduces a value, "has to be X";
  a verb's object in its role, "gets X as the Y"; after "->" or ":" ending the
  text), no typed value both hold: ``supersedes``;
* words replaced: the first name or word of both texts (the subject in an
  English statement) replaced is another subject (``distinct``; names alone
  there, with no value in either text, may be the value put first, and are read
  as names swapped), and so is a value in common with no value changed; anything
  else cannot be told from the words ("go to the green cluster" after "go to the
  blue cluster": a correction, or another statement?): ``conflict``.

A pair whose subjects overlap too little (shared tokens a small part of either
text) is ``distinct``. Word lists are general-language data files in
:mod:`memoryd.text.lexicon`.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher

from memoryd.consolidation import values
from memoryd.consolidation.values import (
    CHANGE_WORDS,
    DETERMINERS,
    FALSE_WORDS,
    NEGATIONS,
    TAKERS,
    TRUE_WORDS,
)
from memoryd.text.lexicon import word_list, word_map
from memoryd.text.terms import STOPWORDS, stem

UNITS = word_list("units_en.txt")
COPULAS = word_list("copulas_en.txt")
CLEFTS = word_list("cleft_words_en.txt")
NOTE_PHRASES = word_list("note_phrases_en.txt")
NEGATING_PREFIXES = word_list("negating_prefixes_en.txt")
PREFIXED_BASE = 3  # letters a word needs after a negating prefix ("un-der" is no opposite)
NUMBER_WORDS = word_map("numbers_en.txt")

VALUE, UNIT, IDENT, PROPER, WORD = "value", "unit", "ident", "proper", "word"
NAMES = (IDENT, PROPER)
BOOLEAN = "<bool>"  # the key of every boolean word: its polarity is the text's
BOUND = "<bound>"  # a word bound to what follows it by more than its key (see _contexts)
READINGS = 32_768  # texts whose readings a worker keeps (records are compared again)
STEMS = 65_536  # words whose stems a worker keeps

_stem = functools.lru_cache(maxsize=STEMS)(stem)

# the currency signs of Unicode's basic plane (category Sc: "$", "€", "£", "¥", "₹", ...)
_CURRENCY = (
    "$¢£¤¥\u058f\u060b\u07fe\u07ff\u09f2\u09f3\u09fb\u0af1\u0bf9\u0e3f\u17db"
    + "".join(map(chr, range(0x20A0, 0x20C1)))  # the Currency Symbols block
    + "\ua838\ufdfc\ufe69\uff04\uffe0\uffe1\uffe5\uffe6"
)
# a flag, a quoted string, a currency written as a sign with no amount after it ("€",
# "S$", "US$"), or a word with inner punctuation ("v3.11", "api/v2", "e2e")
_TOKEN = re.compile(
    r"`[^`\n]+`|\"[^\"\n]+\"|--?\w[\w.\-/:@+]*"
    rf"|(?<![\w{_CURRENCY}])[A-Za-z]{{0,3}}[{_CURRENCY}](?![\w{_CURRENCY}])"
    r"|\w[\w'’]*(?:[.\-/:@+]\w[\w'’]*)*(?:\+\+|#)?%?",
    re.UNICODE,
)
CHANGED = "changed:"  # names a typed value the other text does not hold (_values_named)
_CHANGED_VALUE = re.compile(rf"`<{CHANGED}[^`<>]+>`")
_NUMBER = re.compile(r"v?(\d[\d.,:_]*\d|\d)(%|[a-z]+)?")
_INNER_MARK = re.compile(rf"[\d_./:@+\-{_CURRENCY}]")
_SENTENCE_END = ".!?:;\n"
_STATEMENT_END = re.compile(r"[.!?\n]")  # unlike _SENTENCE_END: a colon leads to a value


@dataclass(frozen=True)
class Token:
    key: str
    cls: str
    surface: str = field(default="", compare=False)  # the word as written, lower case
    # where it stands in its phrase (see _contexts): nothing binds it on the left, the
    # key of the word it binds to on its right (None: nothing; BOUND: an object), and
    # whether it ends its clause (punctuation or the text's end after it)
    opens: bool = field(default=False, compare=False)
    then: str | None = field(default=BOUND, compare=False)
    last: bool = field(default=False, compare=False)
    # it ends the text's opening clause, more follows ("Going forward, ...", "Heads up:
    # ..."): a lead-in, not a value said
    lead_in: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Reading:
    tokens: tuple[Token, ...]
    negated: bool  # an odd number of negations and "no"-side booleans
    negates: tuple[str, ...]  # the keys they apply to (the token after each), sorted
    cased: bool = True  # a capital inside a sentence: case tells names from words
    joins: tuple[tuple[str, tuple[int, ...]], ...] = ()  # "time out": ("timeout", (i,))


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'`([*-#>")
    return not before or before[-1] in _SENTENCE_END


def _classify(raw: str, at_start: bool, after_number: bool) -> Token | None:
    """The token of one plain word (None: a stopword or change marker)."""
    low = raw.lower().replace("’", "'").lstrip("-")
    if low.endswith("'s"):
        low, raw = low[:-2], raw[:-2]
    if after_number and low in UNITS:
        return Token(low, UNIT)
    if low in STOPWORDS or low in CHANGE_WORDS or not low:
        return None
    if _INNER_MARK.search(low) or raw.startswith("-"):
        return Token(low, IDENT)
    proper = raw[:1].isupper() and (not at_start or not raw[1:].islower())
    return Token(_stem(low), PROPER if proper and len(raw) > 1 else WORD, low)


@functools.lru_cache(maxsize=READINGS)
def read(text: str) -> Reading:
    """The text's tokens in order, its polarity, what its negations apply to, whether
    its case tells names apart, and which adjacent words may be written as one."""
    tokens: list[Token] = []
    scopes: list[int] = []  # where each negation applies: the next token
    plain: list[tuple[str, int | None]] = []  # each word, and the token it gave
    words: list[Word] = []
    negated = cased = False
    for m in _TOKEN.finditer(text):
        raw = m.group()
        low = raw.lower().replace("’", "'")
        at_start = _sentence_start(text, m.start())
        cased = cased or (not at_start and raw != low and raw[0] not in '`"')
        if low in NEGATIONS or low in FALSE_WORDS:
            negated = not negated
            scopes.append(len(tokens))  # a "no"-side boolean: itself
        before = len(tokens)
        _append(tokens, raw, low, at_start)
        gave = before if len(tokens) > before else None
        plain.append((low if low.isalpha() else "", gave))
        words.append(Word(low, gave, len(tokens) - before == 1, m.start(), m.end()))
    for i, opens, then, last in _contexts(text, words, tokens):
        tokens[i] = replace(tokens[i], opens=opens, then=then, last=last)
    if (lead_in := _lead_in(text, words)) is not None:
        tokens[lead_in] = replace(tokens[lead_in], lead_in=True)
    negates = sorted(tokens[i].key for i in scopes if i < len(tokens))
    return Reading(tuple(tokens), negated, tuple(negates), cased, _joins(plain))


@dataclass(frozen=True)
class Word:
    """One matched word of a text: what :func:`_contexts` reads around a token."""

    low: str
    token: int | None  # the index of the (first) token it gave, None: none
    single: bool  # it gave exactly one token
    start: int
    end: int


def _contexts(
    text: str, words: list[Word], tokens: list[Token]
) -> list[tuple[int, bool, str | None, bool]]:
    """Where each plain word's token stands in its phrase, as a value written as a
    phrase of its own is read ("set the level to debug", "the owner is Ana", "- branch =
    main", "use Black to format"): whether it opens its phrase (no content word or
    determiner right before it, no punctuation between: a determiner introduces a
    thing, "the queue"; a word before names a kind of it, "the staging X"; a verb whose
    object is a value, values.TAKERS, binds nothing: "uses X", "chose X"), and the key
    of the content word right after it (it names a kind of that: "the log level"), or
    ``BOUND`` before a determiner (a verb and its object, "format the code"), and
    whether it ends its clause (where a value often stands: "..., X is verbose"). A
    statement's first word opens its phrase only in a specificational sentence, "X is
    the Y ..." (copulas_en.txt): there X is the value; "caching is slow" says something
    of its subject."""
    out = []
    for i, w in enumerate(words):
        if w.token is None or not w.single:
            continue
        prev = words[i - 1] if i else None
        nxt = words[i + 1] if i + 1 < len(words) else None
        if prev is None or _STATEMENT_END.search(text, prev.end, w.start):
            opens = _specifies(words[i + 1 : i + 3])
        else:
            bound = (prev.token is not None and prev.low not in TAKERS) or prev.low in DETERMINERS
            opens = not (_adjacent(text, prev, w) and bound)
        then, last = None, nxt is None or not _adjacent(text, w, nxt)
        if not last:
            if nxt.token is not None:
                then = tokens[nxt.token].key
            elif nxt.low in DETERMINERS:
                then = BOUND
        out.append((w.token, opens, then, last))
    return out


def _lead_in(text: str, words: list[Word]) -> int | None:
    """The token that ends the text's opening clause when more follows it (punctuation
    first after it: "Going forward, X is Y", "Heads up: ..."), if any."""
    for i, w in enumerate(words[:-1]):
        if not _adjacent(text, w, words[i + 1]):
            return w.token if text[w.end : words[i + 1].start].strip()[:1] in ",:—-" else None
    return None


def _specifies(after: list[Word]) -> bool:
    """The two words after a statement's first are a copula and a determiner ("X is the
    Y ...") or a wh-word ("X is what ...", cleft_words_en.txt)."""
    return (
        len(after) == 2
        and after[0].low in COPULAS
        and (after[1].low in DETERMINERS or after[1].low in CLEFTS)
    )


def _adjacent(text: str, a: Word, b: Word) -> bool:
    """``b`` follows ``a`` in one phrase (no punctuation between)."""
    return not text[a.end : b.start].strip()


def _append(tokens: list[Token], raw: str, low: str, at_start: bool) -> None:
    """The token(s) of one matched word, if any: a quoted string, a boolean, a number
    (and its unit), or a plain word."""
    if _CHANGED_VALUE.fullmatch(raw):
        tokens.append(Token(low[1:-1], VALUE))
    elif raw[0] in '`"':
        tokens.append(Token(" ".join(low[1:-1].split()), IDENT))
    elif low in NEGATIONS:
        return
    elif low in TRUE_WORDS or low in FALSE_WORDS:
        tokens.append(Token(BOOLEAN, VALUE, low))
    elif low in NUMBER_WORDS:
        tokens.append(Token(NUMBER_WORDS[low], VALUE))
    elif number := _NUMBER.fullmatch(low):
        tokens.append(Token(number.group(1).replace(",", "").replace("_", ""), VALUE))
        unit = number.group(2)
        if unit and (unit in UNITS or unit == "%"):
            tokens.append(Token(unit, UNIT))
        elif unit:  # "3rd", "2x4": an identifier with digits
            tokens[-1] = Token(low, IDENT)
    else:
        after_number = bool(tokens) and tokens[-1].cls == VALUE
        if token := _classify(raw, at_start, after_number):
            tokens.append(token)


def _joins(plain: list[tuple[str, int | None]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Two adjacent words another text may write as one ("time out", "timeout"; "set
    up", "setup"): the joined spelling, and the tokens the two words gave."""
    out = []
    for (a, i), (b, j) in zip(plain, plain[1:], strict=False):
        if a and b and (i is not None or j is not None):
            out.append((a + b, tuple(k for k in (i, j) if k is not None)))
    return tuple(out)


@dataclass(frozen=True)
class Diff:
    """Two readings side by side: the tokens only one of them holds, by class."""

    old_only: tuple[Token, ...]
    new_only: tuple[Token, ...]
    shared: Counter
    flipped: bool  # polarity differs, or what is negated ("apsw, not sqlite3")
    old_lead: Token | None  # the old text's first name or word, when the new lacks it
    new_lead: Token | None

    @property
    def subject_replaced(self) -> bool:
        """The first name or word of both texts replaced: another subject. Names alone
        there, with no number or other value in either text and no other name both hold,
        may be the value put first ("Kafka is the queue we chose"): that is read as a
        swap of names instead; so are names in a value's place, with nothing binding
        them on their left ("we went with Ana ...", "Ana is what ..."), beside other
        names both hold."""
        if not (self.old_lead and self.new_lead):
            return False
        names = self.old_lead.cls in NAMES and self.new_lead.cls in NAMES
        placed = self.old_lead.opens and self.new_lead.opens
        values = self.shared_values(VALUE, *(() if placed else NAMES)) or self.only("old", VALUE)
        return not names or bool(values or self.only("new", VALUE))

    def only(self, side: str, *classes: str) -> list[Token]:
        tokens = self.old_only if side == "old" else self.new_only
        return [t for t in tokens if t.cls in classes]

    @property
    def values_changed(self) -> bool:
        """A value replaced by another (a unit by another unit), or the polarity."""
        both = all(self.only(s, VALUE) for s in ("old", "new"))
        units = all(self.only(s, UNIT) for s in ("old", "new"))
        return both or units or self.flipped

    def shared_values(self, *classes: str) -> int:
        """Tokens of ``classes`` both texts hold (values, names: what they say in common)."""
        return sum(n for t, n in self.shared.items() if t.cls in classes)


def _only(mine: tuple[Token, ...], theirs: Counter) -> tuple[list[Token], Token | None]:
    """Tokens of ``mine`` beyond ``theirs`` (multiset), and the first name or word (the
    subject of an English statement) if it is one of them."""
    left = Counter(theirs)
    out, lead = [], None
    for i, token in enumerate(mine):
        held = left[token.key] > 0
        left[token.key] -= held
        if not held:
            out.append(token)
        if lead is None and token.cls in (*NAMES, WORD):
            lead = (i, None if held else token)
    return out, lead[1] if lead else None


def align(old: Reading, new: Reading) -> tuple[Reading, Reading]:
    """The two readings made comparable: two words one text writes as one ("time out",
    "timeout") read as that one token, a word one text writes with a negating prefix
    read as the other's word negated ("uncovered", "covered"), and the words of a text
    whose case says nothing (no capital inside a sentence) read as names where the
    other text writes them as names ("the staging Redis", "the staging redis")."""
    old, new = _joined(old, new), _joined(new, old)
    old, new = _unprefixed(old, new), _unprefixed(new, old)
    return _recased(old, new), _recased(new, old)


def _joined(mine: Reading, theirs: Reading) -> Reading:
    """``mine`` with each pair of adjacent words that ``theirs`` writes as one word,
    or as one hyphenated word ("release notes", "release-notes"), (and ``mine`` does
    not) read as that word."""
    single = {t.surface: t for t in theirs.tokens if t.cls == WORD and t.surface}
    single |= {
        t.key.replace("-", ""): t
        for t in theirs.tokens
        if t.cls == IDENT and "-" in t.key and t.key.replace("-", "").isalpha()
    }
    held = {t.key for t in mine.tokens}
    tokens: list[Token | None] = list(mine.tokens)
    for joined, covered in mine.joins:
        word = single.get(joined)
        if word is None or word.key in held or any(tokens[i] is None for i in covered):
            continue
        if all(tokens[i].cls == WORD for i in covered):
            tokens[covered[0]] = word
            for i in covered[1:]:
                tokens[i] = None
            held.add(word.key)
    if len(held) == len({t.key for t in mine.tokens}):
        return mine
    return replace(mine, tokens=tuple(t for t in tokens if t is not None), joins=())


def _unprefixed(mine: Reading, theirs: Reading) -> Reading:
    """``mine`` with each word that ``theirs`` writes without a negating prefix (and
    ``mine`` does not) read as that word negated ("uncovered", "covered";
    "non-blocking", "blocking": negating_prefixes_en.txt), as "not covered" is."""
    plain = {t.surface: t for t in theirs.tokens if t.cls == WORD}
    held = {t.surface or t.key for t in mine.tokens}
    tokens, negated = list(mine.tokens), []
    for i, token in enumerate(tokens):
        word = token.surface or token.key
        for prefix in NEGATING_PREFIXES:
            base = word[len(prefix) :].lstrip("-") if word.startswith(prefix) else ""
            if len(base) >= PREFIXED_BASE and base in plain and base not in held:
                tokens[i] = plain[base]
                negated.append(plain[base].key)
                break
    if not negated:
        return mine
    return replace(
        mine,
        tokens=tuple(tokens),
        negated=mine.negated != (len(negated) % 2 == 1),
        negates=tuple(sorted([*mine.negates, *negated])),
    )


def _recased(mine: Reading, theirs: Reading) -> Reading:
    """``mine``, its words read as names where its case cannot tell and ``theirs``
    writes the same word as a name. (A slot of words facing a slot of names is not
    read as names: a text may be lower case because its words are, "the dev api code
    is formatted with gofmt", and its slot is then another subject.)"""
    if mine.cased or not theirs.cased:
        return mine
    names = {t.key: t.cls for t in theirs.tokens if t.cls in NAMES}
    tokens = [replace(t, cls=names.get(t.key, t.cls)) if t.cls == WORD else t for t in mine.tokens]
    return replace(mine, tokens=tuple(tokens))


def diff(old: Reading, new: Reading) -> Diff:
    """Compare by key: a word and the same word as a proper name are one token."""
    old_keys = Counter(t.key for t in old.tokens)
    new_keys = Counter(t.key for t in new.tokens)
    old_only, old_lead = _only(old.tokens, new_keys)
    new_only, new_lead = _only(new.tokens, old_keys)
    shared = Counter(old.tokens) - Counter(old_only)
    return Diff(
        tuple(old_only),
        tuple(new_only),
        shared,
        old.negated != new.negated or old.negates != new.negates,
        old_lead,
        new_lead,
    )


def _subject_overlap(old: Reading, new: Reading, d: Diff, swap: str | None) -> tuple[float, float]:
    """Shared names and words over the shorter and over the longer text's; names
    swapped for names are values (what changed), not the subject."""
    n_old, n_new = (sum(t.cls in (*NAMES, WORD) for t in r.tokens) for r in (old, new))
    if swap == IDENT:
        n_old -= len(d.only("old", *NAMES))
        n_new -= len(d.only("new", *NAMES))
    shared = sum(n for t, n in d.shared.items() if t.cls in (*NAMES, WORD))
    if not n_old or not n_new:
        return 0.0, 0.0
    return shared / min(n_old, n_new), shared / max(n_old, n_new)


def _containment(old: Reading, new: Reading, d: Diff) -> float:
    """The share of the shorter text's tokens (every class) the longer one holds."""
    shorter = min(len(old.tokens), len(new.tokens))
    return sum(d.shared.values()) / shorter if shorter else 0.0


@dataclass(frozen=True)
class Thresholds:
    duplicate: float  # containment of the shorter text, every class (config)
    cover: float  # shared subject over the longer text, duplicates and updates
    related: float  # shared subject over the shorter text, updates and conflicts
    rephrased: bool = False  # merge the same subject and value in another frame


def relate(old_text: str, new_text: str, th: Thresholds) -> str:
    """``duplicate``, ``supersedes``, ``conflict`` or ``distinct`` (see the module)."""
    replaced = value_replaced(old_text, new_text)
    if replaced is not None:
        return "supersedes" if replaced else "duplicate"
    old, new = align(*map(read, _values_named(old_text, new_text)))
    d = diff(old, new)
    slots = _slots(old, new)
    swap = _swap(slots)
    within, cover = _subject_overlap(old, new, d, swap)
    added = any(d.only(s, VALUE, *NAMES) for s in ("old", "new"))
    repeats = not d.values_changed and not added and not swap
    if repeats and cover >= th.cover and _containment(old, new, d) >= th.duplicate:
        return "duplicate"
    same = not d.values_changed and not added
    if th.rephrased and same and min(within, cover) >= th.related and rephrased(old, new):
        return "duplicate"
    if swap and _phrase_swapped(old_text, new_text, d, th):
        return "supersedes"
    if within < th.related or cover < th.cover:
        return "distinct"
    if not swap:  # values changed, or one text only adds words
        return "supersedes" if d.values_changed else "distinct"
    if _value_swapped(slots, d):
        return "supersedes"
    if d.subject_replaced:
        return "distinct"
    if swap == WORD:
        same_value = d.shared_values(VALUE, IDENT) and not d.values_changed
        return "distinct" if same_value else "conflict"
    if d.values_changed:
        return "conflict"
    if d.shared_values(VALUE) or any(_said(t) for t in d.shared):
        return "distinct"  # the same value, said of another named subject
    # an identifier both hold names the subject ("auth-api uses Kafka") or is the value
    # ("eu-west-1 hosts the auth-api"): which one, the words cannot tell
    return "conflict" if d.shared_values(IDENT) else "supersedes"  # another name chosen


def rephrased(old: Reading, new: Reading) -> bool:
    """The words only one text holds stand in other places than the other text's (the
    same subject and value in another frame: "connect to the X on port N", "the X is
    reachable on port N"), none where the other text has another word: a word whose
    nearest shared token on either side is that of a word of the other text stands in
    its slot ("the staging X", "the production X"), and may be another subject; so do
    two words both first or both last (where a value often stands: "set the level of
    X to debug", "X's level: info")."""
    olds, news = _places(old.tokens, new.tokens), _places(new.tokens, old.tokens)
    lefts, rights = {left for left, _ in olds}, {right for _, right in olds}
    return not any(left in lefts or right in rights for left, right in news)


def _places(mine: tuple[Token, ...], theirs: tuple[Token, ...]) -> list[tuple[str | None, ...]]:
    """For each token of ``mine`` that ``theirs`` lacks (multiset), the keys of the
    nearest tokens both hold on its left and on its right (None: the text's edge)."""
    left = Counter(t.key for t in theirs)
    held = []
    for token in mine:
        held.append(left[token.key] > 0)
        left[token.key] -= held[-1]
    out = []
    for i in range(len(mine)):
        if held[i]:
            continue
        before = next((mine[j].key for j in range(i - 1, -1, -1) if held[j]), None)
        after = next((mine[j].key for j in range(i + 1, len(mine)) if held[j]), None)
        out.append((before, after))
    return out


def _swap(slots: list[tuple[list[Token], list[Token]]]) -> str | None:
    """What both texts hold in place of the other's terms (names and words), given the
    slots where they differ (:func:`_slots`): ``IDENT`` when every such slot swaps
    names for names (words added on one side at most: a qualifier; or, on both sides,
    words that open their phrase, the verbs of another frame: "we host X in A", "X is
    deployed in B"), ``WORD`` when one swaps words (or a word for a name), or terms
    differ on both sides outside aligned slots or inside noun phrases beside the names
    (the words cannot say whether a subject or the phrasing changed), ``None`` when at
    most one text adds terms. Names swapped in two slots are ``WORD`` too: a correction
    changes one thing, and two may be another subject with another value ("the staging
    Redis is built on Envoy", "the staging Postgres is built on Kafka")."""
    found, loose = [], [[], []]
    for slot in slots:
        if all(slot):
            names = [[t for t in side if t.cls in NAMES] for side in slot]
            words = [[t for t in side if t.cls == WORD] for side in slot]
            found.append(IDENT if _names_swapped(names, words) else WORD)
            loose[0] += [t for t in words[0] if not t.opens]
            loose[1] += [t for t in words[1] if not t.opens]
        else:
            loose[0] += slot[0]
            loose[1] += slot[1]
    if all(loose) or found.count(IDENT) > 1:
        found.append(WORD)
    return WORD if WORD in found else IDENT if found else None


def _names_swapped(names: list[list[Token]], words: list[list[Token]]) -> bool:
    """One slot swaps names for names: names on both sides, words on one side at most
    (a qualifier), and that side with no fewer names than the other (words on one side
    and more names on the other are two phrases run together where stopwords were
    dropped: "#ops for the memory alert", "#infra for the disk-space alert")."""
    if not all(names) or all(words):
        return False
    return not any(words[i] and len(names[i]) < len(names[1 - i]) for i in (0, 1))


def _slots(old: Reading, new: Reading) -> list[tuple[list[Token], list[Token]]]:
    """The places where the aligned token sequences differ: the names and words each
    text holds there (empty on a side that holds none, or only what it moved there
    from elsewhere: a token the other text holds elsewhere was moved, not changed)."""
    a, b = [t.key for t in old.tokens], [t.key for t in new.tokens]
    ops = [
        op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    moved = Counter(a[i] for _, i1, i2, _, _ in ops for i in range(i1, i2))
    moved &= Counter(b[j] for _, _, _, j1, j2 in ops for j in range(j1, j2))
    left_a, left_b = Counter(moved), Counter(moved)
    return [
        (_changed(old.tokens[i1:i2], left_a), _changed(new.tokens[j1:j2], left_b))
        for _, i1, i2, j1, j2 in ops
    ]


def _value_swapped(slots: list[tuple[list[Token], list[Token]]], d: Diff) -> bool:
    """One value written as a phrase of its own (:func:`_contexts`: "set the level to
    debug", "the owner is Ana") replaced by another in one slot, nothing else changed
    but terms one text adds (a qualifier, a note), no number or boolean changed or
    added and none both hold, and nothing else both hold written as a value
    (:func:`_said`): the newer
    value of the same attribute. (A slot inside a noun phrase, "the staging X", "the
    X site", "the log level", names a thing, and may be another subject; a value both
    texts hold is what they say, and the slot is then another subject: "in staging,
    logging is verbose", "in production, logging is verbose".)"""
    if any(d.only(side, VALUE) for side in ("old", "new")) or d.flipped:
        return False
    if d.shared_values(VALUE) or any(_said(t) for t in d.shared):
        return False
    swapped = [slot for slot in slots if all(slot)]
    if len(swapped) != 1 or min(map(len, swapped[0])) > 1:
        return False
    a, b = swapped[0]
    added = {t.key for t in d.old_only}, {t.key for t in d.new_only}
    for i in (0, -1):  # the value first in its slot (a note after it), or last
        if _alone(a[i], added[0]) and _alone(b[i], added[1]):
            rest = [other for other in slots if other is not swapped[0]]
            rest.append((a[1:] if i == 0 else a[:-1], b[1:] if i == 0 else b[:-1]))
            if not (any(x for x, _ in rest) and any(y for _, y in rest)):
                return True
    return False


@dataclass(frozen=True)
class Plain:
    """One word of a text as :func:`_phrase_swapped` aligns it: its key (a stem, or the
    word as written when it holds more than letters), whether it is a stopword, the
    punctuation between it and the word before (the text's start: a space), whether it
    is part of a typed value (:mod:`.values`), and whether a determiner stands right
    before it (determiners are not aligned: "the sourdough starter", "sourdough
    starter")."""

    key: str
    low: str
    stop: bool
    gap: str
    typed: bool
    det: bool

    @property
    def broken(self) -> bool:
        return bool(self.gap)


def _plain(text: str) -> list[Plain]:
    """The words of ``text`` in order, less the words that only mark a change ("now")
    and the determiners (each noted on the word after it)."""
    out, end, det = [], 0, False
    spans = [(v.start, v.end) for v in _typed(text)]
    for m in _TOKEN.finditer(text):
        low = m.group().lower().replace("’", "'")
        if low in CHANGE_WORDS or low in DETERMINERS:
            det = low in DETERMINERS
            continue
        gap = "".join(_PUNCTUATION.findall(text, end, m.start())) or ("" if out else " ")
        end = m.end()
        typed = any(a <= m.start() < b for a, b in spans)
        key = _stem(low) if low.isalpha() else low
        out.append(Plain(key, low, low in STOPWORDS, gap, typed, det))
        det = False
    return out


def _phrase_swapped(old_text: str, new_text: str, d: Diff, th: Thresholds) -> bool:
    """One phrase of a few words replaced by another where a value stands, all else the
    same word for word but a note one text appends ("..., see the runbook"): the newer
    value of the same attribute. Where a value stands: first in its clause with its
    role after it ("American English is the fallback locale", "X has been picked as the
    Y", "Decided: X for the Y"), after a word that introduces it ("... has to be X",
    "went with X for the Y"), after a verb whose object it is in its role ("gets X as
    the Y"), or after a mark that introduces a value, ending the text ("locale -> X").
    Not after a determiner or a content word it may qualify ("the staging X", "the X
    site"), nor after a preposition that opens a qualifier ("for X": another subject),
    and never with a value both hold (typed, or a phrase where a value stands: "... =
    double quotes") or a polarity flipped (what both say is then the value, the phrase
    another subject). The words both hold, a note left out, are the subject, as much of
    both texts as ``th`` asks."""
    if d.flipped or d.shared_values(VALUE) or any(_said(t) for t in d.shared):
        return False
    return any(
        _one_phrase(_plain(a), _plain(b), th)
        for a in _without_notes(old_text)
        for b in _without_notes(new_text)
        if not any(x.same(y) for x in values.parse(a) for y in values.parse(b))
    )


def _without_notes(text: str) -> list[str]:
    """``text`` whole, and cut where a note it appends may start."""
    return [text, *(text[:at] for at in _note_starts(text))]


def _one_phrase(a: list[Plain], b: list[Plain], th: Thresholds) -> bool:
    """``a`` and ``b`` differ in one phrase each, standing where a value stands."""
    start, end, same_end = _differ(a, b)
    slots = a[start : len(a) - end], b[start : len(b) - end]
    if not all(slots) or not all(map(_bare, slots)) or all(x[0].det for x in slots):
        return False  # a determiner before both: a noun phrase, "the staging X"
    shared = sum(not w.stop for w in a[:start] + a[len(a) - same_end :])
    sizes = sorted(sum(not w.stop for w in x) for x in (a, b))
    if shared < th.related * sizes[0] or shared < th.cover * sizes[1]:
        return False  # too little of the texts is the subject they share
    if all(any(w.typed for w in slot) for slot in slots):
        return False  # typed values and words changed: two changes (typed values tell one)
    if set.intersection(*(set(_DIGITS.findall(" ".join(w.low for w in x))) for x in slots)):
        return False  # a number both phrases hold: the value said another way? ("5V0", "5 V")
    before = a[start - 1] if start else None
    if end < same_end and before and not before.stop and before.low not in values.MARKERS:
        return False  # a content word, the words after it and their head: one noun phrase
    return all(_in_value_place(before, slot, a[len(a) - end :]) for slot in slots)


def _differ(a: list[Plain], b: list[Plain]) -> tuple[int, int, int]:
    """How many words ``a`` and ``b`` share first and last (by key), the last ones less
    the content words right after the words they differ in (the head those qualify:
    "American English", "British English"), and the last ones with them."""
    keys_a, keys_b = [w.key for w in a], [w.key for w in b]
    start = 0
    while start < min(len(a), len(b)) and keys_a[start] == keys_b[start]:
        start += 1
    shared = 0
    while shared < min(len(a), len(b)) - start and keys_a[-1 - shared] == keys_b[-1 - shared]:
        shared += 1
    end = shared
    while end and not (a[-end].stop or a[-end].broken or a[-end].det):
        end -= 1
    return start, end, shared


def _bare(slot: list[Plain]) -> bool:
    """A phrase that may be a value: at most :data:`values.PHRASE_WORDS` words, the first
    a content word, no determiner or qualifying preposition after it ("disabled for the
    web site" says a value and a subject), and no punctuation inside but brackets."""
    first, *rest = slot
    return (
        len(slot) <= values.PHRASE_WORDS
        and not first.stop
        and not any(w.det or w.low in values.SCOPES for w in rest)
        and all(set(w.gap) <= set("()") for w in rest)
    )


def _in_value_place(before: Plain | None, slot: list[Plain], after: list[Plain]) -> bool:
    """The phrase ``slot``, between the words ``before`` it and ``after`` it that both
    texts hold, stands where a value stands (see :func:`_phrase_swapped`)."""
    role = _role_after(after)
    if before is None or slot[0].broken:  # first in its clause
        return role or (not after and bool(set(slot[0].gap) & set(VALUE_MARKS)))
    if before.low in values.SCOPES:
        return False
    if not before.stop and before.low not in values.MARKERS:
        return role and after[0].low == "as"  # its object in its role, as values.TAKERS
    return not after or after[0].broken or after[0].stop  # it ends its phrase


def _role_after(after: list[Plain]) -> bool:
    """The words after a phrase say its role: function words up to a determiner and the
    attribute it introduces ("is the ...", "for the ...", ", please, for the ...", "as
    its ..."), a verb before "as" among them ("has been picked as the ..."); no
    preposition but one that gives a role (values.ROLES: "the setpoint on the rig" is
    one phrase, a subject)."""
    for i, word in enumerate(after):
        if word.det:
            return i > 0
        if word.low in values.SCOPES and word.low not in values.ROLES:
            return False
        if not word.stop and not (i + 1 < len(after) and after[i + 1].low in values.ROLES):
            return False
    return False


def _said(token: Token) -> bool:
    """The token is written as a value: a name or a word ending its clause, alone in
    its phrase ("the owner is Ana", "..., logging is verbose")."""
    return _alone(token, ()) and (token.cls in NAMES or token.last) and not token.lead_in


def _alone(token: Token, added: Collection[str]) -> bool:
    """The token is a phrase of its own, but for words after it in ``added`` (a note one
    text appends: "... is Kafka according to the runbook")."""
    return token.opens and (token.then is None or token.then in added)


def _changed(tokens: tuple[Token, ...], moved: Counter) -> list[Token]:
    """The names and words of a changed slot, less those moved (counted down)."""
    out = []
    for t in tokens:
        if moved[t.key] > 0:
            moved[t.key] -= 1
        elif t.cls in (*NAMES, WORD):
            out.append(t)
    return out


_DIGITS = re.compile(r"\d+")
_PUNCTUATION = re.compile(r"[^\w\s]")
VALUE_MARKS = ":=>"  # punctuation before a value: "key: V", "key = V", "key -> V"
NOTE_START = re.compile(r"\s*(?:[,;(\u2014]|\s-\s)")  # a note appended to a claim
_WORDS_BEFORE = re.compile(r"[\w][\w.+#\-']*")
_FIRST_WORD = re.compile(r"\s*(\w+)")
PRODUCT_WORDS = 3  # at most this many words name what a number is the version of
PHRASE_SUBJECT = 2  # names and words a claim with an untyped value says its subject in


def value_replaced(old_text: str, new_text: str) -> bool | None:
    """Whether the newer text changes a typed value (:mod:`.values`) of the same
    subject: ``True`` when the claims, their values masked, say the same thing (but
    for a note one of them appends after its values, "..., see the wiki") and a value
    differs ("5 minutes", "10 minutes"; a name before a version, "gcc 14", "clang
    16", is part of it); ``False`` when every value is the same however written ("5
    minutes", "300 seconds", "about 5 minutes"); ``None`` when typed values cannot
    tell (no values, another frame or subject: the words decide, :func:`relate`)."""
    olds, news = values.parse(old_text), values.parse(new_text)
    if not olds or not news:
        return None
    for (old, old_values), (new, new_values) in _cores(old_text, olds, new_text, news):
        if len(old_values) != len(new_values) or not all(
            a.comparable(b) for a, b in zip(old_values, new_values, strict=True)
        ):
            continue
        old_frame, new_frame = _masked(old, old_values), _masked(new, new_values)
        if not _frames_say_enough(old_frame, old_values):
            continue
        named = _frame_match(old_frame, new_frame)
        if named is None:
            continue
        if named and not (_stands_as_value(old, old_values) and _stands_as_value(new, new_values)):
            return None  # "the auth service runs Postgres 15": which of its parts?
        return named or not all(a.same(b) for a, b in zip(old_values, new_values, strict=True))
    return None


def _masked(text: str, found: tuple[values.Value, ...]) -> str:
    """``text`` with each value replaced by its kind's placeholder, one for a URL and a
    path (both say where: one may move to the other)."""
    return values.masked(
        text, found, [values.PATH if v.kind == values.URL else v.kind for v in found]
    )


def _typed(text: str) -> list[values.Value]:
    """The typed values of ``text`` but its untyped phrases."""
    return [v for v in values.parse(text) if v.kind != values.PHRASE]


def _values_named(old_text: str, new_text: str) -> tuple[str, str]:
    """The two texts with their typed values (:mod:`.values`, no untyped phrase)
    written one way when both hold as many, each of a kind the other's can change to:
    a value both hold however written ("45 sec", "45s"; "2027-05-26", "May 26, 2027")
    as one name both hold, a value only one holds as one value token of its own ("May
    21, 2027" and "September 21, 2027" are two values, not a month name each and a
    year both hold). Else the texts as they are."""
    olds, news = _typed(old_text), _typed(new_text)
    if not olds or len(olds) != len(news):
        return old_text, new_text
    if not all(a.comparable(b) for a, b in zip(olds, news, strict=True)):
        return old_text, new_text
    old_names = [f"{CHANGED}{a.kind}-{i}" for i, a in enumerate(olds)]
    new_names = [f"{CHANGED}{b.kind}-new-{j}" for j, b in enumerate(news)]
    for j, b in enumerate(news):
        i = next((i for i, a in enumerate(olds) if a.same(b) and CHANGED in old_names[i]), None)
        if i is not None:
            old_names[i] = new_names[j] = f"{b.kind}-{i}"
    return values.masked(old_text, olds, old_names), values.masked(new_text, news, new_names)


def _cores(
    old_text: str, olds: tuple[values.Value, ...], new_text: str, news: tuple[values.Value, ...]
) -> list[tuple[tuple[str, tuple], tuple[str, tuple]]]:
    """The pairs of texts compared: both whole, then one of them without a note it
    appends after a value (a comma, a parenthesis, a dash on: "..., confirmed in
    standup"), with the values before it."""
    old_cuts, new_cuts = _cuts(old_text, olds), _cuts(new_text, news)
    whole_old, whole_new = (old_text, olds), (new_text, news)
    return [
        (whole_old, whole_new),
        *((whole_old, cut) for cut in new_cuts),
        *((cut, whole_new) for cut in old_cuts),
    ]


def _cuts(text: str, found: tuple[values.Value, ...]) -> list[tuple[str, tuple]]:
    """``text`` cut where a note may start after its first value (:func:`_note_starts`),
    with the values before the cut."""
    out = []
    for at in _note_starts(text, found[0].end):
        kept = tuple(v for v in found if v.end <= at)
        if all(v.end <= at or v.start >= at for v in found):
            out.append((text[:at], kept))
    return out


def _note_starts(text: str, after: int = 0) -> list[int]:
    """Where a note appended to the claim may start, from ``after`` on (a comma, a
    parenthesis, a dash); not where a qualifier starts (values.SCOPES: "..., for the
    staging cluster" says which subject) unless an idiom of a note does ("..., for the
    record": note_phrases_en.txt)."""
    out = []
    for m in NOTE_START.finditer(text, after):
        first = _FIRST_WORD.match(text, m.end())
        if first and first.group(1).lower() in values.SCOPES and not _note_phrase(text, m.end()):
            continue
        out.append(m.start())
    return out


def _note_phrase(text: str, at: int) -> bool:
    """An idiom that opens a note starts at ``at`` (note_phrases_en.txt)."""
    words = " ".join(text[at:].lower().replace("’", "'").split())
    return any(
        p == words[: len(p)] and not words[len(p) : len(p) + 1].isalnum() for p in NOTE_PHRASES
    )


def _frames_say_enough(frame: str, found: tuple[values.Value, ...]) -> bool:
    """The masked text names a subject for its untyped phrases: an identifier (a
    setting's key, "app.log_level") or at least :data:`PHRASE_SUBJECT` names and
    words ("Lesson: retry flaky tests" is all value, no subject)."""
    if all(v.kind != values.PHRASE for v in found):
        return True
    tokens = [t for t in read(frame).tokens if not t.key.startswith("<")]
    subject = sum(t.cls in (*NAMES, WORD) for t in tokens)
    return subject >= PHRASE_SUBJECT or any(t.cls == IDENT for t in tokens)


def _stands_as_value(text: str, found: tuple[values.Value, ...]) -> bool:
    """A number and the name before it ("gcc 14", "Amazon Linux 2023") stand where a
    value stands: at the text's start, or right after "=", ":" or a word that
    introduces a value (values.MARKERS: "is", "to", "uses")."""
    for v in found:
        if v.kind != values.NUMBER:
            continue
        words = list(_WORDS_BEFORE.finditer(text[: v.start].rstrip()))[-PRODUCT_WORDS - 1 :]
        for k in range(1, len(words) + 1):
            run_start = words[-k].start()
            before = text[:run_start].rstrip()
            if not before or before[-1] in "=:" or before.split()[-1].lower() in values.MARKERS:
                return True
    return False


def _frame_match(old_text: str, new_text: str) -> bool | None:
    """The two masked texts say the same thing around their values: ``None`` if not,
    else whether a name right before a number differs ("gcc `<number>`", "clang
    `<number>`": what the number is the version of, part of the value)."""
    old, new = align(read(old_text), read(new_text))
    if old.negated != new.negated or old.negates != new.negates:
        return None
    a, b = [t.key for t in old.tokens], [t.key for t in new.tokens]
    named = False
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        before_number = i2 < len(a) and j2 < len(b) and a[i2] == b[j2] == NUMBER_SLOT
        if not (op == "replace" and before_number and max(i2 - i1, j2 - j1) <= PRODUCT_WORDS):
            return None
        if not (_names_number(old.tokens[i1 : i2 + 1]) and _names_number(new.tokens[j1 : j2 + 1])):
            return None
        named = True
    return named


def _names_number(run: tuple[Token, ...]) -> bool:
    """Names or words written as one phrase with the number placeholder ending
    ``run`` (each right before the next, nothing between: "Amazon Linux 2023", not
    "the mobile team to 5")."""
    *words, number = run
    keys = [t.key for t in run]
    return (
        all(
            t.cls in (*NAMES, WORD) and not t.key.startswith("<") and t.then == keys[i + 1]
            for i, t in enumerate(words)
        )
        and number.key == NUMBER_SLOT
    )


NUMBER_SLOT = f"<{values.NUMBER}>"
