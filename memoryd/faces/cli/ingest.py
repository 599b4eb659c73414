"""``memoryd ingest``: a repository into project memory, with its progress and summary."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from memoryd.base.config import ROUTINE_SKIPS, SKIPPED_PATHS_NAMED
from memoryd.base.errors import UsageError
from memoryd.faces.cli.common import (
    command,
    emit_line,
    err,
    human_rate,
    human_size,
    options_text,
    out,
    skipped_line,
)
from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects


def _follow_up_text(run: dict) -> str:
    """The jobs a finished run still runs (the index merge, the vectors' codes)."""
    return f"{run['jobs_done']:,} jobs done, {run['jobs_left']:,} left"


class IngestProgress:
    """How ``ingest --wait`` shows its run: a bar on a terminal (files found while
    scanning, then files, MB, rate, ETA, then the jobs the run enqueued: "packing (3
    jobs done, 1 left)"), gone when the run ends (no stale bar above the summary);
    JSON lines with --json; otherwise (a log, CI) a plain line every
    ``progress_line_seconds``."""

    def __init__(self, as_json: bool, line_seconds: float) -> None:
        self.as_json = as_json
        self.line_seconds = line_seconds
        self.next_line = time.monotonic() + line_seconds
        self.last: tuple = ()
        self.bar = None  # a rich Progress (imported here: only ingest --wait draws one)
        self.task = self.follow = None
        if not as_json and err.is_terminal:
            from rich.progress import (
                BarColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[what]}"),
                TextColumn("{task.fields[mb]}"),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=err.rich,
                transient=True,
            )

    def __enter__(self) -> IngestProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar and self.task is not None:
            self.bar.stop()

    def __call__(self, run: dict) -> None:
        if self.bar and self.task is None:
            # started at the first report, after the supervisor is forked: the bar's
            # refresh thread must not exist at the fork
            self.bar.start()
            self.task = self.bar.add_task("scanning", total=None, what="0 files", mb="")
        if not self.as_json and not self.bar:
            self._plain_line(run)
            return
        stage = run.get("stage", "")
        key = (run["scanned_at"], run["discovered"], run["files_done"], run["bytes_done"],
               stage, run.get("jobs_done"), run.get("jobs_left"))  # fmt: skip
        if key == self.last:
            return
        self.last = key
        if self.as_json:
            fields = ("discovered", "files_done", "files_total", "bytes_done", "bytes_total")
            follow = {k: run[k] for k in ("stage", "jobs_done", "jobs_left")} if stage else {}
            emit_line(
                {"event": "progress", **{k: run[k] for k in (*fields, "unchanged")}, **follow}
            )
        elif stage:  # the files are in: no bar at 100% while the run's jobs go on
            self._follow_up(stage, run)
        elif run["scanned_at"]:
            self.bar.update(
                self.task,
                description="ingesting",
                total=max(run["bytes_total"], 1),
                completed=run["bytes_done"],
                what=f"{run['files_done']}/{run['files_total']} files",
                mb=f"{run['bytes_done'] / 1e6:.1f}/{run['bytes_total'] / 1e6:.1f} MB",
                refresh=True,
            )
        else:
            self.bar.update(self.task, what=f"{run['discovered']:,} files found", refresh=True)

    def _follow_up(self, stage: str, run: dict) -> None:
        """The files' bar gives way to one of unknown length (a pulse) for the jobs the
        run enqueued, named by its stage, with the jobs done and left."""
        if self.follow is None:
            self.bar.update(self.task, visible=False)
            self.follow = self.bar.add_task(stage, total=None, what="", mb="")
        self.bar.update(self.follow, description=stage, what=_follow_up_text(run), refresh=True)

    def _plain_line(self, run: dict) -> None:
        if time.monotonic() < self.next_line:
            return
        self.next_line = time.monotonic() + self.line_seconds
        if run.get("stage"):
            where = f"{run['stage']}, {_follow_up_text(run)}"
        elif run["scanned_at"]:
            where = (
                f"{run['files_done']:,}/{run['files_total']:,} files, "
                f"{run['bytes_done'] / 1e6:.1f}/{run['bytes_total'] / 1e6:.1f} MB"
            )
        else:
            where = f"scanning, {run['discovered']:,} files found so far"
        sys.stderr.write(f"ingest run {run['id']}: {where}\n")
        sys.stderr.flush()


@command(None, "ingest", "memoryd ingest ~/src/myrepo --wait --workers 2 --exclude 'tests/'")
@click.argument("path", type=click.Path())
@click.option("--project", help="Project name (default: the directory name).")
@click.option("--wait", is_flag=True, help="Run (or follow) a supervisor until done.")
@click.option("--workers", type=click.IntRange(1, 64), help="Workers for --wait.")
@click.option(
    "--exclude", "excludes", multiple=True, help="Extra gitignore-style pattern (stored)."
)
@click.option("--no-exclude", is_flag=True, help="Forget the project's stored --exclude patterns.")
@click.option(
    "--include-hidden/--no-include-hidden",
    default=None,
    help="Also ingest hidden files (.name); stored with the project.",
)
@click.option(
    "--include-secrets/--no-include-secrets",
    default=None,
    help="Also ingest secret files (.env*, keys, credentials in content); stored.",
)
def ingest_cmd(
    md: Memoryd, as_json: bool, path: str, wait: bool, no_exclude: bool, **opts: Any
) -> None:
    """Ingest a repository into searchable project memory (incremental).

    The choices of files (--exclude, --include-hidden, --include-secrets) are stored
    with the project and reused by a plain re-run; one given replaces the stored one.
    """
    from memoryd.ingest.runner import process_started  # as Projects.ingest: when it runs

    if no_exclude and opts["excludes"]:
        raise UsageError("give --exclude patterns or --no-exclude, not both")
    opts["excludes"] = [] if no_exclude else (list(opts["excludes"]) or None)
    started = process_started()  # the summary's time is the command's
    with IngestProgress(as_json, md.config.progress_line_seconds) as progress:
        result = Projects(md).ingest(path, wait=wait, on_progress=progress, started=started, **opts)
    if as_json:
        emit_line({"event": "summary", **result})
        return
    _print_options(result)
    if not wait:
        _print_queued(result)
    else:
        _print_ingest_summary(result)
    if wait and not result["complete"]:
        sys.exit(1)


