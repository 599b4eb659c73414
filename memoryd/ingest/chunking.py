"""Decode, chunk by lines, hash and compress one file: what a batch worker prepares.

A chunk is a line range of its file. Its text for the index is always
``"\\n".join(lines[start - 1:end])`` of the decoded text split on ``"\\n"``,
with, for a configuration or markdown file, the words of its key paths or headings
its lines lack (:mod:`memoryd.text.structure`), so the index can be rebuilt from the
stored file body and path alone. Such a file is cut at its structure (sections,
top-level keys, steps, rules, instructions, headings: :func:`structured_ranges`),
any other by lines (:func:`line_ranges`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import accumulate

from memoryd.base.config import (
    BODY_BLOCK_BYTES,
    CHUNK_MAX_CHARS,
    CHUNK_MAX_LINES,
    CHUNK_MEMO_ENTRIES,
    CHUNK_TARGET_LINES,
    STRUCTURE_MERGE_LINES,
)
from memoryd.storage.corpus import ChunkRow, FileRows, compressor
from memoryd.storage.unsearched import index_text, with_context
from memoryd.text.structure import context_words, parse


def digest(data: bytes) -> bytes:
    """A file's content hash: its 16-byte blake2b."""
    return hashlib.blake2b(data, digest_size=16).digest()


def chunk_hash(text: str) -> bytes:
    """The first 8 bytes of the text's 16-byte blake2b: the bytes migration 14 kept of
    the hashes stored before it, so a migrated chunk and a new one of the same text
    share their hash."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()[:8]


def decode(raw: bytes) -> str:
    """UTF-8 with invalid bytes replaced: never fatal."""
    return raw.decode("utf-8", errors="replace")


def _is_boundary(line: str) -> bool:
    """A blank line or a line at column 0 starts a natural new chunk."""
    return not line.strip() or not line[:1].isspace()


def line_ranges(lines: list[str]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges covering every line, sized for search.

    A chunk that starts at line ``start`` (0-based) ends before the first line ``i``
    past it where ``i - start >= CHUNK_MAX_LINES``, or ``i - start >=
    CHUNK_TARGET_LINES`` and line ``i`` is a boundary, or the chunk's characters
    (each line with its newline) plus line ``i`` would pass ``CHUNK_MAX_CHARS``.
    Only lines past the target are looked at one by one; sizes are summed in C.
    """
    total = len(lines)
    ranges: list[tuple[int, int]] = []
    start = 0
    while start < total:
        cut = min(start + CHUNK_MAX_LINES, total)
        for i in range(start + CHUNK_TARGET_LINES, cut):
            if _is_boundary(lines[i]):
                cut = i
                break
        # characters of lines[start:cut] with newlines; the size rule cuts earlier
        # exactly when the last of them would already have passed the limit
        if sum(map(len, lines[start:cut])) + (cut - start) - 1 > CHUNK_MAX_CHARS:
            for j, size in enumerate(accumulate(map(len, lines[start:cut]))):
                if j and size + j > CHUNK_MAX_CHARS:
                    cut = start + j
                    break
        ranges.append((start + 1, cut))
        start = cut
    return ranges


