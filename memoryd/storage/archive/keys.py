"""Every archive key: its builder and its parser. No other module builds a key.

The first byte is the family. Fixed-width integers are big endian, so byte
order is numeric order; NUL separates variable-width parts (document ids,
client ids and projects never contain NUL, terms are ``\\w+`` runs). A
version is named by its **dv**: ``doc 0x00 version:u32`` (:func:`dv`), so
every version of one document is contiguous and in version order::

    M name                       meta (orjson): format, degraded, counters, ...
    D doc                        document ledger (orjson); each version names its
                                 segment's bucket (``b``)
    Z seg ...                    everything derived from a version's content, under
                                 its **expiry segment** (below)
    z seg                        segment state: ``L`` live, ``X`` expired (kept until
                                 no ledger names the segment as a live version's)
    T project 0 term             document frequency over live versions (u64)
    T 0 project 0 seq:u64        document-frequency journal: removals of one batch
                                 (its terms, newline-separated, once per version),
                                 folded into ``T project 0 term``
                                 later (a project never starts with NUL)
    T 0xFF df_journal_seq        the journal's last record number (u64)
    S project                    corpus stats (orjson: versions, length)
    E bucket:u64 class:u8 dv     per-version expiry index -> generation (u32): only the
                                 versions of a held segment that have a deadline
    U dv                         purge queue -> last term purged (resume point)
    N doc                        pin (orjson)
    O client                     lease owner (orjson: epoch, expires_at, ttl)
    o expires_ms:u64 client      owner expiry index -> epoch
    F client 0 dv                forward lease reference -> epoch
    R dv client                  reverse lease reference -> epoch
    W project 0 session 0 client session lease reference -> epoch (the session's
                                 current versions)
    Y client 0 project 0 session forward session lease reference -> epoch
    X source_doc 0 derived_doc   a derived document names a source document
    Q dv                         retrieval lease -> expires_ms (u64)
    q expires_ms:u64 dv          retrieval lease expiry index
    G bucket:u64 doc             coarse access record
    I request_id                 idempotent append record -> locator 0 applied_ms:u64
                                 (kept after the version is purged, for the retry
                                 horizon: a redone request answers with its first
                                 outcome, never a new version; a record of an older
                                 archive holds the locator alone until timed)
    i applied_ms:u64 request_id  request records by time (their purge)
    K name                       cursor
    M vectors                    the encoder that made every C code (orjson)

**Segments.** A segment is ``seg = project 0 bucket:u64 class:u8``: a project's
versions of one class whose deadlines fall in one bucket (``segment_seconds``
wide, a day by default; bucket 2^64-1 is the **held** segment of versions with
no deadline, or kept past theirs by a protection). Inside it::

    Z seg C dv                   sign codes of the version's exchanges (vectors.py)
    Z seg E dv                   member: the version is in this segment -> generation
    Z seg L dv                   term list: the terms of the version's postings,
                                 NUL-separated, in index order
    Z seg P term 0 dv            posting -> frequency, positions, turns (positions.py)
    Z seg S                      the segment's corpus delta (orjson: versions, length)
    Z seg T term                 the segment's document-frequency delta (u64)
    Z seg V dv                   canonical payload (encoded, zstd)

Everything that dies together sits together: a due segment goes by one
``delete_range(Z seg, Z seg+1)`` after its ``T``/``S`` deltas were subtracted
from the global statistics. The project comes first, so a term read seeks only
its own project's segments, and within a project byte order is bucket order
(the due scan of ``z`` stops at the first bucket that has not ended).

The expiry index puts the time bucket first and the class second: a due
scan stops at the first future bucket, and within a bucket the classes come
in :data:`CLASSES` order.
"""

from __future__ import annotations

import struct

CLASSES: tuple[str, ...] = ("ephemeral", "conversation", "derived", "durable", "active")
#: The classes a new version or a promotion may take. ``active`` stays in
#: :data:`CLASSES` (its code is in keys an older memoryd wrote; such versions never
#: expire, as then) but is written no more: active evidence is a protection while a
#: lease holds it (an active-context or retrieval lease), over the version's own class
#: (docs/decisions/active-class.md).
WRITABLE_CLASSES: tuple[str, ...] = tuple(c for c in CLASSES if c != "active")
CLASS_CODE = {name: i + 1 for i, name in enumerate(CLASSES)}
CODE_CLASS = {code: name for name, code in CLASS_CODE.items()}

U32 = struct.Struct(">I")
U64 = struct.Struct(">Q")
SEP = b"\x00"

