"""The project index leaves out the free-standing words search never looks up alone
(stopwords, single characters) and keeps every chunk's full length: FTS5's BM25 rank,
the sizes and totals the engine reads, and every phrase of the other words are those of
an index of the whole text."""

from __future__ import annotations

import random
from collections import Counter

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_batch, prepare_file
from memoryd.storage import corpus, fts
from memoryd.storage.authority import open_authority
from memoryd.storage.corpus import FTS_TOKENIZER, fts_table, project_id
from memoryd.storage.rebuild import fts_digest
from memoryd.storage.unsearched import _ALONE, GAP, RUN_GAPS, index_text, varint_bytes, varints
from memoryd.text import terms
from memoryd.text.terms import STOPWORDS, words

PROSE = (
    "The loop reads the file and then it is closed. If a value is not set, get the "
    "default; use os.path.join or is_file for it. Uses of sorted() are current.\n"
)
CODE = (
    "def is_file(path, x=1):\n    if x is None or not path:\n        return the_value\n"
    "    for i in range(2): yield read_file(path) # read the file\n"
)


def _separator(byte: bytes) -> bool:
    return byte == b"" or (byte < b"\x80" and not byte.isalnum() and byte not in b"_.")


def _expected(text: str) -> tuple[list[str], int]:
    """The rule, token by token (unicode61's own offsets): a token is left out when
    it is a word of ``_ALONE`` spelled lower, upper or capitalized with an ASCII
    separator (not "_" or ".") or an end on each side; each run left out between two
    kept tokens becomes one gap."""
    data = text.encode()
    out: list[str] = []
    left_out = 0
    for start, end, word in terms._WORDS(
        data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True
    ):
        raw = data[start:end].decode()
        before, after = data[start - 1 : start] if start else b"", data[end : end + 1]
        alone = word in _ALONE and raw in (word, word.upper(), word.capitalize())
        if alone and _separator(before) and _separator(after):
            left_out += 1
            if out and out[-1] != GAP:
                out.append(GAP)
        else:
            out.append(word)
    if out and out[-1] == GAP:
        out.pop()
    return out, left_out - out.count(GAP)


def _indexed(text: str) -> tuple[str, int]:
    """``index_text(text)`` with each run's gap token written as GAP (which one a run
    gets is checked apart)."""
    indexed, left_out = index_text(text)
    return indexed.translate(dict.fromkeys(map(ord, RUN_GAPS), GAP)), left_out


def _check(text: str) -> None:
    indexed, left_out = _indexed(text)
    assert (words(indexed), left_out) == _expected(text), text


def test_free_standing_words_go_identifiers_stay() -> None:
    assert _indexed("read the file") == (f"read {GAP} file", 0)
    assert _indexed("if x is not None: return 1") == ("None return", 5)
    assert _indexed("os.path.join(a, b) is_file the.") == (f"os.path.join {GAP} is_file the.", 1)
    assert _indexed("The IF Is a") == ("", 4)
    assert _indexed("naïve a café") == (f"naïve {GAP} café", 0)
    assert _indexed("café—the end") == ("café—the end", 0)  # next to non-ASCII: kept
    # a stopword whose stem a content word shares stays: "uses" counts every "use"
    assert _indexed("we use it; it uses them") == (f"use {GAP} uses", 3)
    for text in (PROSE, CODE, PROSE + CODE):
        _check(text)


_PIECES = sorted(STOPWORDS)[::7] + ["x", "7", "read", "file", "Path", "é", "naïve", "42"]
_SEPARATORS = [" ", "  ", "\n", "_", ".", ". ", ", ", "(", ")", "—", "'", "\t"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SEPARATORS)), max_size=30))
def test_any_text_keeps_its_other_words_and_their_neighbours(parts) -> None:
    text = "".join(w.capitalize() if len(w) % 3 == 0 else w + s for w, s in parts)
    _check(text)


def test_varints_round_trip() -> None:
    values = [0, 1, 127, 128, 300, 16383, 16384, 2**21 + 5, 2**40]
    assert varints(varint_bytes(values)) == values


def _files() -> dict[str, str]:
    rng = random.Random(7)
    vocab = ["kiln", "glaze", "read", "file", "loop", "value", "path", "socket"]
    out = {}
    for i in range(24):
        lines = []
        for _ in range(rng.randint(3, 40)):
            words_ = [rng.choice(vocab + sorted(STOPWORDS)[:40] + ["x", "1"]) for _ in range(9)]
            lines.append(" ".join(words_) + (" read_file(is_file)" if rng.random() < 0.2 else ""))
        out[f"d{i % 3}/f_{i}.md"] = "\n".join([PROSE, *lines, CODE])
    return out