def structured_ranges(lines: list[str], starts: Sequence[bool]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges that begin where a unit of the file begins
    (``starts``): consecutive units are joined while the chunk stays within
    ``STRUCTURE_MERGE_LINES`` lines and ``CHUNK_MAX_CHARS``; a unit larger than a chunk
    is cut by :func:`line_ranges`."""
    bounds = [i for i, s in enumerate(starts) if s and i] + [len(lines)]
    sizes = [len(x) + 1 for x in lines]
    ranges: list[tuple[int, int]] = []
    begin, end = 0, 0  # the chunk being built, 0-based half-open
    for stop in bounds:  # the next unit: lines[end:stop]
        if end > begin and (
            stop - begin > STRUCTURE_MERGE_LINES or sum(sizes[begin:stop]) > CHUNK_MAX_CHARS
        ):
            ranges.extend(_cut(lines, begin, end))
            begin = end
        end = stop
    if end > begin:
        ranges.extend(_cut(lines, begin, end))
    return ranges


def _cut(lines: list[str], begin: int, end: int) -> list[tuple[int, int]]:
    """The 1-based ranges of lines[begin:end]: itself, or cut by lines when too large."""
    if end - begin <= CHUNK_MAX_LINES and sum(map(len, lines[begin:end])) + end - begin - 1 <= (
        CHUNK_MAX_CHARS
    ):
        return [(begin + 1, end)]
    return [(begin + s, begin + e) for s, e in line_ranges(lines[begin:end])]


def prepare_file(path: str, raw: bytes) -> FileRows:
    """Everything the supervisor needs to store and index one file (its body its own
    frame)."""
    rows, text = _prepare(path, raw)
    return rows._replace(body=compressor().compress(text))


def prepare_batch(
    items: Iterable[tuple[str, bytes]],
    *,
    block_bytes: int = BODY_BLOCK_BYTES,
    level: int | None = None,
) -> tuple[list[FileRows], list[bytes]]:
    """The rows of a batch's (path, raw bytes) files and their body blocks: the files'
    texts in order, a block closed once it holds ``block_bytes`` (a file is never
    split). ``level``: the blocks are final (``put_files(..., packed=True)``),
    compressed at that zstd level, their chunks' texts index text
    (:func:`~memoryd.storage.unsearched.index_text`); None: at the ingest level, whole."""
    rows: list[FileRows] = []
    blocks: list[bytes] = []
    pending: list[bytes] = []
    size = 0

    def close() -> None:
        nonlocal size
        cctx = compressor() if level is None else compressor(level)
        blocks.append(cctx.compress(b"".join(pending)))
        pending.clear()
        size = 0

    for path, raw in items:
        row, text = _prepare(path, raw, packed=level is not None)
        rows.append(row._replace(block=len(blocks), block_start=size, block_end=size + len(text)))
        pending.append(text)
        size += len(text)
        if size >= block_bytes:
            close()
    if pending:
        close()
    return rows, blocks


class _IndexTexts:
    """The index texts (:func:`~memoryd.storage.unsearched.index_text`) of the chunks a
    process made last, by chunk hash: a licence header, a vendored copy or a generated
    file repeats its chunks, each made once. At most ``entries`` (the oldest go first);
    a hit's text is compared too, so no two texts share an entry."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self.memo: dict[bytes, tuple[str, str, int]] = {}

    def get(self, key: bytes, text: str) -> tuple[str, int]:
        hit = self.memo.get(key)
        if hit is not None and hit[0] == text:
            return hit[1], hit[2]
        indexed, left_out = index_text(text)
        if len(self.memo) >= self.entries:
            del self.memo[next(iter(self.memo))]
        self.memo[key] = (text, indexed, left_out)
        return indexed, left_out


_INDEX_TEXTS = _IndexTexts(CHUNK_MEMO_ENTRIES)  # per process: each worker its own


def _indexed(chunk: ChunkRow, context: str, packed: bool) -> ChunkRow:
    """The chunk with its index text: its lines (a packed block's without the words
    never looked up alone) and its context words."""
    text, left_out = _INDEX_TEXTS.get(chunk.content_hash, chunk.text) if packed else (chunk.text, 0)
    text, left_out = with_context(text, left_out, context)
    return chunk._replace(text=text, left_out=left_out)


def _prepare(path: str, raw: bytes, packed: bool = False) -> tuple[FileRows, bytes]:
    """The file's rows without a body (each chunk's ``text`` its index text:
    :func:`_indexed`), and its decoded text's UTF-8 bytes."""
    text = decode(raw)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it is not a line
    parsed = parse(path, lines)
    ranges = structured_ranges(lines, [x.start for x in parsed]) if parsed else line_ranges(lines)
    chunks = []
    for start, end in ranges:
        chunk_text = "\n".join(lines[start - 1 : end])
        context = context_words(chunk_text, parsed[start - 1 : end]) if parsed else ""
        row = ChunkRow(start, end, chunk_hash(chunk_text), chunk_text)
        chunks.append(_indexed(row, context, packed) if packed or context else row)
    return FileRows(path, digest(raw), len(raw), len(lines), b"", chunks), text.encode("utf-8")
