"""The hook spool's logs read (:mod:`memoryd.base.hookspool` writes them): their whole
records, how far each is archived, what waits. The drain, ``doctor`` and the
benchmarks read them; a hook never does (this module is not on its path: its
import would cost every hook)."""

import os
import time

from memoryd.base import hookjson
from memoryd.base.hookspool import (
    CONSUMED_RECORD,
    EVENT_RECORD,
    EVENT_SUFFIX,
    IDLE_SECONDS,
    LOG_SUFFIX,
    MARK,
    MAX_HEADER,
    SEALED_SUFFIX,
    checksum,
    event_names,
    read_event,
    spool_dir,
)

#: Bytes a read takes at once; what :func:`waiting` reads past a log's archived offset.
READ_CHUNK = 1 << 22


class Record:
    """A whole record of a log: its kind, its name (an event's) or offset (a consumed
    record's), where it starts and ends, its payload."""

    __slots__ = ("kind", "arg", "start", "end", "payload")

    def __init__(self, kind: str, arg: str, start: int, end: int, payload: bytes) -> None:
        self.kind, self.arg, self.start, self.end, self.payload = kind, arg, start, end, payload


def parse_records(data: bytes, start: int = 0, base: int = 0) -> tuple[list[Record], bool]:
    """The whole records of ``data`` from ``start`` (offsets ``base`` on: ``data`` is
    the log from ``base``), and whether bytes that are no whole record (torn by a
    kill, or still being written) come before one that is. Bytes after the last whole
    record are left: a hook may be writing them."""
    found: list[Record] = []
    gap = skipped = False
    pos = start
    while (at := data.find(MARK, pos)) >= 0:
        skipped = skipped or at > pos
        record = _record_at(data, at, base)
        if record is None:
            skipped, pos = True, at + 1
            continue
        gap = gap or skipped
        found.append(record)
        pos, skipped = record.end - base, False
    return found, gap


def _record_at(data: bytes, pos: int, base: int) -> Record | None:
    eol = data.find(b"\n", pos, pos + MAX_HEADER)
    if eol < 0:
        return None
    fields = data[pos + 1 : eol].split(b" ")
    if len(fields) != 4 or not fields[2].isdigit():
        return None
    length = int(fields[2])
    end = eol + 1 + length + 1
    if end > len(data) or data[end - 1 : end] != b"\n":
        return None
    payload = data[eol + 1 : end - 1]
    head = data[pos + 1 : eol - 8]
    # the checksum's own bytes, not its value: a case flipped in its hex is a change too
    if fields[3] != b"%08x" % checksum(head + payload) or MARK in payload:
        return None
    try:
        return Record(fields[0].decode(), fields[1].decode(), base + pos, base + end, payload)
    except ValueError:
        return None


def consumed_to(data: bytes) -> int:
    """How far a log is archived: the largest offset its consumed records name (0)."""
    done, pos = 0, data.find(MARK + CONSUMED_RECORD.encode())
    while pos >= 0:
        record = _record_at(data, pos, 0)
        if record is not None and record.kind == CONSUMED_RECORD:
            done = max(done, int(record.arg))
        pos = data.find(MARK + CONSUMED_RECORD.encode(), pos + 1)
    return done


def last_consumed(fd: int, size: int) -> int:
    """How far a log is archived, read from its end: the offset its last consumed
    record names (0: none). The drain appends them in order (a batch of a log is
    planned from where the one before reached, and a redo names the same offset), so
    the last is the largest, and the log's head is not read."""
    mark, end = MARK + CONSUMED_RECORD.encode(), size
    while end > 0:
        start = max(0, end - READ_CHUNK)
        data = os.pread(fd, min(size, end + MAX_HEADER) - start, start)
        pos = data.rfind(mark, 0, end - start + len(mark) - 1)  # one starting before end
        while pos >= 0:
            record = _record_at(data, pos, start)
            if record is not None and record.kind == CONSUMED_RECORD:
                return int(record.arg)
            pos = data.rfind(mark, 0, pos)
        end = start
    return 0


