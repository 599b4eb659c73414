"""Archive search: the project search's evidence-coverage gate over archive versions.

Candidates come from the archive's exact-term BM25 (live versions only). A
transcript is judged turn by turn, not as a whole session: each candidate is
read as windows of a few consecutive lines and admitted by its best window
under :func:`memoryd.search.gate.admit`, so a session holding every common
word somewhere does not pass on that alone. Term statistics are the archive's
own (document frequencies over live versions). Returned versions get a short
retrieval lease so retention cannot expire them while the caller reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.archive.owner import ArchiveOwner
from memoryd.search import gate, terms
from memoryd.storage.archive import utc_iso

WINDOW_LINES = 3  # a question's evidence is usually one exchange: a turn and its answer
CANDIDATE_POOL = 50


class ArchiveStats:
    """What the gate asks of term statistics, from the archive's live-version counts.

    The archive indexes exact lowercase words; a query term counts as often as the
    commonest of its asked forms.
    """

    def __init__(self, owner: ArchiveOwner, project: str, query: terms.Query) -> None:
        self.chunks = owner.store.corpus_stats(project).versions
        forms = {t.stem: {t.word, *t.forms} for t in query.terms}
        raw = owner.store.term_stats(project, {w for ws in forms.values() for w in ws})
        self._df = {s: max((raw.get(w, 0) for w in ws), default=0) for s, ws in forms.items()}
        for t in query.terms:
            for alt in t.alts:
                self._df.setdefault(alt, self._df[t.stem])

    def df(self, stem: str) -> int:
        return self._df.get(stem, 0)


@dataclass
class _Best:
    verdict: gate.Verdict
    start: int
    end: int
    matched: set[str]


def _best_window(plan: gate.Plan, lines: list[str]) -> _Best | None:
    line_stems = [set(terms.stems(line)) for line in lines]
    best: _Best | None = None
    for start in range(max(1, len(lines) - WINDOW_LINES + 1)):
        end = min(len(lines), start + WINDOW_LINES)
        matched = set().union(*line_stems[start:end])
        matched |= {plan.alias[s] for s in matched if s in plan.alias}
        verdict = gate.admit(plan, matched)
        if verdict.admitted and (best is None or verdict.weighted > best.verdict.weighted):
            best = _Best(verdict, start, end, matched)
    return best


def _abstain(gap: str) -> dict:
    return {"status": "abstained", "items": [], "gap": gap}


def search_archive(owner: ArchiveOwner, project: str, query: str, limit: int, now: float) -> dict:
    q = terms.analyze(query)
    if not q.terms:
        return _abstain(f"the question has no searchable terms for project {project!r}")
    stats = ArchiveStats(owner, project, q)
    plan = gate.plan(q, stats)
    words = sorted({w for t in q.terms for w in (t.word, *t.forms)})
    hits = owner.store.search(project, words, limit=CANDIDATE_POOL)
    admitted = []
    for hit in hits:
        doc = owner.store.get(hit.locator)
        if doc["status"] != "live":
            continue
        lines = doc["content"].split("\n")
        best = _best_window(plan, lines)
        if best:
            admitted.append((hit, doc, best, lines))
    missing = gate.missing_entities(plan, [b.matched for _, _, b, _ in admitted])
    if missing:
        return _abstain(
            f"insufficient evidence in archive project {project!r}: nothing admitted "
            f"mentions {', '.join(repr(m) for m in missing)} (this does not show the fact "
            "does not exist)"
        )
    if not admitted:
        focus = ", ".join(repr(t.word) for t in plan.focus) or "no focus terms"
        return _abstain(
            f"insufficient evidence in archive project {project!r}: no turn holds enough of "
            f"the asked terms ({focus}) (this does not show the fact does not exist)"
        )
    admitted.sort(key=lambda a: (-a[2].verdict.weighted, -a[0].score))
    top = admitted[:limit]
    owner.store.take_retrieval_leases(
        [h.locator for h, *_ in top],
        seconds=float(owner.config.retention_retrieval_lease_seconds),
        now=now,
    )
    items = [
        {
            "path": hit.session or hit.doc_id,
            "start_line": best.start + 1,
            "end_line": best.end,
            "score": round(best.verdict.weighted, 4),
            "excerpt": "\n".join(lines[best.start : best.end])[:600],
            "locator": hit.locator,
            "class": hit.cls,
            "created_at": utc_iso(hit.created_at),
        }
        for hit, _doc, best, lines in top
    ]
    return {"status": "ok", "items": items, "gap": None}
