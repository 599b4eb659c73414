"""A file's chunks are the id range its row keeps (``chunk_first``, ``chunk_count``:
there is no index on ``chunks.file_id``), through new, changed, repeated, emptied and
retired files, and the index holds exactly the live chunks."""

from __future__ import annotations

from pathlib import Path

from memoryd.base.config import FTS_AUTOMERGE, load_config
from memoryd.ingest.chunking import prepare_batch, prepare_file
from memoryd.storage.authority import Authority, open_authority
from memoryd.storage.corpus import ensure_project, fts_table, put_files, retire_files


def _text(lines: int, word: str) -> bytes:
    return "".join(f"def {word}_{i}(x):\n    return x + {i}\n\n" for i in range(lines)).encode()


def _assert_ranges(db: Authority, pid: int) -> None:
    files = db.query(
        "SELECT id, chunk_first, chunk_count, live FROM files WHERE project_id = ?", (pid,)
    )
    for fid, first, count, live in files:
        ids = [
            r[0]
            for r in db.query("SELECT id FROM chunks WHERE file_id = ? ORDER BY start_line", (fid,))
        ]
        assert ids == list(range(first, first + count)), fid
        assert live or (first, count) == (0, 0)
    indexed = db.query(f"SELECT id FROM {fts_table(pid)}_docsize ORDER BY id")
    assert indexed == db.query(
        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.project_id = ?"
        " ORDER BY c.id",
        (pid,),
    )


def test_a_files_chunks_stay_its_id_range(tmp_path: Path) -> None:
    db = open_authority(tmp_path, load_config(tmp_path))
    pid = db.write(lambda tx: ensure_project(tx, "p", None, 0))

    def put(*files: tuple[str, bytes]) -> None:
        db.write(lambda tx: put_files(tx, pid, [prepare_file(p, b) for p, b in files]))

    put(*((f"m{i}.py", _text(30 + i, f"kiln{i}")) for i in range(5)), ("empty.py", b""))
    _assert_ranges(db, pid)
    put(("m1.py", _text(90, "glaze")), ("m6.py", _text(12, "clay")))  # grows, and a new one
    put(("m2.py", _text(3, "slip")), ("m2.py", _text(40, "slip")))  # one path twice in a batch
    put(("empty.py", _text(20, "wheel")), ("m3.py", b""))  # filled, and emptied
    db.write(lambda tx: retire_files(tx, pid, ["m4.py"]))
    _assert_ranges(db, pid)
    counts = dict(db.query("SELECT path, chunk_count FROM files WHERE project_id = ?", (pid,)))
    assert counts["m3.py"] == counts["m4.py"] == 0 and counts["m1.py"] > counts["m0.py"] > 0
    assert db.query("SELECT count(*) FROM chunks") == [(sum(counts.values()),)]
    db.close()


def test_a_blocks_file_count_is_its_live_files(tmp_path: Path) -> None:
    """A batch's blocks count the files written into them (once a flush, not a file),
    through a path twice in one batch and a file that leaves its block."""
    db = open_authority(tmp_path, load_config(tmp_path))
    pid = db.write(lambda tx: ensure_project(tx, "p", None, 0))

    def put(*files: tuple[str, bytes]) -> None:
        rows, blocks = prepare_batch(files, block_bytes=4096, level=3)
        db.write(lambda tx: put_files(tx, pid, rows, None, blocks, packed=True))

    put(*((f"m{i}.py", _text(20 + i, f"kiln{i}")) for i in range(6)), ("empty.py", b""))
    put(("m1.py", _text(9, "glaze")), ("m1.py", _text(14, "glaze")), ("m7.py", _text(5, "clay")))
    put(("m2.py", _text(200, "slip")), ("m2.py", _text(150, "slip")))  # a block of its own each
    counted = db.query("SELECT id, files FROM body_blocks ORDER BY id")
    live = db.query(
        "SELECT block_id, count(*) FROM files WHERE live AND block_id IS NOT NULL"
        " GROUP BY block_id ORDER BY block_id"
    )
    assert counted == live and len(counted) > 2
    _assert_ranges(db, pid)
    (merge,) = db.query(f"SELECT v FROM {fts_table(pid)}_config WHERE k = 'automerge'")
    assert merge == (FTS_AUTOMERGE,)
    db.close()


def test_a_batchs_put_writes_its_files_in_a_few_statements(tmp_path: Path) -> None:
    """Its stored rows looked up a batch at a time, not a statement a file; a redone
    batch changes nothing, a changed file is replaced."""
    db = open_authority(tmp_path, load_config(tmp_path))
    pid = db.write(lambda tx: ensure_project(tx, "p", None, 0))
    files = [prepare_file(f"m{i}.py", _text(2, f"kiln{i}")) for i in range(300)]
    statements: list[str] = []

    def put(rows) -> None:
        def tracer(cursor, sql: str, bindings) -> bool:
            statements.append(sql)
            return True

        db.conn.exec_trace = tracer
        try:
            db.write(lambda tx: put_files(tx, pid, rows))
        finally:
            db.conn.exec_trace = None

    put(files)
    # an executemany is traced a row at a time: the lookups are the statements to count
    lookups = [s for s in statements if s.startswith("SELECT") and "FROM files" in s]
    assert len(lookups) <= 2, lookups
    put(files)  # redone
    put([prepare_file("m7.py", _text(5, "glaze"))])
    _assert_ranges(db, pid)
    assert db.query("SELECT count(*) FROM files") == [(300,)]
    db.close()
