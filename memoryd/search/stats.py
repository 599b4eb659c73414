"""Term statistics and postings per project, cached per index generation.

Document frequency comes from the project's ``fts5vocab`` table (``row``
kind: one row per indexed term with the number of chunks holding it), so it
is derived from the index and rebuilds with it; nothing here is stored.
Looking statistics up on every query made the gate 2-4x slower than plain
BM25 (DESIGN.md), so a :class:`TermStats` lives for one ``(authority,
project, generation)``: any change to the project's index bumps the
generation, and the next query starts a fresh cache.

The same cache holds each queried term's postings (which chunks hold it, how
often, and each holding chunk's token count from the FTS5 ``docsize`` table,
read in one query: :func:`memoryd.storage.fts.postings`; a project of at most
:data:`SIZES_MAX` chunks reads every chunk's size once per generation instead,
and so does any project whose pack pass stored its generation's sizes as one array
(:mod:`memoryd.storage.index_sizes`), each term's postings then read without them), so
the lexical
route computes FTS5's own BM25 (k1 = 1.2, b = 0.75, summed over the query's
phrases, all columns weighted 1) and which focus terms each candidate holds
with a few array operations, instead of an FTS5 ``ORDER BY rank`` over every
matching row plus a per-row auxiliary function. A term is read from the index
once per generation. The chunk count and the average chunk length come from
FTS5's averages record (one row, kept by FTS5 in the commit that changes the
index), so a new generation's first query reads nothing but its own terms:
reading every chunk's length up front made the first query after an ingest
grow with the project (566 ms at 90 copies of the stdlib). When the index has
no docsize table or no positions (another FTS5 layout),
:meth:`TermStats.postings` returns None and the engine asks FTS5 for its
``rank`` with a bounded pool.

Scoring a query (:meth:`TermStats.bm25_scored`) follows its postings, never the
project: the longest lists are skipped where MaxScore's bounds prove they cannot
change the pool, and otherwise every list is summed in scratch arrays the process
keeps (allocating and scanning arrays over the whole rowid span cost about 9 ms a
query at 1.76 M chunks).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from memoryd.base.lazy import lazy_module, loaded
from memoryd.storage import fts, index_sizes
from memoryd.storage.corpus import project_generation, ready_index
from memoryd.storage.unsearched import varints

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

_MAX_CACHED = 16
_MAX_POSTINGS = 4_000_000  # cached posting entries per generation (about 64 MB)
# Chunks up to which a generation reads every chunk's length once (a few ms), so that
# each term's postings need not join the sizes table (about 0.3 µs a posting).
SIZES_MAX = 50_000
# Posting entries below which a query's lists are summed whole: MaxScore's tries
# cost more than they save on short lists.
PRUNE_MIN = 20_000
# Posting entries up to which a query is scored in Python while numpy is not loaded
# (a one-shot search of a small project: numpy's import costs about 80 ms, reading
# and scoring this many entries in Python about 30): the same scores, bit for bit.
PLAIN_POSTINGS = 10_000
BM25_K1 = 1.2
BM25_B = 0.75


def _lengths(blobs: list[bytes]) -> np.ndarray:
    """Tokens of each chunk of its FTS5 docsize blob (:func:`index_sizes.docsize_tokens`)."""
    return index_sizes.docsize_tokens(b"".join(blobs), [len(b) for b in blobs])


class Postings:
    """One term in one generation: the rowids of the chunks holding it (ascending),
    its BM25 contribution to each and the largest of those (``top``)."""

    __slots__ = ("rowids", "scores", "top")

    def __init__(self, rowids: np.ndarray, scores: np.ndarray) -> None:
        self.rowids = rowids
        self.scores = scores
        self.top = float(scores.max()) if len(scores) else 0.0


class TermStats:
    """Chunk count and per-stem document frequencies of one index generation."""

    def __init__(self, db, pid: int, generation: int) -> None:
        self.pid = pid
        self.generation = generation
        self._db = db
        self._averages = fts.averages(db, pid)
        self.chunks, tokens = fts.totals_of(self._averages)
        # tokens per chunk on average (0.0 when the index does not say)
        self.avg_len = tokens / self.chunks if self.chunks and tokens else 0.0
        self._avg_len = self.avg_len or 1.0
        self._df: dict[str, int] = {}
        self.extra: dict[str, object] = {}  # other per-generation caches (file texts, vectors)
        self._postings: OrderedDict[str, Postings] = OrderedDict()
        self._posting_entries = 0
        self._sizes: tuple[int, np.ndarray] | bool | None = None  # False: not kept
        # stem -> (rowids, BM25 contributions) as lists: the plain route's postings
        self._plain: dict[str, tuple[list[int], list[float]]] = {}
        self.has_postings = True  # False once the index turned out to keep no positions/sizes
        self._lock = threading.Lock()

    def df(self, stem: str) -> int:
        """How many chunks hold the (stemmed) term."""
        if stem not in self._df:
            self.prefetch([stem])
        return self._df[stem]

    def prefetch(self, stems: list[str]) -> None:
        """Look the document frequencies of several stems up in one query."""
        need = list({s for s in stems if s not in self._df})
        if not need:
            return
        self._df.update({s: 0 for s in need})
        self._df.update(fts.doc_freqs(self._db, self.pid, need))

    def fraction(self, stem: str) -> float:
        """Share of the project's chunks that hold the term (0.0 in an empty project)."""
        return self.df(stem) / self.chunks if self.chunks else 0.0

    def idf(self, stem: str) -> float:
        """BM25's idf, always positive; a term absent from the project scores highest."""
        n, d = self.chunks, self.df(stem)
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))

    # -- postings (lexical route) -------------------------------------------------

    def _all_lengths(self) -> tuple[int, np.ndarray] | None:
        """(lowest rowid, token count of each chunk by rowid less it; none: negative,
        or all bits set in a stored array), read once per generation: the array the
        pack pass stored for this generation
        (:mod:`memoryd.storage.index_sizes`), else, in a project of at most
        :data:`SIZES_MAX` chunks, from every chunk's size; None otherwise (each term's
        postings then join their chunks' sizes)."""
        if self._sizes is None:
            stored = index_sizes.load(self._db, self.pid, self.generation, self._averages)
            small = stored is None and self.chunks <= SIZES_MAX
            self._sizes = stored or (small and self._read_all_lengths()) or False
        return self._sizes or None

    def _read_all_lengths(self) -> tuple[int, np.ndarray] | None:
        """See :meth:`_all_lengths`; None when the index keeps no sizes or its rowids
        are spread too thin for an array by rowid (many chunks replaced since)."""
        rows = fts.sizes(self._db, self.pid)
        if not rows:
            return None
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        low, span = int(ids.min()), int(ids.max()) - int(ids.min()) + 1
        if span > 4 * len(ids):
            return None
        lengths = np.full(span, -1.0)
        lengths[ids - low] = _lengths([r[1] for r in rows])
        return low, lengths

    def _tf_and_lengths(self, stem: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(rowids, occurrences, chunk lengths) of the chunks holding ``stem``."""
        known = self._all_lengths()
        if known is not None:
            read = fts.occurrences(self._db, self.pid, stem)
            if read is None:
                return None
            docs, tf = read[0], read[1].astype(np.float64)
            low, lengths = known
            at = docs - low
            if not len(at) or (at.min() >= 0 and at.max() < len(lengths)):
                found = lengths[at]
                # a stored array's sizes are unsigned, all bits set where no chunk was
                kind_f = found.dtype.kind == "f"
                missing = found < 0 if kind_f else found == np.iinfo(found.dtype).max
                if not np.any(missing):  # else: a chunk indexed since (a new generation)
                    return docs, tf, found if kind_f else found.astype(np.float64)
        rows = fts.postings(self._db, self.pid, stem)
        if rows is None:
            return None
        docs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        tf = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        return docs, tf, _lengths([r[2] for r in rows])

    def _read_postings(self, stem: str) -> Postings | None:
        read = self._tf_and_lengths(stem)
        if read is None:
            self.has_postings = False
            return None
        docs, tf, lengths = read
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / self._avg_len)
        idf = self._idf_of(len(docs))
        return Postings(docs, idf * tf * (BM25_K1 + 1.0) / (tf + norm))

    def _idf_of(self, d: int) -> float:
        """FTS5's idf of a term in ``d`` chunks."""
        n = self.chunks
        idf = math.log((n - d + 0.5) / (d + 0.5)) if d else 0.0
        return idf if idf > 0 else 1e-6  # FTS5's floor for terms in over half the rows

    def _plain_postings(self, stem: str) -> tuple[list[int], list[float]] | None:
        """:meth:`_read_postings` in lists (the same arithmetic, element by element),
        from the term's postings joined with their chunks' sizes; None as there."""
        hit = self._plain.get(stem)
        if hit is not None:
            return hit
        rows = fts.postings(self._db, self.pid, stem)
        if rows is None:
            self.has_postings = False
            return None
        idf, avg = self._idf_of(len(rows)), self._avg_len
        scores = []
        for _, n, size in rows:
            tf, length = float(n), float(sum(varints(size)))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / avg)
            scores.append(idf * tf * (BM25_K1 + 1.0) / (tf + norm))
        if sum(map(len, self._plain.values())) > PLAIN_POSTINGS:
            self._plain.clear()
        hit = self._plain[stem] = ([r[0] for r in rows], scores)
        return hit

    def postings(self, stem: str) -> Postings | None:
        """The term's postings and BM25 contributions, or None when the index keeps
        no positions or no chunk sizes."""
        with self._lock:
            hit = self._postings.get(stem)
            if hit is not None:
                self._postings.move_to_end(stem)
                return hit
            if not self.has_postings:
                return None
            hit = self._read_postings(stem)
            if hit is None:
                return None
            self._postings[stem] = hit
            self._posting_entries += len(hit.rowids)
            while self._posting_entries > _MAX_POSTINGS and len(self._postings) > 1:
                _, old = self._postings.popitem(last=False)
                self._posting_entries -= len(old.rowids)
            return hit

    def bm25_top(self, terms: list[tuple[str, ...]], pool: int) -> list[tuple[int, int]] | None:
        """The ``pool`` best chunks for the OR of every stem of ``terms`` (each term a
        tuple of stems: its inflections) by FTS5's BM25, best first (ties by rowid),
        and every chunk tied with the last of them, each as (rowid, bit mask of the
        terms it holds); None when postings are unavailable."""
        top = self.bm25_scored(terms, pool)
        return None if top is None else [(rowid, mask) for rowid, mask, _ in top]

    def bm25_scored(
        self, terms: list[tuple[str, ...]], pool: int
    ) -> list[tuple[int, int, float]] | None:
        """:meth:`bm25_top` with each chunk's BM25 score as a third element.

        The query's longest posting lists are skipped when they cannot matter
        (MaxScore): the chunks holding a rarer term are scored whole, and when even
        the sum of the skipped lists' largest contributions stays below the
        ``pool``-th best of those scores, no chunk holding only skipped terms can
        enter the pool. Otherwise every list is summed in the process's scratch
        arrays (:class:`_Scratch`). Either way the work follows the query's
        postings, not the project, and the answer is the same. While numpy is not
        loaded, a query of at most :data:`PLAIN_POSTINGS` entries is scored in
        Python (:meth:`_bm25_plain`), to the same answer."""
        terms = terms[:62]
        if self.has_postings and not loaded("numpy"):
            self.prefetch([s for group in terms for s in group])
            if sum(self._df[s] for group in terms for s in group) <= PLAIN_POSTINGS:
                return self._bm25_plain(terms, pool)
        parts = []
        for i, group in enumerate(terms[:62]):
            for s in group:
                if self._df.get(s, 1) == 0:  # looked up and held nowhere: no postings to read
                    continue
                p = self.postings(s)
                if p is None:
                    return None
                if len(p.rowids):
                    parts.append((i, p))
        if not parts:
            return []
        top = _pruned(parts, pool)
        return top if top is not None else _summed(parts, pool)

    def _bm25_plain(
        self, terms: list[tuple[str, ...]], pool: int
    ) -> list[tuple[int, int, float]] | None:
        """:func:`_summed` in Python: each chunk's contributions added in the query's
        order, from zero, as the scratch arrays add them; :func:`_best`'s order."""
        acc: dict[int, list] = {}  # rowid -> [score, mask]
        for i, group in enumerate(terms):
            bit = 1 << i
            for s in group:
                if self._df[s] == 0:
                    continue
                read = self._plain_postings(s)
                if read is None:
                    return None
                for rowid, score in zip(*read, strict=True):
                    held = acc.get(rowid)
                    if held is None:
                        acc[rowid] = [0.0 + score, bit]
                    else:
                        held[0] += score
                        held[1] |= bit
        top = sorted(acc.items(), key=lambda item: (-item[1][0], item[0]))
        if len(top) > pool:
            cut = top[pool - 1][1][0]
            top = [item for item in top if item[1][0] >= cut]
        return [(rowid, mask, score) for rowid, (score, mask) in top]


