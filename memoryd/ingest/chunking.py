"""Decode, chunk by lines, hash and compress one file: what a batch worker prepares.

A chunk is a line range of its file. Its text for the index is always
``"\\n".join(lines[start - 1:end])`` of the decoded text split on ``"\\n"``,
so the index can be rebuilt from the stored file body alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from itertools import accumulate

from memoryd.config import (
    BODY_BLOCK_BYTES,
    CHUNK_MAX_CHARS,
    CHUNK_MAX_LINES,
    CHUNK_TARGET_LINES,
)
from memoryd.storage.corpus import ChunkRow, FileRows, compressor


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


def prepare_file(path: str, raw: bytes) -> FileRows:
    """Everything the supervisor needs to store and index one file (its body its own
    frame)."""
    rows, text = _prepare(path, raw)
    return rows._replace(body=compressor().compress(text))


def prepare_batch(
    items: Iterable[tuple[str, bytes]],
    *,
    block_bytes: int = BODY_BLOCK_BYTES,
) -> tuple[list[FileRows], list[bytes]]:
    """The rows of a batch's (path, raw bytes) files and their body blocks: the files'
    texts in order, a block closed once it holds ``block_bytes`` (a file is never
    split)."""
    rows: list[FileRows] = []
    blocks: list[bytes] = []
    pending: list[bytes] = []
    size = 0

    def close() -> None:
        nonlocal size
        blocks.append(compressor().compress(b"".join(pending)))
        pending.clear()
        size = 0

    for path, raw in items:
        row, text = _prepare(path, raw)
        rows.append(row._replace(block=len(blocks), block_start=size, block_end=size + len(text)))
        pending.append(text)
        size += len(text)
        if size >= block_bytes:
            close()
    if pending:
        close()
    return rows, blocks


def _prepare(path: str, raw: bytes) -> tuple[FileRows, bytes]:
    """The file's rows without a body, and its decoded text's UTF-8 bytes."""
    text = decode(raw)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it is not a line
    chunks = []
    for start, end in line_ranges(lines):
        chunk_text = "\n".join(lines[start - 1 : end])
        chunks.append(ChunkRow(start, end, chunk_hash(chunk_text), chunk_text))
    return FileRows(path, digest(raw), len(raw), len(lines), b"", chunks), text.encode("utf-8")
