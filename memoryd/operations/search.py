"""Search: answer a query from one project's memory or from every project's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.base.errors import IngestPending, UsageError
from memoryd.base.locks import running_supervisor
from memoryd.operations.projects import Projects

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd


@dataclass(frozen=True)
class Search:
    """Searches of ``md``'s home."""

    md: Memoryd

    def search(
        self,
        query: str,
        project: str | None = None,
        *,
        limit: int = 10,
        min_score: float | None = None,
        dense: bool = True,
        answer_threshold: float | None = None,
    ) -> dict:
        """Answer from project memory, or abstain: ``{"status", "items", "gap"}``.

        Every item's ``score`` is on one 0..1 scale (records and chunks alike) and the
        items are in its order. ``min_score`` only narrows: it drops items the gate
        admitted, of every source, never adds one; None leaves the answer as it is.
        ``dense=False`` answers without the dense route (lexical only: no re-ranking
        by vectors, no dense floor, no stored codes), as a diagnostic compares.
        ``answer_threshold`` (None: the configured one): abstain when the best item
        scores below it.
        """
        md = self.md
        if limit < 1:
            raise UsageError("--limit must be at least 1")
        md.check_query(query)
        name = Projects(md).default(project)  # here: "like the cwd" means the caller's
        asked = {"query": query, "project": name, "limit": limit, "min_score": min_score}
        asked |= {} if answer_threshold is None else {"answer_threshold": answer_threshold}
        routed = md.routed("search", **asked, **({} if dense else {"dense": False}))
        if routed:
            return routed
        # Imported here, after routing: the search stack (numpy among it) and the stores
        # are most of a routed command's start, and a running supervisor answers it.
        from memoryd.consolidation.recall import RecordSource
        from memoryd.search import pipeline
        from memoryd.search.engine import ProjectSource
        from memoryd.storage import runs
        from memoryd.storage.corpus import project_id

        chunks = ProjectSource(md.reader, name, encoder=None if dense else False)
        records = RecordSource(md.reader, name, chunks)
        if answer_threshold is None:
            answer_threshold = md.config.answer_threshold
        result = pipeline.run(
            query, limit, [records, chunks], min_score=min_score, threshold=answer_threshold
        )
        if records.review:  # found, but every line they cite is gone
            result["needs_review"] = records.review
        if result["status"] == "abstained":
            run = runs.unfinished_first_run(md.reader, project_id(md.reader, name))
            if run is not None:
                from memoryd.ingest.runner import pending_message

                sup = running_supervisor(md.home)
                raise IngestPending(pending_message(md.reader, name, run, sup))
        return result

    def search_all(
        self,
        query: str,
        *,
        limit: int = 10,
        min_score: float | None = None,
        answer_threshold: float | None = None,
    ) -> dict:
        """Search every project; each item names its ``project``. Items are ranked by
        their score (one 0..1 scale) across projects; projects whose first ingest is
        still under way are listed in ``pending`` rather than failing the search."""
        if limit < 1:
            raise UsageError("--limit must be at least 1")
        from memoryd.storage.corpus import project_stats

        self.md.check_query(query)
        names = [p["project"] for p in project_stats(self.md.reader)]
        if not names:
            raise UsageError("there are no projects yet; ingest one with `memoryd ingest PATH`")
        items, gaps, pending, review = [], [], [], []
        for name in names:
            try:
                result = self.search(
                    query, name, limit=limit, min_score=min_score, answer_threshold=answer_threshold
                )
            except IngestPending:
                pending.append(name)
                continue
            items += [{**item, "project": name} for item in result["items"]]
            review += [{**item, "project": name} for item in result.get("needs_review", ())]
            if result["gap"]:
                gaps.append(f"{name}: {result['gap']}")
        items.sort(key=lambda item: -item["score"])
        more = {"needs_review": review} if review else {}
        if items:
            return {"status": "ok", "items": items[:limit], "gap": None, "pending": pending, **more}
        gap = "; ".join(gaps) or "no project has finished its first ingest"
        return {"status": "abstained", "items": [], "gap": gap, "pending": pending, **more}