def _pruned(parts: list[tuple[int, Postings]], pool: int) -> list[tuple] | None:
    """The pool from the chunks of the rarer lists, plus the few chunks of the longer
    lists that could still reach it, when MaxScore's bounds show that no other chunk
    can; None when they do not (or when skipping would save little).

    With ``cut`` the ``pool``-th best score among the rarer lists' chunks (scored
    over every list), a chunk holding only skipped terms scores at least ``cut``
    only if, in some skipped list ``k``, its own contribution is at least ``cut``
    less the other skipped lists' largest contributions: those chunks are scored
    too, and every chunk left out scores below ``cut``."""
    total = sum(len(p.rowids) for _, p in parts)
    if total < PRUNE_MIN:
        return None
    order = sorted(range(len(parts)), key=lambda j: (len(parts[j][1].rowids), j))
    kept = 0
    for n, j in enumerate(order[:-1]):
        kept += len(parts[j][1].rowids)
        if kept * len(parts) > total // 4:  # looking every list up costs about as much as summing
            return None
        if kept < pool:
            continue
        held = [parts[k][1].rowids for k in order[: n + 1]]
        rowids = held[0] if len(held) == 1 else _union(held)
        if len(rowids) < pool:
            continue
        score, mask = _score_at(parts, rowids)
        cut = np.partition(score, len(score) - pool)[len(score) - pool]
        skipped = [parts[k][1] for k in order[n + 1 :]]
        bound = sum(p.top for p in skipped)
        slack = 1e-9 * (abs(cut) + bound)  # rounding in the sums: admit a little more
        if bound + slack < cut:
            return _best(rowids, score, mask, pool)
        reach = [p.rowids[p.scores >= cut - (bound - p.top) - slack] for p in skipped]
        if (kept + sum(map(len, reach))) * len(parts) > total // 4:
            continue
        rowids = _union([rowids, *reach])
        return _best(rowids, *_score_at(parts, rowids), pool)
    return None


