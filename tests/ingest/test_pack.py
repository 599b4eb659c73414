"""An ingest's batches write body blocks final (at ``body_pack_level``,
their chunks indexed as index text); after the run ingest.pack jobs merge its index as
far as the run wrote of it in bounded steps (after a first ingest: one segment), and
pack an older home's blocks not packed yet: the same texts and answers in fewer bytes;
a kill mid-pass leaves every block old or new and a later supervisor finishes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import PACK_TEXT_BYTES
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.storage import corpus, fts, index_sizes
from tests.conftest import query
from tests.ingest.test_store import _repo, with_dictionary

QUERIES = ("render page_7", "handler_20_4 request", "Module 3", "the page of a request")


def _home(root: Path, name: str, level: int | None = None) -> Path:
    """A home whose batches (and so blocks) hold 4 files and whose project stores its
    index."""
    home = root / name
    home.mkdir(exist_ok=True)
    config = "ingest_batch_files = 4\ncompact_max_bytes = 0\n"
    if level is not None:
        config += f"body_pack_level = {level}\n"
    (home / "memoryd.toml").write_text(config)
    return home


def _texts(md: Memoryd) -> dict[str, str]:
    ids = dict(md.db.query("SELECT id, path FROM files WHERE live = 1"))
    return {ids[fid]: text for fid, text in corpus.file_texts(md.db, ids).items()}


def _state(home: Path) -> tuple[list, int]:
    packed = query(home, "SELECT packed, count(*) FROM body_blocks GROUP BY 1")
    return packed, query(home, "SELECT sum(length(data)) FROM body_blocks")[0][0]


def test_blocks_packed_after_the_run_same_texts_and_answers(tmp_path: Path) -> None:
    """Level 0 packs without compressing again: the same index text, the same
    answers, bigger blocks."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 56)
    (repo / "notes.md").write_text("The request of a handler is the page it renders.\n" * 40)
    homes = {"off": _home(tmp_path, "off", 0), "on": _home(tmp_path, "on", None)}
    seen = {}
    for name, home in homes.items():
        md = Memoryd(home)
        Projects(md).ingest(repo, wait=True, workers=1)  # waits for the follow-up jobs too
        seen[name] = (_texts(md), [Search(md).search(q, limit=5) for q in QUERIES])
        assert Home(md).rebuild(verify=True)["equal"]
        md.close()
    assert seen["on"] == seen["off"]
    [(packed, n)], size_off = _state(homes["off"])
    assert packed == 1 and n > 2
    assert _state(homes["on"])[0] == [(1, n)] and _state(homes["on"])[1] < size_off
    # the index merged into one segment, without the words never looked up alone
    for home in homes.values():
        assert query(home, "SELECT count(DISTINCT segid) FROM fts_1_idx") == [(1,)]
        assert query(home, "SELECT count(*) FROM fts_1_vocab WHERE term = 'the'") == [(0,)]


