"""The evidence archive: one RocksDB store (rocksdict, raw bytes keys), one contract.

Everything that knows how a key is built lives in :mod:`.keys`; the retention
layer above (``memoryd.retention``) works through the components of
:class:`ArchiveStore` only (``store.ledgers``, ``store.expiry``...). Every change
that touches more than one key is one ``WriteBatch``; all mutations of an open
primary are serialized by one lock, so a check and the write that depends on
it (a wave's "not pinned, not leased" and its tombstone; a lease's
authorization and its publication) can never be split by another request
served by the same process.

Model
-----
* A **document** has a project, a retention class, an optional session and a
  ledger of **versions** (1, 2, ...). Only the current version can be live;
  appending a new version supersedes the previous one. A version's status is
  ``live``, ``superseded`` or ``expired``; the ledger keeps every version
  forever, so a locator of a retired version answers with its true status and
  never with a newer version's content. Once a retired version's content is
  purged it keeps only its status and times (a document with nothing else
  left is a packed tombstone ledger: :func:`~.codec.encode_ledger`).
* A **locator** is ``"<doc_id>@<version>"``.
* The canonical payload (content plus optional JSON ``meta``) is stored
  zstd-compressed. Derived **postings** (exact lowercase ``\\w+`` terms with
  their frequency, positions and turn structure: :mod:`.positions`) and
  per-project term/corpus statistics make exact-term search cheap; they
  count live versions only and can be rebuilt from the canonical payloads
  (:meth:`.postings.Postings.rebuild_postings`). Each version's **term list**
  names its posting terms, so removing it builds its posting keys without
  decoding the payload.
* Everything derived from a version's content lives under its **expiry
  segment** (project, the day bucket of its deadline, class; the **held**
  segment for no deadline): :mod:`.segments`. A segment whose bucket has
  ended expires whole, by one range delete, its statistics deltas folded into
  the project's, protected versions copied out to the held segment first. A
  version reads ``expired`` from the first wave at or after its deadline (the
  **retention clock**) unless protected, before its segment's bytes go.
* Retiring one version (superseded, forgotten, a derived document following
  its sources, a held version whose protection lapsed) is two-phase: a
  **tombstone** (the ledger says expired or superseded, statistics drop the
  version through the journal, the version is queued for purge; search stops
  returning it at once), then :meth:`.ledgers.Ledgers.purge_pending` deletes its
  postings, term list and payload under its segment in bounded batches.
  Held versions with a deadline have a per-version **expiry entry**
  ``E <bucket:u64> <class:u8> <doc> 0x00 <version:u32>`` -> generation.
* **Pins** protect a document until removed (a pinned held version has no
  expiry entry; unpinning re-indexes it at its original deadline).
  **Active-context leases** belong to a client id (owner record with an epoch
  plus forward and reverse references); **retrieval leases** are short
  per-version protections taken by searches.

Layout
------
:mod:`memoryd.storage.archive.keys` builds and parses every key (its
docstring is the table). The modules: :mod:`~.keys`, :mod:`~.codec`
(payloads), :mod:`~.records` (value types, input checks), :mod:`~.core` (the
handle, the lock, batched writes, what a version's status is and where its keys
live), :mod:`~.store` (the store and its components), :mod:`~.ledgers`,
:mod:`~.expiry`, :mod:`~.protections` (pins, leases, reverse refs),
:mod:`~.access`, :mod:`~.postings` (postings, statistics, live matches),
:mod:`~.removal` (what retiring a version removes), :mod:`~.segments` (due
segments and their expiry), :mod:`~.lifetimes`, :mod:`~.vectors`, :mod:`~.meta`
(meta records; maintenance), :mod:`~.boundary` (the migration boundary's lock),
:mod:`~.relayout` (the format bump to segments) and :mod:`~.migrate` (the raw
copy/compare of a payload format migration).
"""

from __future__ import annotations

from memoryd.base.errors import (
    ArchiveBusy,
    ArchiveError,
    ArchiveReadOnly,
    BadArchiveInput,
    BadLocator,
    DiskLow,
    ForeignProject,
    LeaseExpired,
    LeaseNotFound,
    LeaseRejected,
    LocatorNotFound,
    NotLive,
)
from memoryd.storage.archive.access import DEFAULT_ACCESS_BUCKET_SECONDS
from memoryd.storage.archive.codec import CURRENT_PAYLOAD_FORMAT, PAYLOAD_FORMATS
from memoryd.storage.archive.core import DEFAULT_BUCKET_SECONDS
from memoryd.storage.archive.keys import CLASSES, WRITABLE_CLASSES
from memoryd.storage.archive.positions import (
    MAX_TERM_CHARS,
    MAX_TERMS_PER_VERSION,
    tokenize,
)
from memoryd.storage.archive.protections import MAX_LEASE_TARGETS
from memoryd.storage.archive.records import (
    MAX_EPOCH_SECONDS,
    STATUSES,
    AppendResult,
    CorpusStats,
    ExpiryEntry,
    Hit,
    LeaseGrant,
    NewVersion,
    PurgeReport,
    VersionInfo,
    check_epoch,
    make_locator,
    parse_locator,
)
from memoryd.storage.archive.store import KILL_POINTS, ArchiveStore

__all__ = [
    "CLASSES",
    "WRITABLE_CLASSES",
    "CURRENT_PAYLOAD_FORMAT",
    "DEFAULT_ACCESS_BUCKET_SECONDS",
    "DEFAULT_BUCKET_SECONDS",
    "KILL_POINTS",
    "MAX_EPOCH_SECONDS",
    "MAX_LEASE_TARGETS",
    "MAX_TERMS_PER_VERSION",
    "MAX_TERM_CHARS",
    "PAYLOAD_FORMATS",
    "STATUSES",
    "AppendResult",
    "ArchiveBusy",
    "ArchiveError",
    "ArchiveReadOnly",
    "ArchiveStore",
    "BadArchiveInput",
    "BadLocator",
    "CorpusStats",
    "DiskLow",
    "ExpiryEntry",
    "ForeignProject",
    "Hit",
    "LeaseExpired",
    "LeaseGrant",
    "LeaseNotFound",
    "LeaseRejected",
    "LocatorNotFound",
    "NewVersion",
    "NotLive",
    "PurgeReport",
    "VersionInfo",
    "check_epoch",
    "make_locator",
    "parse_locator",
    "tokenize",
]
