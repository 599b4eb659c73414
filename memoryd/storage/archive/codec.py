"""Canonical payload encoding (content plus JSON meta, zstd-compressed) and the
stored form of document ledgers (below).

Format 1: a bare zstd frame of ``orjson({"content", "meta"})``. Format 2:
``b"\\x02" + crc32 (u32 BE) of the frame + zstd frame`` (level 9): checksummed.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import orjson
import zstandard

from memoryd.base.errors import ArchiveError
from memoryd.storage.archive.keys import CLASS_CODE, CODE_CLASS, U32

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


# ---- document ledgers
#
# A ledger is orjson (it starts with ``{``) while the document has a live version
# or holds anything beyond the common fields. A retired version whose content was
# purged keeps only its status and times (``status``, ``created_at``,
# ``retired_at``, ``purged``, ``forgotten``): what its locator answers. A document
# with nothing else left is a **tombstone ledger**, packed (tag 0x01, numbers big
# endian)::
#
#     0x01 class:u8 current:u32 has_session:u8 project:(u16 len, utf8)
#          [session:(u16 len, utf8)] created_at:f64 n:u32
#          (status:u8 forgotten:u8 created_at:f64 retired_at:f64)*n

_TOMBSTONE = b"\x01"
_HEAD = struct.Struct(">BIB")
_LEN = struct.Struct(">H")
_F64 = struct.Struct(">d")
_N = struct.Struct(">I")
_VERSION = struct.Struct(">BBdd")
_RETIRED = ("superseded", "expired")
_LEDGER_FIELDS = frozenset(("project", "class", "session", "created_at", "current", "versions"))
_KEPT = ("status", "created_at", "retired_at", "purged", "forgotten")
#: What a purged version reads as for the fields it no longer keeps.
_DROPPED = {
    "gen": 0,
    "expires_at": None,
    "override": False,
    "len": 0,
    "size": 0,
    "sha256": "",
    "request_id": None,
}


def encode_ledger(ledger: dict[str, Any]) -> bytes:
    """A ledger's stored form: purged versions reduced to status and times; the packed
    tombstone when every version is purged and nothing else is recorded."""
    versions = [
        {k: v[k] for k in _KEPT if k in v} if v.get("purged") else v for v in ledger["versions"]
    ]
    if set(ledger) <= _LEDGER_FIELDS and all(
        v.get("purged") and v["status"] in _RETIRED and v.get("retired_at") is not None
        for v in versions
    ):
        return _pack_tombstone(ledger, versions)
    return orjson.dumps({**ledger, "versions": versions})


def decode_ledger(raw: bytes) -> dict[str, Any]:
    """A stored ledger as a dict, purged versions with their dropped fields defaulted."""
    if raw[:1] == _TOMBSTONE:
        return _unpack_tombstone(raw)
    ledger = orjson.loads(raw)
    for v in ledger["versions"]:
        if v.get("purged") and "gen" not in v:
            v.update(_DROPPED)
    return ledger


def _pack_tombstone(ledger: dict[str, Any], versions: list[dict[str, Any]]) -> bytes:
    session = ledger.get("session")
    out = [
        _TOMBSTONE,
        _HEAD.pack(CLASS_CODE[ledger["class"]], ledger["current"], session is not None),
    ]
    for text in (ledger["project"], session):
        if text is not None:
            raw = text.encode()
            out += (_LEN.pack(len(raw)), raw)
    out += (_F64.pack(ledger["created_at"]), _N.pack(len(versions)))
    out += (
        _VERSION.pack(
            _RETIRED.index(v["status"]), bool(v.get("forgotten")), v["created_at"], v["retired_at"]
        )
        for v in versions
    )
    return b"".join(out)


def _unpack_tombstone(raw: bytes) -> dict[str, Any]:
    cls, current, has_session = _HEAD.unpack_from(raw, 1)
    at = 1 + _HEAD.size
    texts: list[str | None] = []
    for present in (True, bool(has_session)):
        if not present:
            texts.append(None)
            continue
        (n,) = _LEN.unpack_from(raw, at)
        texts.append(raw[at + 2 : at + 2 + n].decode())
        at += 2 + n
    (created_at,) = _F64.unpack_from(raw, at)
    (count,) = _N.unpack_from(raw, at + 8)
    at += 12
    versions = []
    for _ in range(count):
        status, forgotten, v_created, retired = _VERSION.unpack_from(raw, at)
        at += _VERSION.size
        v = {"status": _RETIRED[status], "created_at": v_created, "retired_at": retired}
        v.update(purged=True, **_DROPPED)
        if forgotten:
            v["forgotten"] = True
        versions.append(v)
    return {
        "project": texts[0],
        "class": CODE_CLASS[cls],
        "session": texts[1],
        "created_at": created_at,
        "current": current,
        "versions": versions,
    }
