"""Chunk vectors: a derived table of compact sign codes, one row per file.

The configured ``encoder`` (``wordllama`` or ``command:...``) turns each chunk's
text into a vector in the worker of a ``vectors.encode`` job
(:mod:`memoryd.ingest.vectors`), which an ingest run enqueues when it finishes:
encoding is off the ingest's critical path. The supervisor stores
the sign codes (:func:`memoryd.text.dense.pack`, 32 bytes a chunk at 256
dimensions) of a file's chunks, in ordinal order, as one row beside the file, in
the job's group commit, only while the file still has the content they were
made from. A trigger drops a file's row when its content changes or it is
retired, so a row never describes other text. ``encoder = "hashing"`` (the
in-memory re-ranker) stores nothing.

One encoder made every stored code: its name is kept in ``vector_encoder``, and
writing or searching with another one raises :class:`EncoderChanged` until
``memoryd rebuild`` recomputes them (codes of two models are never compared).
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memoryd.base.errors import EncoderChanged
from memoryd.base.lazy import lazy_module
from memoryd.storage.corpus import CHUNKS_OF_FILE, _query, file_texts, live_texts
from memoryd.storage.lazy import VECTORS, present, reading, writing
from memoryd.text.dense import Encoder, encoder_name, load_encoder, pack, unpack

hashlib = lazy_module("hashlib")  # OpenSSL's: loaded by a digest, not by a search
np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

HASHING = "hashing"  # the in-memory re-ranker keeps no stored vectors
ENCODE_TEXTS = 512  # chunk texts encoded in one call (bounded memory)


def stores(config) -> bool:
    """Whether the configured encoder's vectors are stored (all but ``hashing``)."""
    return config.encoder != HASHING


def configured(config) -> Encoder | None:
    """The encoder whose vectors are stored, or None (``hashing``: nothing stored)."""
    return load_encoder(config.encoder) if stores(config) else None


@reading(VECTORS, lambda: None)
def stored_encoder(db) -> str | None:
    """The name of the encoder that made the stored codes (None: none stored)."""
    rows = _query(db, "SELECT name FROM vector_encoder WHERE id = 1", ())
    return rows[0][0] if rows else None


def check(db, config) -> None:
    """Refuse to mix: the configured encoder must be the one that made the stored
    codes (or nothing is stored yet)."""
    stored = stored_encoder(db)
    if stored is None:
        return
    name = encoder_name(config.encoder)
    if name != stored:
        raise EncoderChanged(
            f"the stored chunk vectors were made by encoder {stored!r} but the configured"
            f" encoder is {name!r}; run `memoryd rebuild` to recompute them (or set the"
            " encoder back)"
        )


def uncoded(db, pid: int) -> list[tuple[str, bytes, int]]:
    """(path, content hash, size) of the project's live files with chunks but no
    codes, in path order."""
    coded = (
        " AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.file_id = f.id)"
        if present(db, VECTORS)
        else ""
    )
    return _query(
        db,
        "SELECT f.path, f.content_hash, f.size FROM files f WHERE f.project_id = ?"
        f" AND f.live = 1{coded} AND f.chunk_count > 0 ORDER BY f.path",
        (pid,),
    )


def job_payload(pid: int, files: Sequence[tuple[str, bytes]]) -> dict:
    """What a vectors job encodes: files by path and the content hash (in hex) they
    had when it was enqueued, so a job never codes a newer text than the one it names."""
    return {"project_id": pid, "files": [[path, digest.hex()] for path, digest in files]}


def encode_job(db, config, payload: dict) -> dict | None:
    """Worker half of a vectors job: the encoder's name and dimension, and the codes of
    each named file that is still live with that content (None: no encoder). Reads
    the chunks' texts from the authority; writes nothing."""
    enc = configured(config)
    if enc is None:
        return None
    pid = payload["project_id"]
    found, texts = [], []
    for path, hex_hash in payload["files"]:
        content_hash = bytes.fromhex(hex_hash)
        rows = _query(
            db,
            "SELECT id FROM files WHERE project_id = ? AND path = ? AND live = 1"
            " AND content_hash = ?",
            (pid, path, content_hash),
        )
        if not rows:
            continue  # changed or gone since the job was enqueued: its own job codes it
        fid = rows[0][0]
        chunks = _chunk_texts(db, fid, file_texts(db, [fid])[fid])
        if chunks:
            found.append((fid, content_hash, len(chunks)))
            texts += chunks
    codes = encode_texts(enc, texts)  # all files' chunks at once: fewer, fuller encoder calls
    width = enc.dim // 8
    out, at = [], 0
    for file_id, content_hash, n in found:
        out.append((file_id, content_hash, codes[at : at + n * width]))
        at += n * width
    return {"encoder": enc.name, "dim": enc.dim, "files": out}


def _chunk_texts(db, file_id: int, text: str) -> list[str]:
    """The texts of a stored file's chunks (``text``: the file's), in ordinal order."""
    ranges = _query(
        db,
        f"SELECT c.start_line, c.end_line FROM files f JOIN chunks c ON {CHUNKS_OF_FILE}"
        " WHERE f.id = ? ORDER BY c.id",
        (file_id,),
    )
    if not ranges:
        return []
    lines = text.split("\n")
    return ["\n".join(lines[s - 1 : e]) for s, e in ranges]


def encode_texts(enc: Encoder, texts: Sequence[str]) -> bytes:
    parts = [
        pack(np.asarray(enc.encode(texts[i : i + ENCODE_TEXTS])))
        for i in range(0, len(texts), ENCODE_TEXTS)
    ]
    return b"".join(parts)


