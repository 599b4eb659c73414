"""Memory record vectors: a derived table of sign codes, one row per active record.

A record's code is the configured encoder's vector of its text and triggers (what
the records source searches), packed as signs like chunk codes
(:func:`memoryd.text.dense.pack`, 32 bytes at 256 dimensions). Codes are made
off consolidation's critical path: the commit that applies a consolidation run
enqueues a ``vectors.encode`` job with ``"source": "records"``
(:mod:`memoryd.ingest.vectors`) naming the project's active records without a
code; its worker encodes them and the supervisor stores each code only while
the record is active with the text it was made from (a digest of text and
triggers). Triggers (migration 11) drop a record's code when it is superseded,
merged or otherwise leaves ``active``, or its text changes, so a code never
describes other text. One encoder makes chunk and record codes alike
(``vector_encoder``); ``memoryd rebuild`` recomputes both.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import orjson

from memoryd.base.lazy import lazy_module
from memoryd.storage import vectors
from memoryd.storage.corpus import _query
from memoryd.storage.lazy import MEMORY, VECTORS, present, reading
from memoryd.text.dense import unpack

hashlib = lazy_module("hashlib")  # OpenSSL's: loaded by a digest, not by a search
np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

SOURCE = "records"  # the vectors.encode payload's source for record codes
JOB_RECORDS = 2048  # records one vectors job codes (a record is a sentence or two)


def record_text(text: str, triggers: str | Sequence[str]) -> str:
    """What a record's code encodes: its text, then its triggers, a line each."""
    if isinstance(triggers, str):
        triggers = orjson.loads(triggers)
    return "\n".join([text, *triggers])


def digest(text: str, triggers: str) -> str:
    """The text a code was made from (text and the triggers' JSON as stored)."""
    return hashlib.sha256(f"{text}\0{triggers}".encode()).hexdigest()[:32]


@reading(MEMORY, list)
def uncoded(db, pid: int) -> list[tuple[int, str]]:
    """(n, text digest) of the project's active records without a code, in n order."""
    rows = _query(
        db,
        "SELECT r.n, r.text, r.triggers FROM memory_records r WHERE r.project_id = ?"
        " AND r.status = 'active' AND NOT EXISTS (SELECT 1 FROM record_vectors v"
        " WHERE v.n = r.n) ORDER BY r.n",
        (pid,),
    )
    return [(n, digest(text, triggers)) for n, text, triggers in rows]


def job_payload(pid: int, recs: Sequence[tuple[int, str]]) -> dict:
    """What a records vectors job encodes: records by n and the digest of the text
    they had when it was enqueued."""
    return {"project_id": pid, "source": SOURCE, "records": [[n, d] for n, d in recs]}


@reading(MEMORY, list)
def _active(db, pid: int, ns: Sequence[int]) -> list[tuple[int, str, str]]:
    """(n, text, triggers JSON) of the named records still active in the project."""
    return _query(
        db,
        "SELECT n, text, triggers FROM memory_records WHERE n IN (SELECT value FROM"
        " json_each(?)) AND project_id = ? AND status = 'active' ORDER BY n",
        (orjson.dumps(list(ns)).decode(), pid),
    )


def encode_job(db, config, payload: dict) -> dict | None:
    """Worker half: the codes of each named record still active with the text it was
    named with (None: no encoder stores codes). Reads the authority; writes nothing."""
    enc = vectors.configured(config)
    if enc is None:
        return None
    wanted = dict(payload["records"])
    found = [
        (n, digest(text, trig), record_text(text, trig))
        for n, text, trig in _active(db, payload["project_id"], list(wanted))
        if wanted.get(n) == digest(text, trig)
    ]
    codes = _codes(enc, [t for _, _, t in found])
    out = [[n, d, code] for (n, d, _), code in zip(found, codes, strict=True)]
    return {"encoder": enc.name, "dim": enc.dim, "source": SOURCE, "records": out}


def _codes(enc, texts: list[str]) -> list[bytes]:
    """One packed code per text."""
    packed, width = vectors.encode_texts(enc, texts), enc.dim // 8
    return [packed[i : i + width] for i in range(0, len(packed), width)]


