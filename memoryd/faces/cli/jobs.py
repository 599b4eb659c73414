"""``memoryd jobs ...``: the job queue's jobs, listed, shown, added and retried."""

from __future__ import annotations

import sys
from typing import Any

import click
import orjson

from memoryd.faces.cli.common import LazyChoice, clip, command, emit_json, err, out, table_of
from memoryd.operations.api import Memoryd


@click.group("jobs")
def jobs_group() -> None:
    """Inspect and manage the job queue.

    \b
    Example:
      memoryd jobs add noop --count 10 && memoryd jobs list --state queued
    """


class _KindsEpilog(click.Command):
    """``jobs add``, whose help ends naming the kinds it takes: the job contract that
    lists them is imported when the help is shown, not on every command's start."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from memoryd.workers.contract import USER_KINDS

        self.epilog = f"Kinds: {', '.join(sorted(USER_KINDS))} (the others are memoryd's own)."
        super().format_epilog(ctx, formatter)


@command(
    jobs_group,
    "add",
    "memoryd jobs add sleep --payload '{\"seconds\": 0.5}' --count 4",
    cls=_KindsEpilog,
)
@click.argument("kind")
@click.option("--count", type=click.IntRange(1), default=1, show_default=True)
@click.option("--payload", help="Job payload as JSON.")
@click.option("--project", help="Project the jobs belong to.")
@click.option("--priority", type=int, default=0, show_default=True)
@click.option("--max-attempts", type=click.IntRange(1), help="Attempts before dead-lettering.")
@click.option("--dedupe-key", help="Enqueue at most one live job with this key.")
def jobs_add(md: Memoryd, as_json: bool, kind: str, payload: str | None, **opts: Any) -> None:
    """Enqueue COUNT jobs of KIND (noop, sleep, fail), committed in chunks of
    enqueue_chunk_rows."""
    from memoryd.operations.jobs import Jobs, parse_payload

    ids = Jobs(md).add(kind, payload=parse_payload(payload), **opts)
    added = [i for i in ids if i is not None]
    if as_json:
        emit_json({"added": len(added), "ids": ids})
    else:
        out.print(f"added {len(added)} {kind} job(s)" + ("" if added else " (deduplicated)"))


def _job_states() -> list[str]:
    """The queue's states, for ``--state`` (the queue imported when it is used or shown)."""
    from memoryd.queue import STATES

    return list(STATES)


def _print_jobs(jobs: list[dict], title: str) -> None:
    if not jobs:
        out.print(f"{title}: none", highlight=False)
        return
    table = table_of("id", "kind", "state", "attempts", "project", title=title)
    table.add_column("last error", overflow="ellipsis")
    for j in jobs:
        table.add_row(
            str(j["id"]),
            j["kind"],
            j["state"],
            f"{j['attempts']}/{j['max_attempts']}",
            j["project"] or "",
            clip(j["last_error"], 80),
        )
    out.print(table)
    if any(len(j["last_error"] or "") > 80 for j in jobs):
        out.print("full errors: memoryd jobs show ID", highlight=False)


@command(jobs_group, "list", "memoryd jobs list --state failed --kind ingest.batch --limit 20")
@click.option("--state", type=LazyChoice(_job_states))
@click.option("--kind", help="Only jobs of this kind.")
@click.option("--project", help="Only jobs of this project.")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True, help="Most rows.")
def jobs_list(md: Memoryd, as_json: bool, state: str | None, limit: int, **filters: Any) -> None:
    """List jobs, newest first."""
    from memoryd.operations.jobs import Jobs

    jobs = Jobs(md).listing(state, limit, **filters)
    if as_json:
        emit_json(jobs)
    else:
        shown = [f"{k} {v}" for k, v in (("state", state), *filters.items()) if v]
        _print_jobs(jobs, f"jobs ({', '.join(shown) or 'all'})")


@command(jobs_group, "show", "memoryd jobs show 42")
@click.argument("job_id", type=int)
def jobs_show(md: Memoryd, as_json: bool, job_id: int) -> None:
    """One job in full: payload, attempts, times and its whole last error."""
    from memoryd.operations.jobs import Jobs

    job = Jobs(md).show(job_id)
    if as_json:
        emit_json(job)
        return
    rows = {
        "job": f"{job['id']} ({job['kind']}) {job['state']}",
        "project": job["project"] or "-",
        "attempts": f"{job['attempts']} of {job['max_attempts']}",
        "priority": str(job["priority"]),
        "payload": clip(orjson.dumps(job["payload"]).decode(), 200),
        "dedupe key": job["dedupe_key"] or "-",
        "created": job["created_at"],
        "updated": job["updated_at"],
        "not before": job["not_before"] or "-",
        "finished": job["finished_at"] or "-",
        "lease": f"{job['lease_owner']} until {job['lease_expires']}"
        if job["lease_owner"]
        else "-",
    }
    for label, value in rows.items():
        out.print(f"{label:>11}: {value}", highlight=False, markup=False)
    if job["last_error"]:
        out.print(f"{'last error':>11}:", highlight=False)
        out.print(job["last_error"], highlight=False, markup=False, soft_wrap=True)


@command(jobs_group, "dead", "memoryd jobs dead --json")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True, help="Most rows.")
def jobs_dead(md: Memoryd, as_json: bool, limit: int) -> None:
    """List dead-lettered jobs with their last error."""
    from memoryd.operations.jobs import Jobs

    jobs = Jobs(md).listing("dead", limit)
    if as_json:
        emit_json(jobs)
    else:
        _print_jobs(jobs, "dead jobs")


@command(jobs_group, "retry", "memoryd jobs retry 42   |   memoryd jobs retry --all-dead")
@click.argument("ids", nargs=-1, type=int)
@click.option("--all-dead", is_flag=True, help="Requeue every dead job.")
def jobs_retry(md: Memoryd, as_json: bool, ids: tuple[int, ...], all_dead: bool) -> None:
    """Requeue dead jobs (by id, or all of them) with fresh attempts.

    Exits 1 when a named job is unknown or not dead.
    """
    if not ids and not all_dead:
        raise click.UsageError("name job ids or pass --all-dead")
    from memoryd.operations.jobs import Jobs

    r = Jobs(md).retry(list(ids), all_dead=all_dead)
    if as_json:
        emit_json(r)
    else:
        out.print(f"requeued {len(r['requeued'])} job(s)")
        for refused in r["refused"]:
            err.print(f"job {refused['id']} not requeued: {refused['reason']}", highlight=False)
    if r["refused"]:
        sys.exit(1)
