"""``memoryd recall``: project memory and recent archive evidence for a question."""

from __future__ import annotations

import click

from memoryd.base.config import one_shot_blas
from memoryd.faces.cli.common import command, emit_json
from memoryd.faces.cli.hits import (
    MIN_SCORE_HELP,
    answer_threshold_option,
    archive_hit_heading,
    hit_heading,
    print_search,
)
from memoryd.operations.api import Memoryd


@command(None, "recall", "memoryd recall 'which retry backoff did we choose?' --project myrepo")
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
        return archive_hit_heading(item)
    return hit_heading(item)
