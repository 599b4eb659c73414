"""Typed values in a claim, read without a model: what the default adjudicator
compares when two statements say the same thing of the same subject with another
value (:func:`memoryd.consolidation.compare.value_replaced`).

A value is a span of the text with a kind and a normalised key:

* **duration** ("30s", "5 minutes", "two hours", "an hour", "half an hour", "1h30m"):
  seconds; a period
  ("every 2 weeks", "every week") is marked as one;
* **size** ("512 MB", "1 GiB", "one megabyte"): bytes (1024-based for both
  spellings, as writers use them);
* **percent** ("50%", "ten percent"), **rate** ("1000/s", "5000 requests per
  second", "10 MB/s": what is counted, and the amount per second);
* **weekday** ("on Thursdays"; not "the Monday standup"): its number, Monday 1;
* **date** (ISO, "6 August 2027", "Dec 13, 2026"), **time** of day ("02:00", "9 pm", "5.30 pm",
  "noon"): (year, month, day), minutes after midnight;
* **number** (numerals, versions "v1.2.3" and "3.11", number words "eight", a count
  of times "twice"):
  its components, trailing zeros dropped ("2.0" is "2", "3.10" is not "3.1");
* **url**, **path** ("/etc/app/", "./runtime/tmp", "deploy/stable");
* **state** ("enabled", "not enabled", "disabled"; "on"/"off" where they end a
  clause, follow a switch verb or come before a scope word, "turned off", "off for
  the API"): its polarity;
* **phrase**, untyped: a bare phrase (no determiner, at most :data:`PHRASE_WORDS`
  words) where a value stands, "key = V", "A: V", "set X to V", "uses V as its X":
  the stems of its words and of their parts ("us-east-2": us, east, 2).

So "5 minutes" and "300 seconds" are one value, "5 minutes" and "10 minutes" two.
A value said roughly ("about 5 minutes") is the same as the exact one near it
(:data:`APPROX_TOLERANCE`); values joined by a coordinator ("80 and 443") are one
list value. A number inside a noun phrase ("the v2 billing page") names a thing
and is no value. Word lists are data files of :mod:`memoryd.text.lexicon`
(value_units_en.txt, value_words_en.txt, months_en.txt, weekdays_en.txt and the
boolean lists).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memoryd.text.lexicon import word_list, word_table
from memoryd.text.terms import STOPWORDS, stem, stems

APPROX_TOLERANCE = 0.1  # a value said roughly is the same as one within 10% of it
PARSED = 32_768  # texts whose values a worker keeps (records are compared again)

DURATION, SIZE, PERCENT, RATE, DATE, TIME = "duration", "size", "percent", "rate", "date", "time"
WEEKDAY = "weekday"
NUMBER, URL, PATH, STATE, PHRASE = "number", "url", "path", "state", "phrase"
MEASURED = (DURATION, SIZE, PERCENT, RATE, TIME)  # keys ending in an amount
_MEASURE = "measure"  # a number and a unit, a duration or a size by its unit
PERIOD = "period"  # the first part of a duration's key said as a period ("every 2 weeks")

_WORDS = word_table("value_words_en.txt")
_UNITS = word_table("value_units_en.txt")
_MONTHS = word_table("months_en.txt")
_WEEKDAYS = word_table("weekdays_en.txt")
TRUE_WORDS = word_list("booleans_true_en.txt")
FALSE_WORDS = word_list("booleans_false_en.txt")
NEGATIONS = word_list("negations_en.txt")
CHANGE_WORDS = word_list("change_words_en.txt")
DETERMINERS = word_list("determiners_en.txt")


def _role(role: str) -> dict[str, float]:
    """Word -> key of every line of value_words_en.txt with ``role``."""
    return {w: float(key) for (group, key), words in _WORDS.items() if group == role for w in words}


NUMBER_WORDS, SCALES = _role("number"), _role("scale")
ARTICLES, APPROX, PER, COORDINATORS = _role("article"), _role("approx"), _role("per"), _role("and")
PERIODS, FRACTIONS = _role("period"), _role("fraction")
CLAUSE_STATES, SWITCHES = _role("clause"), _role("switch")
SETTERS, TAKERS = _role("setter"), _role("taker")
SCOPES = _role("scope")
ROLES = _role("role")
MARKERS = {*_role("marker"), *SETTERS, *TAKERS}
DAY_WORDS = {**_role("noon"), **_role("midnight")}
HALF_DAY = {**_role("am"), **_role("pm")}
UNITS = {w: (kind, float(f)) for (kind, f), words in _UNITS.items() for w in words}
MONTHS = {w: int(n) for (_, n), words in _MONTHS.items() for w in words}
WEEKDAYS = {w: int(n) for (_, n), words in _WEEKDAYS.items() for w in words}


def _alt(words: object) -> str:
    """A regex alternation of ``words``, longest first (so "ms" before "m")."""
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


_NUMWORD = rf"(?:{_alt({*NUMBER_WORDS, *SCALES})})"
_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*"
_NUM = rf"(?:{_DIGITS}|\b{_NUMWORD}(?:[ -]{_NUMWORD})*\b)"
_UNIT = rf"(?:{_alt(UNITS)})"
_ONE_UNIT = _alt({*ARTICLES, *PERIODS})  # words before a unit alone that say one ("an hour")
_TIME_UNIT = rf"(?:{_alt(w for w, (k, _) in UNITS.items() if k == DURATION)})"
_TIME_PART = rf"(?P<amount>\d+(?:\.\d+)?)\s?(?P<unit>{_TIME_UNIT})(?![a-z])"
_PART = re.compile(_TIME_PART, re.I)
_COMPOUND = _TIME_PART.replace("?P<amount>", "?:").replace("?P<unit>", "?:")
_MONTH = rf"(?:{_alt(MONTHS)})"
_HALF = rf"(?:{_alt(HALF_DAY)})"
_EDGE = r"(?<![\w.:/\-])"  # a value starts a token ("e2e", "node:20" hold no value)
_END = r"(?![\w\-/:])"

_PATTERNS = [
    (URL, r"\b(?:[a-z][a-z0-9+.\-]*://|www\.)[^\s<>\"'`]+"),
    (DATE, r"\b(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})\b"),
    (
        DATE,
        rf"\b(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH})\b\.?"
        rf"(?:,?\s+(?P<y1>\d{{4}})\b)?",
    ),
    (
        DATE,
        rf"\b(?P<m2>{_MONTH})\b\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
        rf"(?:,?\s+(?P<y2>\d{{4}})\b)?",
    ),
    (DATE, rf"\b(?P<m3>{_MONTH})\b\.?,?\s+(?P<y3>\d{{4}})\b"),
    (DATE, r"\b(?P<n1>\d{1,4})/(?P<n2>\d{1,2})/(?P<n3>\d{2,4})\b"),
    (
        TIME,
        rf"{_EDGE}(?P<hh>\d{{1,2}}):(?P<mm>\d{{2}})(?::\d{{2}})?(?:\s*(?P<ap>{_HALF})(?!\w))?(?!\d)",
    ),
    (TIME, rf"{_EDGE}(?P<hh3>\d{{1,2}})\.(?P<mm3>\d{{2}})\s*(?P<ap3>{_HALF})(?!\w)"),
    (TIME, rf"{_EDGE}(?P<hh2>\d{{1,2}})\s*(?P<ap2>{_HALF})(?!\w)"),
    (TIME, rf"\b(?P<dw>{_alt(DAY_WORDS)})\b"),
    (WEEKDAY, rf"\b(?P<wd>{_alt(WEEKDAYS)})\b"),
    (
        RATE,
        rf"{_EDGE}(?P<rn>{_NUM})\s*(?:(?P<ru>{_UNIT})\b\s*)?(?P<rw>(?:[a-z][a-z\-]*\s*){{0,2}}?)"
        rf"(?:/|\b(?:{_alt(PER)})\s+)(?P<rp>{_TIME_UNIT})(?!\w)",
    ),
    (PERCENT, rf"{_EDGE}(?P<pn>{_NUM})\s*(?:%|\bpercent\b|\bper\s*cent\b)"),
    (_MEASURE, rf"{_EDGE}(?P<cd>{_COMPOUND}(?:\s?{_COMPOUND})+)(?!\w)"),  # "1h30m"
    (
        _MEASURE,
        rf"{_EDGE}(?P<mn>{_NUM}\s*-?\s*|\b(?:{_ONE_UNIT})\s+|\b(?:{_alt(FRACTIONS)})\s+(?:an?\s+)?)"
        rf"(?P<mu>{_UNIT})(?!\w)",
    ),
    (PATH, r"(?<![\w/.~\-@])(?:~|\.{1,2})?/?(?:[\w.@~+\-]+/)+[\w.@~+\-]*|(?<![\w/.])/[\w.@~+\-]+"),
    (NUMBER, rf"{_EDGE}v?(?P<nn>{_DIGITS}){_END}|\b(?P<nw>{_NUMWORD}(?:[ -]{_NUMWORD})*)\b"),
    (STATE, rf"\b(?P<st>{_alt(TRUE_WORDS | FALSE_WORDS)})\b"),
    (STATE, rf"\b(?P<cs>{_alt(CLAUSE_STATES)}){_END}"),
]
_SCANNER = re.compile("|".join(f"(?P<k{i}>{p})" for i, (_, p) in enumerate(_PATTERNS)), re.I)
_ALPHA = re.compile(r"[A-Za-z]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")  # a URL's scheme, "s3://"
_TRIGGERS = frozenset(
    {
        *NUMBER_WORDS,
        *SCALES,
        *ARTICLES,
        *PERIODS,
        *FRACTIONS,
        *APPROX,
        *CLAUSE_STATES,
        *DAY_WORDS,
        *MONTHS,
        *WEEKDAYS,
    }
    | TRUE_WORDS
    | FALSE_WORDS
    | {"www"}
)
_WORD_START = re.compile(r"(?<!\w)[\w~./]")
_CLAUSE_END = re.compile(r"\s*(?:[.,;:!?()]|$)")
_STATE_END = re.compile(r"\s*(?:[.,;!?()\u2014]|\s-\s|$)")
_WORD_AFTER = re.compile(r" +([A-Za-z][\w\-]*)")
_WORD_BEFORE = re.compile(r"([~\w'’.\-]+)\W*$")
_JOINER = re.compile(
    rf"\s*(?:,\s*(?:(?:{_alt(COORDINATORS)})\s+)?|\s(?:{_alt(COORDINATORS)})\s+)", re.I
)
_TRAILING = ".,;:!?)"
PHRASE_WORDS = 5  # a value phrase is a bare phrase of at most this many words
_BARE = rf"[\w][\w.+#\-/']*(?: [\w][\w.+#\-/']*){{0,{PHRASE_WORDS - 1}}}"
_PHRASE_END = r"(?=\s*(?:[.,;!?(\u2014]|\s-\s|$))"
_PHRASES = re.compile(
    rf"(?:(?<=\s)=|^\s*[-*]?[^:\n]*:|\bA:)\s+(?P<kv>{_BARE}){_PHRASE_END}"
    rf"|\b(?P<setter>{_alt(SETTERS)})\b[^.;:!?\n]*?\bto\s+(?P<to>{_BARE}){_PHRASE_END}"
    rf"|\b(?:{_alt(TAKERS)})\s+(?P<taken>{_BARE})\s+as\b",
    re.I | re.M,
)


@dataclass(frozen=True)
class Value:
    kind: str
    key: tuple  # normalised: equal keys are one value (see the module)
    start: int
    end: int
    approx: bool = False

    def same(self, other: Value) -> bool:
        """One value, however written: the same key, a date said with less precision
        ("6 August", "6 August 2027"), or near it when said roughly."""
        if self.kind != other.kind:
            return False
        if self.key == other.key:
            return True
        if self.kind == DATE and len(self.key) == len(other.key) == 3:
            return all(a == b or not a or not b for a, b in zip(self.key, other.key, strict=True))
        if not (self.approx or other.approx) or self.kind not in MEASURED:
            return False
        (*a, x), (*b, y) = self.key, other.key
        return a == b and abs(x - y) <= APPROX_TOLERANCE * max(abs(x), abs(y))

    def comparable(self, other: Value) -> bool:
        """The two can be one value changed: the same kind (a URL and a path are both
        locations), and for a rate the same thing counted ("5 jobs per minute", "5
        builds per minute" count two things)."""
        if {self.kind, other.kind} == {URL, PATH}:
            return True  # a location moved to another place
        if self.kind != other.kind:
            return False
        return self.kind != RATE or self.key[:2] == other.key[:2]


@functools.lru_cache(maxsize=PARSED)
def parse(text: str) -> tuple[Value, ...]:
    """The typed values of ``text`` in order (see the module)."""
    found, at = [], 0
    for start in _WORD_START.finditer(text):  # a value starts a word: try only there
        if start.start() < at or not _may_start(text, start.start()):
            continue
        if not (m := _SCANNER.match(text, start.start())):
            continue
        at = m.end()
        value = _value(_PATTERNS[_index(m)][0], m, text)
        if value is not None:
            found.append(_widened(value, text))
    return tuple(sorted([*_lists(found, text), *_phrases(text, found)], key=lambda v: v.start))


def _phrases(text: str, typed: list[Value]) -> list[Value]:
    """Bare phrases standing where a value stands ("key = V", "A: V", "set X to V",
    "uses V as its X"), none overlapping a typed value, none holding a determiner
    ("set up the CI to format the code" sets no value) or starting or ending with a
    stopword."""
    out = []
    for m in _PHRASES.finditer(text):
        name = next(n for n in ("kv", "to", "taken") if m.group(n) is not None)
        raw = m.group(name).rstrip(_TRAILING)
        start = m.start(name)
        end, words = start + len(raw), raw.lower().split()
        if any(w in DETERMINERS for w in words) or {words[0], words[-1]} & STOPWORDS:
            continue
        if any(v.start < end and start < v.end for v in typed):
            continue
        out.append(Value(PHRASE, tuple(s for w in words for s in stems(w)), start, end))
    return out


def _may_start(text: str, at: int) -> bool:
    """A value may start at ``at``: a digit, a path's or a rough value's mark, a word
    a value is written with (a number, a month, a state, "an"), or a word a path or
    URL goes on from ("src/", "https:", "s3://")."""
    if text[at].isdigit() or text[at] in "~./" or _SCHEME.match(text, at):
        return True
    word = _ALPHA.match(text, at)
    if not word:
        return False
    after = text[word.end() : word.end() + 1]
    if word.group().lower() in _TRIGGERS or after in ("/", ":"):
        return True
    return word.group() in ("v", "V") and after.isdigit()


def _index(m: re.Match) -> int:
    """Which of :data:`_PATTERNS` matched (the outer group that took part)."""
    return next(i for i in range(len(_PATTERNS)) if m.group(f"k{i}") is not None)


def _value(kind: str, m: re.Match, text: str) -> Value | None:
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    start, end = m.span()
    if kind in (URL, PATH):
        raw = m.group().rstrip(_TRAILING)
        if kind == PATH and all(part.lower() in COORDINATORS for part in raw.split("/")):
            return None  # "and/or"
        return Value(
            kind,
            (_path(raw) if kind == PATH else raw.lower().rstrip("/"),),
            start,
            start + len(raw),
        )
    key = _KEYS[kind](g, text, start, end)
    if key is not None and PERIOD in key:  # "every week": the period word stays a word
        start = m.start("mu")
    return None if key is None else Value(kind, key, start, end)


def _path(raw: str) -> str:
    while raw.startswith("./"):
        raw = raw[2:]
    return raw.rstrip("/") or "/"


def _number(raw: str) -> float:
    """A numeral ("1,000", "2.5") or number words ("two hundred", "twenty-five")."""
    raw = raw.lower()
    if raw[0].isdigit():
        return float(raw.replace(",", ""))
    if raw in ARTICLES or raw in PERIODS:
        return 1.0
    total = current = 0.0
    for word in re.split(r"[ -]+", raw):
        if word in SCALES:
            current = max(current, 1.0) * SCALES[word]
            if SCALES[word] >= 1000:
                total, current = total + current, 0.0
        else:
            current += NUMBER_WORDS[word]
    return total + current


def _components(raw: str) -> tuple[int, ...]:
    """A numeral's dotted parts, trailing zeros dropped ("2.0" is "2")."""
    parts = [int(p) for p in raw.replace(",", "").split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _measure(g: dict, text: str, start: int, end: int) -> tuple | None:
    """The kind its unit says, a period's mark ("every week"), the amount; none for a
    period word before a unit of another kind ("each GB")."""
    if "cd" in g:
        return _compound(g["cd"])
    kind, factor = UNITS[g["mu"].lower()]
    amount = g["mn"].rstrip(" -")
    if (fraction := amount.split()[0].lower()) in FRACTIONS:
        return (kind, FRACTIONS[fraction] * factor)
    period = (PERIOD,) if amount.lower() in PERIODS else ()
    if period and kind != DURATION:
        return None
    return (kind, *period, _number(amount) * factor)


def _compound(raw: str) -> tuple | None:
    """A duration said in parts, larger units first ("1h30m", "2 hours 15 minutes"):
    their sum (none if the units do not fall: two durations, not one)."""
    parts = [(float(p["amount"]), UNITS[p["unit"].lower()][1]) for p in _PART.finditer(raw)]
    if any(a[1] <= b[1] for a, b in zip(parts, parts[1:], strict=False)):
        return None
    return (DURATION, sum(amount * factor for amount, factor in parts))


def _rate(g: dict, text: str, start: int, end: int) -> tuple:
    amount = _number(g["rn"]) * (UNITS[g["ru"].lower()][1] if g.get("ru") else 1.0)
    counted = " ".join(stem(w) for w in g.get("rw", "").lower().split())
    return (
        UNITS[g["ru"].lower()][0] if g.get("ru") else "",
        counted,
        amount / UNITS[g["rp"].lower()][1],
    )


def _percent(g: dict, text: str, start: int, end: int) -> tuple:
    return (_number(g["pn"]),)


def _date(g: dict, text: str, start: int, end: int) -> tuple:
    if "iy" in g:
        return (int(g["iy"]), int(g["im"]), int(g["id"]))
    if "n1" in g:
        return (int(g["n1"]), int(g["n2"]), int(g["n3"]))
    for i in "123":
        if f"m{i}" in g:
            year, day = g.get(f"y{i}"), g.get(f"d{i}")
            return (int(year or 0), MONTHS[g[f"m{i}"].lower()], int(day or 0))
    raise AssertionError(g)


def _time(g: dict, text: str, start: int, end: int) -> tuple | None:
    if "dw" in g:
        return (DAY_WORDS[g["dw"].lower()],)
    hour = int(g.get("hh") or g.get("hh2") or g.get("hh3"))
    minute = int(g.get("mm") or g.get("mm3") or 0)
    half = g.get("ap") or g.get("ap2") or g.get("ap3")
    if hour > 24 or minute > 59 or (half and hour > 12):
        return None
    if half:
        hour = hour % 12 + HALF_DAY[half.lower()]
    return (float(hour * 60 + minute),)


def _plain_number(g: dict, text: str, start: int, end: int) -> tuple | None:
    """A numeral or number words; a number word that is a stopword too ("one", "once")
    only where it ends a clause or a content word follows it ("one replica"; else a
    pronoun or a conjunction, "the staging one is", "once the build passes"), and no
    number inside a noun phrase ("the v2 billing page")."""
    if "nw" in g:
        words = g["nw"].lower()
        if words in STOPWORDS and not (
            _CLAUSE_END.match(text, end) or _content_after(text, end) or _marked(text, start)
        ):
            return None
        return (int(_number(words)),)
    if _in_noun_phrase(text, start, end):
        return None
    return _components(g["nn"])


def _marked(text: str, start: int) -> bool:
    """A word that introduces a value right before ``start`` ("went with one", "prefers
    one"): a marker, or a stopword that is no determiner ("the staging one")."""
    before = _word_before(text, start)
    word = before.group(1).lower() if before else ""
    return word in MARKERS or (word in STOPWORDS and word not in DETERMINERS)


def _in_noun_phrase(text: str, start: int, end: int) -> bool:
    """A determiner right before and a content word right after: a modifier."""
    before = _word_before(text, start)
    return bool(before and before.group(1).lower() in DETERMINERS and _content_after(text, end))


def _content_after(text: str, end: int) -> bool:
    """A content word (no stopword) right after ``end``, in the same phrase."""
    after = _WORD_AFTER.match(text, end)
    return bool(after and after.group(1).lower() not in STOPWORDS)


def _word_before(text: str, start: int) -> re.Match | None:
    """The word right before ``start``, with nothing but spaces between."""
    before = _WORD_BEFORE.search(text, 0, start)
    if before and not text[before.end(1) : start].strip():
        return before
    return None


def _weekday(g: dict, text: str, start: int, end: int) -> tuple | None:
    """A day of the week, but not one naming a kind of thing ("the Monday standup",
    "Tuesday's sync")."""
    if _content_after(text, end) or text[end : end + 2].lower() in ("'s", "’s"):
        return None
    return (WEEKDAYS[g["wd"].lower()],)


def _state(g: dict, text: str, start: int, end: int) -> tuple | None:
    if "cs" in g:
        return (bool(CLAUSE_STATES[g["cs"].lower()]),) if _switched(text, start, end) else None
    return (g["st"].lower() in TRUE_WORDS,)


def _switched(text: str, start: int, end: int) -> bool:
    """An "on"/"off" word states a state: it ends its clause ("set the flag to on.",
    "..., switched off (YAML)"), follows a switch verb ("turned off", "switch on the
    cache") or comes before a scope word ("keep caching off for the API")."""
    if _STATE_END.match(text, end):
        return True
    before, after = _word_before(text, start), _WORD_AFTER.match(text, end)
    return bool(
        (before and before.group(1).lower() in SWITCHES)
        or (after and after.group(1).lower() in SCOPES)
    )


_KEYS = {
    _MEASURE: _measure,
    RATE: _rate,
    PERCENT: _percent,
    DATE: _date,
    TIME: _time,
    WEEKDAY: _weekday,
    NUMBER: _plain_number,
    STATE: _state,
}


def _widened(value: Value, text: str) -> Value:
    """The value with the words before it that belong to it: a duration's kind read
    from its unit, "about" (said roughly), for a state the negations before it ("not
    enabled", "no longer enabled") folded into its polarity, and for a duration a
    period word before it read as its mark ("every 2 weeks", as "every week") but left
    a word of the text (the same in both: "every 2 weeks", "every week")."""
    if value.kind == _MEASURE:  # the unit says whether it is a duration or a size
        kind, *key = value.key
        value = Value(kind, tuple(key), value.start, value.end)
    start, key, approx = value.start, value.key, False
    for _ in range(2):
        before = _word_before(text, start)
        if not before:
            break
        word = before.group(1).lower()
        if value.kind == STATE and (word in NEGATIONS or word in CHANGE_WORDS):
            key = (not key[0],) if word in NEGATIONS else key
        elif value.kind == DURATION and word in PERIODS:
            key = key if key[:1] == (PERIOD,) else (PERIOD, *key)
            break  # the period word stays a word of the text
        elif word in APPROX or word == "~":
            approx = True
        else:
            break
        start = before.start(1)
    if text[start - 1 : start] == "~":
        start, approx = start - 1, True
    return Value(value.kind, key, start, value.end, approx)


def _lists(found: list[Value], text: str) -> list[Value]:
    """Values of one kind joined by commas or coordinators, as one list value."""
    out: list[Value] = []
    for value in found:
        prev = out[-1] if out else None
        if prev and prev.kind == value.kind and _JOINER.fullmatch(text, prev.end, value.start):
            keys = prev.key[1] if prev.key[:1] == ("list",) else (prev.key,)
            joined = tuple(sorted({*keys, value.key}, key=repr))
            out[-1] = Value(value.kind, ("list", joined), prev.start, value.end, prev.approx)
        else:
            out.append(value)
    return out


def masked(text: str, values: tuple[Value, ...], names: list[str] | None = None) -> str:
    """``text`` with each value replaced by a placeholder (read as one quoted name):
    its kind, or its name in ``names``."""
    out, at = [], 0
    order = sorted(range(len(values)), key=lambda i: values[i].start)
    for i in order:
        v = values[i]
        out += [text[at : v.start], f" `<{names[i] if names else v.kind}>` "]
        at = v.end
    out.append(text[at:])
    return "".join(out)
