"""One search pipeline for every source of evidence (DESIGN.md, "Search and abstention").

    analyze -> plan -> candidates -> admit -> fuse -> items | abstain

:func:`run` analyzes the question once (:func:`memoryd.text.terms.analyze`),
plans it against each source's term statistics (:func:`memoryd.search.gate.plan`:
the focus terms), lets each source find and admit its candidates through the
gate, merges the sources' answers by score and abstains, in one wording, when
no source admitted anything.

**Scores.** Every item's score is on one 0..1 scale whatever its source, so
items of several sources are listed in score order and ``min_score`` means the
same for all of them: the estimated chance that the item answers the question
(:mod:`memoryd.search.calibration`, a logistic model fitted on memoryd's
development sets). A source rates an item by its *evidence*
(:func:`memoryd.search.gate.evidence`: the share of the question's focus-term
specificity, by idf, that the item holds, which the gate measures the same way
for every source) and its *strength* within the source (its reciprocal-rank
fusion score normalized so that the first in every ranking the source fuses
scores 1): :func:`scored`. Raw BM25 is not comparable across sources (a record
scored 2.5e-06 beside a chunk's 0.98); coverage is. :func:`run` turns these,
the item's place in its source's list and its margin over the next into the
calibrated score, and :func:`monotone` then fits each source's scores, in the
source's own order, to a non-increasing sequence (isotonic regression), so the
source's ranking is kept and an item never claims more confidence than one
ranked above it. When the best item scores below the answer threshold
(``answer_threshold``), the search abstains.

The sources:

* project chunks (:class:`memoryd.search.engine.ProjectSource`: FTS5/postings
  BM25, paths and identifiers, speakers, the dense reordering of its head);
* memory records of a project (:class:`memoryd.consolidation.recall.RecordSource`),
  judged on the project's own plan;
* archive versions (:class:`memoryd.archive.search.ArchiveSource`: BM25 over
  live versions, each judged by its best window of turns).

A source of dense candidates (a vector index) plugs in as one more
:class:`Source` beside these: its ``find`` returns the candidates it admits,
scored as above, and :func:`run` merges them with the others by score.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memoryd.base.errors import UsageError
from memoryd.search import calibration, gate
from memoryd.text.terms import Query, analyze

RRF_K = 60
MAX_LIMIT = 1000
PER_FILE = 1  # items of one file among the first before every other file's best (collapse)
GAP_PREFIX = "insufficient evidence"  # `memoryd diagnose` counts abstentions by it
NOT_ABSENCE = "this does not show the fact does not exist"


class Stats(Protocol):
    """What the gate asks of a source's term statistics."""

    chunks: int
    avg_len: float  # tokens per chunk on average (0.0: unknown; no "said together" windows)

    def df(self, stem: str) -> int: ...


@dataclass
class Found:
    """A source's answer to one plan: admitted items best first, or why there are none."""

    items: list[dict] = field(default_factory=list)
    gap: str | None = None
    # fills the fields an item leaves None until it is known to be on the page (the
    # project source's excerpts): called once with the page's items of this source
    finish: Callable[[list[dict]], None] | None = None


class Source(Protocol):
    """One kind of evidence. ``where`` names it in gaps ("project 'app'");
    ``exact`` says whether named paths and identifiers can answer without focus terms."""

    where: str
    exact: bool
    kind: str  # chunks, records or archive (:mod:`memoryd.search.calibration`)

    def stats(self, q: Query) -> Stats: ...

    def find(self, q: Query, p: gate.Plan, limit: int) -> Found: ...


def check(query: object, limit: object) -> None:
    """The arguments every search takes, checked before any work."""
    if not isinstance(query, str):
        raise UsageError("the query must be text")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be an integer from 1 to {MAX_LIMIT}")


def abstain(gap: str) -> dict:
    """Every abstention says that the evidence is insufficient, then why."""
    if not gap.startswith(GAP_PREFIX):
        gap = f"{GAP_PREFIX}: {gap}"
    return {"status": "abstained", "items": [], "gap": gap}


def terms_list(words: Iterable[str]) -> str:
    return ", ".join(f"'{w}'" for w in words)


def unplanned(q: Query, p: gate.Plan, where: str) -> str:
    """Why a question without focus terms cannot be searched in ``where``."""
    if q.terms:
        return (
            f"every term of the query ({terms_list(t.word for t in q.terms)}) occurs"
            f" across much of {where}, so none can single out evidence;"
            " name something more specific"
        )
    return (
        "the query has no searchable terms (only function words or memory phrasing);"
        " say what the evidence should contain"
    )


class Fusion:
    """Reciprocal-rank fusion (k = 60) of weighted rankings of one set of candidates;
    :meth:`score` is normalized so a candidate first in every ranking scores 1."""

    def __init__(self) -> None:
        self.fused: dict[Hashable, float] = {}
        self.total = 0.0

    def add(self, ranked: Sequence, weight: float = 1.0, key: Callable = id) -> None:
        if weight <= 0 or not ranked:
            return
        for i, c in enumerate(ranked):
            k = key(c)
            self.fused[k] = self.fused.get(k, 0.0) + weight / (RRF_K + i + 1)
        self.total += weight

    def __getitem__(self, k: Hashable) -> float:
        return self.fused.get(k, 0.0)

    def score(self, k: Hashable) -> float:
        return round(self.fused.get(k, 0.0) * (RRF_K + 1) / (self.total or 1.0), 4)


