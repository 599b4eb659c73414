"""The format bump to expiry segments (layout 1 -> 2), in place and resumable.

A layout-1 archive kept a version's content keys by family, not by segment::

    V dv                    payload            L dv          term list
    P project 0 term 0 dv   posting            C project 0 dv  codes
    E bucket class dv       expiry entry       U dv          purge queue

:meth:`Relayout.relayout` walks the ledgers in key order, a batch of
:data:`RELAYOUT_LEDGERS` at a time; for each live version it moves the
payload, term list, postings (values as stored) and codes under the version's
segment (counting the segment statistics) and names the segment's bucket in
the ledger; a retired version still waiting for its purge is marked purged.
The global statistics do not change (the same versions stay live). Each batch
carries the ledger cursor, so a crash resumes at the first ledger not yet
moved; the last batch drops the old families whole (range deletes: no
per-version delete) and records layout 2. The caller holds the boundary's
migration lock (:meth:`memoryd.retention.boundary.Boundary.exclusive`): no
retention wave runs meanwhile. Kill point: ``relayout_mid_copy`` (before each
batch).
"""

from __future__ import annotations

from typing import Any

import orjson

from memoryd.storage.archive import codec, keys
from memoryd.storage.archive.core import LAYOUT, Batch, StoreCore, killpoint
from memoryd.storage.archive.ledgers import PURGE_HEAD
from memoryd.storage.archive.removal import version_terms

#: Ledgers moved per WriteBatch.
RELAYOUT_LEDGERS = 500

#: The ledger cursor of a relayout in progress.
RELAYOUT_CURSOR = "archive.relayout"

#: Crash point (before each batch).
KILL_POINTS = ("relayout_mid_copy",)

#: Layout 1's families of content keys and their indexes (gone after the bump).
OLD_FAMILIES = (b"C", b"E", b"L", b"P", b"U", b"V")


class Relayout:
    """Moving a layout-1 archive's content under its expiry segments (opening a primary
    runs :meth:`relayout` once, under the boundary lock)."""

    def __init__(self, core: StoreCore) -> None:
        self._core = core

    def relayout(self, *, batch_ledgers: int = RELAYOUT_LEDGERS) -> int:
        """Bring a layout-1 archive to expiry segments (see the module docstring);
        returns the versions moved by this call (0: nothing to do)."""
        self._core._need_primary()
        moved = 0
        with self._core._lock:
            while self._core.layout < LAYOUT:
                start = self._core._db.get(keys.cursor(RELAYOUT_CURSOR)) or keys.DOC
                batch, last, n = Batch(), None, 0
                for key, raw in self._core._scan(
                    start, keys.prefix_end(keys.DOC), fill_cache=False
                ):
                    moved += self._relayout_ledger(batch, key, codec.decode_ledger(raw))
                    last, n = key, n + 1
                    if n >= batch_ledgers:
                        break
                if n < batch_ledgers:
                    self._finish_relayout(batch)
                else:
                    batch.put(keys.cursor(RELAYOUT_CURSOR), last + b"\x00")
                killpoint("relayout_mid_copy")
                self._core._write(batch)
                self._core._read_format()
        return moved

    def _relayout_ledger(self, batch: Batch, key: bytes, ledger: dict[str, Any]) -> int:
        """One document's versions into ``batch``; returns the live versions moved. A
        retired version still queued for its purge is purged on the way (its old keys
        go with the old families at the end, like every moved version's)."""
        doc, moved = keys.doc_of(key), 0
        for ver, v in enumerate(ledger["versions"], 1):
            if v["status"] == "live":
                moved += self._relayout_version(batch, doc, ledger, ver)
            elif not v.get("purged"):
                v["purged"] = True
                batch.ledgers[key] = ledger
        return moved

    def _relayout_version(self, batch: Batch, doc: bytes, ledger: dict[str, Any], ver: int) -> int:
        v, dv = ledger["versions"][ver - 1], keys.dv(doc, ver)
        payload = self._core._db.get(b"V" + dv)
        if payload is None:  # nothing to move (a damaged archive): the ledger stays as it is
            return 0
        project = ledger["project"].encode()
        listed = self._core._db.get(b"L" + dv)
        if listed is None:  # appended before term lists: the terms from the payload
            content = codec.decode_payload(payload)["content"]
            listed = keys.join_terms(version_terms(content))
        terms = keys.split_terms(listed)
        olds = self._core._db.get([b"P" + project + keys.SEP + t + keys.SEP + dv for t in terms])
        codes = self._core._db.get(b"C" + project + keys.SEP + dv)
        bucket = self._core._bucket_of(v["expires_at"])
        if bucket != keys.HELD_BUCKET:
            v["b"] = bucket
        values = dict(zip(terms, olds, strict=True))
        self._core._place(
            batch, self._core._seg(ledger, v), dv, payload, listed, values, codes, v["len"]
        )
        batch.ledgers[keys.doc(doc)] = ledger
        return 1

    def _finish_relayout(self, batch: Batch) -> None:
        """The last batch: what is left of the old families goes, layout 2 is recorded."""
        for family in OLD_FAMILIES:
            batch.wb.delete_range(family, keys.prefix_end(family))
        batch.wb.delete(keys.cursor(RELAYOUT_CURSOR))
        batch.wb.delete(keys.cursor(PURGE_HEAD))
        fmt = self._core._get_json(keys.FORMAT) or {}
        fmt.update(layout=LAYOUT, segment_seconds=self._core.segment_seconds)
        batch.put(keys.FORMAT, orjson.dumps(fmt))
