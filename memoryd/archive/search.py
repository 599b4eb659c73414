"""Archive versions as a source of the search pipeline (:mod:`memoryd.search.pipeline`).

Candidates come from the archive's exact-term BM25 (live versions only,
:mod:`memoryd.search.archive_bm25`; its best re-scored by the stored positions:
focus terms close together, and the asked persons' own turns) over
the focus terms and their other forms the archive holds (irregular verbs,
Spanish inflections, English alternatives; the archive indexes exact words,
the gate compares porter stems). A transcript is judged
turn by turn, not as a whole session: each candidate is read as windows of
``window`` consecutive lines (turns) and admitted by its best window under
:func:`memoryd.search.gate.admit`, so a session holding every common word
somewhere does not pass on that alone. Then, as project search does:

* **speaker attribution**: when the question asks what the user said ("my",
  "I") or what the assistant said ("you recommended"), the most specific
  focus term a window holds must be on that speaker's lines of the window;
* **named speakers**: when the question names a person who speaks in the
  transcripts (turns ``Name: text``, also after a role), windows are judged on
  that person's statements and on other turns naming them, without the name
  as a term (:mod:`memoryd.text.evidence`); what only the other speaker
  said or did does not answer it;
* **named entities** of the question must be held by some admitted window
  (on the asked speaker's lines), else the search abstains naming them;
* **ranking** fuses, by reciprocal rank, the archive's BM25 order with the
  specificity-weighted coverage of the best window and of the whole session.

Term statistics are the archive's own (document frequencies over live
versions). Returned versions get a short retrieval lease so retention cannot
expire them while the caller reads them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from memoryd.archive.owner import ArchiveOwner
from memoryd.base.times import utc_iso
from memoryd.search import archive_bm25, gate
from memoryd.search.pipeline import NOT_ABSENCE, Found, Fusion, scored, terms_list
from memoryd.storage.archive import Hit
from memoryd.storage.corpus import UnknownProject, unknown_project_message
from memoryd.text import terms
from memoryd.text.evidence import (
    asked_persons,
    asks,
    focus_hint,
    held,
    is_dialogue,
    multiword_names,
    named_speaker,
    other_sense,
    person_said,
    speaker_of,
    turn_before,
    unsaid_names,
    without_persons,
)

WINDOW_LINES = 3  # a question's evidence is usually one exchange: a turn and its answer
CANDIDATE_POOL = 50
EXCERPT_CHARS = 600
REPLY_LINES = 3  # lines of a reply an excerpt adds after a matched question (its bound)
REPLY_CHARS = 400  # and characters
_DOC_CACHE = 128  # decoded versions (text and line stems) kept between queries


class ArchiveStats:
    """What the gate asks of term statistics, from the archive's live-version counts.

    The archive indexes exact lowercase words; a query term counts as often as the
    commonest of its forms (as asked and its other forms, see :class:`terms.Term`).
    """

    avg_len = 0.0  # the archive gate judges turns by its own window, not "said together"

    def __init__(self, owner: ArchiveOwner, project: str, query: terms.Query):
        store = owner.store
        self.query = query
        self.chunks = store.postings.corpus_stats(project).versions
        tried = {t.stem: {t.word, *t.forms} for t in query.terms}
        raw = store.postings.term_stats(project, {w for ws in tried.values() for w in ws})
        # a word held in none of its asked forms: its other regular forms ("teach" for
        # "teaching"), which a stemmed index would have matched
        unheld = {
            t.stem: set(terms.inflections(t.word))
            for t in query.terms
            if not any(raw.get(w) for w in tried[t.stem])
        }
        if any(unheld.values()):
            raw.update(store.postings.term_stats(project, set().union(*unheld.values())))
            for s, ws in unheld.items():
                tried[s] |= ws
        # the exact words of each term that the archive holds (at least the asked ones)
        self.forms = {
            s: sorted({w for w in ws if raw.get(w)} | {t.word})
            for t in query.terms
            for s, ws in [(t.stem, tried[t.stem])]
        }
        self._df = {s: max((raw.get(w, 0) for w in tried[s]), default=0) for s in tried}
        for t in query.terms:
            for alt in t.alts:
                self._df.setdefault(alt, self._df[t.stem])

    def df(self, stem: str) -> int:
        return self._df.get(stem, 0)


class Doc:
    """One version's lines, speakers (role and name) and (lazily) line stems."""

    __slots__ = ("lines", "speakers", "names", "said", "_stems")

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.speakers: list[str | None] = []
        self.names: list[str | None] = []  # a named speaker's first name, lowercased
        self.said: list[int] = []  # where the words of a line start (after its prefixes)
        current = name = None
        for line in self.lines:
            who, end = speaker_of(line)
            named, named_end = named_speaker(line)
            current = who or current
            name = named or (None if who else name)
            self.speakers.append(current)
            self.names.append(name)
            self.said.append(max(end, named_end))
        if not is_dialogue(self.lines, self.names):
            self.names = [None] * len(self.lines)
        self._stems: dict[int, list[str]] = {}

    def stems(self, i: int) -> list[str]:
        got = self._stems.get(i)
        if got is None:
            got = self._stems[i] = terms.stems(self.lines[i])
        return got