@writing(VECTORS)
def claim(tx: apsw.Connection, enc_name: str, dim: int) -> None:
    stored = stored_encoder(tx)
    if stored is None:
        tx.execute("INSERT INTO vector_encoder (id, name, dim) VALUES (1, ?, ?)", (enc_name, dim))
    elif stored != enc_name:
        raise EncoderChanged(
            f"chunk vectors of encoder {enc_name!r} cannot join those of {stored!r};"
            " run `memoryd rebuild` after changing the encoder"
        )


def bump(tx: apsw.Connection, pid: int) -> None:
    """A new count of the project's vector writes: search re-reads its codes."""
    tx.execute(
        "UPDATE projects SET vectors_generation = vectors_generation + 1 WHERE id = ?", (pid,)
    )


def accept(tx: apsw.Connection, config, encoded: dict | None) -> bool:
    """Whether a vectors job's codes may be stored: refused (``EncoderChanged``) when
    the configured encoder did not make the stored codes, False when the job made none
    (no encoder stores codes). The first codes stored record their encoder."""
    check(tx, config)
    if encoded is None:
        return False
    claim(tx, encoded["encoder"], encoded["dim"])
    check(tx, config)  # the worker's encoder is the configured one
    return True


def put(tx: apsw.Connection, pid: int, config, encoded: dict | None) -> int:
    """Supervisor half of a vectors job, in the group commit (never loading a model
    here): store each file's codes if the file still has the content they were made
    from (a file changed since is left to its own job). Idempotent: a job redone
    after a SIGKILL writes the same rows. Returns rows written."""
    if not accept(tx, config, encoded):
        return 0
    rows = []
    for file_id, content_hash, codes in encoded["files"]:
        row = tx.execute(
            "SELECT 1 FROM files WHERE id = ? AND project_id = ? AND live = 1 AND content_hash = ?",
            (file_id, pid, content_hash),
        ).fetchone()
        if row is not None:
            rows.append((file_id, pid, codes))
    tx.executemany(
        "INSERT OR REPLACE INTO chunk_vectors (file_id, project_id, codes) VALUES (?, ?, ?)", rows
    )
    if rows:
        bump(tx, pid)
    return len(rows)


def pending_files(db, config, pid: int) -> int:
    """Live files of the project with chunks but no codes yet (0 when the configured
    encoder stores none): their vectors job has not been applied."""
    return len(uncoded(db, pid)) if stores(config) else 0


def no_codes() -> tuple[np.ndarray, np.ndarray, int]:
    """What :func:`matrix` gives when nothing is coded: no rows, no dimension."""
    return np.zeros(0, np.int64), np.zeros((0, 0), np.uint8), 0


def generation(db, pid: int) -> int:
    """The project's count of vector writes (see :func:`put`)."""
    rows = _query(db, "SELECT vectors_generation FROM projects WHERE id = ?", (pid,))
    return rows[0][0] if rows else 0


@reading(VECTORS, no_codes)
def matrix(db, pid: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(chunk rowids, their codes as rows of uint8, dimension) of the project's live
    chunks that have codes; a file whose row does not match its chunks is left out."""
    dims = _query(db, "SELECT dim FROM vector_encoder WHERE id = 1", ())
    if not dims:
        return no_codes()
    dim = dims[0][0]
    width = dim // 8
    rowids: list[int] = []
    blobs: list[bytes] = []
    chunks: dict[int, list[int]] = {}
    for cid, fid in _query(
        db,
        "SELECT c.id, c.file_id FROM chunk_vectors v JOIN files f ON f.id = v.file_id"
        f" JOIN chunks c ON {CHUNKS_OF_FILE} WHERE v.project_id = ? ORDER BY c.file_id, c.id",
        (pid,),
    ):
        chunks.setdefault(fid, []).append(cid)
    for fid, codes in _query(
        db, "SELECT file_id, codes FROM chunk_vectors WHERE project_id = ?", (pid,)
    ):
        ids = chunks.get(fid, [])
        if ids and len(codes) == len(ids) * width:
            rowids.extend(ids)
            blobs.append(codes)
    codes = unpack(b"".join(blobs), dim) if blobs else np.zeros((0, width), np.uint8)
    return np.asarray(rowids, dtype=np.int64), codes, dim


def rebuild_vectors(tx: apsw.Connection, pid: int, config) -> int:
    """Drop and recompute the project's codes from files and chunks with the configured
    encoder (which becomes the stored one). Returns chunks encoded."""
    bump(tx, pid)
    enc = configured(config)
    if present(tx, VECTORS):
        tx.execute("DELETE FROM chunk_vectors WHERE project_id = ?", (pid,))
        tx.execute(
            "DELETE FROM vector_encoder WHERE id = 1 AND name != ?", (getattr(enc, "name", ""),)
        )
    if enc is None:
        return 0
    claim(tx, enc.name, enc.dim)
    count = 0
    for file_id, _path, text in live_texts(tx, pid):
        texts = _chunk_texts(tx, file_id, text)
        if texts:
            tx.execute(
                "INSERT INTO chunk_vectors (file_id, project_id, codes) VALUES (?, ?, ?)",
                (file_id, pid, encode_texts(enc, texts)),
            )
            count += len(texts)
    return count


def vectors_digest(conn: apsw.Connection, pid: int) -> str:
    """The encoder's name and every live file's path and codes, hashed in path order."""
    h = hashlib.sha256(repr(stored_encoder(conn)).encode())
    if not present(conn, VECTORS):
        return h.hexdigest()
    for path, codes in conn.execute(
        "SELECT f.path, v.codes FROM chunk_vectors v JOIN files f ON f.id = v.file_id"
        " WHERE v.project_id = ? AND f.live = 1 ORDER BY f.path",
        (pid,),
    ):
        h.update(path.encode() + b"\0" + hashlib.sha256(codes).digest())
    return h.hexdigest()
