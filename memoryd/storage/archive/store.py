"""The facade: one :class:`ArchiveStore` combining the store's parts over one handle
and one lock."""

from __future__ import annotations

from memoryd.storage.archive.access import AccessMixin
from memoryd.storage.archive.expiry import ExpiryMixin
from memoryd.storage.archive.ledgers import LedgersMixin
from memoryd.storage.archive.lifetimes import LifetimesMixin
from memoryd.storage.archive.meta import MetaMixin
from memoryd.storage.archive.postings import PostingsMixin
from memoryd.storage.archive.protections import ProtectionsMixin
from memoryd.storage.archive.relayout import RelayoutMixin
from memoryd.storage.archive.removal import DfJournalMixin
from memoryd.storage.archive.segments import SegmentsMixin
from memoryd.storage.archive.vectors import VectorsMixin


class ArchiveStore(
    LedgersMixin,
    SegmentsMixin,
    LifetimesMixin,
    ExpiryMixin,
    ProtectionsMixin,
    AccessMixin,
    PostingsMixin,
    DfJournalMixin,
    MetaMixin,
    VectorsMixin,
    RelayoutMixin,
):
    """An open archive. Use :meth:`open_primary` or :meth:`open_secondary`.

    Thread-safe: mutations are serialized by one lock; reads need none.
    Times are epoch seconds (floats); every method that depends on the clock
    takes ``now`` (default ``time.time()``) so tests and drills can move it.
    """


#: Crash points of the store: after a purge chunk is built / before the final purge batch.
KILL_POINTS = ("archive_purge_chunk", "archive_purge_final")
