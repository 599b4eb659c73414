"""Decode, chunk by lines, hash and compress one file: what a batch worker prepares.

A chunk is a line range of its file. Its text for the index is always
``"\\n".join(lines[start - 1:end])`` of the decoded text split on ``"\\n"``,
so the index can be rebuilt from the stored file body alone.
"""

from __future__ import annotations

import hashlib

import zstandard

from memoryd.config import CHUNK_MAX_CHARS, CHUNK_MAX_LINES, CHUNK_TARGET_LINES, COMPRESSION_LEVEL
from memoryd.storage.corpus import ChunkRow, FileRows


def digest(data: bytes, size: int = 16) -> str:
    return hashlib.blake2b(data, digest_size=size).hexdigest()


def decode(raw: bytes) -> str:
    """UTF-8 with invalid bytes replaced: never fatal."""
    return raw.decode("utf-8", errors="replace")


def _is_boundary(line: str) -> bool:
    """A blank line or a line at column 0 starts a natural new chunk."""
    return not line.strip() or not line[:1].isspace()


def line_ranges(lines: list[str]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges covering every line, sized for search."""
    ranges: list[tuple[int, int]] = []
    start, chars = 0, 0
    for i, line in enumerate(lines):
        n = i - start
        if n and (
            n >= CHUNK_MAX_LINES
            or chars + len(line) > CHUNK_MAX_CHARS
            or (n >= CHUNK_TARGET_LINES and _is_boundary(line))
        ):
            ranges.append((start + 1, i))
            start, chars = i, 0
        chars += len(line) + 1
    if start < len(lines):
        ranges.append((start + 1, len(lines)))
    return ranges


def prepare_file(project: str, path: str, raw: bytes) -> FileRows:
    """Everything the supervisor needs to store and index one file."""
    text = decode(raw)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it is not a line
    chunks = []
    for ordinal, (start, end) in enumerate(line_ranges(lines)):
        chunk_text = "\n".join(lines[start - 1 : end])
        chunk_hash = digest(chunk_text.encode("utf-8"))
        chunk_id = digest(f"{project}\0{path}\0{ordinal}\0{chunk_hash}".encode(), 12)
        chunks.append(ChunkRow(ordinal, start, end, chunk_id, chunk_hash, chunk_text))
    body = zstandard.ZstdCompressor(level=COMPRESSION_LEVEL).compress(text.encode("utf-8"))
    return FileRows(path, digest(raw), len(raw), len(lines), body, chunks)
