"""The workload of `memoryd diagnose`: facts beside the code, a contrary case,
unanswerable questions, every case asked on every route.

Made from the diagnosed project and the generic statements of
``diagnose_workload.toml`` (never from text written for one repository):

* **facts**: one per subject (the words of a project file's name), staged through
  `memory add --wait` (:meth:`Memory.add`) as a user saves them, each citing its file;
  the oracle expects the record it became;
* **contrary**: a constant the code defines (``NAME = 42``) restated as a fact, then a
  newer fact changing its value: consolidation supersedes the first; the oracle
  expects the newer record and fails on the superseded one (answerable by contrary
  evidence, the code still saying the old value);
* **unanswerable**: questions about attributes code does not state; they pass only as
  an explicit abstention (:func:`score_unanswerable`), and a
  question answered with items is a false positive of its route.

Each case is asked on four routes (``search`` and ``recall``, with and without the
dense route), once cold and :data:`~memoryd.base.config.DIAGNOSE_WARM_REPETITIONS`
times warm; the answers scored are the first ones, the latency is the warm ones'
(the first asks' median is reported beside it: on the first route only is it cold).
"""

from __future__ import annotations

import hashlib
import re
import statistics
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from memoryd.base.config import (
    DIAGNOSE_CONSTANT_FILES,
    DIAGNOSE_FILE_BYTES,
    DIAGNOSE_WARM_REPETITIONS,
)
from memoryd.base.errors import MemorydError
from memoryd.operations.memory import Memory
from memoryd.operations.recall import recall
from memoryd.operations.search import Search