def _packed_store(tmp_path, files: dict[str, str]):
    """A stored index whose blocks are packed (level 0: the frames as they are), so
    its chunks are indexed as index text."""
    db = open_authority(tmp_path, load_config(tmp_path))
    pid = db.write(lambda tx: corpus.ensure_project(tx, "p", None))
    rows, blocks = prepare_batch([(k, v.encode()) for k, v in files.items()], block_bytes=4096)
    db.write(lambda tx: corpus.put_files(tx, pid, rows, None, blocks))
    packed, more = corpus.pack_blocks(db, pid, 0, 2**40)
    assert not more
    assert db.write(lambda tx: corpus.store_packed(tx, pid, packed)) == len(packed) > 1
    return db


def _full_index(db, pid: int) -> str:
    """The project's chunks indexed whole, as before this layout, in a temp table."""
    db.conn.execute(
        "CREATE VIRTUAL TABLE temp.whole USING fts5(body, path, content='',"
        f" contentless_delete=1, tokenize='{FTS_TOKENIZER}')"
    )
    for file_id, path, text in corpus.live_texts(db.conn, pid):
        lines = text.split("\n")
        for rowid, a, b in db.query(
            "SELECT id, start_line, end_line FROM chunks WHERE file_id = ?", (file_id,)
        ):
            db.conn.execute(
                "INSERT INTO temp.whole (rowid, body, path) VALUES (?, ?, ?)",
                (rowid, "\n".join(lines[a - 1 : b]), path),
            )
    return "temp.whole"


QUERIES = [
    "kiln",
    "glaze OR socket",
    "read AND file",
    '"read file"',
    '"is file"',
    '"read file" OR "loop value"',
    '"file loop"',
    "path",
    "d1",
]


def test_ranks_sizes_and_phrases_are_those_of_the_whole_text(tmp_path) -> None:
    db = _packed_store(tmp_path, _files())
    pid = project_id(db, "p")
    # replaced and retired files go through FTS5's contentless delete (sizes subtracted)
    db.write(lambda tx: corpus.retire_files(tx, pid, ["d0/f_3.md"]))
    changed = prepare_file("d1/f_4.md", (PROSE * 3 + "glaze the kiln").encode())
    db.write(lambda tx: corpus.put_files(tx, pid, [changed]))
    whole = _full_index(db, pid)
    t = fts_table(pid)
    assert db.query(f"SELECT id, sz FROM {t}_docsize ORDER BY id") == db.query(
        f"SELECT id, sz FROM {whole}_docsize ORDER BY id"
    )
    assert db.query(f"SELECT block FROM {t}_data WHERE id = 1") == db.query(
        f"SELECT block FROM {whole}_data WHERE id = 1"
    )
    for match in QUERIES:
        ours = db.query(f"SELECT rowid, rank FROM {t} WHERE {t} MATCH ? ORDER BY rank", (match,))
        theirs = db.query(
            f"SELECT rowid, rank FROM {whole} WHERE whole MATCH ? ORDER BY rank", (match,)
        )
        assert ours == theirs and (ours or match == '"is file"'), match
    # the engine's own reads: postings (occurrences and sizes) of every content word
    db.conn.execute("CREATE VIRTUAL TABLE temp.whole_inst USING fts5vocab(temp, whole, instance)")
    for stem in ("kiln", "glaze", "read", "file", "loop", "valu", "path", "socket", "us"):
        theirs = db.query(
            "SELECT p.doc, p.n, d.sz FROM (SELECT doc, count(*) AS n FROM temp.whole_inst"
            " WHERE term = ? GROUP BY doc) AS p JOIN temp.whole_docsize AS d ON d.id = p.doc"
            " ORDER BY p.doc",
            (stem,),
        )
        assert fts.postings(db, pid, stem) == theirs, stem
    # a rebuild makes the same layout: packed blocks' chunks as index text, others whole
    before = fts_digest(db.conn, pid)
    db.write(lambda tx: corpus.rebuild_index(tx, pid))
    assert fts_digest(db.conn, pid) == before
    db.close()


def test_the_index_is_smaller(tmp_path) -> None:
    db = _packed_store(tmp_path, _files())
    pid = project_id(db, "p")
    db.write(lambda tx: corpus.merge_index(tx, pid, 1))  # as the last pack job does
    _full_index(db, pid)
    db.conn.execute("INSERT INTO temp.whole (whole) VALUES ('optimize')")
    size = {
        name: db.query("SELECT sum(pgsize) FROM dbstat(?) WHERE name = ?", (schema, name))[0][0]
        for schema, name in (("main", f"{fts_table(pid)}_data"), ("temp", "whole_data"))
    }
    assert size[f"{fts_table(pid)}_data"] < 0.85 * size["whole_data"]
    db.close()


