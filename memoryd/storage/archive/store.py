"""The store: one :class:`ArchiveStore` over one handle and one lock, its parts as
components.

Each component receives the core (the handle, the lock, batched writes) and the
components it calls; every operation still takes the core's one lock and writes
one batch. Callers reach a part through its attribute: ``store.ledgers.append``,
``store.expiry.retire_due``, ``store.protections.acquire_leases``...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryd.storage.archive import positions
from memoryd.storage.archive.access import Access
from memoryd.storage.archive.boundary import BoundaryLock
from memoryd.storage.archive.core import DEFAULT_SEGMENT_SECONDS, LAYOUT, StoreCore
from memoryd.storage.archive.expiry import Expiry
from memoryd.storage.archive.ledgers import Ledgers
from memoryd.storage.archive.lifetimes import Lifetimes
from memoryd.storage.archive.meta import Maintenance, Meta
from memoryd.storage.archive.postings import Postings
from memoryd.storage.archive.protections import Protections
from memoryd.storage.archive.relayout import Relayout
from memoryd.storage.archive.segments import Segments
from memoryd.storage.archive.vectors import Vectors


class ArchiveStore(StoreCore):
    """An open archive. Use :meth:`open_primary` or :meth:`open_secondary`.

    Thread-safe: mutations are serialized by one lock; reads need none.
    Times are epoch seconds (floats); every method that depends on the clock
    takes ``now`` (default ``time.time()``) so tests and drills can move it.

    Its parts: :attr:`ledgers` (documents, versions, appends, purges),
    :attr:`segments` (due segments and their expiry), :attr:`lifetimes` (bounded
    records' own lifetimes), :attr:`expiry` (per-version deadlines), :attr:`protections`
    (pins and leases), :attr:`access`, :attr:`postings` (postings and statistics),
    :attr:`vectors`, :attr:`meta` and :attr:`maintenance` (compaction, raw copies).
    """

    def __init__(self, db: Any, path: Path, *, readonly: bool, sync: bool) -> None:
        super().__init__(db, path, readonly=readonly, sync=sync)
        self.vectors = Vectors(self)
        self.ledgers = Ledgers(self, self.vectors)
        self.expiry = Expiry(self, self.ledgers)
        self.protections = Protections(self, self.ledgers)
        self.segments = Segments(self, self.ledgers, self.expiry)
        self.lifetimes = Lifetimes(self)
        self.access = Access(self)
        self.postings = Postings(self)
        self.meta = Meta(self)
        self.maintenance = Maintenance(self, self.postings, self.segments)

    @classmethod
    def open_primary(cls, path: Path | str, **kw: Any) -> ArchiveStore:
        """:meth:`StoreCore.open_primary`, then a layout-1 archive is moved under
        expiry segments (:mod:`~.relayout`, resumable, under the boundary's
        migration lock) and postings written before :data:`positions.LAYOUT` (term
        frequency only) are rebuilt from the payloads, once
        (:meth:`Postings.postings_layout` says which an archive has)."""
        store = super().open_primary(path, **kw)
        if store.layout < LAYOUT:  # layout 1: its content moves under expiry segments
            store.segment_seconds = int(kw.get("segment_seconds", DEFAULT_SEGMENT_SECONDS))
            with BoundaryLock(store.path).exclusive():  # no retention wave meanwhile
                Relayout(store).relayout()
        if store.postings.postings_layout() < positions.LAYOUT:
            store.postings.rebuild_postings()
        return store


#: Crash points of the store: after a purge chunk is built / before the final purge batch.
KILL_POINTS = ("archive_purge_chunk", "archive_purge_final")