def read_range(fd: int, start: int, stop: int) -> bytes:
    """The log's bytes from ``start`` to ``stop`` (fewer at its end)."""
    chunks, offset = [], start
    while offset < stop and (chunk := os.pread(fd, min(READ_CHUNK, stop - offset), offset)):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def unarchived(fd: int, window: int) -> tuple[list[Record], int, bool]:
    """A log's whole records past its archived offset, read ``window`` bytes on from it
    (or to its end when the first record is longer), that offset, and whether bytes
    that are no record come before one that is (see :func:`parse_records`)."""
    size = os.fstat(fd).st_size
    done = last_consumed(fd, size)
    stop = min(size, done + window)
    records, gap = parse_records(read_range(fd, done, stop), 0, done)
    if stop < size and not any(r.kind == EVENT_RECORD for r in records):
        records, gap = parse_records(read_range(fd, done, size), 0, done)
    return records, done, gap


def read_log(path: str, fd: int | None = None) -> bytes:
    """The whole of a log (through ``fd`` when given: a POSIX lock held on it survives)."""
    own = fd is None
    if own:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return read_range(fd, 0, os.fstat(fd).st_size)
    finally:
        if own:
            os.close(fd)


def log_names(home: str) -> list[str]:
    """The logs (live and sealed) in the spool, sealed ones first."""
    try:
        names = os.listdir(spool_dir(home))
    except FileNotFoundError:
        return []
    logs = [n for n in names if not n.startswith(".") and n.endswith((LOG_SUFFIX, SEALED_SUFFIX))]
    return sorted(logs, key=lambda n: (n.endswith(LOG_SUFFIX), n))


def log_events(data: bytes) -> list[tuple[str, dict]]:
    """A log's events not yet archived, as (name, event), in the log's order."""
    records, _ = parse_records(data, consumed_to(data))
    return [(r.arg, hookjson.loads(r.payload)) for r in records if r.kind == EVENT_RECORD]


def waiting_events(home: str) -> int:
    """How many events wait in the spool (event files, and logs' whole records past
    their archived offsets), counted without reading their JSON."""
    count = len(event_names(home))
    for name in log_names(home):
        try:
            data = read_log(os.path.join(spool_dir(home), name))
        except FileNotFoundError:
            continue
        records, _ = parse_records(data, consumed_to(data))
        count += sum(r.kind == EVENT_RECORD for r in records)
    return count


def spooled(home: str) -> list[tuple[str, dict]]:
    """Every event waiting in the spool (files and logs' records), as (name, event),
    oldest first (read as they are: a record being written is not there yet)."""
    found = [(n.removesuffix(EVENT_SUFFIX), e) for n in event_names(home)
             if (e := read_event(home, n)) is not None]  # fmt: skip
    for name in log_names(home):
        try:
            found += log_events(read_log(os.path.join(spool_dir(home), name)))
        except FileNotFoundError:
            continue
    return sorted(found, key=lambda item: item[0])


def waiting(home: str, idle_seconds: float = IDLE_SECONDS) -> bool:
    """Whether the drain has work: an event file, a sealed log, a log with whole event
    records past its archived offset (at once when its last record is a consumed one
    naming its own start: all of it is archived), or a log idle for ``idle_seconds``
    (the drain removes it). Torn bytes at a log's end are no work."""
    if event_names(home):
        return True
    folder = spool_dir(home)
    for name in log_names(home):
        if name.endswith(SEALED_SUFFIX):
            return True
        try:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            st = os.fstat(fd)
            if st.st_mtime < time.time() - idle_seconds:
                return True
            tail_at = max(0, st.st_size - MAX_HEADER)
            tail = os.pread(fd, MAX_HEADER, tail_at)
            pos = tail.rfind(MARK)
            last = _record_at(tail, pos, tail_at) if pos >= 0 else None
            if (last and last.kind == CONSUMED_RECORD and last.end == st.st_size
                    and int(last.arg) == last.start):  # fmt: skip
                continue
            records, _, _ = unarchived(fd, READ_CHUNK)
        finally:
            os.close(fd)
        if any(r.kind == EVENT_RECORD for r in records):
            return True
    return False
