"""The ``memoryd memory`` command group (thin: :class:`memoryd.operations.api.Memoryd`
does the work)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memoryd.base.errors import UsageError
from memoryd.consolidation import KINDS, STATUSES
from memoryd.faces.cli.common import clip, command, emit_json

if TYPE_CHECKING:
    from memoryd.operations.memory import Memory

TEXT_WIDTH = 70


def memory_of(md: Any) -> Memory:
    """The memory of ``md``'s home (imported here: not on every command's start)."""
    from memoryd.operations.memory import Memory

    return Memory(md)


def read_source(source: str) -> bytes:
    """The candidate lines of FILE, or of stdin for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None


def _added_text(r: dict) -> str:
    lines = [f"staged {r['staged']} candidate(s) for {r['project']}"]
    lines += [f"  dropped line {d['line']}: {d['reason']}" for d in r["dropped"]]
    for o in r.get("outcomes", []):
        what = o["outcome"] or o["state"]
        target = f" -> {o['record_id']}" if o["record_id"] else ""
        reason = f" ({o['reason']})" if o["reason"] else ""
        lines.append(f"  {o['id']}: {what}{target}{reason}")
    if "outcomes" not in r:
        queued = f"consolidation job {r['job']} queued" if r["job"] else "joined the queued run"
        lines.append(f"  {queued}; {_consolidator(r)}")
    return "\n".join(lines)


def _consolidator(r: dict) -> str:
    """Who will consolidate what `memory add` staged (its ``supervisor``, ``started``)."""
    if r["supervisor"] is None:
        return "no supervisor could be started: run `memoryd run --drain`"
    if r["started"]:
        return f"started a draining supervisor (pid {r['supervisor']}) for it"
    return f"supervisor pid {r['supervisor']} will consolidate it"


def _record_line(r: dict) -> str:
    status = "conflict" if r["conflicts_with"] else r["status"]
    return f"{r['id']}  {r['kind']:<10} {status:<10} x{r['count']:<3} {clip(r['text'], TEXT_WIDTH)}"


def _show_text(r: dict) -> str:
    lines = [
        f"{r['id']} ({r['kind']}, {r['status']}, scope {r['scope']}, seen {r['count']}x)",
        f"triggers: {', '.join(r['triggers']) or '-'}",
        f"refs: {', '.join(r['refs']) or '-'}   sources: {', '.join(r['sources']) or '-'}",
    ]
    if r["pointer"]:
        lines.append(f"pointer: {r['pointer']}")
    if r["conflicts_with"]:
        lines.append(f"conflict with: {', '.join(r['conflicts_with'])} (both active)")
    lines += [f"cited {_cited_line(m)}" for m in r.get("cited", ())]
    lines += ["", r["text"], "", "history:"]
    lines += [
        f"  {h['at']}  {h['action']:<11} {h['candidate_id'] or '':<16} {h['detail'] or ''}"
        for h in r["history"]
    ]
    return "\n".join(lines)


def _cited_line(m: dict) -> str:
    where = m["path"] + (f":{m['lines'][0]}-{m['lines'][1]}" if m["lines"] else "")
    return f"{m['ref']}: {m['mark']}" + ("" if m["mark"] == "verified" else f" (now {where})")


def _refs_text(refs: dict) -> list[str]:
    """A sweep's cited refs: the verified counted, every other one on its line."""
    kinds = ("moved", "changed", "stale")
    lines = [f"cited refs: {refs['verified']} verified, "
             + ", ".join(f"{len(refs[k])} {k}" for k in kinds)]  # fmt: skip
    lines += [f"  {m['id']}  {_cited_line(m)}" for k in kinds for m in refs[k]]
    return lines


def _status_text(s: dict) -> str:
    b, rec, t = s["backlog"], s["records"], s["totals"]
    lines = [
        f"backlog: {b['staged_files']} staged file(s), {b['parked']} parked, "
        f"{b['deadletter']} dead-lettered",
        "records: " + ", ".join(f"{n} {k}" for k, n in rec.items()),
        "kept runs: " + ", ".join(f"{n} {k}" for k, n in t.items())
        + f"; duplicate rate {s['duplicate_rate']}, discard rate {s['discard_rate']}",
    ]  # fmt: skip
    for r in s["last_runs"]:
        rates = ", ".join(f"{k} {r[k]}" for k in t if r[k])
        lines.append(f"  run {r['id']} {r['at']} {r['project']}: {rates or 'nothing to do'}")
    return "\n".join(lines)


def _deadletter_text(items: list[dict]) -> str:
    if not items:
        return "no dead-lettered candidates"
    lines = []
    for d in items:
        text = clip((d["candidate"] or {}).get("text"), 50)
        lines.append(f"{d['id']}  {d['project']}  {d['reason']}  {text}")
        lines.append(f"  to do: {d['action']}")
    return "\n".join(lines)


def _forgot_text(r: dict) -> str:
    text = f"forgot {len(r['forgotten'])} record(s) of {r['project']}: {', '.join(r['forgotten'])}"
    if r["checkpointed"]:
        return text + "; no file of the home holds their text"
    return (
        f"{text}; the WAL still holds old pages ({r['checkpoint_blocked_by']}): "
        "a running supervisor checkpoints it soon, or run `memoryd checkpoint-wal`"
    )


def emit(as_json: bool, value: Any, text: str) -> None:
    """JSON, or plain lines (never wrapped: records are long lines)."""
    if as_json:
        emit_json(value)
    else:
        click.echo(text)


