"""The evidence-coverage gate (DESIGN.md, "Search and abstention").

Rules, as DESIGN.md states them, and how each is read here:

* **Focus terms** are the query's normalized content terms (see
  :mod:`memoryd.text.terms`: stopwords and memory phrasing removed, Spanish
  normalized) minus *corpus-ubiquitous* ones: a term held by more than
  ``ubiquitous`` (25%) of the project's chunks is context, not evidence (a
  project name, ``self`` in Python code, ``user`` in a chat log). *Explicit*
  terms are kept even when ubiquitous: names written with a capital,
  identifiers, quoted words; they are how a question names the subsystem
  it asks about.
* **Half coverage**: a candidate must hold at least half of the focus terms.
  Here the half is measured by *specificity* (each term weighted by its BM25
  idf in this project), and a candidate must also hold half of them by count
  -- a false-premise question ("the colour of my canoe") matches everything
  but its most specific term, and by count alone that is often half.
* **Rare corroboration**: in projects of at least 100 chunks, two matched
  focus terms that each occur in at most 1% of the chunks also admit a
  candidate (long investigative prompts whose answer omits the prose), provided
  together with the rest of what it matched it still holds a third of the
  query's specificity, and fewer than one chunk would hold them together by
  chance (N * prod(df / N), the corpus' own statistics): in a large corpus 1%
  is many chunks, and two such terms meet without being evidence.
* **Said together**: in a chunk's text, focus terms within ``window`` (12)
  tokens of each other -- one sentence, a help string, a name and its comment --
  admit it when they hold a third of the query's specificity and fewer than one
  such window of the corpus would hold them together by chance (N * L / w windows
  of w tokens in chunks of L tokens on average, each holding a term of df d with
  chance d/N * w/L; a chunk shorter than w is one window). A code base answers in
  its own words (a help string "flush the ledger before exiting" for "when is the
  ledger flushed if the tenant's quota runs out") and holds the asker's other
  words elsewhere or nowhere; what it states in one place is evidence the
  scattered half-coverage rule misses. The engine reads the texts
  (:func:`said_together`) and passes the finding, as it does an explicit contrast.
* **Verification** questions ("is X the primary store?") keep a candidate at
  30% coverage when it holds an explicit contrast (not, instead, but, ...)
  and the asked predicate (the most specific focus term after the subject).
* **Dense floor**: queries of at most two normalized terms may also pass on a
  cosine of at least 0.6 with the candidate; longer ones never on similarity
  alone.
* **Exact** paths and identifiers named in the query always pass.

Two question-level checks narrow further (never widen):

* **Named entities must be evidenced**: a capitalized name in the question
  ("Lisbon", "Dr. Okafor", evidenced by its most specific word) that no
  admitted candidate holds means the evidence is about something else; the
  search abstains and names it.
* **Rarest words must be evidenced**, as names, in questions about what a speaker
  said: in a corpus of at least ``rare_min_chunks`` chunks, a word of the question
  held by at most two chunks (or 0.05% of a large corpus) that no admitted
  candidate holds means the evidence is about something else ("my cousin's
  wedding" answered by an aunt's); numbers are values, not such words.
* **Names of several words are said together**: "Data Architect Lead" is
  evidenced only by a text holding its words in order within one sentence
  (:func:`memoryd.text.evidence.name_said`), not by "data architect" in one
  sentence and "lead" in another.
* **Names alone are not evidence about them**: when the question asks for
  an attribute of something it names -- a possessive ("Guido van Rossum's
  *wife*", "the *wife* of ...") or an asked term the project never contains --
  a candidate holding only the name's words and none of the other focus terms
  is refused, whatever its coverage. (Measured: applying this to every
  question that names something costs a point of LongMemEval recall, where
  users name a person and paraphrase the rest.)
* **Speaker attribution** (conversation transcripts with ``user:`` /
  ``assistant:`` lines): a first-person question ("my", "I") is about what
  the user said; one addressing what the assistant said ("you recommended")
  about the assistant's lines. The most specific focus term a candidate holds
  must then occur on that speaker's lines (measured: requiring the whole
  coverage there costs too much recall on LongMemEval).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field

from memoryd.search.stats import TermStats
from memoryd.text.terms import Query, Term


@dataclass(frozen=True)
class Tuning:
    ubiquitous: float = 0.25  # share of chunks above which a term is context
    half: float = 0.5
    rare_fraction: float = 0.01
    rare_min_chunks: int = 100
    rare_min_weight: float = 1 / 3
    window: int = 12  # tokens: focus terms this close are said together (see above)
    verify_coverage: float = 0.3
    dense_floor: float = 0.6
    dense_max_terms: int = 2
    weighted: bool = True  # specificity-weighted half coverage (False: count only)
    entities: bool = True  # question-level named-entity check
    # question-level: a word held by at most max(rarest_chunks, rarest_fraction * N)
    # chunks must be held by some admitted candidate, as a name must
    rarest_fraction: float = 0.0005
    rarest_chunks: int = 2
    # speaker attribution on transcripts: the asked speaker must have said the most
    # specific focus term a candidate holds (off in the literal rules)
    speaker: bool = True
    alternatives: bool = True  # comparison questions: half of one compared side suffices
    attributes: bool = True  # a question naming something: a candidate needs a non-name term
    # rank fusion weights beside BM25 (1.0): specificity-weighted coverage of the
    # chunk, of its file (document context), and the dense route
    w_coverage: float = 1.0
    w_file: float = 1.0
    w_dense: float = 0.25


LITERAL = Tuning(
    weighted=False,
    entities=False,
    speaker=False,
    alternatives=False,
    attributes=False,
    rare_min_weight=0.0,
    w_coverage=0,
    w_file=0,
)
DEFAULT = Tuning()


@dataclass
class Plan:
    """What the gate needs to know about one query in one project generation."""

    query: Query
    focus: list[Term]
    alias: dict[str, str]  # stem of another inflection -> the focus term's stem
    context_terms: list[Term]  # ubiquitous, dropped from focus
    weights: dict[str, float]
    rare: set[str]
    df: dict[str, int]  # chunks holding each term (its commonest form)
    chunks: int
    avg_len: float  # tokens per chunk on average (0: unknown, no windows judged)
    entities: list[Term]
    attributes: set[str]  # focus terms outside the names (only when the query names one)
    alternatives: list[set[str]]
    predicate: str | None
    short: bool
    tuning: Tuning
    total_weight: float = field(init=False)
    focus_stems: list[str] = field(init=False)
    _verdicts: dict = field(init=False, default_factory=dict, repr=False)
    memo: dict = field(init=False, default_factory=dict, repr=False)  # readers' per-plan work

    def __post_init__(self) -> None:
        self.focus_stems = [t.stem for t in self.focus]
        self.total_weight = sum(self.weights[s] for s in self.focus_stems) or 1.0


def plan(query: Query, stats: TermStats, tuning: Tuning = DEFAULT) -> Plan:
    focus: list[Term] = []
    dropped: list[Term] = []
    if hasattr(stats, "prefetch"):
        stats.prefetch([s for t in query.terms for s in t.all_stems])
    # a term with inflections ("buy", "bought") counts as often as its commonest form
    df = {t.stem: max(stats.df(s) for s in t.all_stems) for t in query.terms}
    for t in query.terms:
        # "across much of the corpus": a share of the chunks, and more than a couple
        share = df[t.stem] / stats.chunks if stats.chunks else 0.0
        if share > tuning.ubiquitous and df[t.stem] > 2 and not t.explicit:
            dropped.append(t)
        else:
            focus.append(t)
    weights = {t.stem: _idf(stats.chunks, df[t.stem]) for t in query.terms}
    rare = set()
    if stats.chunks >= tuning.rare_min_chunks:
        rare = {t.stem for t in focus if 0 < df[t.stem] <= tuning.rare_fraction * stats.chunks}
    predicate = None
    if query.verification and len(focus) > 1:
        rest = focus[1:]
        predicate = max(rest, key=lambda t: weights[t.stem]).stem
    # A name is evidenced by its most specific word ("Dr. Johnson" by "johnson").
    entities: list[Term] = []
    if tuning.entities:
        by_word = {t.word: t for t in focus}
        for run in query.entities:
            named = [by_word[w] for w in run if w in by_word]
            if named:
                rarest = max(named, key=lambda t: weights[t.stem])
                if rarest not in entities:
                    entities.append(rarest)
    focus_set = {t.stem for t in focus}
    named = {t.stem for t in focus if any(t.word in run for run in query.entities)}
    attributes = focus_set - named if named and tuning.attributes else set()
    if not (query.possessive or any(df[a] == 0 for a in attributes)):
        attributes = set()
    alternatives = [a & focus_set for a in query.alternatives]
    alternatives = [a for a in alternatives if len(a) >= 2 and a != focus_set]
    alias = {a: t.stem for t in focus for a in t.alts}
    return Plan(
        query=query,
        alias=alias,
        focus=focus,
        context_terms=dropped,
        weights=weights,
        rare=rare,
        df=df,
        chunks=stats.chunks,
        avg_len=stats.avg_len,
        entities=entities,
        attributes=attributes,
        alternatives=alternatives,
        predicate=predicate,
        short=len(query.terms) <= tuning.dense_max_terms,
        tuning=tuning,
    )


def _idf(n: int, d: int) -> float:
    """BM25's idf (as :meth:`TermStats.idf`), always positive."""
    return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    rule: str  # which rule admitted it, or why it was refused
    coverage: float  # share of focus terms held (by count)
    weighted: float  # share of focus specificity held