_docs: OrderedDict[tuple[str, str], Doc] = OrderedDict()


def load_doc(owner: ArchiveOwner, locator: str) -> Doc | None:
    """A live version's parsed text (versions never change; liveness checked here)."""
    key = (str(owner.path), locator)
    doc = _docs.get(key)
    if doc is not None:
        _docs.move_to_end(key)
        return doc
    got = owner.store.ledgers.get(locator)
    if got.get("status") != "live":
        return None
    doc = _docs[key] = Doc(got["content"])
    while len(_docs) > _DOC_CACHE:
        _docs.popitem(last=False)
    return doc


@dataclass
class _Cand:
    hit: Hit
    rank: int
    doc: Doc
    line_held: list[set[str]]  # focus stems held by each line
    verdict: gate.Verdict | None = None
    start: int = 0
    end: int = 0
    matched: set[str] | None = None
    spoken: set[str] | None = None
    session: float = 0.0


def _line_held(p: gate.Plan, doc: Doc, hint: re.Pattern) -> list[set[str]]:
    out: list[set[str]] = []
    for i, line in enumerate(doc.lines):
        out.append(held(p, doc.stems(i)) if hint.search(line.lower()) else set())
    return out


def _person_held(p: gate.Plan, doc: Doc, persons: set[str], hint: re.Pattern) -> list[set[str]]:
    """Focus terms each line holds by or about the asked persons (:func:`person_said`)."""
    out: list[set[str]] = []
    for i, (line, j) in enumerate(zip(doc.lines, turn_before(doc.names), strict=True)):
        before = "" if j is None else doc.lines[j][doc.said[j] :]
        text = person_said(line[doc.said[i] :], doc.names[i], persons, before)
        out.append(held(p, terms.stems(text)) if text and hint.search(text.lower()) else set())
    return out


def _best_window(p: gate.Plan, c: _Cand, q: terms.Query) -> None:
    """The window of turns with the most specificity the gate admits (a name held for
    a word asked in lowercase not counted); with an asked speaker, one whose most
    specific term that speaker said."""
    n = len(c.doc.lines)
    size = WINDOW_LINES
    best = None
    for start in range(max(1, n - size + 1)):
        end = min(n, start + size)
        matched = set().union(*c.line_held[start:end])
        if not matched:
            continue
        verdict = gate.admit(p, matched)
        if not verdict.admitted:
            continue
        names = other_sense("\n".join(c.doc.lines[start:end]), p, matched)
        if names:  # a name held for a word asked in lowercase: judged without it
            matched = matched - names
            verdict = gate.admit(p, matched)
            if not verdict.admitted:
                continue
        spoken = None
        if q.speaker:
            spoken = set().union(
                *(c.line_held[i] for i in range(start, end) if c.doc.speakers[i] == q.speaker)
            )
            if max(matched, key=lambda s: p.weights[s]) not in spoken:
                continue
        if best is None or verdict.weighted > best[0].weighted:
            best = (verdict, start, end, matched, spoken)
    if best is not None:
        c.verdict, c.start, c.end, c.matched, c.spoken = best


