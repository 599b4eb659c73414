"""Agent transcripts (JSONL, one message per line) into archive versions.

A message is ``{"role": ..., "content": ..., "timestamp": ...}``. User,
assistant and system turns become one *conversation* document per session,
one line per turn (``role: text``), so search sees who said what. Tool
output (role ``tool``) becomes *ephemeral* documents linked to the session
document by ``meta.session_doc``. Nothing is summarized.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from memoryd.storage.archive import BadArchiveInput, check_epoch

TURN_ROLES = ("user", "assistant", "system")
TOOL_ROLES = ("tool", "tool_result", "function")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]+")


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    timestamp: float | None


@dataclass(frozen=True)
class Transcript:
    session: str
    created_at: float
    turns: list[Message]
    tools: list[Message]

    def session_doc_id(self, project: str) -> str:
        return doc_id("s", project, self.session)

    def rendered(self) -> str:
        """One line per turn: newlines inside a turn are folded so lines stay turns."""
        return "\n".join(f"{m.role}: {' '.join(m.content.split())}" for m in self.turns)


def doc_id(kind: str, project: str, name: str) -> str:
    """A valid, stable archive document id for ``name`` within ``project``."""
    digest = hashlib.blake2b(f"{project}\0{name}".encode(), digest_size=6).hexdigest()
    safe = _ID_UNSAFE.sub("-", name).strip("-.:")[:80] or "x"
    return f"{kind}-{safe}-{digest}"


#: A number this large is not seconds (that would be after the year 5138): it is
#: milliseconds, as JavaScript's ``Date.now()`` writes them.
MILLISECONDS_FROM = 1e11


def parse_time(value: object, where: str) -> float | None:
    """Epoch seconds from an ISO 8601 string or a number of seconds or milliseconds.

    None when absent; a time outside 1970..9999 (or not a time) is refused with
    :class:`BadArchiveInput`, so nothing unreadable is ever stored.
    """
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
        if abs(seconds) >= MILLISECONDS_FROM:
            seconds /= 1000
    elif isinstance(value, str):
        seconds = _iso_seconds(value, where)
    else:
        raise BadArchiveInput(f"{where}: timestamp {value!r} is not ISO 8601 or epoch seconds")
    try:
        return check_epoch(f"{where}: timestamp", seconds)
    except BadArchiveInput:
        raise BadArchiveInput(
            f"{where}: timestamp {value!r} is not a time between 1970 and the year 9999 "
            "(ISO 8601, epoch seconds or milliseconds); fix the line, nothing was stored"
        ) from None


def _iso_seconds(value: str, where: str) -> float:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadArchiveInput(
            f"{where}: timestamp {value!r} is not ISO 8601 or epoch seconds"
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _content(value: object, where: str) -> str:
    """A message's text: a string, or content blocks whose ``text`` parts are joined.

    Blocks without text (images, tool calls) are skipped; a block that is not an
    object, or whose ``text`` is not a string, is refused.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BadArchiveInput(f"{where}: content must be text or a list of content blocks")
    parts = []
    for i, block in enumerate(value):
        text = block.get("text") if isinstance(block, dict) else block
        if text is None and isinstance(block, dict):
            continue
        if not isinstance(text, str):
            raise BadArchiveInput(
                f'{where}: content block {i} must be an object whose "text" is a string, '
                f"got {_short(block)}; nothing was stored"
            )
        parts.append(text)
    return "\n".join(p for p in parts if p)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_jsonl(
    data: bytes, *, source: str, session: str | None, created_at: float | None
) -> Transcript:
    """Parse and validate a whole transcript before anything is stored."""
    turns: list[Message] = []
    tools: list[Message] = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadArchiveInput(f"{where}: not valid JSON ({exc}); nothing was stored") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
            raise BadArchiveInput(f'{where}: expected an object with "role" and "content"')
        role = obj["role"].lower()
        msg = Message(role, _content(obj.get("content", ""), where), parse_time(
            obj.get("timestamp"), where))  # fmt: skip
        if role in TURN_ROLES:
            turns.append(msg)
        elif role in TOOL_ROLES:
            tools.append(msg)
        else:
            known = ", ".join(sorted({*TURN_ROLES, *TOOL_ROLES}))
            raise BadArchiveInput(
                f"{where}: unknown role {obj['role']!r}; one of {known}; nothing was stored"
            )
    if not turns and not tools:
        raise BadArchiveInput(f"{source}: no messages")
    stamps = [m.timestamp for m in turns + tools if m.timestamp is not None]
    if created_at is None:
        created_at = min(stamps) if stamps else None
    if created_at is None:
        raise BadArchiveInput(f"{source}: no timestamps; pass --created-at")
    name = session or hashlib.blake2b(data, digest_size=8).hexdigest()
    return Transcript(name, created_at, turns, tools)
