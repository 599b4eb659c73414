"""The spool into the archive, exactly once under kills.

A drain takes the spooled events (:mod:`memoryd.base.hookspool`) in arrival order
and writes them in *batches*. A batch is first written down as a manifest (the
event files it holds, and the byte range of each session log it takes, durably) and
only then archived, so a redo after a kill anywhere takes the same events and makes
the same documents with the same request ids: the archive answers an applied
request without writing (its requests are idempotent). Only after the batch's one
synced archive write are its logs marked archived to the range's end (a consumed
record appended to each, synced: a log carries its own progress), its event files
and the sealed logs it took to their end removed, and last its manifest.

A live log is read as hooks append to it: only its whole records (a record still
being written is the next batch's), and bytes that are no record before one that is
read again under the log's lock (a hook killed mid-write tore them for good). A log
is renamed away (sealed) once its archived head reaches ``ROTATE_BYTES`` or it is
idle, and read only after the drain has held its lock: a hook that opened it before
the rename has written by then, or finds its file gone and starts a new log.

Per session, a batch makes one *conversation* document (its prompts and the
transcript's user and assistant turns, one line a turn) and one *ephemeral*
document per tool call, linked to it (``meta.session_doc``) as ``archive add``
links a transcript's tool output. All of a session's documents carry its id, so
``archive forget --session`` removes them together.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import os
import time
from collections.abc import Callable

import orjson

from memoryd.archive.transcripts import doc_id, parse_time
from memoryd.base import hooklog, hookspool, killpoints
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


ROTATE_BYTES = hookspool.ROTATE_BYTES
IDLE_SECONDS = hookspool.IDLE_SECONDS


def plan_batch(home: str) -> str | None:
    """Write the manifest of the next batch (the oldest events not in one); its name,
    or None when nothing waits. Its items: event files by name, and ranges of logs
    (``{"log", "from", "to", "last"}``: the log's whole records from its archived
    offset on; ``last``, a sealed log taken to its end)."""
    taken: set[str] = set()
    held: set[str] = set()
    for name in pending_batches(home):
        for item in _manifest(home, name):
            (held.add(item["log"]) if isinstance(item, dict) else taken.add(item))
    sources = [[(n.removesuffix(hookspool.EVENT_SUFFIX), n, hookspool.event_size(n))
                for n in hookspool.event_names(home) if n not in taken]]  # fmt: skip
    logs = {}
    for log in _logs_to_read(home, held):
        records, done = _unarchived(home, log)
        if records:
            logs[log] = (records, done)
            sources.append([(r.arg, log, r.end - r.start) for r in records])
    chosen, size, reach = [], 0, {}
    items: list = []
    for name, where, length in heapq.merge(*sources, key=lambda item: item[0]):
        if chosen and (len(chosen) >= MAX_BATCH_EVENTS or size >= MAX_BATCH_BYTES):
            break
        chosen.append(name)
        size += length
        if where in logs:
            reach[where] = reach.get(where, 0) + 1
        else:
            items.append(where)
    if not chosen:
        return None
    for log, count in reach.items():
        records, done = logs[log]
        last = count == len(records) and log.endswith(hookspool.SEALED_SUFFIX)
        items.append({"log": log, "from": done, "to": records[count - 1].end, "last": last})
    folder = batches_dir(home)
    hookspool.ensure_dir(folder)
    batch = chosen[0].removesuffix(hookspool.EVENT_SUFFIX) + ".json"
    hookspool.write_durable(os.path.join(folder, batch), orjson.dumps(items))
    killpoints.reach("capture_batch_planned")
    return batch


def _logs_to_read(home: str, held: set[str]) -> list[str]:
    """The spool's logs a batch may take from (none a pending batch holds), after the
    rotation of live ones whose archived head is large or that are idle. A sealed log
    is read only once its lock was held after its rename: no hook writes to it then.
    A sealed log archived to its end is removed."""
    folder = hookspool.spool_dir(home)
    names, renamed = [], False
    for name in hooklog.log_names(home):
        if name in held:
            continue
        path = os.path.join(folder, name)
        if name.endswith(hookspool.LOG_SUFFIX):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            idle = st.st_mtime < time.time() - IDLE_SECONDS
            if idle or (st.st_size >= ROTATE_BYTES and _consumed(path) >= ROTATE_BYTES):
                sealed = f"{name.removesuffix(hookspool.LOG_SUFFIX)}.{time.time_ns():020d}"
                os.rename(path, os.path.join(folder, sealed + hookspool.SEALED_SUFFIX))
                name, renamed = sealed + hookspool.SEALED_SUFFIX, True
            else:
                names.append(name)
                continue
        names.append(name)
    if renamed:
        hookspool.fsync_dir(folder)
    kept = []
    for name in names:
        if name.endswith(hookspool.SEALED_SUFFIX):
            path = os.path.join(folder, name)
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                if not _lock(fd):  # a hook that opened it before the rename is writing
                    continue
                records, _, _ = hooklog.unarchived(fd, hooklog.READ_CHUNK)
            finally:
                os.close(fd)
            if not any(r.kind == hookspool.EVENT_RECORD for r in records):
                os.unlink(path)  # archived to its end (or only torn bytes)
                continue
        kept.append(name)
    return kept


def _lock(fd: int, seconds: float = 2.0) -> bool:
    """The log's lock, waited for ``seconds`` at most: a hook holds it for one write,
    so a log still held then (its hook stopped mid-write) waits for the next drain."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.lockf(fd, os.F_TLOCK, 0)
            return True
        except (BlockingIOError, PermissionError):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)


