"""The evidence archive's operations a face makes beyond one plain operation:
archiving a transcript, and a search that knows the ingested projects (every
operation itself goes through :meth:`Memoryd.archive`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.operations.projects import Projects

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd


@dataclass(frozen=True)
class Archive:
    """The evidence archive of ``md``'s home."""

    md: Memoryd

    def add(
        self,
        data: bytes,
        *,
        project: str,
        source: str,
        cls: str | None = None,
        session: str | None = None,
        created_at: str | float | None = None,
        sources: tuple[str, ...] = (),
        imported: bool = False,
        allow_expired: bool = False,
        new_project: bool = False,
    ) -> dict:
        """Archive one JSONL transcript: one document per session, tool output linked.

        ``project`` must be known (ingested, or archived into before) unless
        ``new_project``: a typo never starts a project of its own.

        ``sources`` (class derived only): the locators the session was derived
        from; it then expires when its last source does (unless promoted).
        ``imported``: history; class ages count from now, not from its creation (a
        document already past its class age is refused without it, or stored already
        due with ``allow_expired``: scratch homes, drills and tests)."""
        from memoryd.archive.transcripts import parse_jsonl, parse_time

        t = parse_jsonl(
            data,
            source=source,
            session=session,
            created_at=parse_time(created_at, "--created-at"),
        )
        args = {
            "project": project,
            "class": cls,
            "session": t.session,
            "created_at": t.created_at,
            "content": t.rendered(),
            "turns": len(t.turns),
            "tools": [{"content": m.content, "timestamp": m.timestamp} for m in t.tools],
            "sources": list(sources),
            "imported": imported,
            "allow_expired": allow_expired,
        }
        ingested = Projects(self.md).ingested()
        if not new_project and project not in ingested:
            args["known_projects"] = ingested  # the owner checks the archive's own
        return self.md.archive("add", args)

    def search(self, project: str, query: str, **asked: object) -> dict:
        """Gated search of ``project``'s archive (``asked``: limit, min_score,
        answer_threshold, as the op takes them). A project that is ingested but has
        nothing archived yet abstains, saying so; only a name no one knows is refused."""
        args = {"project": project, "query": query, **asked}
        return self.md.archive("search", {**args, "known_projects": Projects(self.md).ingested()})