def evidence(v: Verdict, cosine: float | None = None) -> float:
    """How much of the question an admitted candidate evidences, 0..1, comparable
    across sources (every source is judged by this gate on the same question): the
    share of the focus terms' specificity (idf) it holds; a path or identifier the
    question names, 1; a candidate admitted on the dense floor, its cosine when that
    is higher."""
    if v.rule == "exact":
        return 1.0
    if v.rule == "dense floor" and cosine is not None:
        return max(v.weighted, min(1.0, cosine))
    return v.weighted


def coverage(p: Plan, matched: set[str]) -> tuple[float, float]:
    held = [s for s in p.focus_stems if s in matched]
    if not p.focus:
        return 0.0, 0.0
    return len(held) / len(p.focus), sum(p.weights[s] for s in held) / p.total_weight


def _half(p: Plan, matched: set[str], stems: list[str]) -> bool:
    held = [s for s in stems if s in matched]
    count = len(held) / len(stems)
    if not p.tuning.weighted:
        return count >= p.tuning.half
    weighted = sum(p.weights[s] for s in held) / (sum(p.weights[s] for s in stems) or 1.0)
    return count >= p.tuning.half and weighted >= p.tuning.half


def admit(
    p: Plan,
    matched: set[str],
    *,
    exact: bool = False,
    contrast: bool = False,
    together: bool = False,
    cosine: float | None = None,
) -> Verdict:
    """Whether one candidate is evidence for the query (memoized per plan on the focus
    terms held: many candidates hold the same ones). A cosine counts only where every
    lexical rule refused (the dense floor is the last rule), so the lexical verdict is
    made once per term set, not once per candidate's cosine."""
    key = (frozenset(matched.intersection(p.focus_stems)), exact, contrast, together)
    hit = p._verdicts.get(key)
    if hit is None:
        hit = p._verdicts[key] = _admit(p, key[0], exact, contrast, together)
    if hit.rule != _INSUFFICIENT or not p.short or cosine is None:
        return hit
    if cosine >= p.tuning.dense_floor:
        return Verdict(True, "dense floor", hit.coverage, hit.weighted)
    return hit


