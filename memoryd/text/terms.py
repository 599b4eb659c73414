"""Query analysis: tokens, normalized terms, and what kind of question was asked.

Tokenization is the index's own: the query goes through the same FTS5
tokenizers the per-project tables use (``unicode61 remove_diacritics 2`` for
words, ``porter`` on top of it for the indexed stems), obtained from SQLite
through apsw, so a query term and an indexed term are equal exactly when
FTS5 would match them.

Word lists live in :mod:`memoryd.text.lexicon` as data files, each with its
rule at the top. A question that is not plainly English gets, for each of its
words, the word's other Spanish inflections (Snowball Spanish stemmer) and its
English alternative from a small general-language ES->EN list ("archivo" ->
"file") as *alternatives*: the term matches a chunk holding the word as asked,
another of its forms or the English word, so Spanish evidence and English
evidence both answer a Spanish question. Nothing generates answers or calls a
model.

Words are split into three roles:

* **stopwords** (EN and ES function words): dropped;
* **context words**: words *about* the act of remembering or asking
  ("remind", "mentioned", "previous", "conversation", "recordar"). They
  describe the conversation with the memory, not the fact sought, so they
  never count as focus terms (DESIGN.md: memory phrasing never appears in
  the evidence);
* **content terms**: everything else; the gate works on these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

import apsw

from memoryd.text.lazy_re import Lazy
from memoryd.text.lexicon import english_for, spanish_forms, stopwords, word_list

_TOKENIZER_CONN = apsw.Connection(":memory:")
_WORDS = _TOKENIZER_CONN.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])
_STEMS = _TOKENIZER_CONN.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
_DOC = apsw.FTS5_TOKENIZE_DOCUMENT
_QUERY = apsw.FTS5_TOKENIZE_QUERY


def words(text: str) -> list[str]:
    """Lowercased, diacritic-free word tokens, as unicode61 splits them."""
    return _WORDS(
        text.encode("utf-8"), _QUERY, None, include_offsets=False, include_colocated=False
    )


def stem(word: str) -> str:
    """The indexed form of one word (porter over unicode61)."""
    out = _STEMS(word.encode("utf-8"), _QUERY, None, include_offsets=False)
    return out[0][0] if out else word


@cache
def inflections(word: str) -> tuple[str, ...]:
    """Other regular English forms of ``word`` (its stem and its word plus an ending
    of ``lexicon/en_endings.txt``, a final consonant doubled or a "y" for porter's
    "i"), kept when porter maps them to the same stem: "teach" -> "teaching",
    "teaches"; "retired" -> "retire", "retirement". Porter relates them in stemmed
    indexes; a store of exact words needs them spelled out."""
    st = stem(word)
    if len(st) < 3 or not st.isalpha():
        return ()
    bases = {word, st, st + "e", st + st[-1]}
    if st.endswith("i"):
        bases.add(st[:-1] + "y")
    if st.endswith("e"):
        bases.add(st[:-1])
    forms = {b + e for b in bases for e in _EN_ENDINGS} | bases
    return tuple(sorted(f for f in forms if f != word and stem(f) == st))


def stems(text: str) -> list[str]:
    """Indexed forms of every token of ``text``, in order."""
    # without colocated tokens apsw returns the strings themselves (no tuple each)
    return _STEMS(text.encode("utf-8"), _DOC, None, include_offsets=False, include_colocated=False)


# -- vocabulary ---------------------------------------------------------------------

STOPWORDS_EN = word_list("stopwords_en.txt")
STOPWORDS_ES = word_list("stopwords_es.txt")
STOPWORDS = stopwords()
# Words about remembering, asking and the conversation itself (EN and ES). They
# are how a user addresses a memory, never part of the fact remembered.
CONTEXT_WORDS = word_list("context_words.txt")
_EN_ENDINGS = sorted(word_list("en_endings.txt"))

# Explicit contrast markers: a verification question ("is X the primary
# store?") may be answered by evidence that states the contrary.
CONTRAST_WORDS = frozenset(
    [
        "not",
        "no",
        "never",
        "instead",
        "rather",
        "unlike",
        "but",
        "however",
        "although",
        "whereas",
        "only",
        "except",
        "without",
        "nor",
        "neither",
        "sino",
        "pero",
        "aunque",
        "nunca",
        "solo",
        "excepto",
        "sin",
        "lugar",
        "vez",
    ]
)

# Auxiliary verbs that open a yes/no (verification) question, EN and ES.
_VERIFY_OPENERS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "does",
        "do",
        "did",
        "can",
        "could",
        "should",
        "will",
        "would",
        "has",
        "have",
        "es",
        "son",
        "era",
        "fue",
        "esta",
        "estan",
        "usa",
        "usan",
        "tiene",
        "tienen",
        "hay",
        "puede",
        "pueden",
    ]
)

# After "how", the next word belongs to the interrogative ("how many",
# "how long", "how often"), not to the fact asked about.
_INTERROGATIVE_HEADS = frozenset(["how", "cuanto", "cuantos", "cuanta", "cuantas", "cada"])

# Units a question asks its answer in ("how many *days*", "how many *weeks*
# passed", "*days ago*", "cuantos *dias*"): the form of the answer, not a fact
# the evidence states, so after an interrogative they are context words.
_ANSWER_UNITS = frozenset(
    [
        "second",
        "seconds",
        "minute",
        "minutes",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "time",
        "times",
        "ago",
        "old",
        "segundos",
        "minutos",
        "horas",
        "dia",
        "dias",
        "semana",
        "semanas",
        "mes",
        "meses",
        "ano",
        "anos",
        "veces",
    ]
)

# Nouns that, followed by "of", ask for the form of the answer (a quantity, an
# ordering) rather than name a fact: "the total number of days", "the order of".
_QUANTITY_NOUNS = frozenset(
    ["number", "count", "amount", "order", "sequence", "numero", "cantidad", "orden"]
)
# Ends of an ordering asked for ("from earliest to latest", "from first to last").
_ORDER_WORDS = frozenset(
    ["earliest", "latest", "first", "last", "oldest", "newest", "primero", "ultimo"]
)

_FROM_TO = ("from", "to", "desde", "hasta")


def _after_from(toks: list[str], i: int) -> bool:
    """``toks[i]`` follows "from"/"to", an article between or not ("from the earliest")."""
    before = toks[max(0, i - 2) : i]
    if before and before[-1] in ("the", "el", "la", "lo"):
        before = before[:-1]
    return bool(before) and before[-1] in _FROM_TO


_IDENTIFIER = Lazy(
    r"(?<![\w./-])("
    r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+"  # dotted.name
    r"|[a-z]+[A-Z][a-z]+[A-Z]\w*"  # camelCase of three or more humps
    r"|[A-Z][a-z]+[A-Z][a-z]+[A-Z]\w*"  # CamelCase of three or more humps
    r"|[A-Z]{2,}[a-z]+[A-Z]\w*"  # JSONDecodeError
    r"|[a-z]{2,}[A-Z][a-z]\w*"  # getLogger (not iPad)
    r"|[A-Za-z]\w*_\w+"  # snake_case
    r")(?![\w/])"
)
_QUOTED = Lazy(r"(?:^|(?<=\s))[\"“'‘«]([^\"”'’»]{1,80})[\"”'’»](?=[\s.,;:?!)]|$)")
_PATH = Lazy(r"(?<![\w])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4})(?![\w/])")
_SPEAKER_YOU = Lazy(
    r"\byou\s+(?:\w+\s+)?(?:said|mentioned|recommended|suggested|told|gave|provided|listed"
    r"|described|explained|shared|wrote|offered|proposed|came up)\b"
    r"|\bdid you\b|\byour (?:suggestion|recommendation|advice|answer|response|list|idea)"
    r"|\b(?:dijiste|mencionaste|recomendaste|sugeriste|propusiste)\b",
    re.I,
)
_SPEAKER_I = Lazy(r"\b(i|i'm|i've|i'd|my|me|mine|myself|yo|mi|mis|me)\b", re.I)
# "I said / I mentioned / I told you": the user's own words, even about the conversation
_SPEAKER_I_SAID = Lazy(
    r"\bI\s+(?:\w+\s+)?(?:said|say|mentioned|mention|told|tell|shared|share|wrote|write"
    r"|described|describe|listed|list)\b"
    r"|\b(?:dije|mencione|conte)\b",
    re.I,
)
# A question about the shared conversation ("our previous chat", "we discussed", "remind
# me of ..."): its fact may have been said by either side, so no speaker is asked.
_ABOUT_CONVERSATION = Lazy(
    r"\b(?:our|we|us)\b[^.?!]{0,40}\b(?:conversations?|chats?|chatted|discuss\w*|talk\w*"
    r"|exchanges?)\b|\bremind\s+me\b|\b(?:conversacion|charla|hablamos|recuerdame)\b",
    re.I,
)


@dataclass(frozen=True)
class Term:
    word: str  # the word as asked (lowercase, diacritics removed)
    stem: str  # its indexed form
    explicit: bool  # a named entity / identifier / quoted: kept even when ubiquitous
    position: int  # order in the query
    # other inflections of the same verb ("buy": "bought"); porter does not relate
    # irregular forms, so a term matches a chunk holding any of them
    forms: tuple[str, ...] = ()
    alts: tuple[str, ...] = ()  # their stems

    @property
    def all_stems(self) -> tuple[str, ...]:
        return (self.stem, *self.alts)


@dataclass
class Query:
    text: str
    terms: list[Term] = field(default_factory=list)  # content terms, de-duplicated by stem
    context: list[str] = field(default_factory=list)  # memory phrasing and dropped heads
    paths: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    verification: bool = False
    entities: list[list[str]] = field(default_factory=list)  # runs of capitalized words
    alternatives: list[set[str]] = field(default_factory=list)  # stems of each compared side
    speaker: str | None = None  # "user" (first person), "assistant" ("you said"), or None
    possessive: bool = False  # asks for an attribute of a name ("Guido's wife", "wife of Guido")


# An attribute of a name: "Rossum's wife", "the wife of Guido", "la esposa de Guido".
_POSSESSIVE = Lazy(
    r"(?<!^)(?<![.?!¿¡]\s)\b[A-Z][\w-]*['’]s\s+[a-z]"
    r"|\b[a-z][a-z-]+\s+(?:of|de|del)\s+(?:the\s+|la\s+|el\s+)?[A-Z]"
)

# Irregular English verbs: base, past, past participle. Porter stems "buy" and
# "bought" apart, so a question in one tense would miss evidence in another. Forms
# that are also common other words ("left", "found", "saw", "felt", "lead") are not
# listed; verbs in STOPWORDS (get, go, make, give, ...) need none.
_IRREGULAR_VERBS = """
arise arose arisen; awake awoke awoken; bear bore born; beat beat beaten; become became
become; begin began begun; bend bent bent; bet bet bet; bid bid bid; bind bound bound;
bite bit bitten; bleed bled bled; blow blew blown; break broke broken; breed bred bred;
bring brought brought; build built built; burn burnt burnt; buy bought bought; catch
caught caught; choose chose chosen; cling clung clung; come came come; cost cost cost;
creep crept crept; deal dealt dealt; dig dug dug; draw drew drawn; dream dreamt dreamt;
drink drank drunk; drive drove driven; eat ate eaten; feed fed fed; fight fought fought;
flee fled fled; fly flew flown; forbid forbade forbidden; forget forgot forgotten;
forgive forgave forgiven; freeze froze frozen; grow grew grown; hang hung hung; hear
heard heard; hide hid hidden; hit hit hit; hold held held; hurt hurt hurt; keep kept
kept; kneel knelt knelt; know knew known; lend lent lent; lose lost lost; mean meant
meant; meet met met; pay paid paid; prove proved proven; quit quit quit; ride rode
ridden; ring rang rung; run ran run; sell sold sold; send sent sent; sew sewed sewn;
shake shook shaken; shine shone shone; shoot shot shot; show showed shown; shrink shrank
shrunk; sing sang sung; sink sank sunk; sit sat sat; sleep slept slept; slide slid slid;
speak spoke spoken; speed sped sped; spend spent spent; spin spun spun; steal stole
stolen; stick stuck stuck; sting stung stung; strike struck struck; swear swore sworn;
sweep swept swept; swim swam swum; swing swung swung; take took taken; teach taught
taught; tear tore torn; think thought thought; throw threw thrown; understand understood
understood; wake woke woken; wear wore worn; weave wove woven; weep wept wept; win won
won; write wrote written; choose chose chosen; fall fell fallen; forgo forwent forgone;
undertake undertook undertaken; withdraw withdrew withdrawn; overcome overcame overcome
"""
# Forms that are as often another word (a noun, an adjective): never related.
_AMBIGUOUS_FORMS = frozenset(
    [
        "bear",
        "bore",
        "born",
        "bit",
        "ring",
        "rang",
        "rung",
        "sink",
        "sank",
        "sunk",
        "tear",
        "tore",
        "show",
        "showed",
        "shown",
        "stick",
        "speed",
        "sped",
        "fell",
        "bound",
        "mean",
        "meant",
        "hang",
        "hung",
        "sewn",
        "quit",
        "hit",
        "bet",
        "bid",
    ]
)
_INFLECTIONS: dict[str, tuple[str, ...]] = {}
for _group in _IRREGULAR_VERBS.replace("\n", " ").split(";"):
    _forms = tuple(f for f in dict.fromkeys(_group.split()) if f not in _AMBIGUOUS_FORMS)
    for _f in _forms if len(_forms) > 1 else ():
        _INFLECTIONS.setdefault(_f, _forms)

# An ordering adverb closing a clause: the question asks which came first/last.
_ORDER_ADVERBS = frozenset(["first", "last", "earlier", "later", "sooner", "primero", "antes"])
_ORDER_ASKED = Lazy(r"\b(?:" + "|".join(_ORDER_ADVERBS) + r")(?=\s*[,?])", re.I)

_ONLY_EN = STOPWORDS_EN - STOPWORDS_ES
_ONLY_ES = STOPWORDS_ES - STOPWORDS_EN

_TIME_UNITS = frozenset(
    ["day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years"]
    + ["hour", "hours", "night", "nights", "morning", "evening", "afternoon"]
    + ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    + ["dia", "dias", "semana", "semanas", "mes", "meses", "ano", "anos", "noche"]
    + ["lunes", "martes", "miercoles", "jueves", "viernes", "sabado", "domingo"]
)
# Words before a time unit that make it relative to now ("last week", "the past two
# months", "this weekend", "a few days ago").
_RELATIVE = frozenset(
    ["last", "past", "this", "next", "previous", "coming", "upcoming", "recent", "few"]
    + ["couple", "several", "a", "an", "one", "two", "three", "four", "five", "six", "seven"]
    + ["eight", "nine", "ten", "of", "pasado", "pasada", "ultimo", "ultima", "este", "esta"]
    + ["proximo", "hace", "unos", "unas"]
)
# Anchors relative to the conversation's own date.
_NOW_WORDS = frozenset(
    ["ago", "lately", "recently", "today", "yesterday", "tonight", "tomorrow", "recientemente"]
    + ["hoy", "ayer", "manana", "anoche", "ultimamente"]
)


def _relative_time(toks: list[str]) -> set[int]:
    """Token positions of relative time expressions: "last Saturday", "two weeks ago",
    "the past month", "this weekend", "lately"."""
    out: set[int] = set()
    for i, w in enumerate(toks):
        if w in _NOW_WORDS:
            out.add(i)
            continue
        if w not in _TIME_UNITS:
            continue
        j = i - 1
        while j >= 0 and (toks[j] in _RELATIVE or toks[j].isdigit()):
            j -= 1
        relative = j < i - 1 and toks[i - 1] != "of"
        if relative or (i + 1 < len(toks) and toks[i + 1] in ("ago", "before", "after")):
            out.update(k for k in range(j + 1, i + 1) if toks[k] not in STOPWORDS)
    return out


# Lowercase particles inside personal names ("van", "da", "de la", "bin").
_NAME_PARTICLES = frozenset(
    ["van", "von", "der", "den", "de", "del", "della", "da", "di", "du", "la", "le", "bin", "ibn"]
)


def _capitalized_runs(text: str) -> list[list[str]]:
    """Names: runs of words written with a capital that are not merely sentence-initial.

    "the Institute of Marine Studies" gives ["institute"], ["marine", "studies"] (a lowercase
    word ends a run); "my iPad" gives ["ipad"] (an inner capital counts even at
    the start of a sentence).
    """
    runs: list[list[str]] = []
    current: list[str] = []
    sentence_start = True
    prev = ""
    for m in re.finditer(r"[^\W\d_][\w'’-]*|[.?!¿¡,;:()]", text):
        tok = m.group(0)
        if len(tok) == 1 and tok in ".?!¿¡,;:()":
            # "Dr." / "St." after a short capitalized word is an abbreviation
            abbreviation = tok == "." and current and len(prev) <= 3 and prev[:1].isupper()
            if not abbreviation:
                sentence_start = sentence_start or tok in ".?!¿¡"
            else:
                continue
            if current:
                runs.append(current)
                current = []
            continue
        tok = re.sub(r"['’]s$", "", tok)
        named = (tok[0].isupper() and not sentence_start) or (
            any(c.isupper() for c in tok[1:]) and not tok.isupper()
        )
        if tok.lower() in ("i", "i'm", "i've", "i'd"):
            named = False
        if (
            not named
            and current
            and tok.lower() in _NAME_PARTICLES
            and (nxt := text[m.end() :].lstrip()[:1])
            and nxt.isupper()
        ):
            named = True  # "Guido van Rossum", "Leonardo da Vinci"
        if named:
            current.extend(w for w in words(tok) if w not in STOPWORDS)
        elif current:
            runs.append(current)
            current = []
        sentence_start = False
        prev = tok
    if current:
        runs.append(current)
    return [r for r in runs if r]


# Conjunctions that join the alternatives of a comparison question ("which came
# first, A or B?", "between A and B", "A compared to B").
_ALTERNATIVE_SPLIT = frozenset(["or", "and", "versus", "vs", "compared", "o", "y", "contra"])


def _run_spans(toks: list[str], runs: list[list[str]]) -> list[tuple[int, int]]:
    """Token spans [start, end) of the capitalized runs, in order of appearance."""
    spans: list[tuple[int, int]] = []
    at = 0
    for run in runs:
        for i in range(at, len(toks) - len(run) + 1):
            if toks[i : i + len(run)] == run:
                spans.append((i, i + len(run)))
                at = i + len(run)
                break
    return spans


# Words allowed between a coordinating word and a name ("and in Bergen", "compared to
# the Quito one"), EN and ES.
_COORD_GLUE = frozenset(["the", "in", "to", "with", "at", "a", "an", "el", "la", "en", "con"])


def _coordinated(toks: list[str], spans: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Groups of names joined by and/or/versus/compared: [[span, span, ...], ...]."""
    groups: list[list[tuple[int, int]]] = []
    for k in range(len(spans) - 1):
        between = toks[spans[k][1] : spans[k + 1][0]]
        if (
            between
            and any(w in _ALTERNATIVE_SPLIT for w in between)
            and all(w in _ALTERNATIVE_SPLIT or w in _COORD_GLUE for w in between)
        ):
            if groups and groups[-1][-1] == spans[k]:
                groups[-1].append(spans[k + 1])
            else:
                groups.append([spans[k], spans[k + 1]])
    return groups


