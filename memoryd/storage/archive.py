"""The evidence archive: one RocksDB store (rocksdict, raw bytes keys), one contract.

Everything that knows how a key is built lives in this module; the retention
layer above (``memoryd.retention``) works through the methods of
:class:`ArchiveStore` only. Every change that touches more than one key is one
``WriteBatch``; all mutations of an open primary are serialized by one lock,
so a check and the write that depends on it (a wave's "not pinned, not
leased" and its tombstone; a lease's authorization and its publication) can
never be split by another request served by the same process.

Model
-----
* A **document** has a project, a retention class, an optional session and a
  ledger of **versions** (1, 2, ...). Only the current version can be live;
  appending a new version supersedes the previous one. A version's status is
  ``live``, ``superseded`` or ``expired``; the ledger keeps every version's
  metadata forever, so a locator of a retired version answers with its true
  status and never with a newer version's content.
* A **locator** is ``"<doc_id>@<version>"``.
* The canonical payload (content plus optional JSON ``meta``) is stored
  zstd-compressed. Derived **postings** (exact lowercase ``\\w+`` terms with
  their frequency) and per-project term/corpus statistics make exact-term
  search cheap; they count live versions only and can be rebuilt from the
  canonical payloads (:meth:`ArchiveStore.rebuild_postings`).
* Every expirable live version has one **expiry entry**
  ``E <bucket:u64> <class:u8> <doc> 0x00 <version:u32>`` -> generation: time
  bucket first, fixed-width big endian, so byte order is time order and a due
  scan stops at the first future bucket. A stale generation is harmless.
* Retirement is two-phase: a **tombstone** (the ledger says expired or
  superseded, statistics drop the version, the version is queued for purge;
  search stops returning it at once), then :meth:`ArchiveStore.purge_pending`
  deletes postings and the payload in bounded batches. Both phases are
  idempotent, so a crash at any point is repaired by running them again.
* **Pins** protect a document until removed (a pinned document's expiry
  entry is withdrawn; unpinning re-indexes it at its original deadline).
  **Active-context leases** belong to a client id (owner record with an epoch
  plus forward and reverse references); **retrieval leases** are short
  per-version protections taken by searches.

Layout (first byte is the family)::

    M name                       meta (orjson): format, degraded, counters, ...
    D doc                        document ledger (orjson)
    V doc 0 ver                  canonical payload (encoded, zstd)
    P project 0 term 0 doc 0 ver posting -> term frequency (u32)
    T project 0 term             document frequency over live versions (u64)
    S project                    corpus stats (orjson: versions, length)
    E bucket class doc 0 ver     expiry index -> generation (u32)
    U doc 0 ver                  purge queue -> last term purged (resume point)
    N doc                        pin (orjson)
    O client                     lease owner (orjson: epoch, expires_at, ttl)
    o expires_ms client          owner expiry index -> epoch
    F client 0 doc 0 ver         forward lease reference -> epoch
    R doc 0 ver client           reverse lease reference -> epoch
    Q doc 0 ver                  retrieval lease -> expires_ms (u64)
    q expires_ms doc 0 ver       retrieval lease expiry index
    G bucket doc                 coarse access record
    I request_id                 idempotent append record -> locator (kept, like the
                                 ledger, after the version is purged: a redone request
                                 answers with its first outcome, never a new version)
    K name                       cursor
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import struct
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import zstandard
from rocksdict import AccessType, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from memoryd import killpoints
from memoryd.errors import ForeignProject, MemorydError, UsageError

# --------------------------------------------------------------------------- constants

CLASSES: tuple[str, ...] = ("ephemeral", "conversation", "derived", "durable", "active")
_CLASS_CODE = {name: i + 1 for i, name in enumerate(CLASSES)}
_CODE_CLASS = {code: name for name, code in _CLASS_CODE.items()}

STATUSES = ("live", "superseded", "expired")

#: Width of an expiry time bucket, fixed when the archive is created (stored in meta).
DEFAULT_BUCKET_SECONDS = 3600
#: Width of a coarse access-record bucket (at most one record per document per bucket).
DEFAULT_ACCESS_BUCKET_SECONDS = 86400
#: Most exact versions one active-context lease request may name.
MAX_LEASE_TARGETS = 1000
#: Most distinct terms indexed per version (the first ones in text order).
MAX_TERMS_PER_VERSION = 10_000
MAX_TERM_CHARS = 64

#: Payload encodings. 1: a bare zstd frame of orjson({"content", "meta"}).
#: 2: b"\x02" + crc32 (u32 BE) of the frame + zstd frame (level 9): checksummed.
PAYLOAD_FORMATS = (1, 2)
CURRENT_PAYLOAD_FORMAT = 1
_ZSTD_LEVEL = {1: 3, 2: 9}

#: The last second an archived time may name (9999-12-31T23:59:59Z); the first is the epoch.
MAX_EPOCH_SECONDS = 253_402_300_799.0

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_PROJECT_RE = re.compile(r"^[^\x00/@]{1,200}$")
_TERM_RE = re.compile(r"\w+")

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")

# key families
_META, _DOC, _PAYLOAD, _POSTING, _TERMSTAT, _CORPUS = b"M", b"D", b"V", b"P", b"T", b"S"
_EXPIRY, _PURGE, _PIN, _OWNER, _OWNER_EXP = b"E", b"U", b"N", b"O", b"o"
_FWD, _REV, _RLEASE, _RLEASE_EXP, _ACCESS, _REQUEST, _CURSOR = (
    b"F",
    b"R",
    b"Q",
    b"q",
    b"G",
    b"I",
    b"K",
)
_SEP = b"\x00"


# --------------------------------------------------------------------------- errors


class ArchiveError(MemorydError):
    """Base of archive errors."""

    code = "ARCHIVE_ERROR"


class ArchiveBusy(ArchiveError):
    """Another process holds the archive read-write; retryable (it lets go eventually)."""

    code = "ARCHIVE_BUSY"
    retryable = True
    in_this_process = False  # held by another open store of this very process


class ArchiveReadOnly(ArchiveError):
    """A write was attempted through a secondary (read-only) instance."""

    code = "ARCHIVE_READ_ONLY"


class BadLocator(UsageError):
    code = "BAD_LOCATOR"


class BadArchiveInput(UsageError):
    code = "BAD_ARCHIVE_INPUT"


class LocatorNotFound(ArchiveError):
    code = "NOT_FOUND"


class NotLive(ArchiveError):
    """The target version is superseded or expired."""

    code = "NOT_LIVE"


class LeaseRejected(ArchiveError):
    """An active-context lease request was rejected whole; ``rejected`` says why per locator."""

    code = "LEASE_REJECTED"

    def __init__(self, message: str, rejected: dict[str, str]) -> None:
        super().__init__(message)
        self.rejected = rejected


class LeaseNotFound(ArchiveError):
    code = "LEASE_NOT_FOUND"


class LeaseExpired(ArchiveError):
    """The client's lease expired (its protections are gone); acquire again."""

    code = "LEASE_EXPIRED"


class DiskLow(ArchiveError):
    """Free disk space is too low to accept this archival write; retry later."""

    code = "DISK_LOW"
    retryable = True


# --------------------------------------------------------------------------- helpers


def utc_iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string (``None`` stays ``None``).

    A time no calendar can show (stored before input was range-checked, e.g.
    milliseconds taken for seconds) reads as ``None`` instead of failing the read.
    """
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):
        return None


def check_epoch(name: str, ts: object) -> float:
    """``ts`` as epoch seconds between 1970 and the year 9999; else :class:`BadArchiveInput`."""
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        raise BadArchiveInput(f"{name} must be epoch seconds, got {ts!r}")
    if not 0 <= ts <= MAX_EPOCH_SECONDS:
        raise BadArchiveInput(
            f"{name} {ts!r} is not a time between 1970 and the year 9999 (epoch seconds)"
        )
    return float(ts)


def tokenize(text: str) -> list[str]:
    """The archive's exact terms: lowercase ``\\w+`` runs of at most 64 characters."""
    return [t for t in _TERM_RE.findall(text.lower()) if len(t) <= MAX_TERM_CHARS]


def _term_counts(text: str) -> tuple[dict[str, int], int]:
    """Term frequencies (first MAX_TERMS_PER_VERSION distinct terms) and token count."""
    tokens = tokenize(text)
    counts: dict[str, int] = {}
    for t in tokens:
        if t in counts:
            counts[t] += 1
        elif len(counts) < MAX_TERMS_PER_VERSION:
            counts[t] = 1
    return counts, len(tokens)


def make_locator(doc_id: str, version: int) -> str:
    return f"{doc_id}@{version}"