def test_the_sizes_are_written_again_in_bounded_steps(tmp_path) -> None:
    """The end of a pack pass writes the index's sizes again in steps of a bounded number
    of rows, each its own commit (a whole large tree's in one commit grew the WAL far past
    its bound), and ends with the same sizes and ranking."""
    files = {f"c{n}/{path}": text for n in range(12) for path, text in _files().items()}
    db = _packed_store(tmp_path, files)
    pid = project_id(db, "p")
    t = fts_table(pid)
    before = db.query(f"SELECT id, sz FROM {t}_docsize ORDER BY id")
    ranks = {m: db.query(f"SELECT rowid, rank FROM {t} WHERE {t} MATCH ?", (m,)) for m in QUERIES}
    step_pages = 1
    limit = step_pages * corpus.SIZES_PER_PAGE
    assert len(before) > 2 * limit, "enough rows for several steps"
    state, steps = None, []
    while True:
        changes = db.conn.total_changes()
        state = db.write(lambda tx, s=state: corpus.merge_index(tx, pid, 1, s, step_pages))
        steps.append(db.conn.total_changes() - changes)
        if state is None:
            break
        assert len(steps) < 10 * len(before), "the steps end"
    sized = [n for n in steps if n >= limit]  # the steps that wrote sizes (2 changes a row)
    assert len(sized) >= 2 and max(steps) <= 2 * limit + 4 * step_pages, steps
    assert db.query(f"SELECT id, sz FROM {t}_docsize ORDER BY id") == before
    assert ranks == {
        m: db.query(f"SELECT rowid, rank FROM {t} WHERE {t} MATCH ?", (m,)) for m in QUERIES
    }
    db.close()


def test_free_pages_are_given_back_in_bounded_steps(tmp_path) -> None:
    """Many pages freed at once (a merge's old segments) are given back a bounded number
    per commit, each step reporting what is left, until none is: every page given back
    moves one into the WAL, so one commit for all of them grows it past its bound."""
    db = open_authority(tmp_path, load_config(tmp_path))
    db.write(lambda tx: tx.execute("CREATE TABLE big (b BLOB)"))
    db.write(lambda tx: tx.executemany("INSERT INTO big VALUES (zeroblob(8192))", [()] * 200))
    db.write(lambda tx: tx.execute("DROP TABLE big"))
    free = db.query("PRAGMA freelist_count")[0][0]
    assert free > 300
    lefts = []
    while not lefts or lefts[-1]:
        lefts.append(db.write(lambda tx: corpus.reclaim_free_pages(tx, 100)))
        assert len(lefts) <= free, "the steps end"
    assert lefts[0] == free - 100 and len(lefts) == -(-free // 100), lefts
    assert db.query("PRAGMA freelist_count") == [(0,)]
    db.close()


def test_a_forget_leaves_the_connections_secure_delete_as_it_was(tmp_path) -> None:
    """A memory forget turns ``secure_delete`` ON for its own deletes only: the
    authority's FAST is back after it (set back as the number 2, it would stay ON and
    write every freed page of every later delete to the WAL)."""
    from memoryd.storage import records

    db = open_authority(tmp_path, load_config(tmp_path))
    assert db.query("PRAGMA secure_delete") == [(2,)]
    db.write(lambda tx: records.forget_in(tx, []))
    assert db.query("PRAGMA secure_delete") == [(2,)]
    db.close()


def test_runs_left_out_spread_over_the_gap_tokens() -> None:
    """A run's token follows the text kept before it, so no one gap token is in every
    chunk (FTS5 merges a term's whole list in one step), and never the context
    separator."""
    rng = random.Random(3)
    kept = ["read", "file_name", "value", "os.path", "configuration", "x_y", "sorted"]
    text = " ".join(f"{' '.join(rng.choices(kept, k=rng.randint(1, 4)))} the" for _ in range(300))
    indexed, _ = index_text(text)
    used = Counter(c for c in indexed if c in RUN_GAPS)
    assert set(used) == set(RUN_GAPS) and GAP not in indexed, used
    assert max(used.values()) < sum(used.values()) / 2, used
    first = index_text("read the file")[0]
    assert first == index_text("read a file")[0], "the text before picks the token"