def _other_forms(word: str, english: bool, spanish: bool) -> tuple[str, ...]:
    """Other words a term matches: irregular English forms ("buy": "bought"); in a
    question that is not plainly English, the word's English alternative (never
    instead of the word: Spanish evidence still matches) and, when it is plainly
    Spanish, the word's other Spanish inflections."""
    forms = [f for f in _INFLECTIONS.get(word, ()) if f != word]
    if spanish:
        forms.extend(spanish_forms(word))
    if not english:
        en = english_for(word)
        if en is not None and en != word:
            forms.append(en)
    return tuple(dict.fromkeys(forms))


def analyze(text: str) -> Query:  # noqa: C901 (listed in pyproject.toml)
    """Split a query into content terms, context words, paths and identifiers."""
    q = Query(text=text)
    q.paths = [p for p in _PATH.findall(text) if "/" in p or "." in p]
    q.identifiers = [m for m in _IDENTIFIER.findall(text) if m not in q.paths]
    quoted = set()
    for m in _QUOTED.finditer(text):
        quoted.update(words(m.group(1)))
    runs = _capitalized_runs(text)
    q.entities = runs
    explicit_words = {w for r in runs for w in r} | (quoted - STOPWORDS)
    for ident in q.identifiers:
        explicit_words.update(words(ident))
    toks = words(text)
    first = toks[0] if toks else ""
    second = toks[1] if len(toks) > 1 else ""
    # "Is X the primary store?" verifies; "Can you remind me..." is a request.
    q.verification = first in _VERIFY_OPENERS and second not in ("you", "u", "usted")
    seen: set[str] = set()
    positions: dict[str, list[int]] = {}
    skip_next = False
    asks_quantity = False
    temporal = _relative_time(toks)
    # "Which did I do first, A or B?", "who arrived last?": the ordering asked for
    order_at = {m.start() for m in _ORDER_ASKED.finditer(text)}
    if order_at:
        spans = [m.start() for m in re.finditer(r"[^\W_]+", text)]
        temporal.update(
            i
            for i, at in enumerate(spans[: len(toks)])
            if at in order_at and toks[i] in _ORDER_ADVERBS
        )
    # Spanish normalization only for questions that are not plainly English: "social
    # media" and "a red car" are English words, not "medio" and "red" (network).
    en = sum(w in _ONLY_EN for w in toks)
    es = sum(w in _ONLY_ES for w in toks) + 2 * bool(re.search("[¿¡ñ]", text))
    english = en > es
    spanish = es > en  # a question with neither is keywords: known words get their English
    for i, w in enumerate(toks):
        if i in temporal:
            # "last Saturday", "two weeks ago", "the past month": when, relative to the
            # conversation's dates; the evidence says what happened, not this phrase
            q.context.append(w)
            continue
        if w in _QUANTITY_NOUNS and i + 1 < len(toks) and toks[i + 1] in ("of", "de"):
            # "the number of days", "el numero de": the form of the answer, like "how many"
            q.context.append(w)
            asks_quantity = True
            continue
        if skip_next:
            skip_next = False
            q.context.append(w)
            asks_quantity = True
            continue
        if w in _INTERROGATIVE_HEADS:
            skip_next = w == "how"
            asks_quantity = asks_quantity or w != "how"
            continue
        if w == "ago" or (asks_quantity and w in _ANSWER_UNITS):
            q.context.append(w)
            continue
        if w in CONTEXT_WORDS:
            q.context.append(w)
            continue
        if w in ("compared", "versus", "vs") or (w in _ORDER_WORDS and _after_from(toks, i)):
            # comparison markers; "from (the) earliest to (the) latest": the answer's form
            q.context.append(w)
            continue
        if (w in STOPWORDS and w not in explicit_words) or (len(w) == 1 and w.isascii()):
            continue
        s = stem(w)
        positions.setdefault(s, []).append(i)
        if not s or s in seen:
            continue
        forms = _other_forms(w, english, spanish)
        alts = tuple(dict.fromkeys(a for a in map(stem, forms) if a and a != s))
        seen.add(s)
        seen.update(alts)
        q.terms.append(Term(w, s, w in explicit_words, i, forms, alts))
    # Alternatives of a comparison: the terms of each side of "or"/"and"/"compared".
    bounds = [i for i, w in enumerate(toks) if w in _ALTERNATIVE_SPLIT]
    if bounds:
        edges = [-1, *bounds, len(toks)]
        parts = [
            {t.stem for t in q.terms if any(edges[k] < i < edges[k + 1] for i in positions[t.stem])}
            for k in range(len(edges) - 1)
        ]
        parts = [p for p in parts if p]
        if len(parts) > 1:
            every = {t.stem for t in q.terms}
            for k, part in enumerate(parts):
                others = set().union(*(p for j, p in enumerate(parts) if j != k))
                alt = every - (others - part)
                if len(alt) >= 2 and alt != every:
                    q.alternatives.append(alt)
    # Coordinated names ("in Oslo and Bergen", "Lima compared to Quito", "Ana or
    # Raj"): each name with the rest of the question is one side.
    spans = _run_spans(toks, runs)
    stem_of = {t.word: t.stem for t in q.terms}
    for group in _coordinated(toks, spans):
        names = [{stem_of[w] for w in toks[a:b] if w in stem_of} for a, b in group]
        every = {t.stem for t in q.terms}
        for k, name in enumerate(names):
            others = set().union(*(n for j, n in enumerate(names) if j != k)) - name
            alt = every - others
            if name and len(alt) >= 2 and alt != every and alt not in q.alternatives:
                q.alternatives.append(alt)
    q.possessive = bool(_POSSESSIVE.search(text))
    you = bool(_SPEAKER_YOU.search(text))
    me = bool(_SPEAKER_I.search(text))
    if you:
        q.speaker = "assistant"
    elif _SPEAKER_I_SAID.search(text) or (me and not _ABOUT_CONVERSATION.search(text)):
        q.speaker = "user"
    return q
