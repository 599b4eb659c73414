"""The spool into the archive, exactly once under kills.

A drain takes the spooled events (:mod:`memoryd.base.hookspool`) in arrival order
and writes them in *batches*. A batch is first written down as a manifest (the
event names it holds, durably) and only then archived, so a redo after a kill
anywhere takes the same events and makes the same documents with the same request
ids: the archive answers an applied request without writing (its requests are
idempotent). Events and the manifest are removed only after the batch's one
synced archive write.

Per session, a batch makes one *conversation* document (its prompts and the
transcript's user and assistant turns, one line a turn) and one *ephemeral*
document per tool call, linked to it (``meta.session_doc``) as ``archive add``
links a transcript's tool output. All of a session's documents carry its id, so
``archive forget --session`` removes them together.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable

import orjson

from memoryd.archive.transcripts import doc_id, parse_time
from memoryd.base import hookspool, killpoints
from memoryd.capture.projects import project_for_dir
from memoryd.storage.archive import BadArchiveInput, NewVersion

#: Crash points (``MEMORYD_KILL_AT``): a batch's manifest is durable; its archive
#: write is durable, its events still spooled.
KILL_POINTS = ("capture_batch_planned", "capture_batch_archived")

MAX_BATCH_EVENTS = 500
MAX_BATCH_BYTES = 16 * 1024 * 1024


def batches_dir(home: str) -> str:
    return os.path.join(home, hookspool.HOOKS_DIR, hookspool.BATCHES)


def pending_batches(home: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(batches_dir(home)) if n.endswith(".json"))
    except FileNotFoundError:
        return []


def plan_batch(home: str) -> str | None:
    """Write the manifest of the next batch (the oldest events not in one); its name,
    or None when nothing waits."""
    taken = set()
    for name in pending_batches(home):
        taken.update(_manifest(home, name))
    chosen, size = [], 0
    for name in hookspool.event_names(home):
        if name in taken:
            continue
        if chosen and (len(chosen) >= MAX_BATCH_EVENTS or size >= MAX_BATCH_BYTES):
            break
        chosen.append(name)
        size += hookspool.event_size(name)
    if not chosen:
        return None
    folder = batches_dir(home)
    hookspool.ensure_dir(folder)
    batch = chosen[0].removesuffix(hookspool.EVENT_SUFFIX) + ".json"
    hookspool.write_durable(os.path.join(folder, batch), orjson.dumps(chosen))
    killpoints.reach("capture_batch_planned")
    return batch


def _manifest(home: str, batch: str) -> list[str]:
    try:
        with open(os.path.join(batches_dir(home), batch), "rb") as f:
            return orjson.loads(f.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return []  # a torn manifest cannot be: it is renamed into place whole


def apply_batch(home: str, batch: str, store, policy, roots: Callable[[], dict]) -> dict:
    """Archive one planned batch, then remove its events and manifest."""
    names = _manifest(home, batch)
    events = [(n, e) for n in names if (e := hookspool.read_event(home, n)) is not None]
    items: list[NewVersion] = []
    offsets: dict[str, dict[str, int]] = {}
    bad = 0
    for session, evs in _by_session(events).items():
        project = project_for_dir(evs[0][1].get("cwd") or "", roots())
        try:
            items += _session_items(batch, project, session, evs, policy)
        except BadArchiveInput:
            bad += len(evs)  # unreadable (a time out of range): never blocks the others
        for _, e in evs:
            if e.get("kind") == "transcript":
                seen = offsets.setdefault(session, {})
                path = e["transcript"]["path"]
                seen[path] = max(seen.get(path, 0), int(e["transcript"]["to"]))
    if items:
        store.ledgers.append_many(items)
    killpoints.reach("capture_batch_archived")
    for session, seen in offsets.items():
        _advance_offsets(home, session, seen)
    for name in names:
        hookspool.remove_event(home, name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(batches_dir(home), batch))
    return {"events": len(events), "documents": len(items), "unreadable": bad}


def _advance_offsets(home: str, session: str, seen: dict[str, int]) -> None:
    """The session's offsets at least as far as this batch's transcript pieces went:
    a hook killed between spooling a piece and noting its offset reads on from here,
    not again from the start."""
    with hookspool.offsets_locked(home, session):
        current = hookspool.read_offsets(home, session)
        merged = {**current, **{p: max(o, current.get(p, 0)) for p, o in seen.items()}}
        if merged != current:
            hookspool.write_offsets(home, session, merged)


def _by_session(events: list[tuple[str, dict]]) -> dict[str, list[tuple[str, dict]]]:
    groups: dict[str, list[tuple[str, dict]]] = {}
    for name, e in events:
        groups.setdefault(str(e.get("session") or "unknown"), []).append((name, e))
    return groups


def _session_items(batch: str, project: str, session: str, evs, policy) -> list[NewVersion]:
    """The conversation document of this batch's turns, then one document per tool call."""
    lines, first = [], None
    tools = []
    for name, e in evs:
        at = float(e.get("at") or time.time())
        first = at if first is None else min(first, at)
        for role, text, stamp in _turns(e):
            lines.append(f"{role}: {' '.join(text.split())}")
            if stamp is not None:
                first = min(first, stamp)
        if e.get("kind") == "tool":
            tools.append((name, e, at))
    items = []
    session_doc = doc_id("s", project, f"{session}@{batch.removesuffix('.json')}")
    if lines:
        items.append(
            NewVersion(
                project, "conversation", "\n".join(lines), first,
                policy.expires_at("conversation", first), session_doc, session,
                {"turns": len(lines), "agent": evs[0][1].get("agent")},
                _request_id(session_doc),
            )
        )  # fmt: skip
    for name, e, at in tools:
        tool_doc = doc_id("t", project, f"{session}#{name.removesuffix(hookspool.EVENT_SUFFIX)}")
        meta = {"session_doc": session_doc, "tool": e.get("tool_name")}
        items.append(
            NewVersion(
                project, "ephemeral", render_tool(e), at, policy.expires_at("ephemeral", at),
                tool_doc, session, meta, _request_id(tool_doc),
            )
        )  # fmt: skip
    return items


