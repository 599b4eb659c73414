"""Phrases (several tokens in order) checked against the chunks' own text.

The project index keeps no positions (:mod:`memoryd.storage.corpus`), so FTS5
cannot match a phrase of several tokens. What search asked it, which phrases a
candidate holds and the best chunks for a named identifier by FTS5's BM25 of its
phrase, is answered here the way FTS5 did: a phrase is held where its tokens
follow each other in one column (the chunk's text or its path), tokenized by the
index's own tokenizer, and counted at every position it starts (overlaps too).
Chunks that can hold it at all are those in every one of its tokens' rowid lists.

A chunk's tokens are kept per generation by content hash (copies of a file at
several paths share them) in ``stats.extra["tokens"]`` and a path's in
``stats.extra["path_tokens"]``, the caches the engine's own phrase checks fill,
in the same form: the stems, each between spaces (:func:`token_line`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from memoryd.search.stats import TermStats
from memoryd.search.terms import stems
from memoryd.storage import fts
from memoryd.storage.corpus import file_text

TOKEN_CACHE = 5_000  # chunk texts' tokens kept per generation (as the engine's)
BATCH = 10_000  # rowids per query (SQLite allows 32,766 parameters)


def _marks(part: Sequence) -> str:
    return ",".join("?" * len(part))


def _batches(rowids: Sequence[int]) -> list[tuple[int, ...]]:
    return [tuple(rowids[at : at + BATCH]) for at in range(0, len(rowids), BATCH)]


def token_line(text: str) -> str:
    """The indexed tokens of ``text`` in order, each between spaces: a phrase of
    tokens is held exactly when its tokens, so written, are a substring."""
    return f" {' '.join(stems(text))} "


def needle(phrase: str) -> str:
    """The token line of an FTS5 string (a double-quoted phrase, quotes doubled)."""
    return token_line(phrase[1:-1].replace('""', '"'))


def _count(line: str, pattern: str) -> int:
    """Occurrences of ``pattern`` in ``line``, overlapping ones too."""
    n, at = 0, line.find(pattern)
    while at >= 0:
        n += 1
        at = line.find(pattern, at + 1)
    return n


def token_lines(db, stats: TermStats, rowids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """rowid -> (token line of its text, of its path) of the chunks ``rowids``."""
    if not rowids:
        return {}
    known: OrderedDict[bytes, str] = stats.extra.setdefault("tokens", OrderedDict())  # type: ignore[assignment]
    paths: dict[str, str] = stats.extra.setdefault("path_tokens", {})  # type: ignore[assignment]
    rows = []
    for part in _batches(rowids):
        rows += db.query(
            "SELECT c.id, c.file_id, f.path, c.start_line, c.end_line, c.content_hash"
            f" FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN ({_marks(part)})",
            part,
        )
    texts: dict[int, list[str]] = {}
    out = {}
    for rowid, file_id, path, start, end, digest in rows:
        body = known.get(digest)
        if body is None:
            if file_id not in texts:
                blob = db.query("SELECT body FROM files WHERE id = ?", (file_id,))[0][0]
                texts[file_id] = file_text(blob, db).split("\n")
            body = known[digest] = token_line("\n".join(texts[file_id][start - 1 : end]))
        if path not in paths:
            if len(paths) > TOKEN_CACHE:
                paths.clear()
            paths[path] = token_line(path)
        out[rowid] = (body, paths[path])
    while len(known) > TOKEN_CACHE:
        known.popitem(last=False)
    return out


def held(db, stats: TermStats, phrases: Sequence[str], rowids: Sequence[int]) -> dict[int, int]:
    """rowid -> bit mask of the ``phrases`` (FTS5 strings) each chunk holds in its text
    or its path. A phrase of one token is looked up in FTS5 (its rowid list, one seek
    per chunk); only phrases of several tokens read the chunks' text."""
    out = dict.fromkeys(rowids, 0)
    several = []
    for i, p in enumerate(phrases):
        n = needle(p)
        if n.count(" ") > 2:
            several.append((i, n))
            continue
        for part in _batches(rowids):
            for r in fts.holding(db, stats.pid, p, part):
                out[r] |= 1 << i
    if several:
        for rowid, (body, path) in token_lines(db, stats, rowids).items():
            out[rowid] |= sum(1 << i for i, n in several if n in body or n in path)
    return out


def ranked(db, stats: TermStats, phrase: str, limit: int) -> list[int]:
    """Rowids of the ``limit`` best chunks for one FTS5 string by FTS5's BM25 of it
    (ties by rowid): for one token its postings' scores; for several, its occurrences
    counted in the text of every chunk holding all its tokens."""
    words = needle(phrase).split()
    if not words:
        return []
    parts = [stats.postings(w) for w in words]
    if any(p is None for p in parts):
        return []
    if len(words) == 1:
        rowids, score = parts[0].rowids, parts[0].scores
    else:
        rowids = parts[0].rowids
        for p in parts[1:]:
            rowids = np.intersect1d(rowids, p.rowids, assume_unique=True)
        lines = token_lines(db, stats, rowids.tolist())
        pattern = f" {' '.join(words)} "
        counts = [sum(_count(c, pattern) for c in lines.get(int(r), ())) for r in rowids]
        tf = np.array(counts, dtype=np.float64)
        rowids, tf = rowids[tf > 0], tf[tf > 0]
        score = stats.bm25(tf, stats.lengths_of(rowids), len(rowids))
    order = np.lexsort((rowids, -score))[:limit]
    return rowids[order].tolist()