def _consumed(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        return hooklog.last_consumed(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _unarchived(home: str, log: str) -> tuple[list[hooklog.Record], int]:
    """A log's event records past its archived offset (``MAX_BATCH_BYTES`` of it read:
    a batch takes no more), and that offset. Bytes that are no record before one that
    is (a hook killed mid-write) are read again under the log's lock, when no hook is
    writing: torn for good, they are passed over."""
    path = os.path.join(hookspool.spool_dir(home), log)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return [], 0
    try:
        records, done, gap = hooklog.unarchived(fd, MAX_BATCH_BYTES)
        if gap:
            if not _lock(fd):
                return [], done
            records, done, _ = hooklog.unarchived(fd, MAX_BATCH_BYTES)
    finally:
        os.close(fd)
    return [r for r in records if r.kind == hookspool.EVENT_RECORD], done


def _manifest(home: str, batch: str) -> list:
    try:
        with open(os.path.join(batches_dir(home), batch), "rb") as f:
            return orjson.loads(f.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return []  # a torn manifest cannot be: it is renamed into place whole


def _batch_events(home: str, items: list) -> list[tuple[str, dict]]:
    """The events a manifest names that are still spooled, oldest first: a log's
    range is read again (its bytes never change: a log is only appended to); a log
    gone was archived to its end by this batch before a kill."""
    events = []
    for item in items:
        if isinstance(item, str):
            if (e := hookspool.read_event(home, item)) is not None:
                events.append((item.removesuffix(hookspool.EVENT_SUFFIX), e))
            continue
        try:
            fd = os.open(os.path.join(hookspool.spool_dir(home), item["log"]), os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            data = hooklog.read_range(fd, item["from"], item["to"])
        finally:
            os.close(fd)
        records, _ = hooklog.parse_records(data, 0, item["from"])
        events += [(r.arg, orjson.loads(r.payload)) for r in records
                   if r.kind == hookspool.EVENT_RECORD]  # fmt: skip
    return sorted(events, key=lambda item: item[0])


def apply_batch(home: str, batch: str, store, policy, roots: Callable[[], dict]) -> dict:
    """Archive one planned batch, then mark its log ranges archived (a consumed record
    each, synced), remove its event files and sealed logs taken to their end, and its
    manifest last."""
    items = _manifest(home, batch)
    events = _batch_events(home, items)
    out: list[NewVersion] = []
    offsets: dict[str, dict[str, int]] = {}
    bad = 0
    for session, evs in _by_session(events).items():
        project = project_for_dir(evs[0][1].get("cwd") or "", roots())
        try:
            out += _session_items(batch, project, session, evs, policy)
        except BadArchiveInput:
            bad += len(evs)  # unreadable (a time out of range): never blocks the others
        for _, e in evs:
            if e.get("kind") == "transcript":
                seen = offsets.setdefault(session, {})
                path = e["transcript"]["path"]
                seen[path] = max(seen.get(path, 0), int(e["transcript"]["to"]))
    if out:
        store.ledgers.append_many(out)
    killpoints.reach("capture_batch_archived")
    for session, seen in offsets.items():
        _advance_offsets(home, session, seen)
    folder = hookspool.spool_dir(home)
    for item in items:
        if isinstance(item, str):
            hookspool.remove_event(home, item)
        elif item["last"]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, item["log"]))
        else:
            _mark_consumed(os.path.join(folder, item["log"]), item["to"])
    with contextlib.suppress(FileNotFoundError):
        hookspool.fsync_dir(folder)  # the removals hold before the manifest's does
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(batches_dir(home), batch))
    return {"events": len(events), "documents": len(out), "unreadable": bad}


def _mark_consumed(path: str, to: int) -> None:
    """A consumed record naming ``to`` appended to the log (under its lock, as a hook
    appends), synced: the next plan starts there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # removed by this batch before a kill (a sealed log's end)
    try:
        os.lockf(fd, os.F_LOCK, 0)
        record = hookspool.frame(hookspool.CONSUMED_RECORD, to)
        if os.write(fd, record) != len(record):
            raise OSError(f"a short write to {path}")
        os.fdatasync(fd)
    finally:
        os.close(fd)


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
            return {**done, "more": hooklog.waiting(home, IDLE_SECONDS)}