def _turns(e: dict) -> list[tuple[str, str, float | None]]:
    """The turns an event holds: a transcript piece's, or a prompt (or a last reply)
    when the agent gave no transcript to read it from (else the transcript holds it:
    never stored twice)."""
    if e.get("kind") == "transcript":
        return [
            (t["role"], t["text"], _time(t.get("at")))
            for t in e["transcript"]["turns"]
            if t.get("text")
        ]
    if e.get("kind") == "turn" and not e.get("transcript_path") and e.get("text"):
        return [(str(e.get("role") or "user"), e["text"], None)]
    return []


def _time(value: object) -> float | None:
    """A turn's time, or None when the agent wrote none we read (the event's own time
    stands in): a strange stamp never costs the turn."""
    try:
        return parse_time(value, "transcript")
    except BadArchiveInput:
        return None


def render_tool(e: dict) -> str:
    """A tool call as text: its name, its input, then its output."""

    def text(value: object) -> str:
        return value if isinstance(value, str) else orjson.dumps(value).decode()

    return (
        f"tool: {e.get('tool_name')}\ninput: {text(e.get('tool_input'))}\n"
        f"output: {text(e.get('tool_response'))}"
    )


def _request_id(doc: str) -> str:
    """One request per document: a document id names one batch's content for good."""
    return "r-" + hashlib.blake2b(doc.encode(), digest_size=12).hexdigest()


def drain(home: str, store, policy, roots: Callable[[], dict], budget_seconds: float) -> dict:
    """Batches (unfinished ones first) until the spool is empty or the budget is spent;
    ``more`` says events still wait."""
    deadline = time.monotonic() + budget_seconds
    done = {"batches": 0, "events": 0, "documents": 0, "unreadable": 0}
    while True:
        pending = pending_batches(home) or [b for b in [plan_batch(home)] if b]
        if not pending:
            return {**done, "more": False}
        for batch in pending:
            r = apply_batch(home, batch, store, policy, roots)
            done["batches"] += 1
            for key in ("events", "documents", "unreadable"):
                done[key] += r[key]
        if time.monotonic() > deadline:
            return {**done, "more": bool(hookspool.event_names(home))}
