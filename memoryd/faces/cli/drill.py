"""``memoryd drill``: the crash drill in a scratch home, and its report."""

from __future__ import annotations

import sys

import click
import orjson

from memoryd.faces.cli.common import LazyChoice, command, emit_json, err, out, table_of
from memoryd.operations.api import Memoryd


def _drill_scenarios() -> list[str]:
    from memoryd.faces.drill import CLIENTS, SCENARIOS

    return [*SCENARIOS, CLIENTS]


@command(
    None,
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
    type=LazyChoice(_drill_scenarios),
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
