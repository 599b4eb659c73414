"""Canonical payload encoding: content plus JSON meta, zstd-compressed.

Format 1: a bare zstd frame of ``orjson({"content", "meta"})``. Format 2:
``b"\\x02" + crc32 (u32 BE) of the frame + zstd frame`` (level 9): checksummed.
"""

from __future__ import annotations

import threading
import zlib
from typing import Any

import orjson
import zstandard

from memoryd.errors import ArchiveError
from memoryd.storage.archive.keys import U32

PAYLOAD_FORMATS = (1, 2)
CURRENT_PAYLOAD_FORMAT = 1
_ZSTD_LEVEL = {1: 3, 2: 9}

_codecs = threading.local()


def _compressor(fmt: int) -> zstandard.ZstdCompressor:
    cache = _codecs.__dict__.setdefault("c", {})
    if fmt not in cache:
        cache[fmt] = zstandard.ZstdCompressor(level=_ZSTD_LEVEL[fmt])
    return cache[fmt]


def _decompressor() -> zstandard.ZstdDecompressor:
    if not hasattr(_codecs, "d"):
        _codecs.d = zstandard.ZstdDecompressor()
    return _codecs.d


def encode_payload(content: str, meta: dict[str, Any] | None, fmt: int) -> bytes:
    record = orjson.dumps({"content": content, "meta": meta or {}})
    frame = _compressor(fmt).compress(record)
    if fmt == 1:
        return frame
    return b"\x02" + U32.pack(zlib.crc32(frame)) + frame


def decode_payload(raw: bytes) -> dict[str, Any]:
    """``{"content": str, "meta": dict}`` from either payload format."""
    if raw[:1] == b"\x02":
        frame = raw[5:]
        if zlib.crc32(frame) != U32.unpack(raw[1:5])[0]:
            raise ArchiveError("archive payload checksum mismatch (corrupt record)")
    else:
        frame = raw
    return orjson.loads(_decompressor().decompress(frame))


def payload_format_of(raw: bytes) -> int:
    return 2 if raw[:1] == b"\x02" else 1
