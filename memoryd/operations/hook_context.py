"""The context an agent's hook injects: recall for the project of its directory.

``SessionStart`` and ``UserPromptSubmit`` hooks (:mod:`memoryd.faces.hooks.event`)
ask for it: a running supervisor answers over its control socket (request
``hook_context``), else the hook loads the package and calls :func:`context_here`.
The project is the ingested one whose root holds the directory, else the
archive-only project named after it (as the capture drain files the session's
documents, :func:`memoryd.capture.projects.project_for_dir`). A prompt's query is
the prompt; a session's start has none, so it asks with the directory's and the git
branch's names. Nothing is injected when recall abstains; what is injected stays
within ``hook_context_chars``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.capture.projects import project_for_dir
from memoryd.operations.projects import Projects
from memoryd.operations.recall import recall_here

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd

HEADER = (
    "memoryd recalled (project {project}; evidence from earlier work, check before relying on it):"
)


def context(md: Memoryd, *, cwd: str, event: str, prompt: str = "", source: str = "") -> dict:
    """``{"project", "status", "context"}``: ``context`` None when recall abstained."""
    roots = {p["project"]: p["root"] for p in Projects(md).listing() if p.get("root")}
    project = project_for_dir(cwd, roots)
    query = prompt.strip() or start_query(cwd)
    if not query:
        return {"project": project, "status": "abstained", "context": None}
    query = query[: md.config.query_max_bytes // 4]  # a pasted file is not a question
    result = recall_here(md, query, project, limit=md.config.hook_recall_limit)
    if result["status"] != "ok":
        return {"project": project, "status": "abstained", "context": None,
                "gap": result.get("gap")}  # fmt: skip
    text = render(project, result["items"], md.config.hook_context_chars)
    return {"project": project, "status": "ok" if text else "abstained", "context": text}


def start_query(cwd: str) -> str:
    """A session start's query: the directory's name and its git branch's words."""
    words = [os.path.basename(os.path.normpath(cwd))]
    try:
        head = (Path(cwd) / ".git" / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        head = ""
    if head.startswith("ref: refs/heads/"):
        words.append(head.removeprefix("ref: refs/heads/").replace("/", " ").replace("-", " "))
    return " ".join(w for w in words if w).strip()


def render(project: str, items: list[dict], budget: int) -> str | None:
    """The items as lines under a header, within ``budget`` characters: each item
    whole or cut at the budget, the rest left out (None when not even one fits)."""
    lines = [HEADER.format(project=project)]
    used = len(lines[0])
    for item in items:
        room = budget - used - 1
        if room < 40:
            break
        entry = f"- {_where(item)}: {' '.join(item.get('excerpt', '').split())}"
        lines.append(entry if len(entry) <= room else entry[: room - 1] + "…")
        used += len(lines[-1]) + 1
    return "\n".join(lines) if len(lines) > 1 else None


def _where(item: dict) -> str:
    if item.get("source") == "archive":
        return f"[{item.get('class')} {item.get('created_at') or ''} {item.get('locator')}]"
    if item.get("source") == "memory":
        return f"[memory {item.get('id')} {item.get('kind', '')}]"
    return f"[{item.get('path')}:{item.get('start_line')}-{item.get('end_line')}]"
