"""The commands of the home as a whole: ``init``, ``run`` (the supervisor), ``doctor``,
``config``, ``checkpoint-wal``, ``rebuild`` and ``stop``."""

from __future__ import annotations

import sys
from typing import Any

import click

from memoryd.base.errors import ConfigError
from memoryd.faces.cli.common import (
    command,
    counted,
    emit,
    emit_json,
    err,
    human_size,
    out,
    red_line,
)
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home


@command(None, "init", "memoryd init --home ~/.local/share/memoryd")
def init_cmd(md: Memoryd, as_json: bool) -> None:
    """Create the data home and its authority (idempotent)."""
    info = md.init()
    if as_json:
        emit_json(info)
    else:
        out.print(f"memoryd home ready: {info['home']} (schema {info['schema']})")


@command(None, "run", "memoryd run --workers 2 --drain")
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


@command(None, "checkpoint-wal", "memoryd checkpoint-wal --json")
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


@command(None, "rebuild", "memoryd rebuild --verify")
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


@command(None, "doctor", "memoryd doctor --deep --json", strict=False)
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


@command(None, "stop", "memoryd stop --json")
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


def _setting_text(name: str, value: Any) -> str:
    if name.endswith("_bytes") or name == "journal_size_limit":
        return human_size(value)
    return str(value)


@command(None, "config", "MEMORYD_WORKERS=4 memoryd config", strict=False)
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