META, DOC, TERMSTAT, CORPUS = b"M", b"D", b"T", b"S"
SEGMENT, SEGMENT_STATE = b"Z", b"z"
EXPIRY, PURGE, PIN, OWNER, OWNER_EXP = b"E", b"U", b"N", b"O", b"o"
FWD, REV, RLEASE, RLEASE_EXP, ACCESS, REQUEST, CURSOR = (
    b"F",
    b"R",
    b"Q",
    b"q",
    b"G",
    b"I",
    b"K",
)
SESSION_REF, SESSION_FWD, DERIVED, REQUEST_TIME = b"W", b"Y", b"X", b"i"

FORMAT = META + b"format"
DEGRADED = META + b"degraded"
DELETED_KEYS = META + b"deleted_keys"
VECTORS_META = META + b"vectors"
#: The journal's last record number. It sorts after every statistic (UTF-8 never holds
#: 0xFF) and every journal write carries it, so a file's key range never ends on a term.
DF_JOURNAL_SEQ = TERMSTAT + b"\xffdf_journal_seq"


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix``."""
    p = bytearray(prefix)
    while p:
        if p[-1] < 0xFF:
            p[-1] += 1
            return bytes(p)
        p.pop()
    return None


# ---- versions


def dv(doc: bytes, ver: int) -> bytes:
    """A version's name inside keys: ``doc 0x00 ver:u32``."""
    return doc + SEP + U32.pack(ver)


def split_dv(raw: bytes) -> tuple[str, int]:
    return raw[:-5].decode(), U32.unpack(raw[-4:])[0]


# ---- meta, ledgers, payloads, requests, cursors


def user_meta(name: str) -> bytes:
    """A JSON value a layer above keeps in the archive (``M x:name``)."""
    return META + b"x:" + name.encode()


def doc(doc_id: bytes) -> bytes:
    return DOC + doc_id


def doc_after(doc_id: bytes | None) -> bytes:
    """Where a ledger scan resumes after ``doc_id`` (the first ledger when None)."""
    return DOC if doc_id is None else DOC + doc_id + SEP


def doc_of(key: bytes) -> bytes:
    """The document id of a ledger or pin key."""
    return key[1:]


def request(request_id: bytes) -> bytes:
    return REQUEST + request_id


def request_value(locator: str, applied_ms: int) -> bytes:
    return locator.encode() + SEP + U64.pack(applied_ms)


def parse_request_value(raw: bytes) -> tuple[str, int | None]:
    """``(locator, applied_ms)``; None: a record of an older archive, not timed yet."""
    locator, sep, applied = raw.partition(SEP)
    return locator.decode(), U64.unpack(applied)[0] if sep else None


def request_time(applied_ms: int, request_id: bytes) -> bytes:
    return REQUEST_TIME + U64.pack(applied_ms) + request_id