def _union(sorted_lists: list[np.ndarray]) -> np.ndarray:
    """The distinct rowids of several lists, ascending."""
    out = np.sort(np.concatenate(sorted_lists))
    return out[np.concatenate(([True], out[1:] != out[:-1]))] if len(out) else out


def _score_at(parts: list[tuple[int, Postings]], rowids: np.ndarray) -> tuple:
    """(BM25 score, term mask) of each of the sorted ``rowids``, summed over every
    list in the query's order (the same sums as :func:`_summed`)."""
    score = np.zeros(len(rowids))
    mask = np.zeros(len(rowids), dtype=np.int64)
    for i, p in parts:
        at = np.minimum(np.searchsorted(p.rowids, rowids), len(p.rowids) - 1)
        present = p.rowids[at] == rowids
        score += np.where(present, p.scores[at], 0.0)
        mask |= present.astype(np.int64) << i
    return score, mask


def _summed(parts: list[tuple[int, Postings]], pool: int) -> list[tuple]:
    """The pool by summing every list in the scratch arrays."""
    low = min(int(p.rowids[0]) for _, p in parts)
    high = max(int(p.rowids[-1]) for _, p in parts)
    if low <= high - low:  # index by rowid itself: no subtraction, at most twice the room
        low = 0
    with _SCRATCH.lock:
        scores, masks = _SCRATCH.arrays(high - low + 1)
        hits: list[np.ndarray] = []
        try:
            for i, p in parts:
                at = p.rowids - low if low else p.rowids
                held = masks[at]
                hits.append(at[held == 0])  # a chunk's first term: once per chunk
                masks[at] = held | (1 << i)
                scores[at] += p.scores
        finally:  # read out, then all zero again (whatever happened)
            hit = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
            score, mask = scores[hit], masks[hit]
            scores[hit] = 0.0
            masks[hit] = 0
    return _best(hit + low, score, mask, pool)


