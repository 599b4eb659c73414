"""Term statistics per project, cached per index generation.

Document frequency comes from the project's ``fts5vocab`` table (``row``
kind: one row per indexed term with the number of chunks holding it), so it
is derived from the index and rebuilds with it; nothing here is stored.
Looking statistics up on every query made the gate 2-4x slower than plain
BM25 (DESIGN.md), so a :class:`TermStats` lives for one ``(authority,
project, generation)``: any change to the project's index bumps the
generation, and the next query starts a fresh cache.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from memoryd.storage.corpus import fts_table, project_generation

_MAX_CACHED = 16


class TermStats:
    """Chunk count and per-stem document frequencies of one index generation."""

    def __init__(self, db, pid: int, generation: int) -> None:
        self.pid = pid
        self.generation = generation
        self._db = db
        self._vocab = f"{fts_table(pid)}_vocab"
        self.chunks = db.query("SELECT count(*) FROM chunks WHERE project_id = ?", (pid,))[0][0]
        self._df: dict[str, int] = {}
        self.extra: dict[str, object] = {}  # other per-generation caches (file texts, vectors)

    def df(self, stem: str) -> int:
        """How many chunks hold the (stemmed) term."""
        hit = self._df.get(stem)
        if hit is None:
            rows = self._db.query(f"SELECT doc FROM {self._vocab} WHERE term = ?", (stem,))
            hit = rows[0][0] if rows else 0
            self._df[stem] = hit
        return hit

    def fraction(self, stem: str) -> float:
        """Share of the project's chunks that hold the term (0.0 in an empty project)."""
        return self.df(stem) / self.chunks if self.chunks else 0.0

    def idf(self, stem: str) -> float:
        """BM25's idf, always positive; a term absent from the project scores highest."""
        n, d = self.chunks, self.df(stem)
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


_cache: OrderedDict[tuple, TermStats] = OrderedDict()
_lock = threading.Lock()


def term_stats(db, pid: int) -> TermStats:
    """The statistics of the project's current generation (cached)."""
    generation = project_generation(db, pid)
    key = (id(db), str(getattr(db, "path", "")), pid, generation)
    with _lock:
        stats = _cache.get(key)
        if stats is not None:
            _cache.move_to_end(key)
            return stats
    stats = TermStats(db, pid, generation)
    with _lock:
        _cache[key] = stats
        while len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)
    return stats


def clear() -> None:
    """Forget every cached generation (tests; `memoryd rebuild` needs nothing: ids change)."""
    with _lock:
        _cache.clear()