@click.group("memory")
def memory_group() -> None:
    """Memory records: save lessons, facts, decisions and preferences; consolidate them.

    \b
    Example:
      memoryd memory add candidates.jsonl --project app --wait
      memoryd memory list --project app --status active
    """


@command(memory_group, "add", "memoryd memory add candidates.jsonl --project app --wait")
@click.argument("source")
@click.option("--project", required=True, help="The project the candidates belong to.")
@click.option("--wait", is_flag=True, help="Run (or follow) consolidation to the outcome.")
def memory_add(md: Any, as_json: bool, source: str, project: str, wait: bool) -> None:
    """Validate candidate lines (JSON, one per line), stage them, consolidate.

    \b
    A line: {"text": "...", "kind": "fact"|"lesson"|"decision"|"preference",
             "triggers": [...], "scope": "...", "refs": ["path:10-20"], "source": "..."}
    (only text is required; kind defaults to fact).

    Without --wait, a running supervisor consolidates them, else a background drain.

    Exits 2 when no line was valid (MALFORMED_CANDIDATE, naming each line)."""
    r = memory_of(md).add(read_source(source), project, wait=wait, consolidate=True)
    emit(as_json, r, _added_text(r))


@command(memory_group, "list", "memoryd memory list --project app --status active")
@click.option("--project", help="The project (default: the only one).")
@click.option("--status", type=click.Choice(STATUSES), help="Only records in this status.")
@click.option("--kind", type=click.Choice(KINDS), help="Only records of this kind.")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True, help="Most rows.")
def memory_list(md: Any, as_json: bool, project: str | None, **filters: Any) -> None:
    """List memory records, newest first."""
    found = memory_of(md).listing(project, **filters)
    emit(as_json, found, "\n".join(map(_record_line, found)) or "no records")


@command(memory_group, "show", "memoryd memory show m-1a2b3c4d5e6f7a8b")
@click.argument("record_id")
def memory_show(md: Any, as_json: bool, record_id: str) -> None:
    """One record with its history (reinforcements, supersessions, merges, sweeps)."""
    r = memory_of(md).show(record_id)
    emit(as_json, r, _show_text(r))


@command(memory_group, "status", "memoryd memory status --project app --json")
@click.option("--project", help="One project (default: all).")
def memory_status(md: Any, as_json: bool, project: str | None) -> None:
    """Backlog, records by status, rates over the kept runs, and the last runs."""
    s = memory_of(md).status(project)
    emit(as_json, s, _status_text(s))


@command(memory_group, "deadletter", "memoryd memory deadletter --project app")
@click.option("--project", help="One project (default: all).")
def memory_deadletter(md: Any, as_json: bool, project: str | None) -> None:
    """Dead-lettered candidates with their reason (files under deadletter/<project>/)."""
    items = memory_of(md).deadletters(project)
    emit(as_json, items, _deadletter_text(items))


@command(
    memory_group,
    "retry",
    "memoryd memory retry 1a2b3c4d5e6f7a8b   |   memoryd memory retry --all",
)
@click.argument("ids", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every dead letter (of --project).")
@click.option("--project", help="With --all: only this project's.")
def memory_retry(md: Any, as_json: bool, ids: tuple[str, ...], every: bool, project):
    """Re-stage dead-lettered candidates (attempts reset) and enqueue consolidation.

    Exits 1 naming each id that is not a dead letter."""
    if not ids and not every:
        raise UsageError("name candidate ids, or --all")
    r = memory_of(md).retry(list(ids), every=every, project=project)
    text = f"re-staged {len(r['restaged'])} candidate(s)"
    text += "".join(f"\n  {x['id']}: {x['reason']}" for x in r["refused"])
    emit(as_json, r, text)
    if r["refused"]:
        sys.exit(1)


@command(memory_group, "forget", "memoryd memory forget m-1a2b3c4d5e6f7a8b")
@click.argument("record_id")
def memory_forget(md: Any, as_json: bool, record_id: str) -> None:
    """Delete a record and the records it replaced, with every byte of their text:
    rows, index, vectors, staging lines and mirror files; then a WAL checkpoint.

    Exits 1 (NO_SUCH_RECORD) for an unknown id."""
    r = memory_of(md).forget(record_id)
    emit(as_json, r, _forgot_text(r))


@command(memory_group, "sweep", "memoryd memory sweep --project app --older-than-days 180")
@click.option("--project", help="The project (default: the only one).")
@click.option(
    "--older-than-days",
    type=click.FloatRange(0),
    default=0.0,
    help="Archive active records not seen for this long (0: archive none).",
)
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option(
    "--archive-stale",
    is_flag=True,
    help="Archive the records citing code that is gone, rather than flag them.",
)
def memory_sweep(md: Any, as_json: bool, project: str | None, **opts: Any) -> None:
    """Check every cited ref where its code is now (verified, moved, changed, stale);
    flag records citing code that is gone; archive long-unseen ones.

    Only statuses change (reversible); a sweep never deletes a record."""
    r = memory_of(md).sweep(project, **opts)
    flag, archive = ("would flag", "would archive") if r["dry_run"] else ("flagged", "archived")
    text = f"{flag} {len(r['flagged'])}, {archive} {len(r['archived'])} record(s)"
    emit(as_json, r, "\n".join([text, *_refs_text(r["refs"])]))
