"""The semantic candidate source: stored chunk vectors searched by brute force (issue 15).

With ``encoder = "wordllama"`` (or a command) every chunk has a sign code
(:mod:`memoryd.storage.vectors`). For a query, :func:`route`

* sets each lexical candidate's ``cosine`` to its code similarity with the
  query (the engine fuses that ranking by reciprocal rank, as the dense route);
* for a short conceptual query (at most ``Tuning.dense_max_terms`` focus terms)
  adds the project's nearest chunks by code similarity, brute force with numpy
  over all codes, when their similarity reaches ``dense_rescue_similarity``;
  the gate admits such a chunk on similarity alone (its dense floor), and only
  for short queries: a longer question still needs lexical coverage, so
  abstention does not get weaker.

The codes of a project are read once per index generation (and again when a
vectors job has written more of them) and kept with its term statistics. Chunks
whose codes are not written yet are scored by the lexical routes alone. Encoder
``hashing`` keeps no codes: the route is off.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from memoryd.search import gate as gate_mod
from memoryd.search.dense import code_similarity, pack, unpack
from memoryd.search.stats import TermStats
from memoryd.search.terms import Query
from memoryd.storage import vectors

NEIGHBOURS = 20  # nearest chunks a short query may add


def _project_codes(db, pid: int, stats: TermStats) -> tuple[np.ndarray, np.ndarray, int, dict]:
    """(rowids, codes, dim, rowid -> position), cached per index generation and read
    again when the project's codes have been written since (they arrive after their
    chunks, by their own job)."""
    written = vectors.generation(db, pid)
    cached = stats.extra.get("semantic")
    if cached is None or cached[0] != written:
        rowids, codes, dim = vectors.matrix(db, pid)
        where = {int(r): i for i, r in enumerate(rowids)}
        cached = stats.extra["semantic"] = (written, (rowids, codes, dim, where))
    return cached[1]  # type: ignore[return-value]


def route(
    db, pid: int, stats: TermStats, q: Query, p: gate_mod.Plan, cands: list, by_row: dict,
    tuning: gate_mod.Tuning, make,
) -> gate_mod.Tuning:  # fmt: skip
    """Score ``cands`` by stored codes and put a short query's near chunks first in
    them (made with ``make(rowid, rank, matched)``). The plan, and the returned
    tuning (for a re-plan), get the configured similarity as their dense floor;
    both are unchanged when the route is off."""
    config = getattr(db, "config", None)
    if config is None or not vectors.stores(config):
        return tuning
    vectors.check(db, config)
    rowids, codes, dim, where = _project_codes(db, pid, stats)
    if not len(rowids):
        return tuning
    enc = vectors.configured(config)
    text = " ".join(t.word for t in q.terms) or q.text
    query = unpack(pack(np.asarray(enc.encode([text]))), dim)[0]
    sims = code_similarity(query, codes, dim)
    for c in cands:
        i = where.get(c.rowid)
        if i is not None:
            c.cosine = float(sims[i])
    floor = float(config.dense_rescue_similarity)
    if p.short:
        k = min(NEIGHBOURS, len(sims))
        near = np.argpartition(-sims, k - 1)[:k]
        near = near[np.argsort(-sims[near], kind="stable")]
        added = []
        for i in near:
            rowid = int(rowids[i])
            if sims[i] >= floor and rowid not in by_row:
                c = by_row[rowid] = make(rowid, len(cands) + len(added), set())
                c.cosine = float(sims[i])
                added.append(c)
        cands[:0] = added  # first: the gate's rescue looks at the head of the pool
    p.tuning = replace(p.tuning, dense_floor=floor)  # the gate judges this plan with it
    return replace(tuning, dense_floor=floor)