def parse_locator(locator: str) -> tuple[str, int]:
    """``"doc@3"`` -> ``("doc", 3)``; raises :class:`BadLocator`."""
    if not isinstance(locator, str):
        raise BadLocator(f"a locator is a string 'DOC@VERSION', got {locator!r}")
    doc, sep, ver = locator.rpartition("@")
    if not sep or not _ID_RE.match(doc) or not ver.isdigit() or not 0 < int(ver) < 2**32:
        raise BadLocator(f"{locator!r} is not a locator 'DOC@VERSION' (for example 'a1b2@1')")
    return doc, int(ver)


def _check_id(kind: str, value: str) -> bytes:
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise BadArchiveInput(
            f"{kind} {value!r} must be 1-128 characters of letters, digits and . _ : - "
            "(starting with a letter or digit)"
        )
    return value.encode()


def _check_project(project: str) -> bytes:
    if not isinstance(project, str) or not _PROJECT_RE.match(project):
        raise BadArchiveInput(f"project {project!r} must be 1-200 characters without NUL, / or @")
    return project.encode()


def _check_class(cls: str) -> int:
    try:
        return _CLASS_CODE[cls]
    except KeyError:
        raise BadArchiveInput(f"class {cls!r} is not one of {', '.join(CLASSES)}") from None


def _ms(ts: float) -> int:
    return max(0, int(math.floor(ts * 1000)))


def _dv(doc: bytes, ver: int) -> bytes:
    return doc + _SEP + _U32.pack(ver)


def _split_dv(raw: bytes) -> tuple[str, int]:
    return raw[:-5].decode(), _U32.unpack(raw[-4:])[0]


def _prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix``."""
    p = bytearray(prefix)
    while p:
        if p[-1] < 0xFF:
            p[-1] += 1
            return bytes(p)
        p.pop()
    return None


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class VersionInfo:
    """One version's ledger entry (no content)."""

    doc_id: str
    version: int
    project: str
    cls: str
    session: str | None
    status: str
    created_at: float
    expires_at: float | None
    generation: int
    override: bool
    length: int
    size: int
    sha256: str
    purged: bool
    retired_at: float | None
    current_version: int
    pinned: bool
    forgotten: bool = False  # retired by ``forget`` (the user's request), not by age

    @property
    def locator(self) -> str:
        return make_locator(self.doc_id, self.version)


@dataclass(frozen=True)
class AppendResult:
    locator: str
    doc_id: str
    version: int
    created: bool  # False when the request id was already applied
    superseded: str | None  # the locator this version superseded, if one was live


@dataclass(frozen=True)
class NewVersion:
    """One item of :meth:`ArchiveStore.append_many`; see :meth:`ArchiveStore.append`."""

    project: str
    cls: str
    content: str
    created_at: float
    expires_at: float | None
    doc_id: str | None = None
    session: str | None = None
    meta: dict[str, Any] | None = None
    request_id: str | None = None


@dataclass(frozen=True)
class ExpiryEntry:
    """One expiry index entry; ``key`` is an opaque cursor position."""

    key: bytes
    bucket_start: float
    cls: str
    doc_id: str
    version: int
    generation: int

    @property
    def locator(self) -> str:
        return make_locator(self.doc_id, self.version)


@dataclass(frozen=True)
class PurgeReport:
    versions: int = 0  # versions whose canonical records are now gone
    keys_deleted: int = 0
    remaining: bool = False  # more pending purge work than the budget allowed


@dataclass(frozen=True)
class LeaseGrant:
    client: str
    epoch: int
    expires_at: float
    locators: tuple[str, ...]  # the versions this request added (all of them)


@dataclass(frozen=True)
class Hit:
    locator: str
    doc_id: str
    version: int
    project: str
    cls: str
    session: str | None
    created_at: float
    score: float
    matched: dict[str, int]
    length: int


@dataclass(frozen=True)
class CorpusStats:
    versions: int
    length: int

    @property
    def avg_length(self) -> float:
        return self.length / self.versions if self.versions else 0.0


@dataclass
class _Batch:
    """A WriteBatch plus the ledgers/counters changed inside it (read-your-writes)."""

    wb: WriteBatch = field(default_factory=lambda: WriteBatch(raw_mode=True))
    ledgers: dict[bytes, dict[str, Any]] = field(default_factory=dict)
    df: Counter[tuple[bytes, str]] = field(default_factory=Counter)
    corpus: dict[bytes, list[int]] = field(default_factory=dict)
    deleted: int = 0

    def put(self, key: bytes, value: bytes) -> None:
        self.wb.put(key, value)

    def delete(self, key: bytes) -> None:
        self.wb.delete(key)
        self.deleted += 1


# --------------------------------------------------------------------------- the store


