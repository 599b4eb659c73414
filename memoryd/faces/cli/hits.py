"""What the hits of a search, a recall and an archive search print, and the options
the three share."""

from __future__ import annotations

from collections.abc import Callable

import click

from memoryd.faces.cli.common import out

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


def hit_heading(item: dict) -> str:
    where = f"[magenta]{item['project']}[/] " if "project" in item else ""
    if item.get("source") == "memory":
        mark = "".join(f", conflict with {c}" for c in item.get("conflicts_with", ()))
        return f"{where}[bold green]memory {item['id']}[/] ({item['kind']}, {item['status']}{mark})"
    return (
        f"{where}[bold cyan]{item['path']}[/]:{item['start_line']}-{item['end_line']}"
        f"  [dim]score {item['score']:.3f}[/]"
    )


def print_search(
    result: dict, excerpt_lines: int = 6, heading: Callable[[dict], str] = hit_heading
) -> None:
    if result["status"] == "abstained":
        out.print(f"[yellow]abstained[/]: {result['gap']}", highlight=False)
        return
    for item in result["items"]:
        out.print(heading(item), highlight=False)
        for line in item["excerpt"].splitlines()[:excerpt_lines]:
            out.print(f"    {line}", highlight=False, markup=False)


def archive_hit_heading(item: dict) -> str:
    """An archive hit names its locator (what get, pin and lease take)."""
    return (
        f"[bold cyan]{item['locator']}[/]  lines {item['start_line']}-{item['end_line']}"
        f"  [dim]{item['class']}, {item['created_at'] or 'unknown time'}, "
        f"score {item['score']:.3f}[/]"
    )
