"""`rebuild --verify` over codes still to come: chunk and record codes a vectors job has
not stored yet are reported as pending, never as a mismatch; a stored code that differs
from its recomputation still is one."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.consolidation.jobs import new_record
from memoryd.ingest.chunking import prepare_file
from memoryd.storage import open_authority, record_vectors, records, vectors
from memoryd.storage.corpus import ensure_project, put_files
from memoryd.storage.rebuild import verify

TEXT = "The lighthouse keeper writes down every storm.\nShips pass at dawn.\n"
FACTS = ["Ships leave the harbour at dawn", "The keeper logs every storm"]


@pytest.fixture
def db(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    with open_authority(home, load_config(home, {"encoder": "wordllama"})) as authority:
        yield authority


def _fill(db) -> int:
    """Two files and two active records of project ``notes``, none coded yet."""
    pid = db.write(lambda tx: ensure_project(tx, "notes", None))
    rows = [prepare_file(f"log{i}.md", (TEXT * (i + 1)).encode()) for i in range(2)]
    db.write(lambda tx: put_files(tx, pid, rows))
    for i, text in enumerate(FACTS):
        cand = {"kind": "fact", "text": text, "triggers": [], "scope": "notes", "refs": []}
        rec = new_record(pid, f"c{i}", cand, {"verdict": "add", "targets": []}, [])
        db.write(lambda tx, rec=rec: records.insert_record_in(tx, rec, 0.0))
    return pid


def _code_first(db, pid: int) -> None:
    """Store what one vectors job makes: the first file's and the first record's codes."""
    (path, content_hash, _), _ = vectors.uncoded(db, pid)
    files = vectors.encode_job(db, db.config, vectors.job_payload(pid, [(path, content_hash)]))
    recs = record_vectors.encode_job(
        db, db.config, record_vectors.job_payload(pid, record_vectors.uncoded(db, pid)[:1])
    )
    db.write(lambda tx: vectors.put(tx, pid, db.config, files))
    db.write(lambda tx: record_vectors.put(tx, pid, db.config, recs))


def test_codes_still_to_come_are_pending_not_a_mismatch(db) -> None:
    pid = _fill(db)
    nothing_yet = verify(db)
    assert nothing_yet["equal"], nothing_yet["mismatches"]
    assert nothing_yet["pending"] == {"notes": {"vectors": 2, "record_vectors": 2}}
    _code_first(db, pid)
    some = verify(db)
    assert some["equal"], some["mismatches"]
    assert some["pending"] == {"notes": {"vectors": 1, "record_vectors": 1}}


def test_a_stored_code_unlike_its_recomputation_is_still_a_mismatch(db) -> None:
    pid = _fill(db)
    _code_first(db, pid)
    db.write(lambda tx: tx.execute("UPDATE chunk_vectors SET codes = zeroblob(length(codes))"))
    db.write(lambda tx: tx.execute("UPDATE record_vectors SET code = zeroblob(length(code))"))
    out = verify(db)
    assert out["mismatches"] == ["notes/vectors", "notes/record_vectors"]
    assert out["pending"] == {"notes": {"vectors": 1, "record_vectors": 1}}


def test_the_default_encoder_awaits_nothing(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    with open_authority(home, load_config(home)) as db:
        _fill(db)
        out = verify(db)
    assert out["equal"] and out["pending"] == {"notes": {"vectors": 0, "record_vectors": 0}}
