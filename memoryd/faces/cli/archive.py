"""``memoryd archive ...``: the evidence archive's transcripts, leases and migrations."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from memoryd.base.errors import UsageError
from memoryd.faces.cli.common import command, counted, emit_json, out
from memoryd.faces.cli.hits import (
    MIN_SCORE_HELP,
    answer_threshold_option,
    archive_hit_heading,
    print_search,
)
from memoryd.operations.api import Memoryd


@click.group("archive")
def archive_group() -> None:
    """The evidence archive: agent transcripts with retention classes.

    \b
    Example:
      memoryd archive add session.jsonl --project myrepo
      memoryd archive search "which port did we pick for the dev server?" --project myrepo
    """


def _emit_archive(as_json: bool, value: Any, text: str) -> None:
    if as_json:
        emit_json(value)
    else:
        out.print(text, highlight=False)


@command(archive_group, "add", "memoryd archive add chat.jsonl --project myrepo --session s42")
@click.argument("source", type=click.Path(allow_dash=True))
@click.option(
    "--project",
    required=True,
    help="Project the transcript belongs to: one ingested or archived into before.",
)
@click.option(
    "--new-project",
    is_flag=True,
    help="Start the project if no project has this name (an unknown one is refused "
    "without it, so a typo never starts a project of its own).",
)
@click.option(
    "--class",
    "cls",
    help="Retention class of the session: ephemeral, conversation (default), derived or durable.",
)
@click.option("--created-at", help="Source creation time, ISO 8601 (default: first timestamp).")
@click.option("--session", help="Session id (default: the file name, or a content hash).")
@click.option(
    "--source",
    "sources",
    multiple=True,
    help="With --class derived: a locator it was derived from (repeatable); it expires "
    "when its last source does, or at its class age if sooner.",
)
@click.option(
    "--imported",
    is_flag=True,
    help="Importing history: class ages count from now, not from the transcript's time "
    "(which stays its created_at); without it, a document past its class age is refused.",
)
@click.option(
    "--allow-expired",
    is_flag=True,
    help="Store documents past their class age anyway, already due: the next retention "
    "run purges them unless pinned or renewed first (scratch homes, drills and tests).",
)
def archive_add(md: Memoryd, as_json: bool, source: str, session: str | None, **opts: Any):
    """Archive a JSONL transcript (role, content, timestamp per line); '-' reads stdin."""
    if source == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            data, name = Path(source).read_bytes(), source
        except OSError as exc:
            raise UsageError(f"{source}: {exc.strerror or exc}") from None
        session = session or Path(source).stem
    from memoryd.operations.archive import Archive

    r = Archive(md).add(data, source=name, session=session, **opts)
    _emit_archive(as_json, r, _added_text(r))


def _added_text(r: dict) -> str:
    """One line per locator: archived now, or already archived (and its status now); an
    imported document past its class age says when it would have expired."""
    lines = []
    rows = zip(r["locators"], r["created"], r["status"], r["expires_at"],
               r["would_have_expired_at"], strict=True)  # fmt: skip
    for locator, created, status, expires, would in rows:
        line = f"archived {locator}" if created else f"already archived {locator} ({status})"
        if would:
            line += (
                f": imported past its class age (it would have expired {would}); "
                f"expires {expires or 'never'}"
            )
        lines.append(line if created else f"{line}; not stored again")
    return "\n".join(lines)


@command(
    archive_group,
    "search",
    "memoryd archive search 'what did we decide about retries?' --project myrepo",
)
@click.argument("query")
@click.option("--project", required=True)
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Most items."
)
@click.option("--min-score", type=click.FloatRange(0, 1), help=MIN_SCORE_HELP)
@answer_threshold_option
def archive_search(
    md: Memoryd,
    as_json: bool,
    query: str,
    project: str,
    limit: int,
    min_score: float | None,
    answer_threshold: float | None,
) -> None:
    """Search the archive with the evidence gate; takes a short lease on what it returns."""
    from memoryd.operations.archive import Archive

    asked = {"limit": limit, "min_score": min_score}
    asked |= {} if answer_threshold is None else {"answer_threshold": answer_threshold}
    r = Archive(md).search(project, query, **asked)
    if as_json:
        emit_json(r)
        return
    print_search(r, heading=archive_hit_heading)


@command(archive_group, "get", "memoryd archive get s-chat-1a2b3c@1")
@click.argument("locator")
def archive_get(md: Memoryd, as_json: bool, locator: str) -> None:
    """Show one archived version: live (with content), superseded or expired."""
    r = md.archive("get", {"locator": locator})
    _emit_archive(as_json, r, f"{_version_line(locator, r)}\n{r.get('content', '')}")


def _version_line(locator: str, r: dict) -> str:
    """``LOCATOR: live, conversation, project p, expires 2027-02-28T00:53:20.000Z, pinned``:
    the status with what decides when the version goes (what the JSON answer has)."""
    facts = [r["status"]]
    if r.get("class"):
        facts.append(r["class"])
    if r.get("project"):
        facts.append(f"project {r['project']}")
    if "expires_at" in r:
        facts.append(f"expires {r['expires_at'] or 'never'}")
    if r.get("pinned"):
        facts.append("pinned")
    return f"{locator}: {', '.join(facts)}"


@command(archive_group, "pin", "memoryd archive pin s-chat-1a2b3c@1")
@click.argument("locator")
def archive_pin(md: Memoryd, as_json: bool, locator: str) -> None:
    """Protect a document from retention until unpinned."""
    r = md.archive("pin", {"locator": locator})
    _emit_archive(as_json, r, f"pinned {locator}")


@command(archive_group, "renew", "memoryd archive renew s-chat-1a2b3c@1 --days 90")
@click.argument("locator")
@click.option("--days", type=float, help="New deadline: this many days from now (above 0).")
@click.option("--until", "until", help="New deadline: this time (ISO 8601), after now.")
def archive_renew(md: Memoryd, as_json: bool, locator: str, days: float | None, until: str | None):
    """Renew a live version's expiry explicitly (neither flag: never expires); a new
    generation, so earlier expiry entries become harmless. Expired or superseded: refused."""
    from memoryd.archive.transcripts import parse_time

    args = {"locator": locator, "days": days, "until": parse_time(until, "--until")}
    r = md.archive("renew", args)
    _emit_archive(as_json, r, f"{locator} now expires {r['expires_at'] or 'never'}")


@command(archive_group, "promote", "memoryd archive promote d-notes-9f8e@1 --class durable")
@click.argument("locator")
@click.option(
    "--class",
    "cls",
    type=click.Choice(["ephemeral", "conversation", "durable"]),
    default="durable",
    show_default=True,
    help="The class it moves to.",
)
def archive_promote(md: Memoryd, as_json: bool, locator: str, cls: str) -> None:
    """Promote a derived document: it stops following its sources and takes the class's
    retention (durable: never expires)."""
    r = md.archive("promote", {"locator": locator, "class": cls})
    _emit_archive(
        as_json, r, f"{locator} is {r['class']} now; expires {r['expires_at'] or 'never'}"
    )


@command(archive_group, "unpin", "memoryd archive unpin s-chat-1a2b3c@1")
@click.argument("locator")
def archive_unpin(md: Memoryd, as_json: bool, locator: str) -> None:
    """Remove a pin; the document expires at its original deadline."""
    r = md.archive("unpin", {"locator": locator})
    _emit_archive(as_json, r, f"unpinned {locator}" if r["unpinned"] else "was not pinned")


@command(
    archive_group,
    "lease",
    "memoryd archive lease acquire --client agent-1 --project myrepo s-chat-1a2b3c@1",
)
@click.argument("action", type=click.Choice(["acquire", "renew", "release"]))
@click.argument("locators", nargs=-1)
@click.option("--client", required=True, help="The client owning the lease.")
@click.option("--project", help="Project of the versions (acquire).")
@click.option(
    "--ttl", type=float, help="Lease length in seconds (default: retention_active_lease_seconds)."
)
@click.option(
    "--session",
    "sessions",
    multiple=True,
    help="Acquire: protect this session's current versions (repeatable; with --project).",
)
def archive_lease(md: Memoryd, as_json: bool, action: str, locators: tuple[str, ...], **o: Any):
    """Active-context leases: acquire (all or nothing), renew (heartbeat), release."""
    if action == "acquire" and not (o["project"] and (locators or o["sessions"])):
        raise UsageError("lease acquire needs --project and at least one locator or --session")
    args = {
        "action": action,
        **o,
        "sessions": list(o["sessions"]),
        "locators": list(locators) or None,
    }
    r = md.archive("lease", args)
    _emit_archive(as_json, r, _lease_text(action, r))


def _lease_text(action: str, r: dict) -> str:
    if action == "acquire":
        sessions = f" and the current versions of {counted(len(r['sessions']), 'session')}"
        past = r.get("unprotected") or []
        unprotected = (
            f"; not protected (past their deadline): {counted(len(past), 'version')}: "
            + ", ".join(past[:10])
            + (" ..." if len(past) > 10 else "")
        )
        return (
            f"client {r['client']} leases {counted(len(r['locators']), 'version')}"
            f"{sessions if r.get('sessions') else ''} until "
            f"{r['expires_at']} (epoch {r['epoch']}); renew before then"
            f"{unprotected if past else ''}"
        )
    if action == "renew":
        return f"lease of client {r['client']} renewed until {r['expires_at']}"
    return f"client {r['client']} released {counted(r['released'], 'protection')}"


@command(archive_group, "forget", "memoryd archive forget --session s42 --project myrepo")
@click.argument("locator", required=False)
@click.option("--session", help="Forget every document of this session (with --project).")
@click.option("--project", help="Project of the session.")
def archive_forget(md: Memoryd, as_json: bool, locator: str | None, **o: str | None) -> None:
    """Remove a transcript now (its document, or a whole session): tombstone, purge and
    compact, whatever pins or leases it has; its locators then read 'expired'."""
    if bool(locator) == bool(o["session"]) or (o["session"] and not o["project"]):
        raise UsageError("name a LOCATOR, or --session with --project (not both)")
    r = md.archive("forget", {"locator": locator, **o})
    _emit_archive(
        as_json,
        r,
        f"forgot {counted(len(r['forgotten']), 'version')} of "
        f"{counted(len(r['documents']), 'document')}; "
        f"purged {r['purged_versions']} and compacted the archive: nothing of them is left",
    )


@command(
    archive_group, "migrate", "memoryd archive migrate --copy && memoryd archive migrate --verify"
)
@click.option("--copy", is_flag=True, help="Copy into a new format (re-encode).")
@click.option("--verify", is_flag=True, help="Verify the copy and switch to it.")
@click.option("--commit", is_flag=True, help="Make the migration final.")
@click.option("--rollback", is_flag=True, help="Go back to the old format.")
def archive_migrate(md: Memoryd, as_json: bool, **steps: bool) -> None:
    """A format migration of the archive; retention waits until it is committed."""
    chosen = [name for name, on in steps.items() if on]
    if len(chosen) > 1:
        raise UsageError(
            f"one migration step at a time (got --{' --'.join(chosen)}); "
            "run them in order: --copy, then --verify, then --commit"
        )
    step = chosen[0] if chosen else None
    r = md.archive("migrate", {"step": step or "status"})
    _emit_archive(as_json, r, _migration_text(r))


def _migration_text(r: dict) -> str:
    """Where a migration stands and the next step, in prose."""
    target = r.get("target_format")
    texts = {
        "committed": "no archive migration in progress",
        "copying": f"a copy to format {target} was interrupted; run --copy again or --rollback",
        "awaiting_verification": f"copied {r.get('copied_keys', 0):,} keys to format {target}; "
        "next: memoryd archive migrate --verify",
        "blocked": "verification failed ("
        + "; ".join(map(str, r.get("reason") or []))
        + "); run --copy again or --rollback",
        "verified": f"switched to format {target} (verified); next: --commit to make it "
        "final, or --rollback",
    }
    state = r.get("state")
    return texts.get(state, f"migration state: {state}")
