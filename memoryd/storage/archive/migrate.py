"""The raw copy and compare of a payload re-encoding migration.

:func:`sync` makes one archive hold every record of another (payloads
re-encoded to a target format); :func:`compare` checks that record by record.
The migration's states and its boundary are :mod:`memoryd.retention.boundary`.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from memoryd.base import killpoints
from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.store import ArchiveStore

#: Crash point of the copy (every 1000 records): ``migration_mid_copy``.
KILL_POINTS = ("migration_mid_copy",)


def _reencode(value: bytes, fmt: int) -> bytes:
    record = codec.decode_payload(value)
    return codec.encode_payload(record["content"], record.get("meta"), fmt)


def _format_meta(value: bytes, fmt: int) -> bytes:
    meta = orjson.loads(value)
    meta["payload_format"] = fmt
    return orjson.dumps(meta)


def sync(src: ArchiveStore, dst: ArchiveStore, fmt: int, *, full: bool) -> int:
    """Make ``dst`` hold every record of ``src`` (payloads in ``fmt``); returns keys written.

    ``full``: ``dst`` is empty, copy everything. Otherwise walk both in key
    order, writing what differs and deleting what ``src`` no longer has.
    """

    def converted() -> Iterator[tuple[bytes, bytes]]:
        for i, (key, value) in enumerate(src.maintenance.raw_items()):
            if i and i % 1000 == 0:
                killpoints.reach("migration_mid_copy")
            if keys.is_payload(key):
                yield key, _reencode(value, fmt)
            elif key == keys.FORMAT:
                yield key, _format_meta(value, fmt)
            else:
                yield key, value

    if full:
        return dst.maintenance.raw_write(converted())
    dst_items = dst.maintenance.raw_items()
    have = next(dst_items, None)
    writes: list[tuple[bytes, bytes]] = []
    deletes: list[bytes] = []
    for key, value in converted():
        while have is not None and have[0] < key:
            deletes.append(have[0])
            have = next(dst_items, None)
        if have is not None and have[0] == key:
            if not _same(key, have[1], value):
                writes.append((key, value))
            have = next(dst_items, None)
        else:
            writes.append((key, value))
    while have is not None:
        deletes.append(have[0])
        have = next(dst_items, None)
    dst.maintenance.raw_delete(deletes)
    return dst.maintenance.raw_write(writes) + len(deletes)


def _same(key: bytes, a: bytes, b: bytes) -> bool:
    if a == b:
        return True
    if keys.is_payload(key):
        return codec.decode_payload(a) == codec.decode_payload(b)
    return False


def compare(src: ArchiveStore, dst: ArchiveStore, fmt: int) -> list[str]:
    """Every record of ``src`` equals ``dst``'s (payloads decoded; dst's in ``fmt``)."""
    problems: list[str] = []
    a_items, b_items = src.maintenance.raw_items(), dst.maintenance.raw_items()
    while len(problems) < 20:
        a, b = next(a_items, None), next(b_items, None)
        if a is None or b is None:
            if a is not None or b is not None:
                problems.append("record counts differ")
            break
        key = a[0]
        if key != b[0]:
            problems.append(f"key sets differ at {key[:40]!r} / {b[0][:40]!r}")
            break
        if keys.is_payload(key):
            if codec.payload_format_of(b[1]) != fmt:
                problems.append(f"payload {key[:40]!r} not in format {fmt}")
            elif codec.decode_payload(a[1]) != codec.decode_payload(b[1]):
                problems.append(f"payload {key[:40]!r} differs")
        elif key == keys.FORMAT:
            if orjson.loads(b[1]).get("payload_format") != fmt:
                problems.append("format record not updated")
        elif a[1] != b[1]:
            problems.append(f"record {key[:40]!r} differs")
    return problems