def _best(rowids: np.ndarray, score: np.ndarray, mask: np.ndarray, pool: int) -> list[tuple]:
    """(rowid, mask, score) of the ``pool`` best and of every chunk tied with the last
    of them, best first, ties by rowid. Rowids follow the order files were written in
    (the workers' commits), so the caller breaks ties by content and needs the whole
    tie at the pool's edge to do so."""
    if len(rowids) > pool:
        cut = np.partition(score, len(rowids) - pool)[len(rowids) - pool]
        keep = score >= cut
        rowids, score, mask = rowids[keep], score[keep], mask[keep]
    order = np.lexsort((rowids, -score))
    return list(
        zip(rowids[order].tolist(), mask[order].tolist(), score[order].tolist(), strict=True)
    )


class _Scratch:
    """Score and term-mask arrays indexed by rowid (less the query's lowest), shared
    by every query of the process and all zero between queries: a query clears only
    the entries it set. Allocating them per query cost page faults and a scan over
    the whole rowid span (about 9 ms a query at 1.76 M chunks); kept, they take 16
    bytes per rowid of the widest span a query summed (at most twice its project's
    rowid range)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._scores: np.ndarray | None = None  # made on first use (no numpy at import)
        self._masks: np.ndarray | None = None

    def arrays(self, span: int) -> tuple[np.ndarray, np.ndarray]:
        """The arrays, at least ``span`` long (call with :attr:`lock` held)."""
        if self._scores is None or len(self._scores) < span:
            self._scores = np.zeros(span, dtype=np.float64)
            self._masks = np.zeros(span, dtype=np.int64)
        return self._scores, self._masks


_SCRATCH = _Scratch()


_cache: OrderedDict[tuple, TermStats] = OrderedDict()
_lock = threading.Lock()


def term_stats(db, pid: int) -> TermStats:
    """The statistics of the project's current generation (cached). A compact
    project's index is built on this connection first (once per generation)."""
    ready_index(db, pid)
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
