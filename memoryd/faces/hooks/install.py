"""``memoryd hooks install|uninstall``: the agents' hook configuration, merged.

Claude Code reads ``hooks`` from ``.claude/settings.json`` (a project) or
``~/.claude/settings.json`` (the user); Codex CLI from ``.codex/hooks.json`` or
``~/.codex/hooks.json``. Both take ``{"hooks": {EVENT: [{"matcher"?, "hooks":
[{"type": "command", "command", "timeout"}]}]}}``. Install adds memoryd's command
to each event it captures, keeping every other hook and setting; a command of
memoryd's already there is replaced, never doubled. The file as it was is kept
beside it (``.memoryd-backup``) before the first change. Uninstall removes
memoryd's commands only (and events left empty).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import orjson

import memoryd
from memoryd.base.hookspool import write_durable

#: The events each agent is hooked for (Codex CLI has no SessionEnd).
AGENT_EVENTS = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop",
                    "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop"),
}  # fmt: skip
#: Seconds an agent lets each hook run (recall waits at most hook_recall_seconds).
TIMEOUTS = {"SessionStart": 10, "UserPromptSubmit": 10}
DEFAULT_TIMEOUT = 30
MARK = "memoryd.faces.hooks"  # every command installed here runs this module
BACKUP_SUFFIX = ".memoryd-backup"


def config_path(agent: str, project: Path | None) -> Path:
    """The file an agent reads its hooks from: the project's, else the user's."""
    base = project if project is not None else Path.home()
    name = ".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json"
    return base / name


#: What the hook's interpreter runs: the hook module from the directory that holds the
#: package, without ``site`` (``-S``: no site-packages scan, no ``.pth`` files, the
#: largest part of an interpreter's start) and isolated from the user's environment
#: (``-I``); only a recall without a supervisor loads ``site`` (:mod:`.event`).
BOOT = "import sys; sys.path.insert(0, {root}); from {mark}.event import run; run(sys.argv[1:])"


def command(event: str, agent: str, home: str | None) -> str:
    """The hook's command: this interpreter running the hook module directly (no CLI
    imports, no ``site``), the agent and the home named."""
    root = str(Path(memoryd.__file__).resolve().parent.parent)
    boot = BOOT.format(root=json.dumps(root), mark=MARK)  # double quotes: one shell word
    parts = [sys.executable, "-I", "-S", "-c", boot, event, "--agent", agent]
    if home:
        parts += ["--home", str(home)]
    return shlex.join(parts)


def merged(current: dict, agent: str, home: str | None) -> dict:
    """``current`` with memoryd's hook on each of the agent's events (others kept)."""
    out = dict(current)
    hooks = {k: list(v) for k, v in (out.get("hooks") or {}).items()}
    for event in AGENT_EVENTS[agent]:
        groups = _without_ours(hooks.get(event, []))
        entry = {"type": "command", "command": command(event, agent, home),
                 "timeout": TIMEOUTS.get(event, DEFAULT_TIMEOUT)}  # fmt: skip
        group = {"hooks": [entry]}
        if event == "PostToolUse":
            group = {"matcher": "*", **group}
        hooks[event] = [*groups, group]
    out["hooks"] = hooks
    return out


def unmerged(current: dict) -> dict:
    """``current`` without memoryd's hooks."""
    out = dict(current)
    hooks = {}
    for event, groups in (out.get("hooks") or {}).items():
        kept = _without_ours(groups)
        if kept:
            hooks[event] = kept
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return out


def _without_ours(groups: list) -> list:
    """Matcher groups without memoryd's commands (a group left empty goes)."""
    kept = []
    for group in groups:
        if not isinstance(group, dict):
            kept.append(group)
            continue
        inner = [h for h in group.get("hooks", []) if not _ours(h)]
        if inner:
            kept.append({**group, "hooks": inner})
    return kept


def _ours(hook: object) -> bool:
    return isinstance(hook, dict) and MARK in str(hook.get("command", ""))


def read(path: Path) -> dict:
    """The file's JSON object ({} when there is no file)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    value = orjson.loads(data) if data.strip() else {}
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds no JSON object")
    return value


def write(path: Path, value: dict) -> str | None:
    """Write ``value`` (a backup of the file as it was first); the backup's path."""
    backup = None
    if path.exists():
        backup = str(path) + BACKUP_SUFFIX
        if not os.path.exists(backup):
            shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_durable(str(path), orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    return backup


def install(agent: str, project: Path | None, home: str | None, *, dry_run: bool) -> dict:
    path = config_path(agent, project)
    after = merged(read(path), agent, home)
    backup = None if dry_run else write(path, after)
    return {"agent": agent, "path": str(path), "written": not dry_run, "backup": backup,
            "events": list(AGENT_EVENTS[agent]), "config": after}  # fmt: skip


def uninstall(agent: str, project: Path | None, *, dry_run: bool) -> dict:
    path = config_path(agent, project)
    before = read(path)
    after = unmerged(before)
    changed = after != before
    backup = write(path, after) if changed and not dry_run else None
    return {"agent": agent, "path": str(path), "written": changed and not dry_run,
            "backup": backup, "removed": changed, "config": after}  # fmt: skip
