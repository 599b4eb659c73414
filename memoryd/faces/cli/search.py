"""``memoryd search``: project memory's items for a question, or an abstention."""

from __future__ import annotations

import click

from memoryd.base.config import one_shot_blas
from memoryd.faces.cli.common import command, emit_json, out
from memoryd.faces.cli.hits import MIN_SCORE_HELP, answer_threshold_option, print_search
from memoryd.operations.api import Memoryd


@command(None, "search", "memoryd search 'how are JSON documents decoded?' --project python3.11")
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