_INSUFFICIENT = "insufficient coverage"


def _admit(
    p: Plan, matched: frozenset[str], exact: bool, contrast: bool, together: bool
) -> Verdict:
    t = p.tuning
    count, weighted = coverage(p, matched)
    if exact:
        return Verdict(True, "exact", count, weighted)
    if not p.focus:
        return Verdict(False, "no focus terms", count, weighted)
    if p.attributes and not p.attributes & matched:
        return Verdict(False, "holds the names but nothing asked about them", count, weighted)
    if _half(p, matched, p.focus_stems):
        return Verdict(True, "half coverage", count, weighted)
    for alt in p.alternatives if t.alternatives else ():
        if _half(p, matched, [s for s in p.focus_stems if s in alt]):
            return Verdict(True, "half coverage of one compared side", count, weighted)
    rare_held = [s for s in p.focus_stems if s in matched and s in p.rare]
    if len(rare_held) >= 2 and weighted >= t.rare_min_weight and _by_chance(p, rare_held) < 1:
        return Verdict(True, "two rare terms", count, weighted)
    if together:
        return Verdict(True, "said together", count, weighted)
    if (
        p.query.verification
        and contrast
        and count >= t.verify_coverage
        and p.predicate is not None
        and p.predicate in matched
    ):
        return Verdict(True, "verification with contrast", count, weighted)
    return Verdict(False, _INSUFFICIENT, count, weighted)