def test_the_pass_ends_with_the_chunk_sizes_of_the_generation_it_leaves(tmp_path: Path) -> None:
    """The pack pass's last job stores every chunk's size for the project's generation:
    the first search after the ingest reads them in one row, not a row per chunk."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 12)
    home = _home(tmp_path, "home")
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    generation = md.db.query("SELECT generation FROM projects WHERE id = 1")[0][0]
    assert query(home, "SELECT project_id, generation FROM index_sizes") == [(1, generation)]
    stored = index_sizes.load(md.db, 1, generation, fts.averages(md.db, 1))
    sizes = dict(md.db.query("SELECT id, sz FROM fts_1_docsize"))
    assert stored is not None and len(sizes) == int((stored[1] != 0xFFFF).sum()) > 12
    md.close()


@pytest.mark.slow
def test_a_pass_killed_before_its_commit_is_finished_later(cli, home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 56)
    _home(home.parent, home.name)
    assert cli("ingest", str(repo), "--json").code == 0  # enqueued only
    killed = cli("run", "--drain", "--workers", "1", env={"MEMORYD_KILL_AT": "pack_mid_apply"})
    assert killed.code == -9
    assert [packed for packed, _ in _state(home)[0]] == [1]  # the batches wrote them final
    # the pass's first commit never happened: the index is in the batches' segments
    assert query(home, "SELECT count(DISTINCT segid) FROM fts_1_idx")[0][0] > 1
    md = Memoryd(home)  # a valid home: every text reads back, search answers
    sources = {p.name: p.read_text() for p in repo.iterdir()}
    assert _texts(md) == sources
    before = [Search(md).search(q, limit=5) for q in QUERIES]
    md.close()

    assert cli("run", "--drain", "--workers", "1").code == 0
    assert query(home, "SELECT count(DISTINCT segid) FROM fts_1_idx") == [(1,)]
    md = Memoryd(home)
    assert _texts(md) == sources
    assert [Search(md).search(q, limit=5) for q in QUERIES] == before
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()


def test_a_packed_block_written_again_rebuilds_equal(tmp_path: Path) -> None:
    """A packed block left holding less live text than dead is written again with its
    live files; their chunks keep the index text they were packed with, and the new
    block keeps the packed flag that says so: the index rebuilds equal at once, before
    any pack job runs."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 8)
    md = Memoryd(_home(tmp_path, "home"))
    Projects(md).ingest(repo, wait=True, workers=1)
    block = md.db.query("SELECT min(block_id) FROM files")[0][0]
    paths = [r[0] for r in md.db.query("SELECT path FROM files WHERE block_id = ?", (block,))]
    assert len(paths) == 4 and md.db.query("SELECT packed FROM body_blocks") == [(1,), (1,)]
    pid = md.db.query("SELECT id FROM projects")[0][0]
    md.db.write(lambda tx: corpus.retire_files(tx, pid, paths[:3]))
    [(new, files, packed)] = md.db.query(
        "SELECT id, files, packed FROM body_blocks WHERE id NOT IN"
        " (SELECT block_id FROM files WHERE path NOT IN (?, ?, ?, ?))",
        tuple(paths),
    )
    assert new != block and files == 1 and packed == 1
    assert Home(md).rebuild(verify=True)["equal"]
    assert _texts(md) == {p.name: p.read_text() for p in repo.iterdir() if p.name not in paths[:3]}
    md.close()


def _answers(md: Memoryd) -> list:
    return [Search(md).search(q, limit=5) for q in QUERIES]


def test_a_run_that_deletes_rows_merges_their_terms_away(tmp_path: Path) -> None:
    """The first run's pass merges the whole index into one segment; a one-file run's
    pass, which deleted the old file's rows (tombstones: their terms stay in the
    segment's pages), writes the index again as one segment without them and
    answers as the same index rebuilt whole; so does a run rewriting most
    files. A run that only adds files leaves the large segment as it is."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 56)
    md = Memoryd(_home(tmp_path, "home"))
    Projects(md).ingest(repo, wait=True, workers=1)
    pid = md.db.query("SELECT id FROM projects")[0][0]
    [main] = corpus.index_segments(md.db.conn, pid)
    assert main.rows == md.db.query("SELECT count(*) FROM chunks")[0][0] and not main.dead
    [(old,)] = md.db.query("SELECT chunk_count FROM files WHERE path = 'mod_003.py'")

    (repo / "mod_003.py").write_text("def kiln_schedule(glaze):\n    return glaze\n")
    Projects(md).ingest(repo, wait=True, workers=1)
    [merged] = corpus.index_segments(md.db.conn, pid)
    chunks = md.db.query("SELECT count(*) FROM chunks")[0][0]
    assert merged.rows == chunks == main.rows - old + 1 and not merged.dead
    answers = _answers(md) + [Search(md).search("kiln schedule", limit=3)]
    assert answers[-1]["items"][0]["path"] == "mod_003.py"
    assert Home(md).rebuild(verify=True)["equal"]
    md.db.write(lambda tx: corpus.rebuild_index(tx, pid))
    assert _answers(md) + [Search(md).search("kiln schedule", limit=3)] == answers

    _repo(tmp_path / "repo", 40)  # the same texts: unchanged
    for path in sorted(repo.glob("mod_0[0-3]*.py")):
        path.write_text(path.read_text().replace("render", "paint"))
    Projects(md).ingest(repo, wait=True, workers=1)
    [whole] = corpus.index_segments(md.db.conn, pid)

    # a run that only adds a file deletes nothing: the large segment is not written again
    (repo / "mod_new.py").write_text("def fresh_glaze(kiln):\n    return kiln\n")
    Projects(md).ingest(repo, wait=True, workers=1)
    assert whole in corpus.index_segments(md.db.conn, pid)
    md.close()


def test_a_job_packs_a_bounded_text_the_pass_takes_as_many_as_it_needs(tmp_path: Path) -> None:
    """A job packs blocks until the next would take its text past PACK_TEXT_BYTES; the
    pass's next job takes the rest, and its last writes the sizes of every row the
    pass indexed: the index is the one a rebuild makes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    line = "def handler_{}(request, response):\n    return render(request, 'page_{}')\n"
    per_file = 1 + PACK_TEXT_BYTES // 4 // len(line.format(10**5, 10**5))
    for f in range(5):  # a block each, a quarter of the bound and a line: 3 a job
        body = "".join(line.format(f * 10**6 + i, i % 97) for i in range(per_file))
        (repo / f"big_{f}.py").write_text(body)
    home = tmp_path / "home"
    home.mkdir()
    config = "compact_max_bytes = 0\nbody_pack_level = 0\ningest_batch_files = 1\n"
    (home / "memoryd.toml").write_text(config)
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    assert md.db.query("SELECT packed, count(*) FROM body_blocks GROUP BY 1") == [(1, 5)]
    jobs = md.db.query("SELECT count(*) FROM jobs WHERE kind = 'ingest.pack' AND state = 'done'")
    assert jobs == [(3,)]  # two pack, then the sizes of the generation they leave
    assert Home(md).rebuild(verify=True)["equal"]
    assert Search(md).search("handler_4000005 request", limit=1)["items"][0]["path"] == "big_4.py"
    md.close()


