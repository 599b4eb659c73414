"""``memoryd retention ...``: maintenance passes over the archive, and their status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from memoryd.base.config import RETENTION_THRESHOLD_FLAGS, SETTINGS
from memoryd.base.times import utc_iso
from memoryd.faces.cli.common import command, counted, emit_json, out, table_of
from memoryd.operations.api import Memoryd


@click.group("retention")
def retention_group() -> None:
    """Retention over the archive: maintenance passes and their status.

    \b
    Example:
      memoryd retention run --dry-run && memoryd retention status
    """


def _iso_or_none(value: str | None) -> float | None:
    from memoryd.archive.transcripts import parse_time

    return parse_time(value, "--now")


def _threshold_flags(fn: Callable) -> Callable:
    """``--wave-documents N`` ... : one option per retention threshold (this pass only)."""
    for name in reversed(RETENTION_THRESHOLD_FLAGS):
        setting = SETTINGS[f"retention_{name}"]
        fn = click.option(
            f"--{name.replace('_', '-')}",
            name,
            type=click.IntRange(min=1 if setting.exclusive else 0),
            help=f"This pass: {setting.help} (default {setting.default}).",
        )(fn)
    return fn


@command(retention_group, "run", "memoryd retention run --dry-run && memoryd retention run")
@click.option("--dry-run", is_flag=True, help="Show what would expire, by class and project.")
@click.option("--force", is_flag=True, help="Run waves until nothing due is left.")
@click.option("--now", help="As of this time (ISO 8601); past the clock only with --dry-run.")
@click.option(
    "--allow-future-now",
    is_flag=True,
    help="DANGER: let --now pass the clock; expires live data early (scratch homes only).",
)
@click.option(
    "--confirm-clock",
    is_flag=True,
    help="Accept a wall-clock step that refused passes (check the time first).",
)
@_threshold_flags
def retention_run(md: Memoryd, as_json: bool, now: str | None, **flags: Any) -> None:
    """One maintenance pass: lapsed protections, due expiry waves, compaction trigger.

    The threshold flags set this pass's value of the matching setting
    (``retention_NAME``, e.g. MEMORYD_RETENTION_COMPACTION_DELETED_KEYS).
    """
    thresholds = {k: flags.pop(k) for k in RETENTION_THRESHOLD_FLAGS if flags.get(k) is not None}
    for k in RETENTION_THRESHOLD_FLAGS:
        flags.pop(k, None)
    r = md.archive("retention_run", {"now": _iso_or_none(now), **flags, "thresholds": thresholds})
    if as_json:
        emit_json(r)
    elif r.get("dry_run"):
        _print_dry_run(r)
    else:
        out.print(_pass_text(r), highlight=False)


def _print_dry_run(r: dict) -> None:
    when = r["now"]
    if not r["would_expire"]:
        out.print(f"dry run at {when}: nothing would expire", highlight=False)
    else:
        table = table_of("class", "project", "versions", title=f"would expire at {when} (dry run)")
        for row in r["would_expire"]:
            table.add_row(row["class"], row["project"], f"{row['versions']:,}")
        out.print(table)
    kept = ", ".join(f"{n:,} {why}" for why, n in sorted(r["protected"].items()))
    if kept:
        out.print(f"due but protected: {kept}", highlight=False)
    if r["truncated"]:
        out.print("(only the first due entries were read; more may be due)")


def _clock_text(clock: dict) -> str | None:
    """The retention clock guard's state in prose, when there is something to say."""
    if refused := clock.get("refused"):
        return (
            f"passes refused since {utc_iso(int(refused['since']))}: the wall clock stepped "
            f"{refused['step_seconds']:+,.0f} s; `memoryd retention run --confirm-clock` "
            "accepts it"
        )
    if clock.get("behind"):
        return f"the wall clock is {clock['behind']:,.0f} s behind the retention clock"
    return None


def _pass_text(r: dict) -> str:
    """A retention pass report in prose."""
    if r["skipped"]:
        return "retention pass skipped: another pass is running"
    lines = [
        f"retention pass at {r['now']}: {counted(r['expired'], 'version')} "
        f"expired, {r['purged_versions']:,} purged ({counted(r['keys_deleted'], 'key')} "
        f"deleted, housekeeping included) in {counted(r['waves'], 'wave')}, "
        f"{r['seconds']:.2f}s",
        f"cleaned: {r['protections_cleaned']:,} lapsed leases, "
        f"{r['retrieval_leases_cleaned']:,} retrieval leases, {r['hints_cleaned']:,} access "
        f"records, {r.get('spool_orphans_removed', 0):,} orphaned spool files, "
        f"{r['requests_purged']:,} request records, {r['segment_states_purged']:,} expired "
        "segment states",
    ]
    if r["refused"]:
        lines.append(f"waves refused: {r['refused']}")
    if r["disk"]:
        lines.append(f"disk low: {r['disk'].get('free_bytes', 0):,} bytes free")
    if r["compaction"].get("flushed"):
        lines.append("compaction: flushed, background compaction scheduled")
    return "\n".join(lines)


@command(retention_group, "compact", "memoryd retention run && memoryd retention compact")
@click.option("--project", help="Only this project's postings (payloads are always compacted).")
def retention_compact(md: Memoryd, as_json: bool, project: str | None) -> None:
    """Compact the archive ranges that held expired content, now: afterwards no archive
    file holds the text of an expired version (run it after `retention run`)."""
    r = md.archive("retention_compact", {"project": project})
    if as_json:
        emit_json(r)
        return
    out.print(
        f"compacted {('project ' + r['project']) if r['project'] else 'every project'}: "
        f"SST {r['sst_before_bytes']:,} -> {r['sst_after_bytes']:,} bytes "
        f"({r['reclaimed_bytes']:,} reclaimed)",
        highlight=False,
    )


@command(retention_group, "status", "memoryd retention status --json")
@click.option("--now", help="Evaluate as of this time (ISO 8601).")
def retention_status(md: Memoryd, as_json: bool, now: str | None) -> None:
    """Policy, migration state, degraded (disk-low) status, counts and backlog."""
    r = md.archive("retention_status", {"now": _iso_or_none(now)})
    if as_json:
        emit_json(r)
        return
    c = r["counts"]
    degraded = r["degraded"]
    out.print(
        f"disk-low mode since {degraded.get('since')}" if degraded else "not degraded",
        highlight=False,
    )
    if clock := _clock_text(r["clock"]):
        out.print(clock, highlight=False)
    out.print(
        f"migration: {r['migration'].get('state')}; due now: {r['due_segments']} segments, "
        f"{r['due_entries']} held versions; "
        f"waiting for purge: {r['pending_purge']:,}",
        highlight=False,
    )
    versions = ", ".join(f"{n:,} {s}" for s, n in c["versions"].items())
    out.print(
        f"{c['documents']:,} documents, versions: {versions}; {c['pins']:,} pinned; "
        f"live payload {c['live_payload_bytes']:,} bytes",
        highlight=False,
    )
    table = table_of("class", "live versions", "expires after (days)", title="retention")
    for cls, n in c["live_by_class"].items():
        days = r["policy"][cls]["age_days"]
        table.add_row(cls, f"{n:,}", str(days) if days else "never")
    out.print(table)
