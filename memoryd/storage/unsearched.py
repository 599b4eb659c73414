"""Tokens the project index leaves out, and the true chunk sizes it keeps anyway.

Search never looks up a stopword or a single ASCII letter or digit on its own
(:mod:`memoryd.text.terms` drops them from every question), yet they are about a
quarter of a project's tokens. The index text of a chunk is its text without the
*free-standing* ones: a stopword or single character joined to a word by ``_`` or
``.`` (``is_file``, ``os.path``, ``x.y``) stays, so an identifier's FTS5 phrase
still finds it; and a word next to a non-ASCII character stays (unicode61 may
join them into one token). The rule is decided per word before stemming, so a
content word sharing a stopword's stem ("uses", "use") is always indexed, and the
stopwords whose stem an ordinary content word shares are kept too
(``lexicon/stopwords_indexed.txt``). A packed block's chunks are indexed so
(:func:`memoryd.storage.corpus.store_packed`, after their run); others whole.

The words left out still count: each chunk's ``docsize`` and FTS5's averages
record hold the chunk's full token count (:func:`keep_true_sizes`), so BM25 --
FTS5's ``rank`` and the engine's own, which read those lengths -- scores every
chunk as if the words were there.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

import apsw

from memoryd.text.lexicon import stopwords, word_list

# Never looked up alone (analyze drops stopwords and single ASCII letters and digits),
# but those whose stem a content word shares; in the three spellings a word is left
# out in (any other is kept: "tHe").
_ALONE = (stopwords() - word_list("stopwords_indexed.txt")) | frozenset(
    string.ascii_lowercase + string.digits
)
_LEFT_OUT = frozenset(s.encode("ascii") for w in _ALONE for s in (w, w.upper(), w.capitalize()))
# ASCII separators of unicode61 but "_" and ".", which join an identifier's words: as
# spaces, a word alone between any of them is one whitespace-separated piece.
_SEPARATORS = bytes(c for c in range(128) if not chr(c).isalnum() and chr(c) not in "_.")
_AS_SPACES = bytes.maketrans(_SEPARATORS, b" " * len(_SEPARATORS))


# One token in place of each run of pieces left out (a private-use character: a token
# of unicode61, never a word of a question), so that the words around the run do not
# become neighbours: an identifier's phrase ("read_file") must not find "read the file".
# In the index the run's token is one of RUN_GAPS, picked by the length of the text
# kept since the previous run: one token alone would hold a position in nearly every
# chunk (a tenth of a code index's postings), and FTS5 merges a term's whole list in
# one step, so the largest list is the least a merge step writes to the WAL. Four
# bring it under a common word's on code (the stdlib's whole home: one token 0.488 of
# the source, four 0.491, fifteen 0.501: each (chunk, token) pair costs a rowid). GAP
# itself stays the separator before a chunk's context words (:func:`with_context`).
GAP = "\ue000"
RUN_GAPS = tuple(chr(0xE001 + i) for i in range(4))  # more: a bigger index
_GAP = GAP.encode("utf-8")
_RUN_GAPS = [g.encode("utf-8") for g in RUN_GAPS]
_MARK = dict.fromkeys(_LEFT_OUT, _GAP)
_GAPS = re.compile(re.escape(_GAP) + b"(?: " + re.escape(_GAP) + b")+")


def index_text(text: str) -> tuple[str, int]:
    """The text the index holds for ``text``, and how many of its tokens it leaves out.

    The text is split into pieces at whitespace and ASCII punctuation but "_" and "."
    (which join an identifier's words: ``is_file``, ``os.path`` and ``x.y`` are one
    piece each); a piece that is one word never looked up alone (``_ALONE``, in
    lower, upper or capitalized spelling) is left out, each run of them replaced by
    one gap token (:data:`RUN_GAPS`; none at either end). Every other token is unchanged and
    the tokens around a run stay apart, so a phrase of them matches as before; a
    stopword next to a non-ASCII character stays (it splits on ASCII only)."""
    pieces = text.encode("utf-8").translate(_AS_SPACES).split()
    marked = list(map(_MARK.get, pieces, pieces))  # a piece, or a gap for one left out
    left_out = marked.count(_GAP)
    if not left_out:
        return text, 0
    kept = _GAPS.sub(_GAP, b" ".join(marked))
    kept = kept.removeprefix(_GAP).removesuffix(_GAP).strip(b" ")
    runs = kept.count(_GAP)
    return _spread(kept).decode("utf-8"), left_out - runs


def _spread(kept: bytes) -> bytes:
    """Each gap of ``kept`` as the token the length of the text before it picks."""
    parts = kept.split(_GAP)
    out = [parts[0]]
    for before, part in zip(parts, parts[1:], strict=False):
        out.append(_RUN_GAPS[len(before) % len(_RUN_GAPS)])
        out.append(part)
    return b"".join(out)


def with_context(text: str, left_out: int, context: str) -> tuple[str, int]:
    """A chunk's index text with its context words (:mod:`memoryd.text.structure`: the
    key path or headings of a configuration or markdown file's chunk that its lines
    lack) after one :data:`GAP` (no phrase runs from the chunk into them). The words
    count in the chunk's size, the chunk's own tokens as before; the GAP not (one less
    in ``left_out``, which may go below 0)."""
    if not context:
        return text, left_out
    return f"{text} {GAP} {context}", left_out - 1


# -- sizes -------------------------------------------------------------------------


def varints(blob: bytes) -> list[int]:
    """Every SQLite varint of ``blob`` (FTS5's records use SQLite's format)."""
    values, value, length = [], 0, 0
    for byte in blob:
        length += 1
        if length == 9:
            values.append((value << 8) | byte)
            value, length = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value, length = 0, 0
    return values


def varint_bytes(values: Iterable[int]) -> bytes:
    """SQLite varints of ``values`` (below 2**56: the sizes FTS5 keeps)."""
    out = bytearray()
    for v in values:
        groups = [v & 0x7F]
        v >>= 7
        while v:
            groups.append(0x80 | (v & 0x7F))
            v >>= 7
        out.extend(reversed(groups))
    return bytes(out)


def keep_true_sizes(tx: apsw.Connection, table: str, left_out: Sequence[tuple[int, int]]) -> None:
    """Add each (rowid, tokens left out) to the row's body size in FTS5's ``docsize``
    and their sum to its averages record, after the rows' insert in this transaction
    (every row indexed in it since, in the rowids' range, listed): FTS5 then ranks,
    and a contentless delete subtracts, the chunk's full length. ``table`` is the
    FTS5 table, schema-qualified.

    FTS5 keeps the averages in memory during a transaction and writes them when it
    syncs: the savepoint makes it write them now and read them back on its next use,
    so the record changed here is the one it continues from. The rows' sizes are
    written again in rowid order, not updated in place: a size one byte longer in a
    full page would split it (the table's pages stay as full as FTS5 leaves them)."""
    grown = dict(left_out)
    if not any(grown.values()):
        return
    tx.execute("SAVEPOINT memoryd_true_sizes")
    tx.execute("RELEASE memoryd_true_sizes")
    rows = _rewrite_sizes(tx, table, (min(grown), max(grown)), grown)
    (record,) = tx.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    # a row deleted since its insert is gone: FTS5 subtracted the size it counted
    total = sum(grown.get(rowid, 0) for rowid, _, _ in rows)
    tx.execute(f"UPDATE {table}_data SET block = ? WHERE id = 1", (_grow(record, total, at=1),))


def rewrite_sizes(tx: apsw.Connection, table: str, since: int, limit: int) -> int | None:
    """Write at most ``limit`` rows of FTS5's ``docsize`` from rowid ``since`` on again
    in rowid order: the same rows in full pages (each pack apply's rewrite of its range
    leaves the pages at the range's ends part-full; on the stdlib 8-14 KB of 100 KB was
    unused). Returns the rowid to go on from, None once none is left: a bounded step,
    so a commit's WAL stays bounded (two million rows in one were 52 MiB). ``table`` is
    the FTS5 table, schema-qualified."""
    after = tx.execute(
        f"SELECT id FROM {table}_docsize WHERE id >= ? ORDER BY id LIMIT 1 OFFSET ?",
        (since, limit),
    ).fetchone()
    _rewrite_sizes(tx, table, (since, after[0] - 1 if after else 2**63 - 1), {})
    return after[0] if after else None


def _rewrite_sizes(
    tx: apsw.Connection, table: str, span: tuple[int, int], grown: dict[int, int]
) -> list[tuple]:
    """Write the ``docsize`` rows whose rowid is in ``span`` again in rowid order, each
    body size grown by its ``grown`` count; returns the rows as they were."""
    where = f"{table}_docsize WHERE id BETWEEN ? AND ?"
    rows = tx.execute(f"SELECT id, sz, origin FROM {where} ORDER BY id", span).fetchall()
    tx.execute(f"DELETE FROM {where}", span)
    tx.executemany(
        f"INSERT INTO {table}_docsize (id, sz, origin) VALUES (?, ?, ?)",
        [
            (rowid, _grow(sz, grown[rowid]) if grown.get(rowid) else sz, origin)
            for rowid, sz, origin in rows
        ],
    )
    return rows


def _grow(blob: bytes, n: int, at: int = 0) -> bytes:
    """The varint record ``blob`` with ``n`` added to its value ``at``. A chunk's body
    size below 2**14 before and after, its first varint (nearly every docsize row, one
    per chunk of a batch in the writer's transaction), is rewritten without decoding
    the rest."""
    if at == 0 and blob and (blob[0] < 0x80 or (len(blob) > 1 and blob[1] < 0x80)):
        head = 1 if blob[0] < 0x80 else 2
        value = blob[0] if head == 1 else ((blob[0] & 0x7F) << 7) | blob[1]
        value += n
        if 0 <= value < 0x4000:
            grown = (value,) if value < 0x80 else (0x80 | (value >> 7), value & 0x7F)
            return bytes(grown) + blob[head:]
    values = varints(blob)
    values[at] += n
    return varint_bytes(values)
