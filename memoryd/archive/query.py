"""Gated archive search: the exact-term source (:mod:`memoryd.archive.search`) and the
dense one (:mod:`memoryd.archive.dense`) in one pipeline, and the versions a question
names by their locator or document id, listed first."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryd.archive.dense import ArchiveDenseSource
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.search import EXCERPT_CHARS, ArchiveSource, load_doc
from memoryd.base.times import utc_iso
from memoryd.search.pipeline import check, run
from memoryd.storage.archive import BadLocator, LocatorNotFound, VersionInfo
from memoryd.storage.corpus import UnknownProject, unknown_project_message


def search_archive(
    owner: ArchiveOwner,
    project: str,
    query: str,
    limit: int,
    now: float,
    min_score: float | None = None,
    *,
    created_after: dict[str, float] | None = None,
    dense: bool = True,
    threshold: float | None = None,
    known: Sequence[str] = (),
) -> dict:
    """Gated search of ``project``'s live archive versions: BM25, and stored codes for
    short queries (:mod:`memoryd.archive.dense`); a version both find is listed once.
    ``min_score`` only narrows (:func:`memoryd.search.pipeline.run`); ``created_after``
    (class -> oldest creation time) searches only those classes and ages, before the
    best are cut to ``limit`` (recall's horizons); ``dense=False``: BM25 alone;
    ``threshold``: the answer threshold (None: the configured one); ``known``: the
    ingested projects, of which one with nothing archived yet abstains."""
    check(query, limit)
    try:
        src = ArchiveSource(owner, project, now, created_after)
    except UnknownProject:
        if project not in known:  # named with every project known, ingested ones too
            names = sorted({*known, *owner.store.postings.projects()})
            raise UnknownProject(unknown_project_message(project, names)) from None
        gap = f"insufficient evidence: nothing is archived for project {project!r} yet"
        return {"status": "abstained", "items": [], "gap": gap}
    named = [_exact_item(owner, v) for v in named_versions(owner, src, query)][:limit]
    sources = [src, ArchiveDenseSource(src)] if dense else [src]
    if threshold is None:
        threshold = owner.config.answer_threshold
    found = run(query, limit, sources, min_score=min_score, threshold=threshold)
    if named:  # a version the question names by its locator or document id is exact
        owner.store.protections.take_retrieval_leases(
            [i["locator"] for i in named],
            seconds=owner.config.retention_retrieval_lease_seconds,
            now=now,
        )
        found = {**found, "status": "ok", "gap": None, "items": named + found["items"]}
    firsts = {}
    for item in found["items"]:
        firsts.setdefault(item["locator"], item)
    return {**found, "items": list(firsts.values())[:limit]}


#: A locator (``doc@version``) or a document id as written in a question: ids hold a
#: dash (``s-chat-1a2b3c``), which no plain word of a question does alone
_NAMED = re.compile(r"(?<![\w@.:-])([A-Za-z0-9][\w.:]*-[\w.:-]*[A-Za-z0-9])(?:@(\d+))?")
MAX_NAMED = 8  # most names a question's exact lookups follow


def named_versions(owner: ArchiveOwner, src: ArchiveSource, query: str) -> list[VersionInfo]:
    """The live versions of the searched project (and window) that ``query`` names:
    ``doc@version`` that version, a bare document id its current version."""
    found = []
    for doc, ver in _NAMED.findall(query)[:MAX_NAMED]:
        try:
            info = owner.store.ledgers.version_info(f"{doc}@{ver or 1}")
            if not ver:
                info = owner.store.ledgers.version_info(f"{doc}@{info.current_version}")
        except (LocatorNotFound, BadLocator, ValueError):
            continue
        if (
            info.project == src.project
            and info.status == "live"
            and src.within(info.cls, info.created_at)
        ):
            found.append(info)
    return found


def _exact_item(owner: ArchiveOwner, info: VersionInfo) -> dict:
    """A named version as a search item: its opening lines, score 1 (it was asked for)."""
    locator = f"{info.doc_id}@{info.version}"
    doc = load_doc(owner, locator)
    lines = doc.lines if doc is not None else []
    excerpt = "\n".join(lines)[:EXCERPT_CHARS]
    return {
        "path": info.session or info.doc_id,
        "start_line": 1,
        "end_line": excerpt.count("\n") + 1,
        "score": 1.0,
        "excerpt": excerpt,
        "locator": locator,
        "class": info.cls,
        "created_at": utc_iso(info.created_at),
        "exact": True,
    }
