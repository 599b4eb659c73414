"""Bounded lives of what the archive keeps past its content: the states of expired
segments and the request records of applied appends.

- A segment's ``X`` state answers ``expired`` for every version a ledger still places
  in it as live; once :meth:`~.segments.Segments.slim_expired_ledgers` has packed
  every such ledger (no segment expired since its last complete walk), nobody asks
  and the state goes. A version appended later with a deadline in that bucket opens
  the segment again; its wave expires it like any other.
- A request record (``I``) makes a redone append answer its first outcome. It lives
  for the retry horizon (``archive_request_keep_seconds``): after it a request id is
  new again (an append repeating its document's current live version still makes
  no version: content identity does not expire). A record of an older archive
  carries no time: a sweep (once, from a cursor) times it at the sweep, so it too
  goes a horizon later.

Both purges are bounded per call and write nothing when there is nothing to do.
"""

from __future__ import annotations

import orjson

from memoryd.storage.archive import keys
from memoryd.storage.archive.core import Batch, StoreCore
from memoryd.storage.archive.records import ms
from memoryd.storage.archive.segments import SLIM_DUE

#: Cursor of the sweep timing request records of an older archive: orjson, the next
#: record key (hex) or true once every record is timed.
REQUESTS_TIMED = "archive.requests_timed"


class Lifetimes:
    """Purges of expired segments' states and of old request records, in bounds.

    Interface: :meth:`purge_segment_states`, :meth:`purge_request_records`. Receives
    the core only.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def purge_segment_states(self, *, limit: int = 1000) -> int:
        """Delete at most ``limit`` states of expired segments, only while no ledger
        may still name one for a live version (no segment expired since the ledger
        slimming pass last completed). Returns how many went."""
        self._core._need_primary()
        with self._core._lock:
            if self._core._get_u64(keys.cursor(SLIM_DUE)):
                return 0  # ledgers still to pack answer from these states
            batch = Batch()
            for key, state in self._core._prefix(keys.SEGMENT_STATE, fill_cache=False):
                if batch.deleted >= limit:
                    break
                if state == keys.SEG_EXPIRED:
                    batch.delete(key)
            self._core._write(batch)
            return batch.deleted

    def purge_request_records(self, *, before: float, now: float, limit: int = 1000) -> int:
        """Delete at most ``limit`` request records applied before ``before`` (with
        their time index); first time (at ``now``) records of an older archive, at
        most ``limit`` looked at from the sweep's cursor. Returns the records deleted."""
        self._core._need_primary()
        with self._core._lock:
            batch = Batch()
            self._time_legacy_requests(batch, now, limit)
            end = keys.request_times_until(ms(before))
            for key, _ in self._core._scan(keys.REQUEST_TIME, end, fill_cache=False):
                if batch.deleted >= limit:
                    break
                batch.delete(keys.request(keys.parse_request_time(key)[1]))
                batch.wb.delete(key)
            self._core._write(batch)
            return batch.deleted

    def _time_legacy_requests(self, batch: Batch, now: float, limit: int) -> None:
        """Look at up to ``limit`` records from the sweep's cursor; time the untimed."""
        cursor = self._core._get_json(keys.cursor(REQUESTS_TIMED))
        if cursor is True:
            return
        start = keys.REQUEST if cursor is None else bytes.fromhex(cursor)
        stamp, seen, last = ms(now), 0, b""
        for key, raw in self._core._scan(start, keys.prefix_end(keys.REQUEST), fill_cache=False):
            if seen >= limit:
                batch.put(keys.cursor(REQUESTS_TIMED), orjson.dumps(last.hex()))
                return
            seen, last = seen + 1, key + b"\x00"
            locator, applied = keys.parse_request_value(raw)
            if applied is None:
                for k, value in keys.request_entries(key[len(keys.REQUEST) :], locator, stamp):
                    batch.put(k, value)
        batch.put(keys.cursor(REQUESTS_TIMED), orjson.dumps(True))