def request_entries(request_id: bytes, locator: str, applied_ms: int) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of one applied request: its record and its time index."""
    return [
        (request(request_id), request_value(locator, applied_ms)),
        (request_time(applied_ms, request_id), b""),
    ]


def request_times_until(applied_ms: int) -> bytes:
    """The first time-index key at or after ``applied_ms`` (a scan's end)."""
    return request_time(applied_ms, b"")


def parse_request_time(key: bytes) -> tuple[int, bytes]:
    """``(applied_ms, request_id)`` of a time-index key."""
    return U64.unpack(key[1:9])[0], key[9:]


def cursor(name: str) -> bytes:
    return CURSOR + name.encode()


# ---- postings and statistics


def encode_terms(terms: list[str]) -> list[bytes]:
    """``terms`` as bytes, encoded in one call (terms are ``\\w+`` runs: never NUL)."""
    return "\x00".join(terms).encode().split(SEP) if terms else []


def join_terms(terms: list[str]) -> bytes:
    """A term list's value: ``terms`` NUL-separated (terms are ``\\w+`` runs)."""
    return "\x00".join(terms).encode()


def split_terms(raw: bytes) -> list[bytes]:
    """The terms of a term list's value (:func:`join_terms`), as bytes."""
    return raw.split(SEP) if raw else []


def termstat(project: bytes, term: bytes) -> bytes:
    return TERMSTAT + project + SEP + term


def df_journal_prefix(project: bytes | None = None) -> bytes:
    """Where the document-frequency journal (of ``project``, or of every project) lives."""
    return TERMSTAT + SEP + (b"" if project is None else project + SEP)


def df_journal(project: bytes, seq: int) -> bytes:
    return df_journal_prefix(project) + U64.pack(seq)


def df_journal_project(key: bytes) -> bytes:
    return key[2:-9]


def corpus(project: bytes) -> bytes:
    return CORPUS + project


def corpus_project(key: bytes) -> bytes:
    return key[1:]


def content_ranges(project: bytes | None = None) -> list[tuple[bytes, bytes | None]]:
    """The key ranges that hold content or what is derived from it: the segments and
    the term statistics (only ``project``'s when given)."""
    if project is None:
        return [(f, prefix_end(f)) for f in (SEGMENT, TERMSTAT)]
    own = (segments_prefix(project), TERMSTAT + project + SEP, df_journal_prefix(project))
    return [(p, prefix_end(p)) for p in own]


# ---- expiry index and purge queue


def expiry_bucket(bucket: int) -> bytes:
    """The first expiry key of a time bucket (scan bounds)."""
    return EXPIRY + U64.pack(max(0, bucket))


def expiry(bucket: int, class_code: int, version: bytes) -> bytes:
    return expiry_bucket(bucket) + bytes([class_code]) + version


def parse_expiry(key: bytes) -> tuple[int, int, bytes]:
    """``(bucket, class code, dv)`` of an expiry key."""
    return U64.unpack(key[1:9])[0], key[9], key[10:]


def purge(version: bytes) -> bytes:
    return PURGE + version


def purge_version(key: bytes) -> bytes:
    return key[1:]


def derived_prefix(source_doc: bytes) -> bytes:
    return DERIVED + source_doc + SEP


def derived(source_doc: bytes, derived_doc: bytes) -> bytes:
    return derived_prefix(source_doc) + derived_doc


def derived_doc_of(key: bytes, source_doc: bytes) -> bytes:
    return key[len(source_doc) + 2 :]


# ---- pins, leases, retrieval leases


def pin(doc_id: bytes) -> bytes:
    return PIN + doc_id


def owner(client: bytes) -> bytes:
    return OWNER + client


def owner_exp_until(ms: int) -> bytes:
    """The first owner-expiry key at ``ms`` (scan bounds)."""
    return OWNER_EXP + U64.pack(ms)


def owner_exp(ms: int, client: bytes) -> bytes:
    return owner_exp_until(ms) + client


def parse_owner_exp(key: bytes) -> tuple[int, bytes]:
    """``(expires_ms, client)`` of an owner-expiry key."""
    return U64.unpack(key[1:9])[0], key[9:]


def fwd_prefix(client: bytes) -> bytes:
    return FWD + client + SEP


def fwd(client: bytes, version: bytes) -> bytes:
    return fwd_prefix(client) + version


def fwd_version(key: bytes, client: bytes) -> bytes:
    return key[len(client) + 2 :]


def rev_prefix(version: bytes) -> bytes:
    return REV + version


def rev(version: bytes, client: bytes) -> bytes:
    return rev_prefix(version) + client


def rev_client(key: bytes, version: bytes) -> bytes:
    return key[len(version) + 1 :]


def session_ref_prefix(project: bytes, session: bytes) -> bytes:
    return SESSION_REF + project + SEP + session + SEP


def session_ref(project: bytes, session: bytes, client: bytes) -> bytes:
    return session_ref_prefix(project, session) + client


def session_ref_client(key: bytes, project: bytes, session: bytes) -> bytes:
    return key[len(project) + len(session) + 3 :]


def session_ref_value(epoch: bytes, since_ms: int) -> bytes:
    """A session reference's value: the owner's epoch (u32) and the retention clock
    when this epoch first named the session (u64 ms): it protects only versions whose
    deadline is later (a lease never brings back what had expired)."""
    return epoch + U64.pack(since_ms)


def parse_session_ref_value(raw: bytes) -> tuple[bytes, int]:
    """``(epoch, since_ms)``; a reference written before ``since`` was kept (the epoch
    alone) protects as it did then (since 0)."""
    return raw[:4], U64.unpack(raw[4:12])[0] if len(raw) >= 12 else 0


def session_fwd_prefix(client: bytes) -> bytes:
    return SESSION_FWD + client + SEP


def session_fwd(client: bytes, project: bytes, session: bytes) -> bytes:
    return session_fwd_prefix(client) + project + SEP + session


def parse_session_fwd(key: bytes, client: bytes) -> tuple[bytes, bytes]:
    """``(project, session)`` of a forward session reference of ``client``."""
    project, _, session = key[len(client) + 2 :].partition(SEP)
    return project, session


def rlease(version: bytes) -> bytes:
    return RLEASE + version


def rlease_exp_until(ms: int) -> bytes:
    return RLEASE_EXP + U64.pack(ms)


def rlease_exp(ms: int, version: bytes) -> bytes:
    return rlease_exp_until(ms) + version


def parse_rlease_exp(key: bytes) -> tuple[int, bytes]:
    """``(expires_ms, dv)`` of a retrieval-lease expiry key."""
    return U64.unpack(key[1:9])[0], key[9:]


# ---- access records


def access_bucket(bucket: int) -> bytes:
    return ACCESS + U64.pack(max(0, bucket))


def access(bucket: int, doc_id: bytes) -> bytes:
    return access_bucket(bucket) + doc_id


def parse_access(key: bytes) -> tuple[int, bytes]:
    """``(bucket, doc id)`` of an access record key."""
    return U64.unpack(key[1:9])[0], key[9:]


# ---- segments (everything derived from a version's content, by expiry segment)

#: The held segment's bucket: versions with no deadline, or kept past theirs.
HELD_BUCKET = 2**64 - 1
SEG_CODES, SEG_MEMBER, SEG_TERMS, SEG_POSTING = b"C", b"E", b"L", b"P"
SEG_CORPUS, SEG_TERMSTAT, SEG_PAYLOAD = b"S", b"T", b"V"
SEG_LIVE, SEG_EXPIRED = b"L", b"X"


def segment(project: bytes, bucket: int, class_code: int) -> bytes:
    """A segment's id: ``project 0 bucket:u64 class:u8``."""
    return project + SEP + U64.pack(bucket) + bytes([class_code])


def parse_segment(seg: bytes) -> tuple[bytes, int, int]:
    """``(project, bucket, class code)`` of a segment id."""
    return seg[:-10], U64.unpack(seg[-9:-1])[0], seg[-1]


def segments_prefix(project: bytes | None = None) -> bytes:
    """Where ``project``'s segments (or every segment) live."""
    return SEGMENT if project is None else SEGMENT + project + SEP


def segment_of(key: bytes) -> bytes:
    """The segment id of a key inside a segment (``Z seg ...``)."""
    return key[1 : key.index(SEP, 1) + 10]


def segment_prefix(seg: bytes) -> bytes:
    """Every key of one segment starts with this (its range delete's start)."""
    return SEGMENT + seg


def segment_state(seg: bytes) -> bytes:
    return SEGMENT_STATE + seg


def segment_states_prefix(project: bytes | None = None) -> bytes:
    return SEGMENT_STATE if project is None else SEGMENT_STATE + project + SEP


def state_segment(key: bytes) -> bytes:
    """The segment id of a segment-state key."""
    return key[1:]


def seg_payload(seg: bytes, version: bytes) -> bytes:
    return SEGMENT + seg + SEG_PAYLOAD + version


def seg_terms(seg: bytes, version: bytes) -> bytes:
    return SEGMENT + seg + SEG_TERMS + version


def seg_codes(seg: bytes, version: bytes) -> bytes:
    return SEGMENT + seg + SEG_CODES + version


def seg_member(seg: bytes, version: bytes) -> bytes:
    return SEGMENT + seg + SEG_MEMBER + version


def seg_family(seg: bytes, family: bytes) -> bytes:
    """The prefix of one family (``SEG_*``) inside a segment."""
    return SEGMENT + seg + family


def seg_version(key: bytes, seg: bytes) -> bytes:
    """The dv of a per-version key (payload, terms, codes, member) of ``seg``."""
    return key[len(seg) + 2 :]


def seg_posting_prefix(seg: bytes, term: bytes) -> bytes:
    return SEGMENT + seg + SEG_POSTING + term + SEP


def seg_posting(seg: bytes, term: bytes, version: bytes) -> bytes:
    return seg_posting_prefix(seg, term) + version


def seg_postings_of(seg: bytes, terms: list[bytes], version: bytes) -> list[bytes]:
    """The posting keys of one version's terms (:func:`seg_posting` for many at once)."""
    head, tail = SEGMENT + seg + SEG_POSTING, SEP + version
    return [head + term + tail for term in terms]


def parse_seg_posting(key: bytes, seg: bytes) -> tuple[bytes, bytes]:
    """``(term, dv)`` of a posting key of ``seg``."""
    rest = key[len(seg) + 2 :]
    i = rest.index(SEP)
    return rest[:i], rest[i + 1 :]


def seg_termstat(seg: bytes, term: bytes) -> bytes:
    return SEGMENT + seg + SEG_TERMSTAT + term


def seg_termstat_term(key: bytes, seg: bytes) -> bytes:
    return key[len(seg) + 2 :]


def seg_termstats_of(seg: bytes, terms: list[bytes]) -> list[bytes]:
    """The segment statistic keys of ``terms`` (:func:`seg_termstat` for many)."""
    head = SEGMENT + seg + SEG_TERMSTAT
    return [head + term for term in terms]


def term_in_segments(segs: list[bytes], term: bytes) -> list[bytes]:
    """The statistic key of one term in each of ``segs``."""
    return [SEGMENT + seg + SEG_TERMSTAT + term for seg in segs]


def seg_corpus(seg: bytes) -> bytes:
    return SEGMENT + seg + SEG_CORPUS


def is_payload(key: bytes) -> bool:
    """A canonical payload key (``Z seg V dv``): the migration copy re-encodes these."""
    if key[:1] != SEGMENT:
        return False
    i = key.find(SEP, 1)
    return i > 0 and key[i + 10 : i + 11] == SEG_PAYLOAD
