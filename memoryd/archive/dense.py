"""Dense candidates of archive search: the exchanges nearest to a short query.

With an encoder that stores codes, every live archive version has a sign code
per exchange (:mod:`memoryd.storage.archive.vectors`). :class:`ArchiveDenseSource`
is one more source of the search pipeline beside the archive's BM25 source
(:class:`memoryd.archive.search.ArchiveSource`), sharing its term statistics and
so its plan: for a short conceptual query (at most ``dense_max_terms`` focus
terms) it ranks the project's exchanges by code similarity, brute force with
numpy, and offers those the gate admits on the dense floor
(``dense_rescue_similarity``) and whose window holds the question's named
entities. A longer question gets nothing from it: it still needs the lexical
source's evidence coverage, so abstention does not get weaker. The pipeline
fuses both sources' answers by reciprocal rank. A process reads a project's codes
once and keeps them until the archive is written again (:func:`project_codes`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace

from memoryd.archive.search import EXCERPT_CHARS, ArchiveSource, ArchiveStats, load_doc
from memoryd.base.lazy import lazy_module
from memoryd.base.times import utc_iso
from memoryd.search import gate
from memoryd.search.pipeline import Found, Fusion, scored
from memoryd.search.semantic import query_code
from memoryd.storage import vectors
from memoryd.text import terms
from memoryd.text.dense import code_similarity, encoder_name, unpack
from memoryd.text.evidence import held

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

NEIGHBOURS = 20  # nearest exchanges a short query may be answered by
CODES_CACHED = 4  # projects whose codes a process keeps between queries

Spots = list[tuple[str, int]]  # (locator, exchange) of each code
_codes: OrderedDict[tuple[str, str], tuple[tuple, Spots, np.ndarray]] = OrderedDict()
_codes_lock = threading.Lock()


def project_codes(owner, project: str, dim: int) -> tuple[Spots, np.ndarray]:
    """(locator, exchange) of each code of ``project``'s live versions, and the codes
    (rows of ``dim // 8`` bytes). Read once and kept (for :data:`CODES_CACHED`
    projects) until the archive is written again: its sequence number, taken before
    the read, moves with every write (a secondary's with its catch-up); the directory's
    inode tells a migrated archive from the one read."""
    key = (str(owner.path), project)
    mark = (os.stat(owner.path).st_ino, owner.store.vectors.sequence(), dim)
    with _codes_lock:
        got = _codes.get(key)
        if got is not None and got[0] == mark:
            _codes.move_to_end(key)
            return got[1], got[2]
    spots: Spots = []
    blobs = []
    for locator, codes in owner.store.vectors.version_codes(project):
        spots += [(locator, g) for g in range(len(codes) // (dim // 8))]
        blobs.append(codes)
    matrix = unpack(b"".join(blobs), dim)
    with _codes_lock:
        _codes[key] = (mark, spots, matrix)
        while len(_codes) > CODES_CACHED:
            _codes.popitem(last=False)
    return spots, matrix


class ArchiveDenseSource:
    """The archive's exchanges by code similarity, for short queries only."""

    exact = False
    kind = "archive"

    def __init__(self, lexical: ArchiveSource) -> None:
        self.lexical = lexical
        self.where = lexical.where

    def stats(self, q: terms.Query) -> ArchiveStats:
        return self.lexical.stats(q)  # the same object: the pipeline plans once for both

    def find(self, q: terms.Query, p: gate.Plan, limit: int) -> Found:
        owner = self.lexical.owner
        config = owner.config
        if not p.short or not vectors.stores(config):
            return Found()
        owner.store.vectors.check_vectors(encoder_name(config.encoder))
        meta = owner.store.vectors.vectors_meta()
        if meta is None:
            return Found()
        dim, group = int(meta["dim"]), int(meta["group_lines"])
        spots, codes = project_codes(owner, self.lexical.project, dim)
        if not spots:
            return Found()
        sims = code_similarity(query_code(config, q, dim), codes, dim)
        p.tuning = replace(p.tuning, dense_floor=config.dense_rescue_similarity)
        items: list[dict] = []
        for i in np.argsort(-sims, kind="stable")[:NEIGHBOURS]:
            item = self._admitted(p, spots[i], group, float(sims[i]))
            if item is not None and all(item["locator"] != x["locator"] for x in items):
                items.append(item)
        items = _scored(items[:limit])
        owner.store.protections.take_retrieval_leases(
            [i["locator"] for i in items],
            seconds=config.retention_retrieval_lease_seconds,
            now=self.lexical.now,
        )
        return Found(items)

    def _admitted(self, p: gate.Plan, spot: tuple[str, int], group: int, sim: float):
        """The exchange as a search item if the gate admits it on its similarity and
        its window holds the question's named entities; else None."""
        locator, g = spot
        doc = load_doc(self.lexical.owner, locator)
        if doc is None or sim < p.tuning.dense_floor:
            return None
        start, end = g * group, min(len(doc.lines), (g + 1) * group)
        matched = set().union(*(held(p, doc.stems(j)) for j in range(start, end)))
        verdict = gate.admit(p, matched, cosine=sim)
        if not verdict.admitted or gate.missing_entities(p, [matched]):
            return None
        info = self.lexical.owner.store.ledgers.version_info(locator)
        if not self.lexical.within(info.cls, info.created_at):
            return None
        return {
            "path": info.session or info.doc_id,
            "start_line": start + 1,
            "end_line": end,
            "score": gate.evidence(verdict, sim),  # see _scored
            "excerpt": "\n".join(doc.lines[start:end])[:EXCERPT_CHARS],
            "locator": locator,
            "class": info.cls,
            "created_at": utc_iso(info.created_at),
        }


def _scored(items: list[dict]) -> list[dict]:
    """``items`` (nearest first, each scored by its evidence) scored as the lexical
    source's are (:func:`memoryd.search.pipeline.scored`): evidence times the rank
    score of their one ranking, by similarity."""
    fusion = Fusion()
    fusion.add(items)
    for item in items:
        scored(item, item["score"], fusion.score(id(item)))
    return items