class ArchiveStore:
    """An open archive. Use :meth:`open_primary` or :meth:`open_secondary`.

    Thread-safe: mutations are serialized by one lock; reads need none.
    Times are epoch seconds (floats); every method that depends on the clock
    takes ``now`` (default ``time.time()``) so tests and drills can move it.
    """

    def __init__(self, db: Rdict, path: Path, *, readonly: bool, sync: bool) -> None:
        self._db = db
        self.path = path
        self.readonly = readonly
        self._lock = threading.RLock()
        self._wopt = WriteOptions()
        self._wopt.sync = sync
        self._closed = False
        meta = self._get_json(_META + b"format") or {}
        self.bucket_seconds: int = int(meta.get("bucket_seconds", DEFAULT_BUCKET_SECONDS))
        self.payload_format: int = int(meta.get("payload_format", CURRENT_PAYLOAD_FORMAT))
        self.admission: Callable[[int], None] | None = None
        """Called with the encoded size before every append; may raise :class:`DiskLow`."""

    # ---- opening

    @staticmethod
    def _options(create: bool) -> Options:
        opts = Options(raw_mode=True)
        opts.create_if_missing(create)
        # Files full of deletes are picked up by background compaction after a flush.
        opts.add_compact_on_deletion_collector_factory(4096, 1024, 0.3)
        opts.set_max_background_jobs(2)
        return opts

    @classmethod
    def open_primary(
        cls,
        path: Path | str,
        *,
        sync: bool = True,
        bucket_seconds: int = DEFAULT_BUCKET_SECONDS,
        payload_format: int = CURRENT_PAYLOAD_FORMAT,
    ) -> ArchiveStore:
        """Open (creating if needed) the archive read-write.

        Only one process may: a second raises :class:`ArchiveBusy`. ``sync``
        fsyncs the WAL on every write batch. ``bucket_seconds`` and
        ``payload_format`` apply only when the archive is created (afterwards
        they are read from the archive itself).
        """
        path = Path(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot create the archive directory {path} ({exc})") from None
        try:
            db = Rdict(str(path), cls._options(True))
        except Exception as exc:  # rocksdict raises bare Exception
            if "lock" in str(exc).lower():
                busy = ArchiveBusy(
                    f"the archive {path} is open read-write elsewhere; "
                    "retry when it lets go, or read with a secondary instance"
                )
                busy.in_this_process = "current process" in str(exc)
                raise busy from None
            raise ArchiveError(f"cannot open the archive {path}: {exc}") from None
        if db.get(_META + b"format") is None:
            if payload_format not in PAYLOAD_FORMATS:
                db.close()
                raise BadArchiveInput(f"payload_format must be one of {PAYLOAD_FORMATS}")
            wopt = WriteOptions()
            wopt.sync = True
            db.put(
                _META + b"format",
                orjson.dumps(
                    {
                        "layout": 1,
                        "bucket_seconds": int(bucket_seconds),
                        "payload_format": payload_format,
                    }
                ),
                wopt,
            )
        return cls(db, path, readonly=False, sync=sync)

    @classmethod
    def open_secondary(cls, path: Path | str, secondary_path: Path | str) -> ArchiveStore:
        """Open a read-only secondary instance (any process, any number of them).

        ``secondary_path`` is a private directory for this instance's info log
        (one per process). Call :meth:`catch_up` to see the primary's newer writes.
        """
        path, secondary_path = Path(path), Path(secondary_path)
        if not (path / "CURRENT").exists():
            raise ArchiveError(f"{path} is not an archive (no RocksDB CURRENT file)")
        secondary_path.mkdir(parents=True, exist_ok=True)
        try:
            db = Rdict(
                str(path),
                cls._options(False),
                access_type=AccessType.secondary(str(secondary_path)),
            )
        except Exception as exc:
            raise ArchiveError(f"cannot open the archive {path} as a secondary: {exc}") from None
        return cls(db, path, readonly=True, sync=False)

    def catch_up(self) -> None:
        """Secondary only: read the primary's newer writes."""
        if self.readonly:
            self._db.try_catch_up_with_primary()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with self._lock:
                if not self.readonly:
                    self._db.flush_wal(True)
                self._db.close()

    def __enter__(self) -> ArchiveStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- low-level

    def _need_primary(self) -> None:
        if self.readonly:
            raise ArchiveReadOnly(
                "this archive handle is a read-only secondary; send writes to the retention "
                "worker (or open the archive read-write when no worker runs)"
            )

    def _write(self, batch: _Batch) -> None:
        if batch.deleted:
            total = self._get_u64(_META + b"deleted_keys") + batch.deleted
            batch.put(_META + b"deleted_keys", _U64.pack(total))
        for key, ledger in batch.ledgers.items():
            batch.put(key, orjson.dumps(ledger))
        if batch.df:
            keys = [_TERMSTAT + p + _SEP + t.encode() for (p, t) in batch.df]
            current = self._db.get(keys)
            for key, raw, delta in zip(keys, current, batch.df.values(), strict=True):
                value = (_U64.unpack(raw)[0] if raw else 0) + delta
                if value > 0:
                    batch.put(key, _U64.pack(value))
                elif raw is not None:
                    batch.wb.delete(key)
        for project, (dv, dl) in batch.corpus.items():
            stats = self.corpus_stats_raw(project)
            batch.put(
                _CORPUS + project,
                orjson.dumps({"versions": stats[0] + dv, "length": stats[1] + dl}),
            )
        if len(batch.wb):
            self._db.write(batch.wb, self._wopt)

    def _get_json(self, key: bytes) -> Any:
        raw = self._db.get(key)
        return None if raw is None else orjson.loads(raw)

    def _get_u64(self, key: bytes) -> int:
        raw = self._db.get(key)
        return _U64.unpack(raw)[0] if raw else 0

    def _scan(
        self,
        start: bytes,
        end: bytes | None,
        *,
        fill_cache: bool = True,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Keys in ``[start, end)`` in order (``end`` None: to the end of the store)."""
        ropt = ReadOptions()
        if end is not None:
            ropt.set_iterate_upper_bound(end)
        if not fill_cache:
            ropt.fill_cache(False)
        it = self._db.iter(ropt)
        it.seek(start)
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def _prefix(self, prefix: bytes, **kw: Any) -> Iterator[tuple[bytes, bytes]]:
        return self._scan(prefix, _prefix_end(prefix), **kw)

    def _ledger(self, doc: bytes, batch: _Batch | None = None) -> dict[str, Any] | None:
        key = _DOC + doc
        if batch is not None and key in batch.ledgers:
            return batch.ledgers[key]
        return self._get_json(key)

    def _expiry_key(self, expires_at: float, cls: str, doc: bytes, ver: int) -> bytes:
        bucket = int(expires_at // self.bucket_seconds)
        return _EXPIRY + _U64.pack(max(0, bucket)) + bytes([_CLASS_CODE[cls]]) + _dv(doc, ver)

    # ---- payload encoding

    @staticmethod
    def encode_payload(content: str, meta: dict[str, Any] | None, fmt: int) -> bytes:
        record = orjson.dumps({"content": content, "meta": meta or {}})
        frame = _compressor(fmt).compress(record)
        if fmt == 1:
            return frame
        return b"\x02" + _U32.pack(zlib.crc32(frame)) + frame

    @staticmethod
    def decode_payload(raw: bytes) -> dict[str, Any]:
        """``{"content": str, "meta": dict}`` from either payload format."""
        if raw[:1] == b"\x02":
            frame = raw[5:]
            if zlib.crc32(frame) != _U32.unpack(raw[1:5])[0]:
                raise ArchiveError("archive payload checksum mismatch (corrupt record)")
        else:
            frame = raw
        return orjson.loads(_decompressor().decompress(frame))

    @staticmethod
    def payload_format_of(raw: bytes) -> int:
        return 2 if raw[:1] == b"\x02" else 1

    # ---- reading

    def _info(self, doc_id: str, ledger: dict[str, Any], ver: int, pinned: bool) -> VersionInfo:
        v = ledger["versions"][ver - 1]
        return VersionInfo(
            doc_id=doc_id,
            version=ver,
            project=ledger["project"],
            cls=ledger["class"],
            session=ledger.get("session"),
            status=v["status"],
            created_at=v["created_at"],
            expires_at=v["expires_at"],
            generation=v["gen"],
            override=v.get("override", False),
            length=v["len"],
            size=v["size"],
            sha256=v["sha256"],
            purged=v.get("purged", False),
            retired_at=v.get("retired_at"),
            current_version=ledger["current"],
            pinned=pinned,
            forgotten=v.get("forgotten", False),
        )

    def version_info(self, locator: str) -> VersionInfo:
        """Ledger metadata of one version; raises :class:`LocatorNotFound`."""
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        ledger = self._ledger(doc)
        if ledger is None or ver > len(ledger["versions"]):
            raise LocatorNotFound(f"no archived version {locator}")
        return self._info(doc_id, ledger, ver, (_PIN + doc) in self._db)

    def versions(self, doc_id: str) -> list[VersionInfo]:
        """Every version of a document, oldest first; raises :class:`LocatorNotFound`."""
        doc = _check_id("document id", doc_id)
        ledger = self._ledger(doc)
        if ledger is None:
            raise LocatorNotFound(f"no archived document {doc_id}")
        pinned = (_PIN + doc) in self._db
        return [self._info(doc_id, ledger, i + 1, pinned) for i in range(len(ledger["versions"]))]

    def get(self, locator: str) -> dict[str, Any]:
        """What a locator holds now.

        Returns ``{"status": "live"|"superseded"|"expired", "locator", "doc_id",
        "version", "project", "class", "session", "created_at" (ISO)}`` plus
        ``"content"`` and ``"meta"`` only when live, ``"expired_at"`` when expired
        and ``"superseded_at"``/``"superseded_by"`` when superseded. A retired
        locator never answers with a newer version's content. Raises
        :class:`LocatorNotFound` for an unknown document or version and
        :class:`BadLocator` for a malformed one.
        """
        info = self.version_info(locator)
        out: dict[str, Any] = {
            "status": info.status,
            "locator": info.locator,
            "doc_id": info.doc_id,
            "version": info.version,
            "project": info.project,
            "class": info.cls,
            "session": info.session,
            "created_at": utc_iso(info.created_at),
        }
        if info.status == "live":
            raw = self._db.get(_PAYLOAD + _dv(info.doc_id.encode(), info.version))
            if raw is None:  # cannot happen for a live version; never invent content
                raise ArchiveError(f"live version {locator} has no payload (corrupt archive)")
            record = self.decode_payload(raw)
            out["content"] = record["content"]
            out["meta"] = record.get("meta") or {}
            out["expires_at"] = utc_iso(info.expires_at)
            out["pinned"] = info.pinned
        elif info.status == "expired":
            out["expired_at"] = utc_iso(info.retired_at)
            if info.forgotten:
                out["forgotten"] = True
        else:
            out["superseded_at"] = utc_iso(info.retired_at)
            out["superseded_by"] = make_locator(info.doc_id, info.version + 1)
        return out

    def documents(
        self, *, project: str | None = None, after: str | None = None, limit: int = 1000
    ) -> list[VersionInfo]:
        """Current version of each document in doc-id order (``after`` pages on)."""
        start = _DOC + (after.encode() + _SEP if after else b"")
        out: list[VersionInfo] = []
        for key, raw in self._scan(start, _prefix_end(_DOC)):
            ledger = orjson.loads(raw)
            if project is not None and ledger["project"] != project:
                continue
            doc = key[1:]
            out.append(
                self._info(doc.decode(), ledger, ledger["current"], (_PIN + doc) in self._db)
            )
            if len(out) >= limit:
                break
        return out

    def counts(self) -> dict[str, Any]:
        """Version counts by status and class, live bytes, pins (a full ledger scan)."""
        by_status = Counter[str]()
        by_class = Counter[str]()
        docs = live_bytes = pending = 0
        for _, raw in self._prefix(_DOC, fill_cache=False):
            ledger = orjson.loads(raw)
            docs += 1
            for v in ledger["versions"]:
                by_status[v["status"]] += 1
                if v["status"] == "live":
                    by_class[ledger["class"]] += 1
                    live_bytes += v["size"]
        pending = sum(1 for _ in self._prefix(_PURGE, fill_cache=False))
        pins = sum(1 for _ in self._prefix(_PIN, fill_cache=False))
        return {
            "documents": docs,
            "versions": {s: by_status.get(s, 0) for s in STATUSES},
            "live_by_class": {c: by_class.get(c, 0) for c in CLASSES},
            "live_payload_bytes": live_bytes,
            "pending_purge": pending,
            "pins": pins,
        }

    # ---- appending

    def append(
        self,
        project: str,
        cls: str,
        content: str,
        *,
        created_at: float,
        expires_at: float | None,
        doc_id: str | None = None,
        session: str | None = None,
        meta: dict[str, Any] | None = None,
        request_id: str | None = None,
        now: float | None = None,
    ) -> AppendResult:
        """Archive one version (one WriteBatch). See :meth:`append_many`."""
        item = NewVersion(
            project, cls, content, created_at, expires_at, doc_id, session, meta, request_id
        )
        return self.append_many([item], now=now)[0]

    def append_many(
        self, items: Sequence[NewVersion], *, now: float | None = None
    ) -> list[AppendResult]:
        """Archive several versions in one WriteBatch (all or nothing).

        ``doc_id`` None creates a new document with a generated id; an existing
        ``doc_id`` gets the next version, which supersedes the current one if
        it is live (its project and class must match). ``created_at`` is the
        source's creation time (retention counts from it); ``expires_at`` is
        the deadline the policy computed from it (``None``: never). A
        ``request_id`` already applied returns its first answer with
        ``created=False`` and writes nothing (idempotent jobs).

        Raises :class:`BadArchiveInput`, :class:`ForeignProject`, and whatever
        :attr:`admission` raises (:class:`DiskLow`).
        """
        self._need_primary()
        now = time.time() if now is None else now
        prepared = []
        for it in items:
            project = _check_project(it.project)
            _check_class(it.cls)
            if not isinstance(it.content, str):
                raise BadArchiveInput("content must be a string")
            if it.doc_id is not None:
                _check_id("document id", it.doc_id)
            if it.session is not None and not isinstance(it.session, str):
                raise BadArchiveInput("session must be a string")
            if it.request_id is not None:
                _check_id("request id", it.request_id)
            check_epoch("created_at", it.created_at)
            if it.expires_at is not None:
                check_epoch("expires_at", it.expires_at)
            payload = self.encode_payload(it.content, it.meta, self.payload_format)
            prepared.append((it, project, payload))
        if self.admission is not None:
            self.admission(sum(len(p) for _, _, p in prepared))
        with self._lock:
            batch = _Batch()
            results: list[AppendResult] = []
            seen_requests: dict[str, AppendResult] = {}
            for it, project, payload in prepared:
                if it.request_id is not None:
                    if it.request_id in seen_requests:
                        results.append(seen_requests[it.request_id])
                        continue
                    prior = self._db.get(_REQUEST + it.request_id.encode())
                    if prior is not None:
                        doc_id, ver = parse_locator(prior.decode())
                        results.append(AppendResult(prior.decode(), doc_id, ver, False, None))
                        continue
                res = self._append_one(batch, it, project, payload, now)
                if it.request_id is not None:
                    seen_requests[it.request_id] = res
                results.append(res)
            self._write(batch)
            return results

    def _append_one(
        self, batch: _Batch, it: NewVersion, project: bytes, payload: bytes, now: float
    ) -> AppendResult:
        doc_id = it.doc_id
        ledger = None
        if doc_id is not None:
            ledger = self._ledger(doc_id.encode(), batch)
        else:
            while True:
                doc_id = f"{_ms(now):012x}{secrets.token_hex(6)}"
                if self._ledger(doc_id.encode(), batch) is None:
                    break
        doc = doc_id.encode()
        superseded = None
        if ledger is None:
            ledger = {
                "project": it.project,
                "class": it.cls,
                "session": it.session,
                "created_at": it.created_at,
                "current": 0,
                "versions": [],
            }
        else:
            if ledger["project"] != it.project:
                raise ForeignProject(
                    f"document {doc_id} belongs to project {ledger['project']!r}, "
                    f"not {it.project!r}"
                )
            if ledger["class"] != it.cls:
                raise BadArchiveInput(
                    f"document {doc_id} has class {ledger['class']!r}; a new version "
                    f"cannot change it to {it.cls!r}"
                )
            cur = ledger["current"]
            if cur and ledger["versions"][cur - 1]["status"] == "live":
                self._retire(batch, doc, ledger, cur, "superseded", now)
                superseded = make_locator(doc_id, cur)
        ver = len(ledger["versions"]) + 1
        counts, length = _term_counts(it.content)
        pinned = (_PIN + doc) in self._db
        ledger["versions"].append(
            {
                "status": "live",
                "created_at": it.created_at,
                "expires_at": it.expires_at,
                "gen": 1,
                "override": False,
                "len": length,
                "size": len(payload),
                "sha256": hashlib.sha256(it.content.encode()).hexdigest(),
                "request_id": it.request_id,
            }
        )
        ledger["current"] = ver
        batch.ledgers[_DOC + doc] = ledger
        dv = _dv(doc, ver)
        batch.put(_PAYLOAD + dv, payload)
        for term, tf in counts.items():
            batch.put(_POSTING + project + _SEP + term.encode() + _SEP + dv, _U32.pack(tf))
            batch.df[(project, term)] += 1
        c = batch.corpus.setdefault(project, [0, 0])
        c[0] += 1
        c[1] += length
        if it.expires_at is not None and not pinned:
            batch.put(self._expiry_key(it.expires_at, it.cls, doc, ver), _U32.pack(1))
        locator = make_locator(doc_id, ver)
        if it.request_id is not None:
            batch.put(_REQUEST + it.request_id.encode(), locator.encode())
        return AppendResult(locator, doc_id, ver, True, superseded)

    def _retire(
        self, batch: _Batch, doc: bytes, ledger: dict[str, Any], ver: int, status: str, now: float
    ) -> None:
        """Tombstone a live version inside ``batch``: out of search and stats, queued for purge."""
        v = ledger["versions"][ver - 1]
        if v["status"] != "live":
            return
        dv = _dv(doc, ver)
        raw = self._db.get(_PAYLOAD + dv)
        project = ledger["project"].encode()
        if raw is not None:
            counts, _ = _term_counts(self.decode_payload(raw)["content"])
            for term in counts:
                batch.df[(project, term)] -= 1
        c = batch.corpus.setdefault(project, [0, 0])
        c[0] -= 1
        c[1] -= v["len"]
        if v["expires_at"] is not None:
            batch.wb.delete(self._expiry_key(v["expires_at"], ledger["class"], doc, ver))
        v["status"] = status
        v["retired_at"] = now
        batch.put(_PURGE + dv, b"")
        batch.ledgers[_DOC + doc] = ledger

    # ---- expiry index

    def expiry_entries(
        self,
        *,
        until: float | None = None,
        since: float | None = None,
        after: bytes | None = None,
        classes: Iterable[str] | None = None,
        limit: int = 256,
    ) -> list[ExpiryEntry]:
        """Expiry entries in time order, at most ``limit``.

        ``until``: stop after the bucket holding this time (a due scan stops
        at the first future bucket; entries of the last bucket may still lie
        a little in the future: the wave checks each deadline). ``since``:
        start at this time's bucket. ``after``: resume after this entry key
        (a cursor). ``classes``: only these classes.
        """
        start = _EXPIRY
        if since is not None:
            start = _EXPIRY + _U64.pack(max(0, int(since // self.bucket_seconds)))
        if after is not None and after > start:
            start = after + b"\x00"
        end = _prefix_end(_EXPIRY)
        if until is not None:
            end = _EXPIRY + _U64.pack(max(0, int(until // self.bucket_seconds)) + 1)
        wanted = None if classes is None else {_CLASS_CODE[c] for c in classes}
        out: list[ExpiryEntry] = []
        for key, raw in self._scan(start, end, fill_cache=False):
            code = key[9]
            if wanted is not None and code not in wanted:
                continue
            doc_id, ver = _split_dv(key[10:])
            out.append(
                ExpiryEntry(
                    key=key,
                    bucket_start=float(_U64.unpack(key[1:9])[0] * self.bucket_seconds),
                    cls=_CODE_CLASS[code],
                    doc_id=doc_id,
                    version=ver,
                    generation=_U32.unpack(raw)[0],
                )
            )
            if len(out) >= limit:
                break
        return out

    def retire_expired(self, entry: ExpiryEntry, *, now: float | None = None) -> str:
        """Check and tombstone one due version, atomically with respect to other requests.

        Returns the outcome: ``"expired"`` (tombstoned now; queued for purge),
        ``"stale"`` (the entry names an old generation or a retired version:
        the entry was dropped), ``"not_due"`` (deadline later than ``now``),
        ``"pinned"``, ``"leased"`` (an active-context or retrieval lease
        protects the version). Only ``"expired"`` changes the version.
        """
        self._need_primary()
        now = time.time() if now is None else now
        doc = entry.doc_id.encode()
        with self._lock:
            ledger = self._ledger(doc)
            v = None
            if ledger is not None and entry.version <= len(ledger["versions"]):
                v = ledger["versions"][entry.version - 1]
            if v is None or v["gen"] != entry.generation or v["status"] != "live":
                batch = _Batch()
                batch.wb.delete(entry.key)
                self._write(batch)
                return "stale"
            if v["expires_at"] is None or v["expires_at"] > now:
                return "not_due"
            if (_PIN + doc) in self._db:
                return "pinned"
            if self._protected_by_lease(doc, entry.version, now):
                return "leased"
            batch = _Batch()
            self._retire(batch, doc, ledger, entry.version, "expired", now)
            batch.wb.delete(entry.key)
            self._write(batch)
            return "expired"

    def forget(self, doc_ids: Sequence[str], *, now: float | None = None) -> list[str]:
        """Tombstone every live version of these documents now, pinned or leased
        (the user's right to delete), and drop their pins; one batch.

        The versions read ``expired`` (with ``forgotten``) from then on and are
        queued for purge like any expired version. Returns the locators retired.
        """
        self._need_primary()
        now = time.time() if now is None else now
        with self._lock:
            batch = _Batch()
            retired = []
            for doc_id in doc_ids:
                doc = _check_id("document id", doc_id)
                ledger = self._ledger(doc, batch)
                if ledger is None:
                    raise LocatorNotFound(f"no archived document {doc_id}")
                for ver, v in enumerate(ledger["versions"], 1):
                    if v["status"] == "live":
                        self._retire(batch, doc, ledger, ver, "expired", now)
                        v["forgotten"] = True
                        retired.append(make_locator(doc_id, ver))
                if (_PIN + doc) in self._db:
                    batch.delete(_PIN + doc)
            self._write(batch)
            return retired

    def session_documents(self, project: str, session: str) -> list[str]:
        """Ids of ``project``'s documents of ``session`` (a full ledger scan, in pages)."""
        found, after = [], None
        while page := self.documents(project=project, after=after):
            found += [info.doc_id for info in page if info.session == session]
            after = page[-1].doc_id
        return found

    def set_expiry(
        self,
        locator: str,
        expires_at: float | None,
        *,
        override: bool = True,
        expected_generation: int | None = None,
    ) -> int | None:
        """Give a live version a new deadline (``None``: never) under a new generation.

        ``override`` marks the deadline as explicit (renewal, disk-low
        shortening): waves honour it instead of re-deriving one from the
        class policy. With ``expected_generation`` the change applies only if
        the version is still at that generation. Returns the new generation,
        or None when nothing changed (not live, or generation moved on).
        """
        self._need_primary()
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        with self._lock:
            ledger = self._ledger(doc)
            if ledger is None or ver > len(ledger["versions"]):
                raise LocatorNotFound(f"no archived version {locator}")
            v = ledger["versions"][ver - 1]
            if v["status"] != "live":
                return None
            if expected_generation is not None and v["gen"] != expected_generation:
                return None
            batch = _Batch()
            if v["expires_at"] is not None:
                batch.wb.delete(self._expiry_key(v["expires_at"], ledger["class"], doc, ver))
            v["gen"] += 1
            v["expires_at"] = expires_at
            v["override"] = override
            if expires_at is not None and (_PIN + doc) not in self._db:
                batch.put(
                    self._expiry_key(expires_at, ledger["class"], doc, ver), _U32.pack(v["gen"])
                )
            batch.ledgers[_DOC + doc] = ledger
            self._write(batch)
            return v["gen"]

    def purge_pending(self, *, max_keys: int = 4096) -> PurgeReport:
        """Delete postings and payloads of tombstoned versions, at most ``max_keys`` keys.

        Each WriteBatch deletes at most ``max_keys`` keys; a version's payload
        goes last, with its purge-queue entry, so a crash anywhere leaves
        work this call finishes later. Metadata stays in the ledger.
        """
        self._need_primary()
        budget = max(2, max_keys)
        versions = deleted = 0
        with self._lock:
            for key, resume in list(self._prefix(_PURGE)):
                if budget <= 0:
                    return PurgeReport(versions, deleted, True)
                dv = key[1:]
                doc_id, ver = _split_dv(dv)
                doc = doc_id.encode()
                ledger = self._ledger(doc)
                project = ledger["project"].encode() if ledger else b""
                raw = self._db.get(_PAYLOAD + dv)
                terms: list[bytes] = []
                if raw is not None:
                    counts, _ = _term_counts(self.decode_payload(raw)["content"])
                    terms = sorted(t.encode() for t in counts)
                    if resume:
                        terms = [t for t in terms if t > resume]
                # Postings first, in term order, each chunk with its resume point...
                while len(terms) >= budget:
                    chunk, terms = terms[:budget], terms[budget:]
                    batch = _Batch()
                    for term in chunk:
                        batch.delete(_POSTING + project + _SEP + term + _SEP + dv)
                    batch.put(key, chunk[-1])
                    killpoint("archive_purge_chunk")
                    self._write(batch)
                    deleted += len(chunk)
                    budget -= len(chunk)
                    if budget <= 0:
                        return PurgeReport(versions, deleted, True)
                # ...then the last postings, the payload and the queue entry together.
                final = _Batch()
                for term in terms:
                    final.delete(_POSTING + project + _SEP + term + _SEP + dv)
                if raw is not None:
                    final.delete(_PAYLOAD + dv)
                final.wb.delete(key)
                if ledger is not None:
                    v = ledger["versions"][ver - 1]
                    v["purged"] = True  # its request record stays: a redo answers "expired"
                    final.ledgers[_DOC + doc] = ledger
                killpoint("archive_purge_final")
                self._write(final)
                deleted += final.deleted
                budget -= final.deleted
                versions += 1
        return PurgeReport(versions, deleted, False)

    def request_locator(self, request_id: str) -> str | None:
        """The locator an applied append request created, or None if never applied."""
        raw = self._db.get(_REQUEST + _check_id("request id", request_id))
        return None if raw is None else raw.decode()

    def pending_purge(self) -> int:
        """How many tombstoned versions still have canonical records."""
        return sum(1 for _ in self._prefix(_PURGE, fill_cache=False))

    # ---- pins

    def pin(self, locator: str, *, now: float | None = None, note: str | None = None) -> dict:
        """Pin the document of a live version until :meth:`unpin` (idempotent).

        The document's expiry entry is withdrawn while pinned. Raises
        :class:`LocatorNotFound` or :class:`NotLive` (superseded/expired version).
        """
        self._need_primary()
        now = time.time() if now is None else now
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        with self._lock:
            ledger = self._ledger(doc)
            if ledger is None or ver > len(ledger["versions"]):
                raise LocatorNotFound(f"no archived version {locator}")
            v = ledger["versions"][ver - 1]
            if v["status"] != "live":
                raise NotLive(f"{locator} is {v['status']}; pin a live version")
            existing = self._get_json(_PIN + doc)
            if existing is not None:
                return existing
            record = {"doc_id": doc_id, "locator": locator, "pinned_at": now, "note": note}
            batch = _Batch()
            batch.put(_PIN + doc, orjson.dumps(record))
            cur = ledger["current"]
            cv = ledger["versions"][cur - 1]
            if cv["status"] == "live" and cv["expires_at"] is not None:
                batch.wb.delete(self._expiry_key(cv["expires_at"], ledger["class"], doc, cur))
                cv["gen"] += 1
                batch.ledgers[_DOC + doc] = ledger
            self._write(batch)
            return record

    def unpin(self, target: str) -> bool:
        """Remove the pin of a document (``target``: a locator or a document id).

        The live version goes back into the expiry index at its deadline
        (which may be due already). Returns False if it was not pinned.
        """
        self._need_primary()
        doc_id = parse_locator(target)[0] if "@" in target else target
        doc = _check_id("document id", doc_id)
        with self._lock:
            if (_PIN + doc) not in self._db:
                return False
            batch = _Batch()
            batch.wb.delete(_PIN + doc)
            ledger = self._ledger(doc)
            if ledger is not None:
                cur = ledger["current"]
                cv = ledger["versions"][cur - 1]
                if cv["status"] == "live" and cv["expires_at"] is not None:
                    cv["gen"] += 1
                    batch.put(
                        self._expiry_key(cv["expires_at"], ledger["class"], doc, cur),
                        _U32.pack(cv["gen"]),
                    )
                    batch.ledgers[_DOC + doc] = ledger
            self._write(batch)
            return True

    def pins(self, *, limit: int = 10_000) -> list[dict]:
        out = []
        for _, raw in self._prefix(_PIN):
            out.append(orjson.loads(raw))
            if len(out) >= limit:
                break
        return out

    def is_pinned(self, doc_id: str) -> bool:
        return (_PIN + doc_id.encode()) in self._db

    # ---- leases

    def _owner(self, client: bytes) -> dict[str, Any] | None:
        return self._get_json(_OWNER + client)

    def _protected_by_lease(self, doc: bytes, ver: int, now: float) -> str | None:
        """``"retrieval"``, ``"lease:<client>"`` or None. Streams reverse references
        uncached and returns at the first live owner."""
        dv = _dv(doc, ver)
        raw = self._db.get(_RLEASE + dv)
        if raw is not None and _U64.unpack(raw)[0] > _ms(now):
            return "retrieval"
        prefix = _REV + dv
        for key, epoch_raw in self._prefix(prefix, fill_cache=False):
            client = key[len(prefix) :]
            owner = self._owner(client)
            if (
                owner is not None
                and owner["epoch"] == _U32.unpack(epoch_raw)[0]
                and owner["expires_at"] > now
            ):
                return "lease:" + client.decode()
        return None

    def protection(self, locator: str, *, now: float | None = None) -> str | None:
        """What protects a version now: ``"pinned"``, ``"retrieval"``,
        ``"lease:<client>"`` or None."""
        now = time.time() if now is None else now
        doc_id, ver = parse_locator(locator)
        doc = doc_id.encode()
        if (_PIN + doc) in self._db:
            return "pinned"
        return self._protected_by_lease(doc, ver, now)

    def acquire_leases(
        self,
        client: str,
        project: str,
        locators: Sequence[str],
        *,
        ttl: float,
        now: float | None = None,
    ) -> LeaseGrant:
        """Protect exact versions for ``client`` (an active-context lease), all or nothing.

        At most :data:`MAX_LEASE_TARGETS` locators. Every target must exist,
        belong to ``project``, and be live and not past its deadline (unless
        its document is pinned); otherwise :class:`LeaseRejected` names each
        bad target and its reason (``malformed``, ``missing``,
        ``foreign_project``, ``superseded``, ``expired``) and nothing is
        written. On success the client's owner record (created, or extended
        to ``now + ttl``) and every reference are published in one batch.
        A client whose lease had expired starts a new epoch: its old
        references never protect anything again.
        """
        self._need_primary()
        now = time.time() if now is None else now
        cl = _check_id("client id", client)
        _check_project(project)
        if not locators:
            raise BadArchiveInput("a lease request names at least one locator")
        if len(locators) > MAX_LEASE_TARGETS:
            raise BadArchiveInput(
                f"a lease request may name at most {MAX_LEASE_TARGETS} versions, "
                f"got {len(locators)}; split it"
            )
        if not ttl > 0:
            raise BadArchiveInput("lease ttl must be positive seconds")
        with self._lock:
            rejected: dict[str, str] = {}
            targets: list[tuple[bytes, int, str]] = []
            for loc in dict.fromkeys(locators):
                try:
                    doc_id, ver = parse_locator(loc)
                except BadLocator:
                    rejected[str(loc)] = "malformed"
                    continue
                doc = doc_id.encode()
                ledger = self._ledger(doc)
                if ledger is None or ver > len(ledger["versions"]):
                    rejected[loc] = "missing"
                    continue
                if ledger["project"] != project:
                    rejected[loc] = "foreign_project"
                    continue
                v = ledger["versions"][ver - 1]
                if v["status"] != "live":
                    rejected[loc] = v["status"]
                    continue
                if (
                    v["expires_at"] is not None
                    and v["expires_at"] <= now
                    and (_PIN + doc) not in self._db
                ):
                    rejected[loc] = "expired"
                    continue
                targets.append((doc, ver, loc))
            if rejected:
                named = ", ".join(f"{loc} ({why})" for loc, why in list(rejected.items())[:10])
                more = f" and {len(rejected) - 10} more" if len(rejected) > 10 else ""
                raise LeaseRejected(
                    f"lease request rejected whole, nothing leased: {len(rejected)} of "
                    f"{len(locators)} targets are not leasable: {named}{more}",
                    rejected,
                )
            owner = self._owner(cl)
            if owner is not None and owner["expires_at"] > now:
                epoch = owner["epoch"]
            else:
                epoch = (owner["epoch"] + 1) if owner else 1
            expires = max(
                now + ttl, owner["expires_at"] if owner and owner["epoch"] == epoch else 0
            )
            batch = _Batch()
            self._put_owner(batch, cl, epoch, expires, ttl, now)
            ep = _U32.pack(epoch)
            for doc, ver, _ in targets:
                dv = _dv(doc, ver)
                batch.put(_FWD + cl + _SEP + dv, ep)
                batch.put(_REV + dv + cl, ep)
            self._write(batch)
            return LeaseGrant(client, epoch, expires, tuple(t[2] for t in targets))

    def _put_owner(
        self, batch: _Batch, cl: bytes, epoch: int, expires: float, ttl: float, now: float
    ) -> None:
        batch.put(
            _OWNER + cl,
            orjson.dumps({"epoch": epoch, "expires_at": expires, "ttl": ttl, "renewed_at": now}),
        )
        batch.put(_OWNER_EXP + _U64.pack(_ms(expires)) + cl, _U32.pack(epoch))

    def renew_leases(
        self, client: str, *, ttl: float | None = None, now: float | None = None
    ) -> LeaseGrant:
        """Heartbeat: extend the client's lease to ``now + ttl`` (default: its last ttl).

        Raises :class:`LeaseNotFound` (no lease) or :class:`LeaseExpired` (it
        lapsed: the protections are gone; acquire again).
        """
        self._need_primary()
        now = time.time() if now is None else now
        cl = _check_id("client id", client)
        with self._lock:
            owner = self._owner(cl)
            if owner is None:
                raise LeaseNotFound(f"client {client!r} holds no lease; acquire one")
            if owner["expires_at"] <= now:
                raise LeaseExpired(
                    f"client {client!r}'s lease expired at {utc_iso(owner['expires_at'])}; "
                    "its protections are gone: acquire the versions again"
                )
            ttl = owner["ttl"] if ttl is None else ttl
            expires = max(owner["expires_at"], now + ttl)
            batch = _Batch()
            self._put_owner(batch, cl, owner["epoch"], expires, ttl, now)
            self._write(batch)
            return LeaseGrant(client, owner["epoch"], expires, ())

    def release_leases(self, client: str, locators: Sequence[str] | None = None) -> int:
        """Release this client's protection of ``locators`` (None: all of them).

        Never touches another client's references. Returns how many
        references were removed.
        """
        self._need_primary()
        cl = _check_id("client id", client)
        with self._lock:
            batch = _Batch()
            n = 0
            if locators is None:
                for key, _ in self._prefix(_FWD + cl + _SEP):
                    dv = key[len(cl) + 2 :]
                    batch.delete(key)
                    batch.delete(_REV + dv + cl)
                    n += 1
                owner = self._owner(cl)
                if owner is not None:
                    batch.delete(_OWNER + cl)
                    batch.delete(_OWNER_EXP + _U64.pack(_ms(owner["expires_at"])) + cl)
            else:
                for loc in dict.fromkeys(locators):
                    doc_id, ver = parse_locator(loc)
                    dv = _dv(doc_id.encode(), ver)
                    if (_FWD + cl + _SEP + dv) in self._db:
                        batch.delete(_FWD + cl + _SEP + dv)
                        batch.delete(_REV + dv + cl)
                        n += 1
            self._write(batch)
            return n

    def client_lease(self, client: str, *, now: float | None = None) -> dict[str, Any] | None:
        """``{"client", "epoch", "expires_at" (ISO), "live", "locators"}`` or None."""
        now = time.time() if now is None else now
        cl = _check_id("client id", client)
        owner = self._owner(cl)
        if owner is None:
            return None
        locs = []
        for key, ep in self._prefix(_FWD + cl + _SEP):
            if _U32.unpack(ep)[0] == owner["epoch"]:
                locs.append(make_locator(*_split_dv(key[len(cl) + 2 :])))
        return {
            "client": client,
            "epoch": owner["epoch"],
            "expires_at": utc_iso(owner["expires_at"]),
            "live": owner["expires_at"] > now,
            "locators": locs,
        }

    def cleanup_expired_leases(self, *, now: float | None = None, limit: int = 1000) -> int:
        """Remove references of lapsed client leases, at most ``limit`` protections.

        Returns how many records were removed; call again (next tick) while
        it returns ``limit``.
        """
        self._need_primary()
        now = time.time() if now is None else now
        budget = limit
        with self._lock:
            end = _OWNER_EXP + _U64.pack(_ms(now) + 1)
            for key, _ in list(self._scan(_OWNER_EXP, end)):
                if budget <= 0:
                    break
                cl = key[9:]
                owner = self._owner(cl)
                batch = _Batch()
                if owner is None or _ms(owner["expires_at"]) != _U64.unpack(key[1:9])[0]:
                    batch.delete(key)  # stale index entry (renewed or released)
                    budget -= 1
                    self._write(batch)
                    continue
                if owner["expires_at"] > now:
                    continue
                refs = list(self._prefix(_FWD + cl + _SEP, fill_cache=False))
                take = refs[:budget]
                for fkey, _ in take:
                    batch.delete(fkey)
                    batch.delete(_REV + fkey[len(cl) + 2 :] + cl)
                budget -= len(take)
                if len(take) == len(refs):
                    batch.delete(key)
                    # keep a tombstone owner so a late heartbeat says expired, not unknown
                    batch.put(
                        _OWNER + cl,
                        orjson.dumps(
                            {
                                "epoch": owner["epoch"],
                                "expires_at": owner["expires_at"],
                                "ttl": owner["ttl"],
                                "renewed_at": owner.get("renewed_at"),
                                "lapsed": True,
                            }
                        ),
                    )
                self._write(batch)
        return limit - budget

    def take_retrieval_leases(
        self, locators: Iterable[str], *, seconds: float, now: float | None = None
    ) -> list[str]:
        """Protect the live ones of ``locators`` for ``seconds`` (searches call this).

        Returns the locators actually protected (live versions only).
        """
        self._need_primary()
        now = time.time() if now is None else now
        until = _ms(now + seconds)
        taken = []
        with self._lock:
            batch = _Batch()
            for loc in dict.fromkeys(locators):
                doc_id, ver = parse_locator(loc)
                ledger = self._ledger(doc_id.encode())
                if ledger is None or ver > len(ledger["versions"]):
                    continue
                if ledger["versions"][ver - 1]["status"] != "live":
                    continue
                dv = _dv(doc_id.encode(), ver)
                raw = self._db.get(_RLEASE + dv)
                if raw is None or _U64.unpack(raw)[0] < until:
                    batch.put(_RLEASE + dv, _U64.pack(until))
                    batch.put(_RLEASE_EXP + _U64.pack(until) + dv, b"")
                taken.append(loc)
            self._write(batch)
        return taken

    def cleanup_retrieval_leases(self, *, now: float | None = None, limit: int = 1000) -> int:
        """Drop lapsed retrieval leases (at most ``limit`` index entries)."""
        self._need_primary()
        now = time.time() if now is None else now
        n = 0
        with self._lock:
            batch = _Batch()
            for key, _ in self._scan(_RLEASE_EXP, _RLEASE_EXP + _U64.pack(_ms(now) + 1)):
                if n >= limit:
                    break
                dv = key[9:]
                raw = self._db.get(_RLEASE + dv)
                if raw is not None and _U64.unpack(raw)[0] <= _ms(now):
                    batch.delete(_RLEASE + dv)
                batch.delete(key)
                n += 1
            self._write(batch)
        return n

    # ---- access records

    def record_access(
        self,
        locators: Iterable[str],
        *,
        now: float | None = None,
        bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS,
    ) -> int:
        """Note that documents were read: at most one record per document per bucket.

        Never changes a deadline. Returns how many new records were written.
        """
        self._need_primary()
        now = time.time() if now is None else now
        bucket = _U64.pack(int(now // bucket_seconds))
        with self._lock:
            batch = _Batch()
            n = 0
            for doc_id in dict.fromkeys(parse_locator(loc)[0] for loc in locators):
                key = _ACCESS + bucket + doc_id.encode()
                if key not in self._db:
                    batch.put(key, b"")
                    n += 1
            self._write(batch)
            return n

    def access_buckets(self, doc_id: str, *, bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS):
        """Start times of the buckets in which ``doc_id`` was accessed (a full scan)."""
        doc = doc_id.encode()
        return [
            float(_U64.unpack(k[1:9])[0] * bucket_seconds)
            for k, _ in self._prefix(_ACCESS, fill_cache=False)
            if k[9:] == doc
        ]

    def cleanup_access_records(
        self,
        *,
        before: float,
        limit: int = 1000,
        bucket_seconds: int = DEFAULT_ACCESS_BUCKET_SECONDS,
    ) -> int:
        """Delete access records of buckets that start before ``before`` (at most ``limit``)."""
        self._need_primary()
        end = _ACCESS + _U64.pack(max(0, int(before // bucket_seconds)))
        with self._lock:
            batch = _Batch()
            n = 0
            for key, _ in self._scan(_ACCESS, end, fill_cache=False):
                if n >= limit:
                    break
                batch.delete(key)
                n += 1
            self._write(batch)
            return n

    # ---- search

    def corpus_stats_raw(self, project: bytes) -> tuple[int, int]:
        raw = self._get_json(_CORPUS + project)
        return (raw["versions"], raw["length"]) if raw else (0, 0)

    def projects(self) -> list[str]:
        """Every project that ever archived a version (one corpus record each), sorted."""
        return sorted(key[1:].decode() for key, _ in self._prefix(_CORPUS))

    def corpus_stats(self, project: str) -> CorpusStats:
        """Live versions and their total token count in ``project``."""
        return CorpusStats(*self.corpus_stats_raw(_check_project(project)))

    def term_stats(self, project: str, terms: Iterable[str]) -> dict[str, int]:
        """Document frequency (live versions holding the term) of each exact term."""
        p = _check_project(project)
        terms = list(dict.fromkeys(terms))
        raws = self._db.get([_TERMSTAT + p + _SEP + t.encode() for t in terms]) if terms else []
        return {t: (_U64.unpack(r)[0] if r else 0) for t, r in zip(terms, raws, strict=True)}

    def postings(self, project: str, term: str) -> Iterator[tuple[str, int]]:
        """``(locator, tf)`` of every posting of ``term`` (tombstoned versions included:
        filter with :meth:`version_info`, or use :meth:`search`)."""
        prefix = _POSTING + _check_project(project) + _SEP + term.encode() + _SEP
        for key, raw in self._prefix(prefix):
            yield make_locator(*_split_dv(key[len(prefix) :])), _U32.unpack(raw)[0]

    def search(
        self,
        project: str,
        query: str | Sequence[str],
        *,
        limit: int = 10,
        classes: Iterable[str] | None = None,
        session: str | None = None,
        created_after: dict[str, float | None] | None = None,
        max_postings_per_term: int = 50_000,
    ) -> list[Hit]:
        """Exact-term BM25 over live versions of ``project`` (tombstoned ones never appear).

        ``query`` is text (tokenized like payloads) or a list of terms.
        ``created_after`` maps a class to the oldest creation time it may have
        (automatic-recall horizons; a class missing from the map or mapped to
        None is not limited; a class mapped to ``float('inf')`` is excluded).
        Read-only: the caller takes retrieval leases on what it returns.
        """
        p = _check_project(project)
        terms = list(dict.fromkeys(tokenize(query) if isinstance(query, str) else query))
        if not terms:
            return []
        wanted = None if classes is None else set(classes)
        n_docs, total_len = self.corpus_stats_raw(p)
        avgdl = total_len / n_docs if n_docs else 1.0
        df = self.term_stats(project, terms)
        matched: dict[str, dict[str, int]] = {}
        for term in terms:
            for i, (loc, tf) in enumerate(self.postings(project, term)):
                if i >= max_postings_per_term:
                    break
                matched.setdefault(loc, {})[term] = tf
        ledgers: dict[str, dict[str, Any] | None] = {}
        hits: list[Hit] = []
        k1, b = 1.2, 0.75
        for loc, tfs in matched.items():
            doc_id, ver = parse_locator(loc)
            if doc_id not in ledgers:
                ledgers[doc_id] = self._ledger(doc_id.encode())
            ledger = ledgers[doc_id]
            if ledger is None:
                continue
            v = ledger["versions"][ver - 1]
            if v["status"] != "live":
                continue
            if wanted is not None and ledger["class"] not in wanted:
                continue
            if session is not None and ledger.get("session") != session:
                continue
            if created_after is not None:
                cutoff = created_after.get(ledger["class"])
                if cutoff is not None and v["created_at"] < cutoff:
                    continue
            score = 0.0
            dl = v["len"] or 1
            for term, tf in tfs.items():
                n = df.get(term, 0)
                idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            hits.append(
                Hit(
                    loc,
                    doc_id,
                    ver,
                    ledger["project"],
                    ledger["class"],
                    ledger.get("session"),
                    v["created_at"],
                    round(score, 6),
                    dict(tfs),
                    v["len"],
                )
            )
        hits.sort(key=lambda h: (-h.score, h.locator))
        return hits[:limit]

    def excerpt(self, locator: str, terms: Sequence[str], *, width: int = 240) -> str | None:
        """A verbatim window of a live version around its first matching term (None if
        not live)."""
        doc_id, ver = parse_locator(locator)
        ledger = self._ledger(doc_id.encode())
        if ledger is None or ledger["versions"][ver - 1]["status"] != "live":
            return None
        raw = self._db.get(_PAYLOAD + _dv(doc_id.encode(), ver))
        if raw is None:
            return None
        text = self.decode_payload(raw)["content"]
        low = text.lower()
        pos = min((i for t in terms if (i := low.find(t.lower())) >= 0), default=0)
        start = max(0, pos - width // 3)
        return text[start : start + width]

    # ---- derived rebuild

    def _derived_from_payloads(self) -> tuple[dict[bytes, bytes], dict[bytes, bytes]]:
        postings: dict[bytes, bytes] = {}
        derived: dict[bytes, bytes] = {}
        df: Counter[bytes] = Counter()
        corpus: dict[bytes, list[int]] = {}
        for key, raw in self._prefix(_DOC, fill_cache=False):
            doc = key[1:]
            ledger = orjson.loads(raw)
            project = ledger["project"].encode()
            for i, v in enumerate(ledger["versions"]):
                if v["status"] != "live":
                    continue
                dv = _dv(doc, i + 1)
                content = self.decode_payload(self._db[_PAYLOAD + dv])["content"]
                counts, length = _term_counts(content)
                for term, tf in counts.items():
                    postings[_POSTING + project + _SEP + term.encode() + _SEP + dv] = _U32.pack(tf)
                    df[_TERMSTAT + project + _SEP + term.encode()] += 1
                c = corpus.setdefault(project, [0, 0])
                c[0] += 1
                c[1] += length
        for k, n in df.items():
            derived[k] = _U64.pack(n)
        for p, (nv, nl) in corpus.items():
            derived[_CORPUS + p] = orjson.dumps({"versions": nv, "length": nl})
        return postings, derived

    def verify_postings(self) -> dict[str, Any]:
        """Compare live postings and statistics with a rebuild from canonical payloads.

        Postings of tombstoned versions not yet purged are ignored. Returns
        ``{"ok": bool, "missing": n, "extra": n, "stats_mismatch": n}``.
        """
        want_p, want_d = self._derived_from_payloads()
        have_p = {}
        for key, raw in self._prefix(_POSTING, fill_cache=False):
            dv = key[key.rindex(_SEP, 0, len(key) - 5) + 1 :]
            doc_id, ver = _split_dv(dv)
            ledger = self._ledger(doc_id.encode())
            if ledger and ledger["versions"][ver - 1]["status"] == "live":
                have_p[key] = raw
        have_d = dict(self._prefix(_TERMSTAT, fill_cache=False))
        have_d.update(
            (k, orjson.dumps(orjson.loads(v))) for k, v in self._prefix(_CORPUS, fill_cache=False)
        )
        have_d = {k: v for k, v in have_d.items() if not (k[:1] == _CORPUS and _is_zero(v))}
        missing = sum(1 for k, v in want_p.items() if have_p.get(k) != v)
        extra = sum(1 for k in have_p if k not in want_p)
        mism = sum(1 for k in set(want_d) | set(have_d) if want_d.get(k) != have_d.get(k))
        return {
            "ok": not (missing or extra or mism),
            "missing": missing,
            "extra": extra,
            "stats_mismatch": mism,
        }

    def rebuild_postings(self) -> dict[str, int]:
        """Drop and rebuild postings and statistics from the live canonical payloads.

        Postings of versions waiting for purge are dropped too (purge skips
        absent keys). Returns counts of what was written.
        """
        self._need_primary()
        with self._lock:
            postings, derived = self._derived_from_payloads()
            for fam in (_POSTING, _TERMSTAT, _CORPUS):
                end = _prefix_end(fam)
                wb = WriteBatch(raw_mode=True)
                wb.delete_range(fam, end)
                self._db.write(wb, self._wopt)
            items = list(postings.items()) + list(derived.items())
            for i in range(0, len(items), 50_000):
                wb = WriteBatch(raw_mode=True)
                for k, v in items[i : i + 50_000]:
                    wb.put(k, v)
                self._db.write(wb, self._wopt)
            return {"postings": len(postings), "statistics": len(derived)}

    # ---- meta, cursors, degraded state, properties

    def get_cursor(self, name: str) -> bytes | None:
        return self._db.get(_CURSOR + name.encode())

    def set_cursor(self, name: str, value: bytes | None) -> None:
        self._need_primary()
        with self._lock:
            if value is None:
                self._db.delete(_CURSOR + name.encode(), self._wopt)
            else:
                self._db.put(_CURSOR + name.encode(), value, self._wopt)

    def get_meta(self, name: str) -> Any:
        """A JSON value the layers above keep in the archive (None when absent)."""
        return self._get_json(_META + b"x:" + name.encode())

    def set_meta(self, name: str, value: Any) -> None:
        self._need_primary()
        with self._lock:
            if value is None:
                self._db.delete(_META + b"x:" + name.encode(), self._wopt)
            else:
                self._db.put(_META + b"x:" + name.encode(), orjson.dumps(value), self._wopt)

    def degraded(self) -> dict[str, Any] | None:
        """The durable degraded (disk-low) state, or None."""
        return self._get_json(_META + b"degraded")

    def set_degraded(self, state: dict[str, Any] | None) -> None:
        self._need_primary()
        with self._lock:
            if state is None:
                self._db.delete(_META + b"degraded", self._wopt)
            else:
                self._db.put(_META + b"degraded", orjson.dumps(state), self._wopt)

    def deleted_keys_total(self) -> int:
        """Keys deleted by purges since the archive was created (a durable counter)."""
        return self._get_u64(_META + b"deleted_keys")

    def properties(self) -> dict[str, int]:
        """RocksDB size estimates: live data, SST files, pending compaction, keys, memtables."""
        names = {
            "live_data_bytes": "rocksdb.estimate-live-data-size",
            "sst_bytes": "rocksdb.total-sst-files-size",
            "live_sst_bytes": "rocksdb.live-sst-files-size",
            "pending_compaction_bytes": "rocksdb.estimate-pending-compaction-bytes",
            "estimated_keys": "rocksdb.estimate-num-keys",
            "memtable_bytes": "rocksdb.cur-size-all-mem-tables",
            "running_compactions": "rocksdb.num-running-compactions",
        }
        out = {}
        for short, prop in names.items():
            try:
                out[short] = int(self._db.property_int_value(prop) or 0)
            except Exception:
                out[short] = 0
        return out

    def flush(self) -> None:
        """Flush memtables to SST files (waits) so background compaction sees the deletes."""
        self._need_primary()
        self._db.flush(True)
        self._db.flush_wal(True)

    def compact_all(self) -> None:
        """Full manual compaction (operator request only: unbounded I/O)."""
        self._need_primary()
        self._db.compact_range(None, None)

    def latest_sequence_number(self) -> int:
        return int(self._db.latest_sequence_number())

    def raw_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every key and value (migrations and verification only)."""
        return self._scan(b"", None, fill_cache=False)

    def raw_write(self, items: Iterable[tuple[bytes, bytes]], *, batch_keys: int = 10_000) -> int:
        """Write raw pairs in batches (migrations only: copying into a fresh archive)."""
        self._need_primary()
        n = 0
        with self._lock:
            wb = WriteBatch(raw_mode=True)
            for k, v in items:
                wb.put(k, v)
                n += 1
                if len(wb) >= batch_keys:
                    self._db.write(wb, self._wopt)
                    wb = WriteBatch(raw_mode=True)
            if len(wb):
                self._db.write(wb, self._wopt)
            meta = self._get_json(_META + b"format") or {}
            self.bucket_seconds = int(meta.get("bucket_seconds", DEFAULT_BUCKET_SECONDS))
            self.payload_format = int(meta.get("payload_format", CURRENT_PAYLOAD_FORMAT))
        return n

    def raw_delete(self, keys: Iterable[bytes], *, batch_keys: int = 10_000) -> int:
        """Delete raw keys in batches (migrations only: re-syncing a copy)."""
        self._need_primary()
        n = 0
        with self._lock:
            wb = WriteBatch(raw_mode=True)
            for k in keys:
                wb.delete(k)
                n += 1
                if len(wb) >= batch_keys:
                    self._db.write(wb, self._wopt)
                    wb = WriteBatch(raw_mode=True)
            if len(wb):
                self._db.write(wb, self._wopt)
        return n

    @staticmethod
    def is_payload_key(key: bytes) -> bool:
        return key[:1] == _PAYLOAD

    @staticmethod
    def is_format_key(key: bytes) -> bool:
        return key == _META + b"format"


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


def _is_zero(raw: bytes) -> bool:
    v = orjson.loads(raw)
    return not v.get("versions") and not v.get("length")


def killpoint(name: str) -> None:
    """A named crash point for drills (``MEMORYD_KILL_AT=NAME[:N]``); see ``KILL_POINTS``."""
    killpoints.reach(name)


#: Crash points of this module: after a purge chunk is built / before the final purge batch.
KILL_POINTS = ("archive_purge_chunk", "archive_purge_final")


__all__ = [
    "CLASSES",
    "MAX_LEASE_TARGETS",
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
    "make_locator",
    "parse_locator",
    "tokenize",
    "utc_iso",
]
