"""``memoryd projects ...``: the projects of project memory."""

from __future__ import annotations

import click

from memoryd.faces.cli.common import (
    DIRECTORY,
    command,
    emit,
    emit_json,
    human_size,
    options_text,
    out,
    skipped_line,
    table_of,
)
from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects


@click.group("projects", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Machine output (of the list).")
@click.option("--home", envvar="MEMORYD_HOME", type=DIRECTORY, hidden=True)
@click.pass_context
def projects_group(ctx: click.Context, as_json: bool, home: str | None) -> None:
    """Projects in project memory: list (the default), show, rename, remove.

    \b
    Example:
      memoryd projects && memoryd projects rename old-name new-name
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(projects_list, as_json=as_json, home=home)


@command(projects_group, "list", "memoryd projects list --json")
def projects_list(md: Memoryd, as_json: bool) -> None:
    """List projects with their root, live files, chunks and last ingest."""
    projects = Projects(md).listing()
    if as_json:
        emit_json(projects)
        return
    if not projects:
        out.print("no projects yet: memoryd ingest PATH --wait")
        return
    table = table_of("project", "files", "chunks", "source", "last ingest", "root")
    for p in projects:
        table.add_row(
            p["project"],
            f"{p['files']:,}",
            f"{p['chunks']:,}",
            human_size(p["source_bytes"]),
            p["last_ingest_at"] or "never",
            p["root"] or "",
        )
    out.print(table)


@command(projects_group, "show", "memoryd projects show myrepo --json")
@click.argument("name")
def projects_show(md: Memoryd, as_json: bool, name: str) -> None:
    """Show a project: root, files, the ingest options a plain re-run reuses, and its
    last ingest with every file it skipped and why."""
    p = Projects(md).show(name)
    if as_json:
        emit_json(p)
        return
    out.print(f"[bold]{p['project']}[/]: {p['root'] or ''}", highlight=False)
    out.print(
        f"{p['files']:,} files, {p['chunks']:,} chunks, {human_size(p['source_bytes'])}; "
        f"created {p['created_at']}, last ingest {p['last_ingest_at'] or 'never'}",
        highlight=False,
    )
    stored = p["ingest_options"]
    text = options_text(stored) if stored is not None else "none stored yet"
    out.print(f"ingest options (a plain re-run reuses them): {text}", highlight=False)
    if run := p["last_run"]:
        state = "finished " + run["finished_at"] if run["finished_at"] else "not finished"
        out.print(f"last run {run['id']}: started {run['started_at']}, {state}", highlight=False)
        skipped = ", ".join(f"{k} {v:,}" for k, v in run["skipped"].items()) or "nothing"
        out.print(f"skipped: {skipped}", highlight=False)
        for f in run["skipped_files"]:
            out.print(skipped_line(f), highlight=False, soft_wrap=True)


@command(projects_group, "rename", "memoryd projects rename myrepo myrepo-old")
@click.argument("old")
@click.argument("new")
def projects_rename(md: Memoryd, as_json: bool, old: str, new: str) -> None:
    """Rename a project (its files, index and history stay)."""
    r = Projects(md).rename(old, new)
    emit(as_json, r, f"renamed project {old} to {new}")


@command(projects_group, "remove", "memoryd projects remove myrepo-old --wait")
@click.argument("name")
@click.option("--wait", is_flag=True, help="Run (or follow) a supervisor until it is gone.")
def projects_remove(md: Memoryd, as_json: bool, name: str, wait: bool) -> None:
    """Remove a project: its files, chunks, index and history, in bounded queued steps.

    The name is free at once; the rows go as the supervisor runs the removal jobs.
    Archived transcripts of the project are not touched.
    """
    r = Projects(md).remove(name, wait=wait)
    if r["removed"]:
        text = f"removed project {name}"
    else:
        text = f"project {name} is being removed (job {r['job']}); `memoryd run --drain` runs it"
    emit(as_json, r, text)
