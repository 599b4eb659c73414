"""The ``memoryd`` command: parses arguments, calls :mod:`memoryd.operations.api`, prints.

Exit codes: 0 success, 1 a reported failure, 2 bad usage.
"""

from __future__ import annotations

import functools
import inspect
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from memoryd.base.config import (
    RETENTION_THRESHOLD_FLAGS,
    ROUTINE_SKIPS,
    SETTINGS,
    SKIPPED_PATHS_NAMED,
    one_shot_blas,
)
from memoryd.base.errors import (
    ConfigError,
    MemorydError,
    UsageError,
    corruption,
    is_busy,
    is_corruption,
    store_busy,
)
from memoryd.base.times import utc_iso
from memoryd.faces.cli.memory import add_commands as add_memory_commands
from memoryd.faces.cli.output import Console, Table
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.projects import Projects

# A subject a few commands use (jobs, the archive, search, recall) is imported by them:
# its modules (the queue, the stores, the job contract) are not on every command's start.

out = Console()
err = Console(stderr=True)


def emit_line(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
    sys.stdout.flush()


def emit_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def emit(as_json: bool, value: Any, text: str) -> None:
    """``value`` as JSON under --json, else the human ``text``."""
    if as_json:
        emit_json(value)
    else:
        out.print(text, highlight=False, markup=False)


def report_error(
    code: str,
    message: str,
    retryable: bool,
    exit_code: int,
    as_json: bool,
    details: dict | None = None,
):
    """The one way a command fails: a JSON object under --json, a red line on stderr, an exit."""
    if as_json:  # the JSON says it all: nothing on stderr besides
        emit_json({"error": code, "message": message, "retryable": retryable} | (details or {}))
    else:
        err.print(red_line(f"memoryd: {message}"))
    sys.exit(exit_code)


def red_line(text: str) -> Any:
    """``text`` in bold red, no markup read (rich's Text: imported for a failure)."""
    from rich.text import Text

    return Text(text, style="bold red")


class _LazyChoice(click.Choice):
    """A choice among names a heavy module defines, imported only when the option is
    used (a value, ``--help``): not on every CLI start."""

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> list[str]:  # type: ignore[override]
        return self._names()

    @choices.setter
    def choices(self, _value: object) -> None:
        pass


class MemorydGroup(click.Group):
    """click's group, but a usage error under ``--json`` is a JSON error object too."""

    def main(self, args: list[str] | None = None, **kwargs: Any) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            if "--json" not in args:
                exc.show()
                sys.exit(exc.exit_code)
            report_error("BAD_USAGE", exc.format_message(), False, exc.exit_code, True)
        except click.exceptions.Abort:
            err.print("Aborted!")
            sys.exit(130)
        except BrokenPipeError:  # `memoryd jobs list | head`: the reader left
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def table_of(*columns: str, **options: Any) -> Table:
    """A table (rich's when rich prints it: :mod:`.output`)."""
    return Table(*columns, **options)


HOME_HELP = "Data home (default $MEMORYD_HOME, else $XDG_DATA_HOME/memoryd)."
#: The type of every ``--home`` and directory option: one instance, as each one made
#: looks its name's translation up on disk (gettext: 4 ms over every command at start).
DIRECTORY = click.Path(file_okay=False)


def command(
    group: click.Group,
    name: str,
    example: str,
    *,
    strict: bool = True,
    home_help: str = HOME_HELP,
    **kwargs,
) -> Callable:
    """Declare a subcommand with ``--home``, ``--json`` and an example in its help.

    ``strict=False`` lets the command run on a faulty configuration (to report it).
    """

    def decorate(fn: Callable) -> click.Command:
        @functools.wraps(fn)
        def wrapper(home: str | None, as_json: bool, **params: Any) -> None:
            ctx = click.get_current_context()
            home = home or (ctx.find_root().params.get("home"))
            # A flag named like a setting (e.g. --workers) overrides it, strongest of all.
            overrides = {k: v for k, v in params.items() if k in SETTINGS and v is not None}
            md = None
            try:
                md = Memoryd(home, overrides, strict=strict)
                fn(md, as_json, **params)
            except Exception as exc:
                if is_corruption(exc):  # a damaged store: typed, naming the file
                    exc = corruption(exc, str(md.home if md else home))
                elif is_busy(exc):  # a read waited on a small home's commit too long
                    exc = store_busy(exc, str(md.home if md else home))
                elif not isinstance(exc, MemorydError):
                    raise
                details = getattr(exc, "details", None) or {}  # e.g. a lease's "rejected"
                report_error(exc.code, str(exc), exc.retryable, exc.exit_code, as_json, details)
            finally:
                if md is not None:
                    md.close()

        wrapper = click.option("--json", "as_json", is_flag=True, help="Machine output.")(wrapper)
        wrapper = click.option(
            "--home",
            envvar="MEMORYD_HOME",
            type=DIRECTORY,
            help=home_help,
        )(wrapper)
        doc = inspect.cleandoc(fn.__doc__ or "")  # a docstring's indent is not prose
        return group.command(name, help=f"{doc}\n\n\b\nExample:\n  {example}", **kwargs)(wrapper)

    return decorate


@click.group(cls=MemorydGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="MEMORYD_HOME", type=DIRECTORY, hidden=True)
@click.version_option(package_name="memoryd")
def main(home: str | None) -> None:
    """memoryd: a local, crash-safe memory service for coding agents.

    \b
    Example:
      memoryd init && memoryd jobs add noop --count 100 && memoryd run --drain
    """


@command(main, "init", "memoryd init --home ~/.local/share/memoryd")
def init_cmd(md: Memoryd, as_json: bool) -> None:
    """Create the data home and its authority (idempotent)."""
    info = md.init()
    if as_json:
        emit_json(info)
    else:
        out.print(f"memoryd home ready: {info['home']} (schema {info['schema']})")


@command(main, "run", "memoryd run --workers 2 --drain")
@click.option("--workers", type=click.IntRange(1, 64), help="Job worker processes.")
@click.option("--drain", is_flag=True, help="Exit when nothing is claimable or in flight.")
@click.option(
    "--log-format", type=click.Choice(["text", "json"]), help="Log lines on stderr (text)."
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Least severe log line shown (info).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where job batches run: worker processes here, or Ray tasks.",
)
@click.option("--ray-address", help="A Ray cluster to join (default: start a local one).")
def run_cmd(
    md: Memoryd,
    as_json: bool,
    workers: int | None,
    drain: bool,
    executor: str,
    ray_address: str | None,
    **_logs: str,
) -> None:
    """Run the supervisor: claim jobs, run them in workers, commit their effects.

    It logs one line per event that matters on stderr (start, worker respawns,
    claim pauses and the pids pinning the WAL, checkpoints that gave way, dead
    jobs, retention ticks, busy waits, stop)."""
    from memoryd.base import logs

    logs.configure(md.config.log_format, md.config.log_level)
    stats = md.run(workers=workers, drain=drain, executor=executor, ray_address=ray_address)
    if as_json:
        emit_json(stats)
    else:
        out.print(
            f"done {stats['done']}, failed {stats['failed']}, dead {stats['dead']}, "
            f"rejected {stats['rejected']}, workers respawned {stats['respawned']}"
        )


@command(main, "status", "memoryd status --json")
def status_cmd(md: Memoryd, as_json: bool) -> None:
    """Show the queue, the supervisor and the authority."""
    st = Home(md).status()
    if as_json:
        emit_json(st)
        return
    sup = st["supervisor"]
    out.print(f"home {st['home']}  schema {st['schema']}  WAL {st['wal_bytes']:,} bytes")
    if st["claims_paused"]:
        out.print(f"[bold yellow]claims paused[/]: {st['pause_reason']}")
    out.print(
        f"supervisor: pid {sup['pid']}, {len(sup.get('workers', []))} workers"
        if sup
        else "supervisor: not running"
    )
    if st["waiting_without_supervisor"]:
        out.print(
            f"[bold yellow]{st['waiting_without_supervisor']:,} jobs wait and no supervisor is "
            "running[/]: process them with `memoryd run --drain` (or keep `memoryd run` going)",
            highlight=False,
        )
    table = table_of("state", "jobs", title="queue")
    for state, jobs in st["queue"].items():  # every state, in the queue's order
        table.add_row(state, f"{jobs:,}")
    out.print(table)
    kept = st["done_jobs"]
    age = human_duration(kept["keep_seconds"])
    out.print(f"done jobs kept: {kept['kept']:,} (purged after {age})", highlight=False)
    if st["projects"]:
        table = table_of("project", "files", "chunks", "source", "root", title="projects")
        for p in st["projects"]:
            table.add_row(
                p["project"],
                f"{p['files']:,}",
                f"{p['chunks']:,}",
                human_size(p["source_bytes"]),
                p["root"] or "",
            )
        out.print(table)


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


@command(main, "ingest", "memoryd ingest ~/src/myrepo --wait --workers 2 --exclude 'tests/'")
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


def _options_text(options: dict | list | bool) -> str:
    from memoryd.ingest.runner import option_flags

    if isinstance(options, list):  # excludes
        return " ".join(shlex.quote(p) for p in options) or "none"
    if isinstance(options, bool):
        return "yes" if options else "no"
    return shlex.join(option_flags(options)) or "the defaults"


def _print_options(r: dict) -> None:
    """Which choices of files the run used: the project's stored ones, or those the
    command line replaced (stored for the next run)."""
    for name, (was, now) in r["options_replaced"].items():
        flag = "--" + name.replace("_", "-").removesuffix("s")
        out.print(
            f"{flag}: {_options_text(now)} replaces the project's stored "
            f"{_options_text(was)} (stored for the next run)",
            highlight=False,
        )
    stored = r["options_stored"] and not r["options_replaced"]
    if stored and _options_text(r["options"]) != "the defaults":
        out.print(
            f"with the project's stored options: {_options_text(r['options'])} "
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


def _skipped_line(f: dict) -> str:
    return f"  {f['reason']}: {f['path']}" + (f" ({f['detail']})" if f.get("detail") else "")


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
            out.print(_skipped_line(f), highlight=False, soft_wrap=True)
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


MIN_SCORE_HELP = (
    "Only narrows: drop admitted items whose score (0..1) is below this; never adds one "
    "(optional, never required)."
)
ANSWER_THRESHOLD_HELP = (
    "Abstain when the best item's score (the estimated chance it answers) is below this "
    "(default: the answer_threshold setting, MEMORYD_ANSWER_THRESHOLD; 0 answers whatever "
    "the gate admits)."
)
answer_threshold_option = click.option(
    "--answer-threshold", type=click.FloatRange(0, 1), help=ANSWER_THRESHOLD_HELP
)


@command(main, "search", "memoryd search 'how are JSON documents decoded?' --project python3.11")
@click.argument("query")
@click.option("--project", help="Project to search (default: the only one).")
@click.option("--all", "all_projects", is_flag=True, help="Search every project.")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Most items."
)
@click.option("--min-score", type=click.FloatRange(0, 1), help=MIN_SCORE_HELP)
@answer_threshold_option
def search_cmd(
    md: Memoryd,
    as_json: bool,
    query: str,
    project: str | None,
    all_projects: bool,
    limit: int,
    min_score: float | None,
    answer_threshold: float | None,
) -> None:
    """Search project memory; abstain when the evidence is insufficient.

    With --all, every project is searched and each hit names its project."""
    if all_projects and project:
        raise click.UsageError("--all searches every project: drop --project")
    from memoryd.operations.search import Search

    one_shot_blas()
    narrow = {"limit": limit, "min_score": min_score, "answer_threshold": answer_threshold}
    if all_projects:
        result = Search(md).search_all(query, **narrow)
    else:
        result = Search(md).search(query, project, **narrow)
    if as_json:
        emit_json(result)
    else:
        print_search(result)
        if result.get("pending"):
            names = ", ".join(result["pending"])
            out.print(f"[dim]not searched (first ingest under way): {names}[/]", highlight=False)


def _hit_heading(item: dict) -> str:
    where = f"[magenta]{item['project']}[/] " if "project" in item else ""
    if item.get("source") == "memory":
        mark = "".join(f", conflict with {c}" for c in item.get("conflicts_with", ()))
        return f"{where}[bold green]memory {item['id']}[/] ({item['kind']}, {item['status']}{mark})"
    return (
        f"{where}[bold cyan]{item['path']}[/]:{item['start_line']}-{item['end_line']}"
        f"  [dim]score {item['score']:.3f}[/]"
    )


def print_search(
    result: dict, excerpt_lines: int = 6, heading: Callable[[dict], str] = _hit_heading
) -> None:
    if result["status"] == "abstained":
        out.print(f"[yellow]abstained[/]: {result['gap']}", highlight=False)
        return
    for item in result["items"]:
        out.print(heading(item), highlight=False)
        for line in item["excerpt"].splitlines()[:excerpt_lines]:
            out.print(f"    {line}", highlight=False, markup=False)


@command(main, "recall", "memoryd recall 'which retry backoff did we choose?' --project myrepo")
@click.argument("query")
@click.option("--project", help="Project to recall for (default: the only one).")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=5, show_default=True, help="Most items."
)
@click.option("--min-score", type=click.FloatRange(0, 1), help=MIN_SCORE_HELP)
@answer_threshold_option
def recall_cmd(
    md: Memoryd,
    as_json: bool,
    query: str,
    project: str | None,
    limit: int,
    min_score: float | None,
    answer_threshold: float | None,
) -> None:
    """Recall project memory and recent archive evidence (within the recall horizons).

    Injects nothing when the evidence is insufficient, and says so."""
    from memoryd.operations.recall import recall

    one_shot_blas()
    result = recall(
        md, query, project, limit=limit, min_score=min_score, answer_threshold=answer_threshold
    )
    if as_json:
        emit_json(result)
    else:
        print_search(result, heading=_recall_heading)


