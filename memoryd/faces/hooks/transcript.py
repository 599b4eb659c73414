"""An agent's transcript read on from where the spool has it, user and assistant text only.

Claude Code writes one JSON object a line (``{"type": "user"|"assistant", "message":
{"role", "content"}, "timestamp"}``); Codex CLI's rollout writes ``{"type":
"response_item", "payload": {"type": "message", "role", "content"}, "timestamp"}``.
Both are read here: the text blocks of user and assistant messages become turns;
tool calls and their results are left out (``PostToolUse`` brings them, once), as
are meta lines and compaction summaries (a summary repeats what is archived).

Only whole lines are read: a line the agent is still writing waits for the next
read. A transcript shorter than the offset kept (rewritten) is read from its start.
"""

from __future__ import annotations

import json
import os

#: Most bytes one hook reads on (a resumed session's older part waits for the next).
MAX_READ_BYTES = 32 * 1024 * 1024
ROLES = ("user", "assistant")
TEXT_BLOCKS = ("text", "input_text", "output_text")
#: Lines of Claude Code's left out: meta lines, a subagent's, a compaction's summary
#: (it sums up turns already kept).
SKIPPED_MARKS = ("isMeta", "isSidechain", "isCompactSummary")


def read_on(path: str, offset: int) -> tuple[list[dict], int, int]:
    """(turns, from, to): the turns of the whole lines after ``offset``."""
    size = os.path.getsize(path)
    start = offset if offset <= size else 0
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(min(size - start, MAX_READ_BYTES))
    end = data.rfind(b"\n") + 1
    turns = []
    for line in data[:end].splitlines():
        turn = parse_line(line)
        if turn is not None:
            turns.append(turn)
    return turns, start, start + end


def parse_line(line: bytes) -> dict | None:
    """A turn ``{"role", "text", "at"}`` from one transcript line, or None."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or any(obj.get(k) for k in SKIPPED_MARKS):
        return None
    message = obj.get("message") if obj.get("type") in ROLES else None
    if obj.get("type") == "response_item":
        payload = obj.get("payload") or {}
        message = payload if payload.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None
    text = content_text(message.get("content"))
    if not text.strip():
        return None
    return {"role": message["role"], "text": text, "at": obj.get("timestamp")}


def content_text(content: object) -> str:
    """A message's text: a string, or its text blocks joined (tool blocks left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in TEXT_BLOCKS and isinstance(b.get("text"), str)
    ]
    return "\n".join(parts)