def _by_chance(p: Plan, stems: list[str]) -> float:
    """How many chunks would hold all of ``stems`` if terms fell into chunks
    independently: N * prod(df / N). Below one, finding them together is evidence;
    in a large corpus two "rare" terms meet by chance, so the rule does not apply."""
    n = p.chunks or 1
    expected = float(n)
    for s in stems:
        expected *= p.df.get(s, 0) / n
    return expected


def may_be_said_together(p: Plan, matched: set[str]) -> bool:
    """Whether a text holding ``matched`` may say some of its focus terms together
    (:func:`said_together`): two or more of them carry a third of the query's
    specificity, and all of them together would meet in fewer than one window by
    chance (each further term only lowers that expectation, so no window of fewer
    of them is rarer)."""
    return p.avg_len > 0 and _rare_together(p, frozenset(matched.intersection(p.focus_stems)))


def said_together(p: Plan, tokens: list[str]) -> bool:
    """Whether some ``tuning.window`` consecutive ``tokens`` (a text's indexed stems)
    hold focus terms rare together (:func:`_rare_together`)."""
    if p.avg_len <= 0:
        return False
    wanted = set(p.focus_stems).union(p.alias)
    at = [(i, p.alias.get(t, t)) for i, t in enumerate(tokens) if t in wanted]
    places = [i for i, _ in at]
    verdicts: dict[frozenset[str], bool] = p.memo.setdefault("said together", {})
    for n, start in enumerate(places):
        held = frozenset(s for _, s in at[n : bisect_left(places, start + p.tuning.window, n)])
        ok = verdicts.get(held)
        if ok is None:
            ok = verdicts[held] = _rare_together(p, held)
        if ok:
            return True
    return False


def _rare_together(p: Plan, held: frozenset[str]) -> bool:
    """Two or more focus terms carrying a third of the query's specificity that would
    meet in fewer than one window of the corpus by chance."""
    return (
        len(held) >= 2
        and coverage(p, held)[1] >= p.tuning.rare_min_weight
        and _by_chance_within(p, held) < 1
    )


def _by_chance_within(p: Plan, stems: frozenset[str]) -> float:
    """How many windows of ``tuning.window`` tokens would hold all of ``stems`` if
    terms fell into them independently: the corpus' N * max(1, L / w) windows, each
    holding a term of df d with chance d/N * min(1, w/L) (one occurrence per chunk
    that holds it, anywhere in its L tokens; a chunk shorter than w is one window)."""
    n, w = p.chunks or 1, p.tuning.window
    share = min(1.0, w / p.avg_len)
    expected = n / share
    for s in stems:
        expected *= p.df.get(s, 0) / n * share
    return expected


def missing_entities(
    p: Plan, admitted_matched: list[set[str]], *, rarest: bool = True
) -> list[str]:
    """Named entities of the question, and its rarest words, that no admitted
    candidate holds.

    In a question about what a speaker said ("my", "you said"; transcripts) and a
    corpus of at least ``rare_min_chunks`` chunks, a word nearly absent from the
    corpus (held by at most two chunks, or 0.05% of a large one) singles out what the
    question is about as a name does: evidence without it is about something else
    ("my cousin's wedding" answered by an aunt's). Elsewhere the asker paraphrases
    (measured: a question about a code base, "when a test hangs", lost its answer).
    ``rarest=False`` leaves the rarest words out (a source whose statistics count
    other units than chunks).
    Numbers are values, not such words ("the 12th step" of a list numbered "12.")."""
    if not p.tuning.entities:
        return []
    seen: set[str] = set().union(*admitted_matched) if admitted_matched else set()
    words: list[Term] = []
    # only about what a speaker said (their own words for their people and things); a
    # question about a code base describes it in the asker's words ("hangs")
    if rarest and p.query.speaker and p.tuning.speaker and p.chunks >= p.tuning.rare_min_chunks:
        rare = max(p.tuning.rarest_chunks, p.tuning.rarest_fraction * p.chunks)
        words = [t for t in p.focus if 0 < p.df[t.stem] <= rare and t.word.isalpha()]
    asked = p.entities + [t for t in words if t not in p.entities]
    return [t.word for t in asked if t.stem not in seen]