@reading(MEMORY, lambda: 0)
def put(tx: apsw.Connection, pid: int, config, encoded: dict | None) -> int:
    """Supervisor half, in the group commit: store each record's code if the record
    is still active with the text it was made from. Idempotent (a job redone after a
    SIGKILL writes the same rows). Returns rows written."""
    if not vectors.accept(tx, config, encoded):
        return 0
    made = {n: (d, code) for n, d, code in encoded["records"]}
    rows = [
        (n, pid, made[n][1])
        for n, text, trig in _active(tx, pid, list(made))
        if made[n][0] == digest(text, trig)
    ]
    tx.executemany(
        "INSERT OR REPLACE INTO record_vectors (n, project_id, code) VALUES (?, ?, ?)", rows
    )
    if rows:
        vectors.bump(tx, pid)
    return len(rows)


def state(db, pid: int) -> tuple[int, int]:
    """What search's cached record codes of a project depend on: the count of vector
    writes and the records' change sequence (a superseded record's code is gone)."""
    if not present(db, MEMORY):
        return vectors.generation(db, pid), 0
    rows = _query(
        db, "SELECT coalesce(max(seq), 0) FROM memory_records WHERE project_id = ?", (pid,)
    )
    return vectors.generation(db, pid), rows[0][0]


def matrix(db, pid: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(record n, codes as rows of uint8, dimension) of the project's active coded records."""
    if not (present(db, MEMORY) and present(db, VECTORS)):
        return vectors.no_codes()
    dims = _query(db, "SELECT dim FROM vector_encoder WHERE id = 1", ())
    if not dims:
        return vectors.no_codes()
    dim = dims[0][0]
    rows = _query(
        db,
        "SELECT v.n, v.code FROM record_vectors v JOIN memory_records r ON r.n = v.n"
        " WHERE v.project_id = ? AND r.status = 'active' AND length(v.code) = ? ORDER BY v.n",
        (pid, dim // 8),
    )
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, dim // 8), np.uint8), dim
    ns = np.asarray([n for n, _ in rows], dtype=np.int64)
    return ns, unpack(b"".join(c for _, c in rows), dim), dim


@reading(MEMORY, list)
def rows_by_n(db, ns: Sequence[int]) -> list[dict]:
    """The active records among ``ns`` as the records source reads them (score 0)."""
    rows = _query(
        db,
        "SELECT n, id, kind, status, text, triggers FROM memory_records WHERE n IN"
        " (SELECT value FROM json_each(?)) AND status = 'active'",
        (orjson.dumps(list(ns)).decode(),),
    )
    keys = ("n", "id", "kind", "status", "text", "triggers")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for rec in out:
        rec["triggers"], rec["score"] = orjson.loads(rec["triggers"]), 0.0
    return out


@reading(MEMORY, lambda: 0)
def rebuild_record_vectors(tx: apsw.Connection, pid: int, config) -> int:
    """Drop and recompute the project's record codes with the configured encoder
    (run after :func:`memoryd.storage.vectors.rebuild_vectors`, which settles the
    stored encoder). Returns records encoded."""
    tx.execute("DELETE FROM record_vectors WHERE project_id = ?", (pid,))
    vectors.bump(tx, pid)
    enc = vectors.configured(config)
    if enc is None:
        return 0
    vectors.claim(tx, enc.name, enc.dim)
    rows = tx.execute(
        "SELECT n, text, triggers FROM memory_records WHERE project_id = ? AND status = 'active'"
        " ORDER BY n",
        (pid,),
    ).fetchall()
    codes = _codes(enc, [record_text(t, tr) for _, t, tr in rows])
    tx.executemany(
        "INSERT INTO record_vectors (n, project_id, code) VALUES (?, ?, ?)",
        ((n, pid, code) for (n, _, _), code in zip(rows, codes, strict=True)),
    )
    return len(rows)


def record_vectors_digest(conn: apsw.Connection, pid: int) -> str:
    """The encoder's name and every active record's id and code, hashed in id order."""
    h = hashlib.sha256(repr(vectors.stored_encoder(conn)).encode())
    if not present(conn, MEMORY):
        return h.hexdigest()
    for rid, code in conn.execute(
        "SELECT r.id, v.code FROM record_vectors v JOIN memory_records r ON r.n = v.n"
        " WHERE v.project_id = ? AND r.status = 'active' ORDER BY r.id",
        (pid,),
    ):
        h.update(rid.encode() + b"\0" + code)
    return h.hexdigest()