@pytest.mark.parametrize("case", ["packed", "level 0", "a file's own frame"])
def test_an_older_homes_dictionary_goes_once_no_frame_names_it(tmp_path: Path, case: str) -> None:
    """An upgraded home whose blocks' frames name its dictionary, not packed yet: the
    pass compresses them again without it and deletes the dictionary; it stays while a
    frame still names it (level 0 keeps the frames; a file's own frame). Every text
    reads back, in a process that never read the dictionary before."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 8)
    home = _home(tmp_path, "home", 0 if case == "level 0" else None)
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)

    def older(tx) -> None:
        cctx = with_dictionary(tx)
        tx.execute("UPDATE body_blocks SET packed = 0")
        if case == "a file's own frame":
            fid, block = tx.execute("SELECT id, block_id FROM files LIMIT 1").fetchone()
            text = corpus.file_texts(tx, [fid])[fid].encode()
            tx.execute("UPDATE files SET body = ?, block_id = NULL, block_start = NULL,"
                       " block_end = NULL WHERE id = ?", (cctx.compress(text), fid))  # fmt: skip
            tx.execute("UPDATE body_blocks SET files = files - 1 WHERE id = ?", (block,))

    md.db.write(older)
    Projects(md).ingest(repo, wait=True, workers=1)  # nothing changed; the run's pass packs
    assert md.db.query("SELECT packed FROM body_blocks") == [(1,), (1,)]
    assert md.db.query("SELECT count(*) FROM zdicts") == [(0,) if case == "packed" else (1,)]
    md.close()
    corpus.forget_dictionaries()
    md = Memoryd(home)
    assert _texts(md) == {p.name: p.read_text() for p in repo.iterdir()}
    md.close()


def test_a_block_read_across_the_commit_that_deletes_its_dictionary_is_read_again(
    tmp_path: Path,
) -> None:
    """A reader reads a block's frame naming the dictionary; before it looks the
    dictionary up, a pass (another connection) writes the frame again without it and
    deletes it: the reader reads the block again and gets its text."""
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 8)
    home = _home(tmp_path, "home")
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)

    def older(tx) -> None:
        with_dictionary(tx)
        tx.execute("UPDATE body_blocks SET packed = 0")

    md.db.write(older)
    pid, fid = md.db.query("SELECT project_id, id FROM files WHERE path = 'mod_005.py'")[0]
    writer = Memoryd(home)

    def the_pass(tx) -> None:
        corpus.store_packed(tx, pid, corpus.pack_blocks(writer.db, pid, 3, 2**40)[0])
        assert corpus.drop_unnamed_dictionaries(tx, pid) == 1

    passes = []

    def between(cursor, sql: str, bindings) -> bool:
        if "FROM zdicts" in sql and not passes:
            passes.append(writer.db.write(the_pass))
        return True

    corpus.forget_dictionaries()
    md.db.conn.exec_trace = between
    try:
        text = corpus.file_texts(md.db, [fid])[fid]
    finally:
        md.db.conn.exec_trace = None
    assert passes and text == (repo / "mod_005.py").read_text()
    assert md.db.query("SELECT count(*) FROM zdicts") == [(0,)]
    writer.close()
    md.close()