def run(
    query: str,
    limit: int,
    sources: Sequence[Source],
    tuning: gate.Tuning = gate.DEFAULT,
    *,
    min_score: float | None = None,
    threshold: float = 0.0,
) -> dict:
    """Search ``sources`` for evidence answering ``query``: ``{"status", "items", "gap"}``.

    Every item's ``score`` is on one 0..1 scale, the estimated chance that it answers
    the question (:mod:`memoryd.search.calibration`), and the items are in its order,
    whatever their source; each keeps its source's fields. ``min_score`` only
    narrows: it drops items scoring below it, from every source, never adds one.
    ``threshold`` (the answer threshold): when the best item scores below it, the
    search abstains.
    """
    check(query, limit)
    q = analyzed(query)
    plans: dict[int, gate.Plan] = {}  # sources sharing statistics share one plan
    found: list[Found] = []
    for src in sources:
        stats = src.stats(q)
        p = plans.get(id(stats))
        if p is None:
            p = plans[id(stats)] = gate.plan(q, stats, tuning)
        if not p.focus and not (src.exact and (q.paths or q.identifiers)):
            found.append(Found(gap=unplanned(q, p, src.where)))
        else:
            found.append(src.find(q, p, _fetched(limit)))
            calibration.calibrate(found[-1].items, src.kind, len(p.focus))
    answered = [f.items for f in found if f.items]
    if not answered:
        gaps = [f.gap for f in found if f.gap]
        return abstain("; ".join(dict.fromkeys(gaps)) or "no source holds evidence")
    merged = merge([monotone(crowded(items, len(items))) for items in answered])
    if merged[0]["score"] < threshold:
        return abstain(unsure(merged[0]["score"], threshold))
    if min_score is not None:
        merged = [item for item in merged if item["score"] >= min_score]
        if not merged:
            return abstain(below(min_score))
    page = merged[:limit]
    on_page = {id(item) for item in page}
    for f in found:
        if f.finish is not None and f.items:
            f.finish([item for item in f.items if id(item) in on_page])
    return {"status": "ok", "items": page, "gap": None}


def scored(item: dict, evidence: float, strength: float) -> dict:
    """``item`` with its raw score: its evidence (:func:`gate.evidence`, the share of
    the question's specificity it holds, comparable across sources) times its
    strength in its own source (its fused reciprocal-rank score, :meth:`Fusion.score`:
    1 for the first in every ranking the source fuses). Both are kept for
    :func:`calibration.calibrate`, which :func:`run` applies before :func:`monotone`."""
    evidence, strength = max(0.0, min(1.0, evidence)), max(0.0, min(1.0, strength))
    item["score"] = evidence * strength
    item[calibration.SIGNALS] = (evidence, strength)
    return item


def monotone(items: list[dict]) -> list[dict]:
    """``items`` (one source's, best first) with scores that never rise down the
    list: the non-increasing sequence nearest the scores in least squares (isotonic
    regression by pool-adjacent-violators), so a source's order is kept and an item
    ranked below another never claims more confidence; rounded to four places."""
    blocks: list[list[float]] = []  # [sum, count] of pooled neighbours
    for item in items:
        blocks.append([float(item["score"]), 1.0])
        while len(blocks) > 1 and blocks[-2][0] * blocks[-1][1] < blocks[-1][0] * blocks[-2][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    fitted = [total / count for total, count in blocks for _ in range(int(count))]
    for item, score in zip(items, fitted, strict=True):
        item["score"] = round(score, 4)
    return items


def merge(ranked: list[list[dict]]) -> list[dict]:
    """Every source's items (each list best first, scores non-increasing) in one list
    by score; ties keep the sources' own orders, then the order of the sources."""
    keyed = [(-i["score"], n, s, i) for s, items in enumerate(ranked) for n, i in enumerate(items)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def unsure(best: float, threshold: float) -> str:
    """The gap of an answer whose best item scored below the answer threshold."""
    return (
        f"the best evidence found scores {best:.3f}, below the answer threshold"
        f" {threshold:g} (--answer-threshold, MEMORYD_ANSWER_THRESHOLD)"
    )


def below(min_score: float) -> str:
    """The gap of an answer whose every item ``min_score`` dropped."""
    return f"evidence was found but none reached the requested min_score {min_score:g}"


_last: tuple[str, Query] | None = None


def analyzed(query: str) -> Query:
    """``analyze(query)``, kept for the next run of the same text: recall asks the
    project and then the archive the same question in one process, and analysis (the
    tokenizer passes, the inflections of a Spanish question) is the same for both. A
    Query is read-only after :func:`analyze` returns; the pair is replaced in one
    assignment, so a thread never sees one text's analysis under another's."""
    global _last
    last = _last
    if last is not None and last[0] == query:
        return last[1]
    q = analyze(query)
    _last = (query, q)
    return q


def _fetched(limit: int) -> int:
    """Items asked of each source: half a page beyond ``limit``, for :func:`crowded`
    to bring other files' items up in place of one file's further chunks (each item
    asked costs the source reading and excerpting it; twice ``limit`` cost 40% more
    CPU per query and found no more on LongMemEval)."""
    return min(MAX_LIMIT, limit + (limit + 1) // 2)


def crowded(items: list[dict], limit: int, per_file: int = PER_FILE) -> list[dict]:
    """The first ``limit`` of ``items`` with at most ``per_file`` items of one file
    (``path``) before every other file's best items: a file's further chunks move
    down, after the others, instead of taking the places of other files (web
    search's "host crowding"). A long document matching everywhere would otherwise
    fill the page with itself, hiding the second-best document; its further
    chunks still follow when the page has room."""
    seen: dict[object, int] = {}
    first: list[dict] = []
    later: list[dict] = []
    for item in items:
        key = item.get("path")
        n = seen[key] = seen.get(key, 0) + 1
        (first if key is None or n <= per_file else later).append(item)
    return (first + later)[:limit]