def _recall_heading(item: dict) -> str:
    if item["source"] == "archive":
        return _archive_hit_heading(item)
    return _hit_heading(item)


@command(main, "mcp", "memoryd mcp --project myrepo")
@click.option("--project", help="Default project of the session's tools.")
def mcp_cmd(md: Memoryd, as_json: bool, project: str | None) -> None:
    """Serve the memory tools to an agent over MCP (stdio) until it disconnects."""
    from memoryd.faces.mcp.server import serve

    if project:
        Projects(md).require(project)  # refused before serving, like every command's
    serve(md, project)


@command(main, "dashboard", "memoryd dashboard --port 8765 --open")
@click.option(
    "--port", "dashboard_port", type=click.IntRange(0, 65535), help="Port (default: a free one)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
def dashboard_cmd(
    md: Memoryd, as_json: bool, dashboard_port: int | None, open_browser: bool
) -> None:
    """Serve a live read-only page of the home on 127.0.0.1, behind a token in its URL."""
    from memoryd.faces.dashboard.app import serve

    def announce(url: str) -> None:
        if as_json:
            emit_line({"url": url})
        else:
            out.print(f"memoryd dashboard: [link={url}]{url}[/link]", soft_wrap=True)
            out.print("(the token in the URL is the key: requests without it are refused)")
        sys.stdout.flush()

    serve(md, port=md.config.dashboard_port, open_browser=open_browser, announce=announce)


@command(main, "checkpoint-wal", "memoryd checkpoint-wal --json")
def checkpoint_cmd(md: Memoryd, as_json: bool) -> None:
    """Checkpoint and truncate the authority's WAL now (the manual boundary)."""
    r = Home(md).checkpoint_wal()
    if as_json:
        emit_json(r)
    elif r["ok"]:
        out.print(f"WAL checkpointed: {r['wal_bytes_before']:,} -> {r['wal_bytes_after']:,} bytes")
    else:
        pids = ", ".join(map(str, r["reader_pids"])) or "unknown"
        out.print(
            f"checkpoint gave way: {r['blocked_by']} (reader pids: {pids}); "
            f"WAL stays {r['wal_bytes_after']:,} bytes"
        )
    if not r["ok"]:
        sys.exit(1)


@command(main, "rebuild", "memoryd rebuild --verify")
@click.option("--verify", is_flag=True, help="Rebuild a scratch copy and compare; change nothing.")
def rebuild_cmd(md: Memoryd, as_json: bool, verify: bool) -> None:
    """Drop and rebuild every derived table (full-text index, term statistics, vectors).

    A part that cannot be done (a damaged archive) is reported, the others done; exit 1.
    """
    doing = "verifying" if verify else "rebuilding"
    r = Home(md).rebuild(
        verify=verify,
        on_part=None if as_json else lambda part: err.print(f"{doing} the {part}…"),
    )
    if as_json:
        emit_json(r)
    elif verify:
        verdict = "equal" if r["equal"] else "DIFFERENT: " + ", ".join(r["mismatches"])
        waiting = sum(n for per in r["pending"].values() for n in per.values())
        verdict += f" ({waiting:,} files or records still await their codes)" if waiting else ""
        out.print(f"rebuild --verify: derived tables {verdict}")
    else:
        for project, counts in r["rebuilt"].items():
            out.print(f"{project}: rebuilt " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
        if r["archive"] is not None:
            versions = r["archive"]["versions"]
            out.print(f"archive: rebuilt the codes of {counted(versions, 'live version')}")
    failed = r["not_verified" if verify else "not_rebuilt"]
    if not as_json:
        for f in failed:
            err.print(f"{f['part']}: not {'verified' if verify else 'rebuilt'}: {f['error']}: "
                      f"{f['message']}", highlight=False, markup=False, soft_wrap=True)  # fmt: skip
    if failed or (verify and not r["equal"]):
        sys.exit(1)


def _drill_scenarios() -> list[str]:
    from memoryd.faces.drill import CLIENTS, SCENARIOS

    return [*SCENARIOS, CLIENTS]


@command(
    main,
    "drill",
    "memoryd drill --cycles 50 --seed 7 --json",
    home_help="Drill this home (default: a scratch home; never $MEMORYD_HOME).",
)
@click.option("--cycles", type=click.IntRange(1), default=20, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=click.IntRange(1, 16), default=2, show_default=True)
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=_LazyChoice(_drill_scenarios),
    help="Run only these scenarios (repeatable; default: all but clients, rotated). "
    "clients runs alone, for --duration.",
)
@click.option("--duration", type=click.FloatRange(1), help="clients: seconds (default 600).")
@click.option("--mcp-clients", "mcp", type=click.IntRange(1), help="clients: MCP servers (16).")
@click.option("--cli-writers", "writers", type=click.IntRange(0), help="clients: CLI writers (2).")
@click.option("--readers", type=click.IntRange(0), help="clients: snapshot readers (8).")
@click.option(
    "--think",
    nargs=2,
    type=click.FloatRange(0),
    metavar="MIN MAX",
    help="clients: seconds an MCP client pauses between two calls, drawn between MIN and "
    "MAX (0.5 2).",
)
def drill_cmd(md: Memoryd, as_json: bool, cycles: int, seed: int, workers: int, scenarios, **sizes):
    """Crash drill in a scratch home (never $MEMORYD_HOME; --home to choose): break, verify."""
    from memoryd.faces.drill import CLIENTS, run_clients_drill, run_drill

    home = md.home if _home_on_command_line() else None
    if CLIENTS in scenarios:
        if len(set(scenarios)) > 1:
            raise click.UsageError(f"--scenario {CLIENTS} runs alone")
        sizes = {k: v for k, v in sizes.items() if v is not None}
        if "think" in sizes and sizes["think"][0] > sizes["think"][1]:
            raise click.BadParameter("MIN is more than MAX", param_hint="--think")
        report = run_clients_drill(seed=seed, workers=workers, home=home, **sizes)
        emit_json(report) if as_json else _print_clients_drill(report)
        sys.exit(0 if report["ok"] else 1)

    def tick(n: int, scenario: str, violations: int) -> None:
        if not as_json:
            err.print(f"cycle {n}/{cycles}: {scenario}, violations so far {violations}")

    report = run_drill(
        cycles=cycles, seed=seed, workers=workers, home=home, scenarios=scenarios, on_cycle=tick
    )
    if as_json:
        emit_json(report)
    else:
        _print_drill(report)
    if not report["ok"]:
        sys.exit(1)


def _home_on_command_line() -> bool:
    """Whether --home was typed (on the command or before it), not taken from the env."""
    ctx = click.get_current_context()
    return any(
        c.get_parameter_source("home") == click.core.ParameterSource.COMMANDLINE
        for c in (ctx, ctx.find_root())
    )


def _drill_verdict(report: dict) -> tuple[str, str]:
    """(ok or how many violations, where the drill ran) of a drill report."""
    where = "a scratch home (removed)" if report["scratch"] else "the home"
    return "ok" if report["ok"] else f"{len(report['violations'])} violations", where


def _print_clients_drill(report: dict) -> None:
    figures = report["clients"]
    verdict, where = _drill_verdict(report)
    out.print(
        f"drill clients {verdict}: {figures['duration_s']}s (seed {report['seed']}), in"
        f" {where} {report['home']}; lost {figures['lost']}, doubled {figures['doubled']}",
        highlight=False,
    )
    table = table_of("figure", "value", "bound", "met", box=None)
    for name, bound in figures["bounds"].items():
        table.add_row(name, str(figures[name]), str(bound["bound"]), str(bound["met"]))
    out.print(table)
    out.print(f"kills: {orjson.dumps(figures['kills']).decode()}", highlight=False)
    out.print(f"workload: {orjson.dumps(figures['workload']).decode()}", highlight=False)
    for v in report["violations"]:
        out.print(f"  violation: {v}", highlight=False)


def _print_drill(report: dict) -> None:
    verdict, where = _drill_verdict(report)
    out.print(
        f"drill {verdict}: {report['cycles_run']} of {report['cycles']} cycles (seed"
        f" {report['seed']}) in {report['seconds']}s, in {where} {report['home']}",
        highlight=False,
    )
    table = table_of("kill or fault", "cycles", box=None)
    for name, count in report["kills"].items():
        table.add_row(name, str(count))
    out.print(table)
    out.print(
        f"jobs {report['jobs']:,}, effects {report['effects']:,}"
        f" (the drill enqueued {report['expected_effects']:,} jobs with effects)",
        highlight=False,
    )
    for v in report["violations"]:
        out.print(f"  violation: {v}", highlight=False)


@main.group("archive")
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
    args = {"project": project, "query": query, "limit": limit, "min_score": min_score}
    args |= {} if answer_threshold is None else {"answer_threshold": answer_threshold}
    r = md.archive("search", args)
    if as_json:
        emit_json(r)
        return
    print_search(r, heading=_archive_hit_heading)


def _archive_hit_heading(item: dict) -> str:
    """An archive hit names its locator (what get, pin and lease take)."""
    return (
        f"[bold cyan]{item['locator']}[/]  lines {item['start_line']}-{item['end_line']}"
        f"  [dim]{item['class']}, {item['created_at'] or 'unknown time'}, "
        f"score {item['score']:.3f}[/]"
    )


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


@main.group("retention")
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


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 version``, ``2 versions``: a count with its noun agreeing."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


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


@main.group("jobs")
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


def clip(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters; a cut is marked with an ellipsis."""
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


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
@click.option("--state", type=_LazyChoice(_job_states))
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


@main.group("projects", invoke_without_command=True)
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
    text = _options_text(stored) if stored is not None else "none stored yet"
    out.print(f"ingest options (a plain re-run reuses them): {text}", highlight=False)
    if run := p["last_run"]:
        state = "finished " + run["finished_at"] if run["finished_at"] else "not finished"
        out.print(f"last run {run['id']}: started {run['started_at']}, {state}", highlight=False)
        skipped = ", ".join(f"{k} {v:,}" for k, v in run["skipped"].items()) or "nothing"
        out.print(f"skipped: {skipped}", highlight=False)
        for f in run["skipped_files"]:
            out.print(_skipped_line(f), highlight=False, soft_wrap=True)


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


@command(main, "doctor", "memoryd doctor --deep --json", strict=False)
@click.option(
    "--deep", is_flag=True, help="Also read every byte of both stores, checksums checked."
)
def doctor_cmd(md: Memoryd, as_json: bool, deep: bool) -> None:
    """Check the home: config, stray home, stale lock, queue, dead jobs, WAL, archive, disk.

    Exits 1 when a finding needs action; each says what to do. --deep also runs
    SQLite's integrity check (full-text indexes included) and reads the whole archive.
    """
    report = md.doctor(deep=deep)
    if as_json:
        emit_json(report)
    else:
        styles = {"ok": "green", "warn": "yellow", "action": "bold red"}
        for f in report["findings"]:
            mark = f"{f['status'].upper() if f['status'] == 'action' else f['status']:<6}"
            out.print(f"[{styles[f['status']]}]{mark}[/] {f['check']}: ", end="", highlight=False)
            out.print(f["message"], highlight=False, markup=False, soft_wrap=True)
            if f["action"]:
                out.print(f"       -> {f['action']}", highlight=False, markup=False, soft_wrap=True)
    if not report["ok"]:
        sys.exit(1)


@command(main, "stop", "memoryd stop --json")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), help="Seconds to wait.")
def stop_cmd(md: Memoryd, as_json: bool, timeout: float | None) -> None:
    """Stop the running supervisor (SIGTERM) and wait until it has exited.

    In-flight jobs get the shutdown grace to finish; the rest go back to the queue.
    """
    r = Home(md).stop(timeout=timeout)
    if r["stopped"]:
        text = f"stopped supervisor pid {r['pid']} in {r['seconds']}s"
    else:
        text = "no supervisor was running"
    emit(as_json, r, text)


DURATION_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def human_duration(seconds: float) -> str:
    """A duration in words, in its largest whole unit: 7 days, 90 minutes, 1.5 seconds."""
    for unit, size in DURATION_UNITS:
        if seconds >= size and seconds % size == 0:
            return counted(int(seconds // size), unit)
    return f"{seconds:g} seconds"


def human_size(n: int) -> str:
    """Bytes in the largest binary unit they fill: 64 MiB, 1.5 KiB, 100 B (exact when whole)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.1f} {unit}"
    return f"{n} B"


def human_rate(n: int, seconds: float) -> str:
    """Bytes per second in :func:`human_size`'s units (the JSON's ``mb_per_s`` is decimal
    megabytes, as benchmarks count them)."""
    return f"{human_size(round(n / seconds) if seconds > 0 else 0)}/s"


def _setting_text(name: str, value: Any) -> str:
    if name.endswith("_bytes") or name == "journal_size_limit":
        return human_size(value)
    return str(value)


@command(main, "config", "MEMORYD_WORKERS=4 memoryd config", strict=False)
def config_cmd(md: Memoryd, as_json: bool) -> None:
    """Print the effective configuration and where each value came from.

    Exits 2 after the report when memoryd.toml or the environment has a problem.
    """
    report = Home(md).config_report()
    if as_json:
        emit_json(report)
    else:
        # plain lines, never wrapped or cut by a terminal's width
        click.echo(f"home:        {report['home']}")
        click.echo(f"config file: {report['config_file'] or 'none (defaults, environment, flags)'}")
        width = max(map(len, report["settings"]))
        for name, s in report["settings"].items():
            click.echo(f"{name:<{width}}  {_setting_text(name, s['value']):>10}  {s['source']}")
            click.echo(f"  {s['help']}")
    for problem in report["problems"]:
        err.print(red_line(f"memoryd: {problem}"))
    if report["problems"]:
        sys.exit(ConfigError.exit_code)


@main.command(
    "diagnose",
    help="Ingest CHECKOUT into a new workspace and report bytes by phase, time, oracle"
    " scores and the workload (facts saved by memory add, a contrary case, unanswerable"
    " questions; search and recall with and without the dense route, five warm repetitions)"
    " (offline; never reads or writes your home).\n\n\b\nExample:\n"
    "  memoryd diagnose ~/src/app --workspace /tmp/diag --oracles ops/oracles/app.json",
)
@click.argument("checkout", type=click.Path(exists=True, file_okay=False))
@click.option("--workspace", required=True, type=click.Path(), help="A directory to create.")
@click.option("--oracles", type=click.Path(exists=True, dir_okay=False), help="Oracle file.")
@click.option("--baseline", help="Another memoryd command to run the same diagnostic.")
@click.option("--workers", type=click.IntRange(1, 16), default=2, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine output.")
def diagnose_cmd(checkout, workspace, oracles, baseline, workers, as_json) -> None:
    from memoryd.faces import diagnose

    try:
        report = diagnose.diagnose(
            checkout, workspace, oracles=oracles, baseline=baseline, workers=workers
        )
    except MemorydError as exc:
        report_error(exc.code, str(exc), exc.retryable, exc.exit_code, as_json)
        return
    if as_json:
        emit_json(report)
    else:
        print_diagnosis(report)


def print_diagnosis(r: dict) -> None:
    out.print(
        f"{r['checkout']}: {r['files']:,} files, {human_size(r['source_bytes'])} of source"
        f" ingested (of {human_size(r['checkout_bytes'])} in the checkout)"
        f" in {r['ingest_seconds']:.1f}s end to end"
        f" ({human_rate(r['source_bytes'], r['ingest_seconds'])},"
        f" {r['ingest_cpu_seconds']:.1f} CPU s; searchable after {r['searchable_seconds']:.1f}s)",
        highlight=False,
    )
    b = r["bytes"]
    table = table_of("phase", "database", "WAL", "SHM", "archive", "other", "total", title="bytes")
    for phase in ("empty_authority", "peak_live", "live_after_drain", "quiescent", "closed",
                  "reopened"):  # fmt: skip
        row = b[phase]
        parts = ("database", "wal", "shm", "archive", "other", "total")
        table.add_row(phase.replace("_", " "), *(f"{row[p + '_bytes']:,}" for p in parts))
    out.print(table)
    out.print(
        f"largest WAL {b['largest_wal_bytes']:,} bytes ({b['samples']:,} commits sampled);"
        f" store after a checkpoint, less the empty authority: {r['marginal_ratio']}x the source",
        highlight=False,
    )
    t = r["time"]
    out.print(
        f"first query {t['first_query_ms']} ms; warm p50 {t['warm_p50_ms']} ms,"
        f" p95 {t['warm_p95_ms']} ms over {t['warm_queries']} queries",
        highlight=False,
    )
    if r["oracles"]:
        _print_oracles(r["oracles"])
    if r.get("workload"):
        _print_workload(r["workload"])
    if "baseline" in r:
        from memoryd.faces.diagnose import comparison

        table = table_of(
            "measure", "this memoryd", "baseline", "ratio", title="against the baseline"
        )
        for label, ours, theirs, ratio in comparison(r):
            table.add_row(label, f"{ours:,}", f"{theirs:,}", "-" if ratio is None else f"{ratio}x")
        out.print(table)


def _print_oracles(o: dict) -> None:
    a, u = o["answerable"], o["unanswerable"]
    out.print(
        f"answerable: {a['hits']}/{a['cases']} hit@{o['k']}, MRR {a['mrr']},"
        f" precision {a['precision']}; unanswerable: {u['abstained']}/{u['cases']} abstained",
        highlight=False,
    )
    table = table_of("case", "result", "detail", box=None)
    for case in o["cases"]:
        if "hit" in case:
            result = "hit" if case["hit"] else "miss"
            detail = f"rank {round(1 / case['reciprocal_rank'])}" if case["hit"] else _miss(case, o)
        else:
            result = "abstained" if case["passed"] else "FAIL"
            detail = case["failure"] or ""
        table.add_row(str(case["id"]), result, detail)
    out.print(table)


def _print_workload(w: dict) -> None:
    """The workload's facts, then one row per route: hits, the contrary case,
    abstentions and false positives, and the latency of its repetitions."""
    f = w["facts"]
    done = ", ".join(f"{n} {outcome}" for outcome, n in sorted(f["outcomes"].items())) or "none"
    const = f["contrary_constant"]
    cited = f"; contrary: {const['name']} ({const['path']}:{const['line']})" if const else ""
    out.print(f"workload: {f['staged']} facts by memory add ({done}){cited}", highlight=False)
    reps = next(iter(w["routes"].values()))["repetitions"]
    table = table_of(
        "route", f"hit@{w['k']}", "MRR", "contrary", "abstained", "FP", "first", "p50", "p95",
        box=None, title=f"by route (ms; {reps} warm repetitions a case; FP: false positives)",
    )  # fmt: skip
    for route, r in w["routes"].items():
        a, c, u = r["answerable"], r["contrary"], r["unanswerable"]
        stale = f" ({c['stale_returned']} stale)" if c["stale_returned"] else ""
        table.add_row(
            route, f"{a['hits']}/{a['cases']}", f"{a['mrr']}", f"{c['hits']}/{c['cases']}{stale}",
            f"{u['abstained']}/{u['cases']}", str(u["false_positives"]), f"{r['first_ask_p50_ms']}",
            f"{r['warm_p50_ms']}", f"{r['warm_p95_ms']}",
        )  # fmt: skip
    out.print(table)


def _miss(case: dict, o: dict) -> str:
    """Why an answerable case missed: its search abstained, or answered without an
    expected path among the first k items (never the search's bare status, 'ok')."""
    if case["status"] == "abstained":
        return "abstained"
    return f"answered; no expected path in the top {o['k']}"


@main.group("service")
def service_group() -> None:
    """systemd units for this home: the supervisor, and nightly retention on a timer.

    \b
    Example:
      memoryd service install --user && systemctl --user enable --now memoryd.service
    """


@command(service_group, "install", "memoryd service install --user --print")
@click.option("--user", is_flag=True, help="The user's systemd manager (default: the system).")
@click.option("--print", "to_stdout", is_flag=True, help="Print the units; write nothing.")
@click.option("--dir", "directory", type=DIRECTORY, help="Write them here.")
def service_install(
    md: Memoryd, as_json: bool, user: bool, to_stdout: bool, directory: str | None
) -> None:
    """Write memoryd.service, memoryd-retention.service and memoryd-retention.timer."""
    from memoryd.faces import service

    if to_stdout:
        units = service.render(md.home, md.config, user=user)
        if as_json:
            emit_json({"units": units})
            return
        for name, text in units.items():
            click.echo(f"# --- {name} ---\n{text}")
        return
    r = service.install(
        md.home, md.config, user=user, directory=Path(directory) if directory else None
    )
    if as_json:
        emit_json(r)
        return
    for path in r["written"]:
        out.print(f"wrote {path}", highlight=False)
    out.print(service.enable_hint(user, Path(directory) if directory else None), highlight=False)


@command(service_group, "uninstall", "memoryd service uninstall --user")
@click.option("--user", is_flag=True, help="The user's systemd manager (default: the system).")
@click.option("--dir", "directory", type=DIRECTORY, help="Remove them here.")
def service_uninstall(md: Memoryd, as_json: bool, user: bool, directory: str | None) -> None:
    """Remove the units (stop them first: systemctl disable --now ...)."""
    from memoryd.faces import service

    r = service.uninstall(user=user, directory=Path(directory) if directory else None)
    if as_json:
        emit_json(r)
        return
    for path in r["removed"]:
        out.print(f"removed {path}", highlight=False)
    if not r["removed"]:
        out.print("no memoryd units were installed there", highlight=False)


@main.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(args: tuple[str, ...]) -> None:
    """Run by an agent's lifecycle hook: capture the event, print recalled context.

    \b
    Example:
      echo '{"session_id":"s1","prompt":"how do we deploy?"}' | memoryd hook UserPromptSubmit
    """
    from memoryd.faces.hooks.event import run

    run(list(args) or ["--help"])


@main.group("hooks", cls=click.Group)
def hooks_group() -> None:
    """Install memoryd in an agent's hooks (Claude Code, Codex CLI), or remove it.

    \b
    Example:
      memoryd hooks install --agent claude-code --project . --print
    """


def _hook_target(project: str | None, user: bool) -> Path | None:
    if bool(project) == user:
        raise UsageError("name where: --project DIR or --user")
    return Path(project).resolve() if project else None


_AGENT = click.option(
    "--agent", type=click.Choice(["claude-code", "codex"]), required=True, help="Which agent."
)
_PROJECT = click.option("--project", type=DIRECTORY, help="A project's hooks.")
_USER = click.option("--user", is_flag=True, help="The user's hooks (every project).")
_PRINT = click.option("--print", "dry_run", is_flag=True, help="Show the result, write nothing.")


@command(hooks_group, "install", "memoryd hooks install --agent claude-code --project .")
@_AGENT
@_PROJECT
@_USER
@_PRINT
def hooks_install(md: Memoryd, as_json: bool, agent: str, project, user: bool, dry_run: bool):
    """Add memoryd's hook to each event the agent captures (keeps other hooks; backup).

    Claude Code: .claude/settings.json (--project) or ~/.claude/settings.json (--user);
    Codex CLI: .codex/hooks.json or ~/.codex/hooks.json. The home is initialized."""
    from memoryd.faces.hooks import install

    where = _hook_target(project, user)
    if not dry_run:
        md.init()
    r = install.install(agent, where, str(md.home), dry_run=dry_run)
    _print_hooks(as_json, r, "installed in")


@command(hooks_group, "uninstall", "memoryd hooks uninstall --agent codex --user")
@_AGENT
@_PROJECT
@_USER
@_PRINT
def hooks_uninstall(md: Memoryd, as_json: bool, agent: str, project, user: bool, dry_run: bool):
    """Remove memoryd's hooks from the agent's configuration (other hooks stay)."""
    from memoryd.faces.hooks import install

    r = install.uninstall(agent, _hook_target(project, user), dry_run=dry_run)
    _print_hooks(as_json, r, "removed from" if r["removed"] else "was not in")


def _print_hooks(as_json: bool, r: dict, verb: str) -> None:
    if as_json:
        emit_json(r)
    elif not r["written"] and r.get("removed", True):
        emit_json(r["config"])
    else:
        backup = f" (backup: {r['backup']})" if r.get("backup") else ""
        out.print(f"memoryd hooks {verb} {r['path']}{backup}", highlight=False)


@command(hooks_group, "off", "memoryd hooks off --project .")
@click.option("--project", type=DIRECTORY, default=".", show_default=True)
def hooks_off(md: Memoryd, as_json: bool, project: str) -> None:
    """Stop capture and recall under a directory (writes its .memoryd-off file)."""
    from memoryd.faces.hooks.event import OFF_FILE

    path = Path(project).resolve() / OFF_FILE
    path.write_text("memoryd hooks capture nothing under this directory\n")
    emit(as_json, {"off": str(path)}, f"memoryd hooks are off under {path.parent}")


@command(hooks_group, "on", "memoryd hooks on --project .")
@click.option("--project", type=DIRECTORY, default=".", show_default=True)
def hooks_on(md: Memoryd, as_json: bool, project: str) -> None:
    """Capture and recall again under a directory (removes its .memoryd-off file)."""
    from memoryd.faces.hooks.event import OFF_FILE

    path = Path(project).resolve() / OFF_FILE
    path.unlink(missing_ok=True)
    emit(as_json, {"on": str(path.parent)}, f"memoryd hooks are on under {path.parent}")


add_memory_commands(main, command, emit)


if __name__ == "__main__":
    main()
