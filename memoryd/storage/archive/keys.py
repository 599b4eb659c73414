"""Every archive key: its builder and its parser. No other module builds a key.

The first byte is the family. Fixed-width integers are big endian, so byte
order is numeric order; NUL separates variable-width parts (document ids,
client ids and projects never contain NUL, terms are ``\\w+`` runs). A
version is named by its **dv**: ``doc 0x00 version:u32`` (:func:`dv`), so
every version of one document is contiguous and in version order::

    M name                       meta (orjson): format, degraded, counters, ...
    D doc                        document ledger (orjson)
    V dv                         canonical payload (encoded, zstd)
    P project 0 term 0 dv        posting -> frequency, positions, turns (positions.py)
    L dv                         term list: the terms of the version's postings,
                                 NUL-separated, in index order (retiring a version
                                 builds its posting keys from it, no payload decode)
    T project 0 term             document frequency over live versions (u64)
    T 0 project 0 seq:u64        document-frequency journal: removals of one batch
                                 (its terms, newline-separated, once per version),
                                 folded into ``T project 0 term``
                                 later (a project never starts with NUL)
    T 0xFF df_journal_seq        the journal's last record number (u64)
    S project                    corpus stats (orjson: versions, length)
    E bucket:u64 class:u8 dv     expiry index -> generation (u32)
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
    I request_id                 idempotent append record -> locator (kept, like the
                                 ledger, after the version is purged: a redone request
                                 answers with its first outcome, never a new version)
    K name                       cursor
    C project 0 dv               sign codes of a live version's exchanges (vectors.py),
                                 deleted in the batch that retires the version
    M vectors                    the encoder that made every C code (orjson)

The expiry index puts the time bucket first and the class second: a due
scan stops at the first future bucket, and within a bucket the classes come
in :data:`CLASSES` order.
"""

from __future__ import annotations

import struct

CLASSES: tuple[str, ...] = ("ephemeral", "conversation", "derived", "durable", "active")
CLASS_CODE = {name: i + 1 for i, name in enumerate(CLASSES)}
CODE_CLASS = {code: name for name, code in CLASS_CODE.items()}

U32 = struct.Struct(">I")
U64 = struct.Struct(">Q")
SEP = b"\x00"

META, DOC, PAYLOAD, POSTING, TERMSTAT, CORPUS = b"M", b"D", b"V", b"P", b"T", b"S"
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
SESSION_REF, SESSION_FWD, DERIVED, TERM_LIST = b"W", b"Y", b"X", b"L"
VECTORS = b"C"

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


def payload(version: bytes) -> bytes:
    return PAYLOAD + version


def is_payload(key: bytes) -> bool:
    return key[:1] == PAYLOAD


def request(request_id: bytes) -> bytes:
    return REQUEST + request_id


def cursor(name: str) -> bytes:
    return CURSOR + name.encode()


# ---- postings and statistics


def posting_prefix(project: bytes, term: bytes) -> bytes:
    return POSTING + project + SEP + term + SEP


def posting(project: bytes, term: bytes, version: bytes) -> bytes:
    return posting_prefix(project, term) + version


def postings_of(project: bytes, terms: list[bytes], version: bytes) -> list[bytes]:
    """The posting keys of one version's terms (:func:`posting` for many at once)."""
    head, tail = POSTING + project + SEP, SEP + version
    return [head + term + tail for term in terms]


def encode_terms(terms: list[str]) -> list[bytes]:
    """``terms`` as bytes, encoded in one call (terms are ``\\w+`` runs: never NUL)."""
    return "\x00".join(terms).encode().split(SEP) if terms else []


def version_postings(project: bytes, terms: list[str], version: bytes) -> list[bytes]:
    """The posting keys of one version's terms (what :func:`postings_of` builds, from
    ``str`` terms in one encode)."""
    head, tail = POSTING + project + SEP, SEP + version
    return [head + term + tail for term in encode_terms(terms)]


def term_list(version: bytes) -> bytes:
    return TERM_LIST + version


def term_list_version(key: bytes) -> bytes:
    return key[1:]


def join_terms(terms: list[str]) -> bytes:
    """A term list's value: ``terms`` NUL-separated (terms are ``\\w+`` runs)."""
    return "\x00".join(terms).encode()


def split_terms(raw: bytes) -> list[bytes]:
    """The terms of a term list's value (:func:`join_terms`), as bytes."""
    return raw.split(SEP) if raw else []


def parse_posting(key: bytes) -> tuple[bytes, bytes, bytes]:
    """``(project, term, dv)`` of a posting key."""
    i = key.index(SEP, 1)
    j = key.index(SEP, i + 1)
    return key[1:i], key[i + 1 : j], key[j + 1 :]


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
    """The key ranges that hold content or what is derived from it: payloads, postings,
    term statistics and codes (only ``project``'s derived keys when given)."""
    if project is None:
        families = (PAYLOAD, TERM_LIST, POSTING, TERMSTAT, VECTORS)
        return [(f, prefix_end(f)) for f in families]
    own = (
        POSTING + project + SEP,
        TERMSTAT + project + SEP,
        df_journal_prefix(project),
        vectors_prefix(project),
    )
    shared = (PAYLOAD, TERM_LIST)  # keyed by version, not project
    return [(f, prefix_end(f)) for f in shared] + [(p, prefix_end(p)) for p in own]


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


# ---- vectors (codes derived from a version's content)


def vectors_prefix(project: bytes | None = None) -> bytes:
    return VECTORS if project is None else VECTORS + project + SEP


def vector(project: bytes, version: bytes) -> bytes:
    """``C project 0 dv``: the codes of one version's exchanges."""
    return VECTORS + project + SEP + version


def vector_version(key: bytes, project: bytes) -> bytes:
    """The dv of a code key of ``project``."""
    return key[len(project) + 2 :]
