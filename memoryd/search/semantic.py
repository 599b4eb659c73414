"""The semantic candidate source: stored chunk vectors searched by brute force.

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

Memory records (:mod:`memoryd.storage.record_vectors`) take the same route in
the records source (:func:`record_similarities`, :func:`near_records`,
:func:`fuse_records`): each record's similarity is its admission's cosine (the
gate's dense floor, for short queries only), a short query adds the nearest
records above the floor, and the admitted records are ordered by reciprocal
rank of the lexical and the code rankings.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from itertools import compress

from memoryd.base.lazy import lazy_module
from memoryd.search import gate as gate_mod
from memoryd.search.pipeline import Fusion
from memoryd.search.stats import TermStats
from memoryd.search.ties import by_content
from memoryd.storage import record_vectors, vectors
from memoryd.text.dense import code_similarity, load_encoder, pack, unpack
from memoryd.text.terms import Query

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

NEIGHBOURS = 20  # nearest chunks a short query may add


def _project_codes(
    db, pid: int, stats: TermStats
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(rowids, codes, dim, positions of the rowids in ascending rowid order), cached
    per index generation and read again when the project's codes have been written
    since (they arrive after their chunks, by their own job). A sorted index, not a
    dictionary: a million chunks' dictionary cost seconds and hundreds of MB."""
    written = vectors.generation(db, pid)
    cached = stats.extra.get("semantic")
    if cached is None or cached[0] != written:
        rowids, codes, dim = vectors.matrix(db, pid)
        order = np.argsort(rowids, kind="stable")
        cached = stats.extra["semantic"] = (written, (rowids, codes, dim, order))
    return cached[1]  # type: ignore[return-value]


def _positions(rowids: np.ndarray, order: np.ndarray, wanted: list[int]) -> np.ndarray:
    """Each wanted rowid's row in the codes, -1 where it has none."""
    ids = np.asarray(wanted, dtype=np.int64)
    at = np.searchsorted(rowids, ids, sorter=order)
    at = np.minimum(at, len(order) - 1)
    rows = order[at]
    return np.where(rowids[rows] == ids, rows, -1)


def query_code(config, q: Query, dim: int) -> np.ndarray:
    """The query's sign code (its analyzed terms, or its text when it has none),
    encoded once for every source that asks (chunks, records, the archive)."""
    return _text_code(config.encoder, " ".join(t.word for t in q.terms) or q.text, dim)


@functools.lru_cache(maxsize=64)
def _text_code(encoder: str, text: str, dim: int) -> np.ndarray:
    """One text's code under one encoder (read-only: shared by the callers)."""
    return unpack(pack(np.asarray(load_encoder(encoder).encode([text]))), dim)[0]


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
    rowids, codes, dim, order = _project_codes(db, pid, stats)
    if not len(rowids):
        return tuning
    code = query_code(config, q, dim)
    rows = _positions(rowids, order, [c.rowid for c in cands])
    coded = rows >= 0
    # only a short query looks at every code (its nearest chunks); a longer one scores
    # its candidates' codes alone (the same values: each row's similarity is its own)
    sims = code_similarity(code, codes, dim) if p.short else None
    found = (
        sims[rows[coded]] if sims is not None else code_similarity(code, codes[rows[coded]], dim)
    )
    for c, sim in zip(compress(cands, coded.tolist()), found.tolist(), strict=True):
        c.cosine = sim
    floor = config.dense_rescue_similarity
    if sims is not None:
        added = []
        for rowid, sim in _nearest(db, stats, rowids, sims, floor):
            if rowid not in by_row:
                c = by_row[rowid] = make(rowid, len(cands) + len(added), set())
                c.cosine = sim
                added.append(c)
        cands[:0] = added  # first: the gate's rescue looks at the head of the pool
    p.tuning = floored(p.tuning, floor)  # the gate judges this plan with it
    return floored(tuning, floor)


def _nearest(
    db, stats: TermStats, rowids: np.ndarray, sims: np.ndarray, floor: float
) -> list[tuple[int, float]]:
    """(rowid, similarity) of the ``NEIGHBOURS`` most similar codes at or above
    ``floor``, nearest first. Sign agreements take few values, so many codes tie:
    the ties go by content (:mod:`memoryd.search.ties`), not by storage order."""
    k = min(NEIGHBOURS, len(sims))
    kth = float(np.partition(sims, len(sims) - k)[len(sims) - k])
    near = np.flatnonzero(sims >= max(kth, floor))
    top = list(zip(rowids[near].tolist(), sims[near].tolist(), strict=True))
    return by_content(db, stats, top, k)


@functools.lru_cache(maxsize=32)
def floored(tuning: gate_mod.Tuning, floor: float) -> gate_mod.Tuning:
    """``tuning`` with the dense floor ``floor`` (frozen: one copy per pair, not one
    per query and source)."""
    return replace(tuning, dense_floor=floor)


def record_similarities(db, pid: int, stats: TermStats, q: Query, p: gate_mod.Plan) -> dict:
    """``{record n: code similarity with the query}`` of the project's coded active
    records ({} when the route is off); the plan gets the configured dense floor.
    The codes are cached with the term statistics until a vector write or a record
    change (a superseded record's code is gone)."""
    config = getattr(db, "config", None)
    if config is None or not vectors.stores(config):
        return {}
    vectors.check(db, config)
    state = record_vectors.state(db, pid)
    cached = stats.extra.get("semantic_records")
    if cached is None or cached[0] != state:
        cached = stats.extra["semantic_records"] = (state, record_vectors.matrix(db, pid))
    ns, codes, dim = cached[1]  # type: ignore[misc]
    p.tuning = floored(p.tuning, config.dense_rescue_similarity)
    if not len(ns):
        return {}
    sims = code_similarity(query_code(config, q, dim), codes, dim)
    return dict(zip(ns.tolist(), sims.tolist(), strict=True))


def near_records(db, sims: dict, p: gate_mod.Plan, known: set[int]) -> list[dict]:
    """A short query's nearest records (at most ``NEIGHBOURS``) at or above the dense
    floor that the lexical route did not find, nearest first."""
    if not p.short or not sims:
        return []
    floor = p.tuning.dense_floor
    near = sorted((n for n, s in sims.items() if s >= floor and n not in known), key=sims.get,
                  reverse=True)[:NEIGHBOURS]  # fmt: skip
    found = record_vectors.rows_by_n(db, near)
    for rec in found:
        rec["score"] = round(sims[rec["n"]], 4)
    return sorted(found, key=lambda r: -sims[r["n"]])


def fuse_records(admitted: list[dict], sims: dict) -> list[dict]:
    """Admitted records by reciprocal rank of their order (lexical, then rescued) and
    their code similarity (unchanged when no record has a code)."""
    if not sims:
        return admitted
    fusion = Fusion()
    fusion.add(admitted, key=lambda r: r["n"])
    coded = [r for r in admitted if r["n"] in sims]
    fusion.add(sorted(coded, key=lambda r: -sims[r["n"]]), key=lambda r: r["n"])
    order = {r["n"]: i for i, r in enumerate(admitted)}
    return sorted(admitted, key=lambda r: (-fusion[r["n"]], order[r["n"]]))