def _print_options(r: dict) -> None:
    """Which choices of files the run used: the project's stored ones, or those the
    command line replaced (stored for the next run)."""
    for name, (was, now) in r["options_replaced"].items():
        flag = "--" + name.replace("_", "-").removesuffix("s")
        out.print(
            f"{flag}: {options_text(now)} replaces the project's stored "
            f"{options_text(was)} (stored for the next run)",
            highlight=False,
        )
    stored = r["options_stored"] and not r["options_replaced"]
    if stored and options_text(r["options"]) != "the defaults":
        out.print(
            f"with the project's stored options: {options_text(r['options'])} "
            "(a flag on the command line replaces them)",
            highlight=False,
        )


def _print_queued(r: dict) -> None:
    verb = "already queued" if r["joined"] else "queued"
    out.print(f"{verb}: ingest run {r['run']} of project {r['project']}", highlight=False)
    if r["supervisor"]:
        out.print(f"the running supervisor (pid {r['supervisor']}) will process it")
    else:
        out.print(
            "no supervisor is running: process it with `memoryd run --drain`, "
            "or ingest with --wait to see it through",
            highlight=False,
        )


def _cpu_note(cpu: float | None) -> str:
    """The CPU beside an ingest's time (unknown when a running supervisor did it)."""
    return "" if cpu is None else f", {cpu:.1f} CPU s"


def _too_large_text(large: dict) -> str:
    """The files an ingest skipped for their size, and how to let them in."""
    more = large["files"] - len(large["paths"])
    named = ", ".join(large["paths"]) + (f" and {more:,} more" if more else "")
    limit = large["max_file_bytes"]
    return (
        f"  too large (over {limit:,} bytes): {named}; raise the limit with "
        f"MEMORYD_{large['setting'].upper()} or {large['setting']} in memoryd.toml"
    )


def _print_skipped_files(r: dict) -> None:
    """The files a run skipped, the first few of each reason but the routine ones
    (``projects show`` and ``--json`` list them all; files too large have their own
    line)."""
    by_reason: dict[str, list[dict]] = {}
    for f in r["skipped_files"]:
        if f["reason"] not in ROUTINE_SKIPS and f["reason"] != "too_large":
            by_reason.setdefault(f["reason"], []).append(f)
    for reason, files in by_reason.items():
        for f in files[:SKIPPED_PATHS_NAMED]:
            out.print(skipped_line(f), highlight=False, soft_wrap=True)
        if len(files) > SKIPPED_PATHS_NAMED:
            out.print(f"  {reason}: {len(files) - SKIPPED_PATHS_NAMED:,} more", highlight=False)
    if any(len(files) > SKIPPED_PATHS_NAMED for files in by_reason.values()):
        out.print(f"every skipped file: `memoryd projects show {r['project']}`", highlight=False)


def _print_ingest_summary(r: dict) -> None:
    status = "complete" if r["complete"] else f"INCOMPLETE ({r['dead_jobs']} dead jobs)"
    out.print(
        f"[bold]{r['project']}[/]: {status}: {r['files_ingested']:,} files "
        f"({human_size(r['bytes_ingested'])}) ingested, {r['unchanged']:,} unchanged, "
        f"{r['retired']:,} retired in {r['seconds']:.1f}s "
        f"({human_rate(r['bytes_ingested'], r['seconds'])}"
        f"{_cpu_note(r['cpu_seconds'])}; searchable after {r['searchable_seconds']:.1f}s)",
        highlight=False,
    )
    if r["vectors_seconds"] or r["vectors_pending"]:
        pending = f", {r['vectors_pending']:,} files still without" if r["vectors_pending"] else ""
        out.print(
            f"semantic codes written {r['vectors_seconds']:.1f}s after{pending}", highlight=False
        )
    if r["skipped"]:
        skipped = ", ".join(f"{k} {v:,}" for k, v in r["skipped"].items())
        out.print(f"skipped: {skipped}", highlight=False)
        _print_skipped_files(r)
    if large := r["too_large"]:
        out.print(_too_large_text(large), highlight=False, soft_wrap=True)
    for dead in r["dead_reasons"]:
        out.print(f"  {dead['jobs']:,} dead {dead['kind']}: {dead['error']}", highlight=False)
    if r["dead_jobs"]:
        out.print(
            "see `memoryd jobs dead`; once the cause is fixed, `memoryd jobs retry --all-dead`",
            highlight=False,
        )