def reply_end(doc: Doc, start: int, end: int, line_held: list[set[str]]) -> int:
    """The end of the window ``start:end`` extended over the reply to the turn of its
    last matching line when that turn asks a question and the reply, the next turn by
    another speaker, begins after the window: a question's words match, its answer
    (which need not repeat them) follows. At most :data:`REPLY_LINES` lines of the
    reply; ``end`` when there is none (not a dialogue, not a question, answered
    inside the window)."""
    matching = [i for i in range(start, end) if line_held[i]]
    if not matching:
        return end
    who = _turn_of(doc, matching[-1])
    if who == (None, None):
        return end
    reply = next(
        (i for i in range(matching[-1] + 1, len(doc.lines)) if _turn_of(doc, i) != who), None
    )
    if reply is None or reply < end or reply - matching[-1] > REPLY_LINES:
        return end
    if not asks("\n".join(doc.lines[matching[-1] : reply])):
        return end
    answer = _turn_of(doc, reply)
    stop = reply + 1
    while stop < min(len(doc.lines), reply + REPLY_LINES) and _turn_of(doc, stop) == answer:
        stop += 1
    return stop


def _turn_of(doc: Doc, i: int) -> tuple[str | None, str | None]:
    """Who speaks on line ``i``: its role and named speaker (continuation lines keep
    the turn's)."""
    return doc.speakers[i], doc.names[i]


def _candidates(
    owner: ArchiveOwner,
    project: str,
    p: gate.Plan,
    q: terms.Query,
    stats: ArchiveStats,
    limit: int,
    persons: set[str],
    created_after: dict[str, float] | None = None,
) -> tuple[list[_Cand], list[Doc]]:
    """BM25 candidates of the focus terms, each judged by its best window (on what the
    asked persons said or what was said about them, when the question names one);
    returns the admitted ones and every candidate's text. ``created_after``: only
    those classes, created no earlier than their time (recall's horizons)."""
    concepts = {w: term.stem for term in p.focus for w in stats.forms[term.stem]}
    hits = archive_bm25.search(
        owner.store.postings,
        project,
        sorted(concepts),
        limit=max(CANDIDATE_POOL, limit),
        classes=None if created_after is None else list(created_after),
        created_after=created_after,
        concepts=concepts,
        persons=persons,
    )
    hint = focus_hint(p.focus)
    cands: list[_Cand] = []
    docs: list[Doc] = []
    for rank, hit in enumerate(hits):
        doc = load_doc(owner, hit.locator)
        if doc is None:
            continue
        docs.append(doc)
        lines = _person_held(p, doc, persons, hint) if persons else _line_held(p, doc, hint)
        c = _Cand(hit, rank, doc, lines)
        _best_window(p, c, q)
        if c.verdict is not None:
            c.session = gate.coverage(p, set().union(*c.line_held))[1]
            cands.append(c)
    return cands, docs