ABSTAIN_WORDS = ("insufficient evidence",)  # what an abstention's gap must state
WORKLOAD_FILE = Path(__file__).with_name("diagnose_workload.toml")
ROUTES: dict[str, tuple[str, bool]] = {  # name -> (request, dense route on)
    "search/dense": ("search", True),
    "search/lexical": ("search", False),
    "recall/dense": ("recall", True),
    "recall/lexical": ("recall", False),
}
# a constant the code defines: an upper-case name given a whole number, in the usual
# forms (Python, C/JS/Go/Rust declarations, ``#define``)
_CONSTANT = re.compile(
    r"^\s*(?:#define\s+|(?:export\s+)?(?:pub\s+)?(?:const|static|final|let|var)\s+)?"
    r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\s*(?::\s*\w+\s*)?(?:=|\s)\s*(\d{1,9})\s*;?\s*(?:#.*|//.*)?$",
    re.MULTILINE,
)
_WORD = re.compile(r"[A-Za-z]{3,}")


@cache
def templates() -> dict:
    return tomllib.loads(WORKLOAD_FILE.read_text())


@dataclass(frozen=True)
class Case:
    """One question of the workload and what answers it."""

    id: str
    kind: str  # "answerable", "contrary" or "unanswerable"
    q: str
    expect: str | None = None  # the record that answers it
    stale: str | None = None  # a superseded record it must never return


@dataclass(frozen=True)
class Constant:
    """A constant the code defines: where, its name and its value."""

    path: str
    line: int
    name: str
    value: int


def _number(text: str, low: int = 100, span: int = 900) -> int:
    """A number made from ``text`` (the same on every run and machine)."""
    return low + int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % span


def _by_hash(paths: list[str]) -> list[str]:
    """Paths in an order that spreads over the tree (not alphabetical: one folder's)."""
    return sorted(paths, key=lambda p: hashlib.sha256(p.encode()).digest())


def _words(name: str) -> str:
    """The words of a name (letters, three or more), lower case, space-separated."""
    return " ".join(_WORD.findall(name.replace("_", " "))).lower()


def subjects(paths: list[str], n: int) -> list[tuple[str, str]]:
    """Up to ``n`` ``(path, subject)``: the words of a file name that no other file of
    the project is named with (a subject names one thing), spread over the tree."""
    words = {path: _words(Path(path).stem) for path in paths}
    named = Counter(words.values())
    found = [(path, words[path]) for path in _by_hash(paths) if named[words[path]] == 1]
    return [(path, subject) for path, subject in found if subject][:n]


def code_constant(checkout: Path, paths: list[str]) -> Constant | None:
    """The first constant (``NAME = number``) of the first files, spread over the tree,
    that define one; read transiently (the report keeps its name and numbers only)."""
    for path in _by_hash(paths)[:DIAGNOSE_CONSTANT_FILES]:
        try:
            with (checkout / path).open("rb") as f:
                text = f.read(DIAGNOSE_FILE_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        if m := _CONSTANT.search(text):
            line = text.count("\n", 0, m.start(1)) + 1
            return Constant(path, line, m.group(1), int(m.group(2)))
    return None


def _candidate(kind: str, text: str, ref: str) -> bytes:
    """One `memory add` line: a fact citing ``ref`` (a path, or ``path:line``)."""
    return orjson.dumps({"kind": kind, "text": text, "refs": [ref], "source": "diagnose"})


@dataclass(frozen=True)
class Contrary:
    """The contrary case: a constant the code defines, stated as a fact (the stale
    one), then stated again with another value (the newer one)."""

    const: Constant
    newer: int
    stale_line: bytes
    newer_line: bytes
    question: str

    @classmethod
    def of(cls, const: Constant, template: dict) -> Contrary:
        named = {"subject": _words(const.name), "name": const.name, "value": const.value}
        newer = const.value + _number(const.path + const.name, 1, 97)
        ref = f"{const.path}:{const.line}"
        stale = _candidate(template["kind"], template["stale"].format(**named), ref)
        text = template["newer"].format(**named, newer=newer)
        question = template["question"].format(**named)
        return cls(const, newer, stale, _candidate(template["kind"], text, ref), question)

    def report(self) -> dict:
        c = self.const
        return {"path": c.path, "line": c.line, "name": c.name, "value": c.value,
                "newer": self.newer}  # fmt: skip


@dataclass
class Staged:
    """What `memory add` made of the workload's facts."""

    cases: list[Case]
    report: dict


def _add(md: Any, project: str, lines: list[bytes]) -> list[dict]:
    """`memory add --wait` of ``lines``: each candidate's outcome, in their order."""
    if not lines:
        return []
    return Memory(md).add(b"\n".join(lines), project, wait=True)["outcomes"]


def stage(md: Any, project: str, checkout: Path, paths: list[str]) -> Staged:
    """Save the facts through `memory add --wait` (the contrary case's older fact in a
    first add, its newer one in a second, as a user corrects a fact) and make the cases."""
    t = templates()
    picked = subjects(paths, max(len(t["fact"]), len(t["unanswerable"])))
    facts = list(zip(t["fact"], picked, strict=False))
    const = code_constant(checkout, paths)
    contrary = Contrary.of(const, t["contrary"]) if const is not None else None
    lines = [
        _candidate(f["kind"], f["text"].format(subject=s, value=_number(p + f["text"])), p)
        for f, (p, s) in facts
    ]
    first = _add(md, project, lines + ([contrary.stale_line] if contrary else []))
    cases = [
        Case(f"fact-{i + 1}", "answerable", f["question"].format(subject=s), o["record_id"])
        for i, ((f, (_, s)), o) in enumerate(zip(facts, first, strict=False))
    ]
    outcomes = list(first)
    if contrary is not None:
        second = _add(md, project, [contrary.newer_line])
        outcomes += second
        expect, stale = second[0]["record_id"], first[-1]["record_id"]
        cases.append(Case("contrary", "contrary", contrary.question, expect, stale))
    cases += [
        Case(f"unanswerable-{i + 1}", "unanswerable", u["question"].format(subject=s))
        for i, (u, (_, s)) in enumerate(zip(t["unanswerable"], picked, strict=False))
    ]
    report = {
        "staged": len(outcomes),
        "outcomes": dict(Counter(o["outcome"] or o["state"] for o in outcomes)),
        "subjects": [p for _, (p, _) in facts],
        "contrary_constant": contrary.report() if contrary else None,
    }
    return Staged(cases, report)


# -- asking --------------------------------------------------------------------------


def score_unanswerable(case: dict, result: dict) -> dict:
    """Passes only as an abstention: no items, status abstained, a gap stating that
    the evidence is insufficient. Unrelated items, an error, or an empty list with
    status ok all fail."""
    gap = (result.get("gap") or "").lower()
    why = None
    if "error" in result:
        why = f"error {result['error']}"
    elif result.get("items"):
        why = f"returned {len(result['items'])} items"
    elif result.get("status") != "abstained":
        why = f"status {result.get('status')!r} without items"
    elif not any(word in gap for word in ABSTAIN_WORDS):
        why = "the gap does not state insufficient evidence"
    return {"id": case["id"], "q": case["q"], "passed": why is None, "failure": why}


def asker(md: Any, project: str, limit: int) -> Callable[[str, str], dict]:
    """``ask(route, question)``: the answer of that route, an error as ``{"error"}``."""

    def ask(route: str, q: str) -> dict:
        request, dense = ROUTES[route]
        try:
            if request == "search":
                return Search(md).search(q, project, limit=limit, dense=dense)
            return recall(md, q, project, limit=limit, dense=dense)
        except MemorydError as exc:
            return {"error": exc.code, "message": str(exc)}

    return ask


def timed(ask: Callable[[str, str], dict], route: str, q: str) -> tuple[dict, float]:
    start = time.perf_counter()
    answer = ask(route, q)
    return answer, (time.perf_counter() - start) * 1000


def percentile(sorted_ms: list[float], p: float) -> float:
    """The nearest-rank percentile of sorted values (0.0 for none)."""
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, int(p * len(sorted_ms)))]


