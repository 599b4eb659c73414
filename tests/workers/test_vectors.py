"""The ``vectors.encode`` job kind: codes after their chunks, never before
an ingest job, never for a text that changed since."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.ingest.jobs import BATCH, FINALIZE, SCAN
from memoryd.ingest.vectors import ENCODE, follow_up
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority, vectors
from memoryd.storage.corpus import ensure_project, put_files

TEXT = "The lighthouse keeper writes down every storm.\nShips pass at dawn.\n"


@pytest.fixture
def db(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    with open_authority(home, load_config(home, {"encoder": "wordllama"})) as authority:
        yield authority


def _files(db, text: str = TEXT):
    pid = db.write(lambda tx: ensure_project(tx, "notes", None))
    rows = [prepare_file("log.md", text.encode())]
    db.write(lambda tx: put_files(tx, pid, rows))
    return pid, rows


def _payload(pid: int, rows) -> dict:
    return vectors.job_payload(pid, [(r.path, r.content_hash) for r in rows])


def test_ingest_jobs_are_claimed_before_any_vectors_job(db):
    pid, rows = _files(db)
    q = JobQueue(db)
    q.enqueue_many(follow_up(db.conn, db.config, pid, "notes"))  # the oldest job
    q.enqueue_many([JobSpec(SCAN, priority=1), JobSpec(BATCH), JobSpec(FINALIZE, priority=-1)])
    claimed = [q.claim("test", 1, 60)[0].kind for _ in range(4)]
    assert claimed == [SCAN, BATCH, FINALIZE, ENCODE]


def test_the_default_encoder_enqueues_no_vectors_job(db):
    pid, _ = _files(db)
    assert follow_up(db.conn, load_config(db.path.parent), pid, "notes") == []


def test_a_finished_run_enqueues_jobs_of_bounded_size_for_every_uncoded_file(home):
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(home, {"encoder": "wordllama", "vectors_job_bytes": 1000})
    with open_authority(home, config) as db:
        pid = db.write(lambda tx: ensure_project(tx, "notes", None))
        rows = [prepare_file(f"n{i}.md", (TEXT * 8).encode()) for i in range(5)]
        rows.append(prepare_file("empty.md", b""))  # no chunks: nothing to code
        db.write(lambda tx: put_files(tx, pid, rows))
        jobs = follow_up(db.conn, config, pid, "notes")
        assert [len(j.payload["files"]) for j in jobs] == [2, 2, 1]
        q = JobQueue(db)
        assert None not in q.enqueue_many(jobs)
        again = follow_up(db.conn, config, pid, "notes")  # a second run finishing now
        assert q.enqueue_many(again) == [None, None, None]  # the same files: no new job
        assert vectors.pending_files(db, config, pid) == 5  # before any code is stored
        for job in jobs:
            done = vectors.encode_job(db, config, job.payload)
            db.write(lambda tx, done=done: vectors.put(tx, pid, config, done))
        assert vectors.pending_files(db, db.config, pid) == 0
        assert follow_up(db.conn, config, pid, "notes") == []


def test_codes_of_a_text_changed_since_encoding_are_not_stored(db):
    pid, rows = _files(db)
    encoded = vectors.encode_job(db, db.config, _payload(pid, rows))
    assert len(encoded["files"]) == 1
    _files(db, TEXT + "A new line changes the file.\n")  # committed while the job ran
    assert db.write(lambda tx: vectors.put(tx, pid, db.config, encoded)) == 0
    assert vectors.pending_files(db, db.config, pid) == 1

    fresh = _payload(
        pid, [prepare_file("log.md", f"{TEXT}A new line changes the file.\n".encode())]
    )
    again = vectors.encode_job(db, db.config, fresh)
    assert db.write(lambda tx: vectors.put(tx, pid, db.config, again)) == 1
    assert db.write(lambda tx: vectors.put(tx, pid, db.config, again)) == 1  # redone: same row
    assert vectors.pending_files(db, db.config, pid) == 0
    assert db.query("SELECT count(*) FROM chunk_vectors") == [(1,)]
