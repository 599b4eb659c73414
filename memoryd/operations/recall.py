"""Automatic recall: what an agent is shown before it asks.

Project memory and recent archive evidence, each through its own evidence
gate. Archive evidence counts only within its class's automatic-recall horizon
(``retention_<class>_recall_days``, from the source's creation time); durable
and active classes are never recalled automatically. When neither source
admits anything, recall injects nothing and says why, without claiming the
fact does not exist. The archive versions shown get a coarse access record
(one per document per bucket; a deadline never moves).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memoryd.base.errors import IngestPending, MemorydError, UsageError
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.storage.corpus import UnknownProject

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd

DAY = 86400.0
RECALLED_CLASSES = ("ephemeral", "conversation", "derived")
NOT_ABSENCE = "this does not show the fact does not exist"


def horizons(md: Memoryd) -> dict[str, float]:
    """Seconds of the recall horizon per archive class (0 days: never recalled)."""
    return {
        cls: float(getattr(md.config, f"retention_{cls}_recall_days")) * DAY
        for cls in RECALLED_CLASSES
    }


def _project_part(
    md: Memoryd, query: str, project: str, limit: int, dense: bool, threshold: float | None
) -> dict:
    try:
        result = Search(md).search(
            query, project, limit=limit, dense=dense, answer_threshold=threshold
        )
    except MemorydError as exc:  # routed to a supervisor, it arrives as its code
        if getattr(exc, "code", None) not in (UnknownProject.code, IngestPending.code):
            raise
        return {"status": "abstained", "items": [], "gap": f"project memory: {exc}"}
    items = [{"source": "project", **item} for item in result["items"]]  # records: "memory"
    return {**result, "items": items}


def _archive_part(
    md: Memoryd,
    query: str,
    project: str,
    limit: int,
    now: float,
    dense: bool,
    threshold: float | None,
) -> dict:
    """The archive's best within the horizons: the search itself leaves out what is
    older, so an older strong hit cannot take the slots of recent evidence (nor get a
    retrieval lease)."""
    limits = horizons(md)
    window = {cls: now - seconds for cls, seconds in limits.items() if seconds}
    days = ", ".join(f"{cls} {limits[cls] / DAY:g} d" for cls in RECALLED_CLASSES)
    outside = f"no archive evidence within the automatic-recall horizons ({days})"
    if not window:
        return {"status": "abstained", "items": [], "gap": outside}
    args = {"project": project, "query": query, "limit": limit, "created_after": window}
    args |= {} if dense else {"dense": False}
    args |= {} if threshold is None else {"answer_threshold": threshold}
    try:
        result = md.archive("search", args)
    except MemorydError as exc:  # through a job or the socket it arrives as its code
        if getattr(exc, "code", None) != UnknownProject.code:
            raise
        return {"status": "abstained", "items": [], "gap": f"no archive for project {project!r}"}
    if result["status"] != "ok":
        return {**result, "gap": f"{outside}: {result.get('gap')}"}
    items = [{**item, "source": "archive"} for item in result["items"]]
    return {"status": "ok", "items": items, "gap": None}


def record_access(md: Memoryd, items: list[dict], now: float) -> dict:
    """Coarse access records for the archive versions recall showed: ``{"recorded": N}``,
    or ``{"queued": JOB}`` through a supervisor's control socket. Best effort: a busy
    archive must not fail a recall that already has its answer."""
    locators = [item["locator"] for item in items if item.get("locator")]
    if not locators:
        return {"recorded": 0}
    try:
        return md.archive("access", {"locators": locators, "now": now})
    except MemorydError as exc:
        return {"recorded": 0, "error": exc.code}


def recall(
    md: Memoryd,
    query: str,
    project: str | None = None,
    *,
    limit: int = 5,
    min_score: float | None = None,
    dense: bool = True,
    answer_threshold: float | None = None,
) -> dict:
    """Project memory plus recent archive evidence, gated; nothing when insufficient.
    ``min_score`` and ``answer_threshold`` apply to both sources as to
    :meth:`Search.search`; ``dense=False`` leaves the dense route out of both. A running
    supervisor answers it; else it runs here (:func:`recall_here`)."""
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    md.check_query(query)
    name = Projects(md).default(project)
    asked = {"query": query, "project": name, "limit": limit, "min_score": min_score}
    asked |= {} if answer_threshold is None else {"answer_threshold": answer_threshold}
    if routed := md.routed("recall", **asked, **({} if dense else {"dense": False})):
        return routed
    return recall_here(
        md,
        query,
        name,
        limit=limit,
        min_score=min_score,
        dense=dense,
        answer_threshold=answer_threshold,
    )


def recall_here(
    md: Memoryd,
    query: str,
    project: str,
    *,
    limit: int = 5,
    now: float | None = None,
    min_score: float | None = None,
    dense: bool = True,
    answer_threshold: float | None = None,
) -> dict:
    """``{"status", "items", "gap", "injected"}``: items from project memory and the
    archive (each tagged with its ``source``) in the order of their score, which is on
    one 0..1 scale for both (:func:`memoryd.search.pipeline.scored`); ``min_score``
    only narrows."""
    from memoryd.search.pipeline import below  # numpy: not at every CLI start

    now = time.time() if now is None else now
    with md.archive_held():  # embedded: one archive open for the search and the access
        parts = [
            _project_part(md, query, project, limit, dense, answer_threshold),
            _archive_part(md, query, project, limit, now, dense, answer_threshold),
        ]
        items = ranked([item for part in parts for item in part["items"]], min_score)
        accessed = record_access(md, [i for i in items if i["source"] == "archive"], now)
    gaps = [part["gap"] for part in parts if part["status"] != "ok" and part.get("gap")]
    stale = [r for part in parts for r in part.get("needs_review", ())]
    review = {"needs_review": stale} if stale else {}
    if not items and min_score is not None and any(part["items"] for part in parts):
        gaps = [below(min_score)]
    if not items:
        gap = "; ".join(gaps) or "no evidence"
        return {
            "status": "abstained",
            "items": [],
            "injected": 0,
            "gap": f"insufficient evidence, nothing injected ({NOT_ABSENCE}): {gap}",
            **review,
        }
    return {
        "status": "ok",
        "items": items,
        "injected": len(items),
        "gap": None,
        "access_records": accessed,
        **review,
    }


def ranked(items: list[dict], min_score: float | None) -> list[dict]:
    """Both sources' items by score, best first (ties: project before archive), without
    those scoring below ``min_score``. Each source's list is already in score order and
    narrowing it by score keeps its first items, so narrowing here is narrowing each."""
    kept = [item for item in items if min_score is None or item["score"] >= min_score]
    return sorted(kept, key=lambda item: -item["score"])
