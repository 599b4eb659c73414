"""Identical chunk text at several paths (vendored copies) is one item with ``also_at``."""

from __future__ import annotations

from memoryd.search import search

VENDORED = (
    "def crc_table():\n"
    '    """Build the lookup table of the cyclic redundancy checksum polynomial."""\n'
    "    return [poly_step(i) for i in range(256)]\n"
)
OTHER = (
    "def crc_verify(data, expected):\n"
    '    """Compare the cyclic redundancy checksum of data with the expected value."""\n'
    "    return crc(data) == expected\n"
)


def test_copies_fold_into_one_item_listing_their_paths(store, tmp_path):
    files = {f"vendor/v{i}/crc.py": VENDORED for i in range(4)}
    files["src/verify.py"] = OTHER
    files.update({f"notes/{i}.md": f"Sprint note {i}: nothing about checks." for i in range(20)})
    db = store(tmp_path, "p", files)
    r = search(db, "p", "cyclic redundancy checksum lookup table", limit=3)
    assert r["status"] == "ok"
    texts = [i["excerpt"] for i in r["items"]]
    assert len(texts) == len(set(texts))  # no two items with identical text
    first = r["items"][0]
    assert first["path"].startswith("vendor/")
    assert sorted([first["path"], *first["also_at"]]) == sorted(
        f"vendor/v{i}/crc.py" for i in range(4)
    )
    assert any(i["path"] == "src/verify.py" for i in r["items"])
    db.close()


def test_copies_text_is_read_from_one_of_them(store, tmp_path, monkeypatch):
    """Each copy of a vendored file sits in its own place (a body, or another block):
    a search reads one file per chunk text, and every copy's item is as before."""
    from memoryd.search import engine

    files = {f"vendor/v{i}/crc.py": VENDORED for i in range(4)}
    files.update({f"notes/{i}.md": f"Sprint note {i}: nothing about checks." for i in range(20)})
    db = store(tmp_path, "p", files)
    read: list[int] = []
    real = engine.file_texts
    monkeypatch.setattr(engine, "file_texts", lambda db, ids: read.extend(ids) or real(db, ids))
    r = search(db, "p", "cyclic redundancy checksum lookup table", limit=3)
    assert len(read) == 1
    assert "Build the lookup table" in r["items"][0]["excerpt"]
    assert len(r["items"][0]["also_at"]) == 3
    db.close()


def test_the_copy_read_is_the_one_whose_block_decompresses_least(tmp_path, monkeypatch):
    """Copies in two blocks, one at its block's end and one at the start of its own:
    the second is read (a block is decompressed up to the file read)."""
    from memoryd.base.config import load_config
    from memoryd.ingest.chunking import prepare_batch
    from memoryd.search import engine
    from memoryd.storage import open_authority
    from memoryd.storage.corpus import ensure_project, put_files

    db = open_authority(tmp_path, load_config(tmp_path))
    pid = db.write(lambda tx: ensure_project(tx, "p", None))
    filler = "".join(f"Sprint note {i}: nothing about checks.\n" for i in range(300)).encode()
    for batch in (
        [("vendor/a/notes.md", filler), ("vendor/a/crc.py", VENDORED.encode())],
        [("vendor/b/crc.py", VENDORED.encode()), ("vendor/b/notes.md", filler)],
    ):
        files, blocks = prepare_batch(batch, level=3)
        db.write(lambda tx, f=files, b=blocks: put_files(tx, pid, f, None, b, True))
    ids = dict(db.query("SELECT path, id FROM files"))
    read: list[int] = []
    real = engine.file_texts
    monkeypatch.setattr(engine, "file_texts", lambda db, ids: read.extend(ids) or real(db, ids))
    r = search(db, "p", "cyclic redundancy checksum lookup table", limit=3)
    assert read == [ids["vendor/b/crc.py"]]
    assert r["items"][0]["path"] == "vendor/a/crc.py"  # the item is the first copy's still
    assert r["items"][0]["also_at"] == ["vendor/b/crc.py"]
    db.close()