class ArchiveSource:
    """Live versions of one archive project as a source of the search pipeline
    (:mod:`memoryd.search.pipeline`). Returned versions get a short retrieval lease so
    retention cannot expire them while the caller reads them."""

    exact = False
    kind = "archive"

    def __init__(
        self,
        owner: ArchiveOwner,
        project: str,
        now: float,
        created_after: dict[str, float] | None = None,
    ) -> None:
        known = owner.store.postings.projects()
        if project not in known:
            raise UnknownProject(unknown_project_message(project, known))
        self.owner, self.project, self.now = owner, project, now
        self.created_after = created_after
        self.where = f"archive project {project!r}"
        self._stats: ArchiveStats | None = None

    def within(self, cls: str, created_at: float) -> bool:
        """Whether a version of ``cls`` created at ``created_at`` is in the search's window."""
        if self.created_after is None:
            return True
        return cls in self.created_after and created_at >= self.created_after[cls]

    def stats(self, q: terms.Query) -> ArchiveStats:
        if self._stats is None or self._stats.query is not q:
            self._stats = ArchiveStats(self.owner, self.project, q)
        return self._stats

    def find(self, q: terms.Query, p: gate.Plan, limit: int) -> Found:
        stats = self.stats(q)
        window = self.created_after
        cands, docs = _candidates(self.owner, self.project, p, q, stats, limit, set(), window)
        persons = asked_persons(q, {n for d in docs for n in d.names if n})
        if persons:
            q = without_persons(q, persons, stats.df)
            p = gate.plan(q, stats)
            if not p.focus:
                return Found(
                    gap=f"the question names {terms_list(sorted(persons))} but asks nothing"
                    " more specific about them; say what the evidence should contain"
                )
            cands, _ = _candidates(self.owner, self.project, p, q, stats, limit, persons, window)
        if not cands:
            return Found(
                gap=f"insufficient evidence in {self.where}: no turn holds enough of the"
                f" asked terms ({terms_list(t.word for t in p.focus)}) ({NOT_ABSENCE})"
            )
        seen = [c.spoken if q.speaker and c.spoken is not None else c.matched for c in cands]
        # Not the rarest-word rule: the archive counts exact words per session, and two
        # of 940 sessions is not two of 4,518 chunks (measured on LongMemEval: two
        # answers lost, to a word held by two sessions, for one abstention).
        missing = gate.missing_entities(p, [s for s in seen if s is not None], rarest=False)
        if not missing and multiword_names(p):
            missing = unsaid_names(p, ["\n".join(c.doc.lines[c.start : c.end]) for c in cands])
        if missing:
            return Found(
                gap=f"insufficient evidence in {self.where}: nothing admitted mentions"
                f" {terms_list(missing)}; what was found is about other things ({NOT_ABSENCE})"
            )
        return Found(self._items(cands, limit))

    def _items(self, cands: list[_Cand], limit: int) -> list[dict]:
        """Reciprocal-rank fusion of the BM25 order and the specificity-weighted coverage
        of the best window and of the whole session; each scored by its best window's
        evidence times its fused rank score (:func:`memoryd.search.pipeline.scored`)."""
        fusion = Fusion()
        fusion.add(sorted(cands, key=lambda c: c.rank))
        fusion.add(sorted(cands, key=lambda c: (-c.verdict.weighted, c.rank)))
        fusion.add(sorted(cands, key=lambda c: (-c.session, c.rank)))
        ranked = sorted(cands, key=lambda c: (-fusion[id(c)], c.rank))[:limit]
        self.owner.store.protections.take_retrieval_leases(
            [c.hit.locator for c in ranked],
            seconds=self.owner.config.retention_retrieval_lease_seconds,
            now=self.now,
        )
        return [self._item(c, fusion) for c in ranked]

    def _item(self, c: _Cand, fusion: Fusion) -> dict:
        """The search item of an admitted candidate: its best window, and the reply
        to a question the window ends on (:func:`reply_end`)."""
        end = reply_end(c.doc, c.start, c.end, c.line_held)
        excerpt = "\n".join(c.doc.lines[c.start : c.end])[:EXCERPT_CHARS]
        if end > c.end:
            excerpt += "\n" + "\n".join(c.doc.lines[c.end : end])[:REPLY_CHARS]
        item = {
            "path": c.hit.session or c.hit.doc_id,
            "start_line": c.start + 1,
            "end_line": end,
            "score": None,
            "excerpt": excerpt,
            "locator": c.hit.locator,
            "class": c.hit.cls,
            "created_at": utc_iso(c.hit.created_at),
        }
        return scored(item, gate.evidence(c.verdict), fusion.score(id(c)))