def score_case(case: Case, answer: dict, k: int) -> dict:
    """The case on one route: answerable and contrary cases by the rank of the
    expected record in the first ``k`` items (contrary: and the superseded record
    never returned); unanswerable ones as an explicit abstention."""
    if case.kind == "unanswerable":
        scored = score_unanswerable({"id": case.id, "q": case.q}, answer)
        del scored["q"]  # listed once, in the workload's cases
        return {**scored, "kind": case.kind, "items": len(answer.get("items") or [])}
    ids = [item.get("id") for item in (answer.get("items") or [])[:k]]
    found = case.expect is not None and case.expect in ids  # None: no record was made
    rank = ids.index(case.expect) + 1 if found else None
    stale = case.stale is not None and case.stale in ids
    return {
        "id": case.id,
        "kind": case.kind,
        "status": answer.get("status", answer.get("error")),
        "rank": rank,
        "hit": rank is not None and not stale,
        "stale_returned": stale,
    }


def run_routes(md: Any, project: str, cases: list[Case], limit: int) -> dict:
    """Every case on every route: scored once cold, then timed warm."""
    ask = asker(md, project, limit)
    return {route: _route(ask, route, cases, limit) for route in ROUTES}


def _route(ask: Callable[[str, str], dict], route: str, cases: list[Case], k: int) -> dict:
    scored: list[dict] = []
    first: list[float] = []
    warm: list[float] = []
    for case in cases:
        answer, ms = timed(ask, route, case.q)
        first.append(ms)
        scored.append(score_case(case, answer, k))
        warm += [timed(ask, route, case.q)[1] for _ in range(DIAGNOSE_WARM_REPETITIONS)]
    warm.sort()
    return {**summary(scored), **latency(first, warm), "cases": scored}


def summary(scored: list[dict]) -> dict:
    """A route's counts: answerable hits and MRR, the contrary case, abstentions and
    false positives (unanswerable questions answered with items)."""
    answerable = [c for c in scored if c["kind"] == "answerable"]
    contrary = [c for c in scored if c["kind"] == "contrary"]
    unanswerable = [c for c in scored if c["kind"] == "unanswerable"]
    reciprocal = sum(1 / c["rank"] for c in answerable if c["hit"])
    return {
        "answerable": {
            "cases": len(answerable),
            "hits": sum(c["hit"] for c in answerable),
            "mrr": round(reciprocal / (len(answerable) or 1), 4),
        },
        "contrary": {
            "cases": len(contrary),
            "hits": sum(c["hit"] for c in contrary),
            "stale_returned": sum(c["stale_returned"] for c in contrary),
        },
        "unanswerable": {
            "cases": len(unanswerable),
            "abstained": sum(c["passed"] for c in unanswerable),
            "false_positives": sum(c["items"] > 0 for c in unanswerable),
        },
    }


def latency(first: list[float], warm: list[float]) -> dict:
    return {
        "first_ask_p50_ms": round(statistics.median(first), 2) if first else 0.0,
        "warm_p50_ms": round(statistics.median(warm), 2) if warm else 0.0,
        "warm_p95_ms": round(percentile(warm, 0.95), 2),
        "warm_queries": len(warm),
        "repetitions": DIAGNOSE_WARM_REPETITIONS,
    }


def report(staged: Staged, routes: dict, k: int) -> dict:
    """The report's ``workload``: the facts, the cases, each route's scores and times,
    and the false positives of each route."""
    return {
        "k": k,
        "facts": staged.report,
        "cases": [{"id": c.id, "kind": c.kind, "q": c.q} for c in staged.cases],
        "routes": routes,
        "false_positives": {r: v["unanswerable"]["false_positives"] for r, v in routes.items()},
    }
