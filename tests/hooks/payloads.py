"""Hook payloads as Claude Code and Codex CLI send them on stdin, one per event.

Shapes written from the agents' hook documentation: every event carries
``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``; Claude Code
adds ``permission_mode``, Codex CLI ``model`` and (prompt, stop) a ``turn_id``.
Transcripts: Claude Code's JSONL (``type`` user/assistant, ``message``), Codex
CLI's rollout (``type: response_item``, ``payload``).
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "Stop", "SessionEnd")


def common(agent: str, event: str, session: str, cwd: Path, transcript: Path) -> dict:
    base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd),
            "hook_event_name": event}  # fmt: skip
    if agent == "claude-code":
        return {**base, "permission_mode": "default"}
    return {**base, "model": "gpt-5-codex", "turn_id": f"turn-{event.lower()}"}


def payload(agent: str, event: str, session: str, cwd: Path, transcript: Path, **kw) -> dict:
    """The event's payload; ``kw`` fills its own fields (prompt, tool, source...)."""
    p = common(agent, event, session, cwd, transcript)
    if event == "SessionStart":
        p["source"] = kw.get("source", "startup")
    elif event == "UserPromptSubmit":
        p["prompt"] = kw.get("prompt", "what did we decide about the cache?")
    elif event == "PostToolUse":
        p["tool_name"] = kw.get("tool_name", "Bash")
        p["tool_input"] = kw.get("tool_input", {"command": "ls -la"})
        p["tool_response"] = kw.get("tool_response", {"stdout": "total 0", "stderr": ""})
        if agent == "claude-code":
            p["tool_use_id"] = "toolu_01"
    elif event == "PreCompact":
        p["trigger"] = kw.get("trigger", "auto")
        p["custom_instructions"] = ""
    elif event == "Stop":
        p["stop_hook_active"] = False
        if agent == "codex":
            p["last_assistant_message"] = kw.get("reply", "done")
    elif event == "SessionEnd":
        p["reason"] = kw.get("reason", "exit")
    return p


def transcript_line(agent: str, role: str, text: str, stamp: str | None = None) -> bytes:
    """One transcript line of ``agent``'s format holding a text turn (written now unless
    ``stamp``: within the recall horizons, and not past any class age)."""
    stamp = stamp or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if agent == "claude-code":
        content = text if role == "user" else [{"type": "text", "text": text}]
        obj = {"type": role, "message": {"role": role, "content": content},
               "timestamp": stamp, "uuid": "u", "isSidechain": False}  # fmt: skip
    else:
        block = "input_text" if role == "user" else "output_text"
        obj = {"timestamp": stamp, "type": "response_item",
               "payload": {"type": "message", "role": role,
                           "content": [{"type": block, "text": text}]}}  # fmt: skip
    return orjson.dumps(obj) + b"\n"


def tool_line(agent: str) -> bytes:
    """A tool call in the transcript (left out: PostToolUse brings it)."""
    if agent == "claude-code":
        obj = {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    }
                ],
            },
        }
    else:
        obj = {"type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                    "arguments": "{}"}}  # fmt: skip
    return orjson.dumps(obj) + b"\n"
