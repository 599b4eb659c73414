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
from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.errors import IngestPending, MemorydError
from memoryd.storage.corpus import UnknownProject

if TYPE_CHECKING:
    from memoryd.api import Memoryd

DAY = 86400.0
RECALLED_CLASSES = ("ephemeral", "conversation", "derived")
NOT_ABSENCE = "this does not show the fact does not exist"


def horizons(md: Memoryd) -> dict[str, float]:
    """Seconds of the recall horizon per archive class (0 days: never recalled)."""
    return {
        cls: float(getattr(md.config, f"retention_{cls}_recall_days")) * DAY
        for cls in RECALLED_CLASSES
    }


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def within_horizon(item: dict, limits: dict[str, float], now: float) -> bool:
    """An archive hit of a recalled class, created no longer ago than its horizon."""
    limit = limits.get(item.get("class") or "")
    created = _epoch(item.get("created_at"))
    return bool(limit) and created is not None and now - created <= limit


def _project_part(md: Memoryd, query: str, project: str, limit: int) -> dict:
    try:
        result = md.search(query, project, limit=limit)
    except (UnknownProject, IngestPending) as exc:
        return {"status": "abstained", "items": [], "gap": f"project memory: {exc}"}
    items = [{"source": "project", **item} for item in result["items"]]  # records: "memory"
    return {**result, "items": items}


def _archive_part(md: Memoryd, query: str, project: str, limit: int, now: float) -> dict:
    try:
        result = md.archive("search", {"project": project, "query": query, "limit": limit})
    except MemorydError as exc:  # through a job or the socket it arrives as its code
        if getattr(exc, "code", None) != UnknownProject.code:
            raise
        return {"status": "abstained", "items": [], "gap": f"no archive for project {project!r}"}
    if result["status"] != "ok":
        return result
    limits = horizons(md)
    items = [
        {**item, "source": "archive"}
        for item in result["items"]
        if within_horizon(item, limits, now)
    ]
    if items:
        return {"status": "ok", "items": items, "gap": None}
    days = ", ".join(f"{cls} {limits[cls] / DAY:g} d" for cls in RECALLED_CLASSES)
    gap = f"archive evidence found lies outside the automatic-recall horizons ({days})"
    return {"status": "abstained", "items": [], "gap": gap}


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
    md: Memoryd, query: str, project: str, *, limit: int = 5, now: float | None = None
) -> dict:
    """``{"status", "items", "gap", "injected"}``: items from project memory and the
    archive (each tagged with its ``source``), best first within each source."""
    now = time.time() if now is None else now
    with md.archive_held():  # embedded: one archive open for the search and the access
        parts = [
            _project_part(md, query, project, limit),
            _archive_part(md, query, project, limit, now),
        ]
        items = [item for part in parts for item in part["items"]]
        accessed = record_access(md, [i for i in items if i["source"] == "archive"], now)
    gaps = [part["gap"] for part in parts if part["status"] != "ok" and part.get("gap")]
    if not items:
        gap = "; ".join(gaps) or "no evidence"
        return {
            "status": "abstained",
            "items": [],
            "injected": 0,
            "gap": f"insufficient evidence, nothing injected ({NOT_ABSENCE}): {gap}",
        }
    return {
        "status": "ok",
        "items": items,
        "injected": len(items),
        "gap": None,
        "access_records": accessed,
    }
