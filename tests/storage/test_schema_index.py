"""Migration 13 on an older home (every chunk indexed whole, blocks compressed at
ingest's level): the index stays as it is (the layout of unpacked blocks) and the
migration enqueues nothing; the next supervisor enqueues a pack job per project as it
starts, packs the blocks and indexes their chunks without the words never looked up
alone. Answers, sizes and `rebuild --verify` stay equal throughout (the pack pass's
kill: tests/ingest/test_pack). A start enqueues a pack job only where no job will pack
the blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.ingest.jobs import PACK, pack_job, stranded_packs
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.queue import JobQueue
from memoryd.storage import corpus
from memoryd.storage.corpus import FTS_TOKENIZER, fts_table
from memoryd.storage.schema import CURRENT_VERSION
from tests.conftest import downgrade_sql, query
from tests.ingest.test_store import _repo

QUERIES = ("render page_7", "handler_20_4 request", "the request of a handler", "Module 3")


def _as_schema_12(home: Path) -> None:
    """Index every project's chunks whole, as memoryd did before migration 13."""

    def whole(tx) -> None:
        for (pid,) in tx.execute("SELECT id FROM projects").fetchall():
            t = fts_table(pid)
            tx.execute(f"DROP TABLE {t}_vocab")
            tx.execute(f"DROP TABLE {t}")
            tx.execute(
                f"CREATE VIRTUAL TABLE {t} USING fts5(body, path, content='',"
                f" contentless_delete=1, tokenize='{FTS_TOKENIZER}')"
            )
            tx.execute(f"CREATE VIRTUAL TABLE {t}_vocab USING fts5vocab({t}, row)")
            for file_id, path, text in list(corpus.live_texts(tx, pid)):
                lines = text.split("\n")
                for rowid, a, b in tx.execute(
                    "SELECT id, start_line, end_line FROM chunks WHERE file_id = ?", (file_id,)
                ).fetchall():
                    tx.execute(
                        f"INSERT INTO {t} (rowid, body, path) VALUES (?, ?, ?)",
                        (rowid, "\n".join(lines[a - 1 : b]), path),
                    )
        tx.execute(downgrade_sql(12))

    md = Memoryd(home)
    md.db.write(whole)
    md.close()


def _index_state(home: Path) -> tuple:
    return (
        query(home, "SELECT id, sz FROM fts_1_docsize ORDER BY id"),
        query(home, "SELECT block FROM fts_1_data WHERE id = 1"),
        query(home, "SELECT count(*) FROM fts_1_vocab WHERE term = 'the'"),
    )


@pytest.mark.slow
def test_an_older_home_is_packed_after_the_migration(cli, home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 12)
    (repo / "notes.md").write_text("The request of a handler is the page it renders.\n" * 40)
    home.mkdir()
    (home / "memoryd.toml").write_text("compact_max_bytes = 0\n")  # its index stored
    md = Memoryd(home)
    Projects(md).ingest(repo, wait=True, workers=1)
    before = [Search(md).search(q, limit=5) for q in QUERIES]
    md.close()
    packed_state = _index_state(home)
    _as_schema_12(home)
    assert query(home, "PRAGMA user_version") == [(12,)]
    whole_state = _index_state(home)
    assert whole_state[:2] == packed_state[:2] and whole_state[2] == [(1,)] != packed_state[2]

    md = Memoryd(home)  # migrates: the index as it was, no job enqueued yet
    assert md.db.user_version() == CURRENT_VERSION
    assert _index_state(home) == whole_state
    packs = "SELECT state, count(*) FROM jobs WHERE kind = 'ingest.pack' GROUP BY 1"
    ((_, done_before),) = query(home, packs)  # the first ingest's
    assert [Search(md).search(q, limit=5) for q in QUERIES] == before
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()

    assert cli("run", "--drain", "--workers", "1").code == 0  # its start enqueues the pack job
    ((state, done),) = query(home, packs)
    assert state == "done" and done > done_before
    assert _index_state(home) == packed_state
    md = Memoryd(home)
    assert [Search(md).search(q, limit=5) for q in QUERIES] == before
    assert Home(md).rebuild(verify=True)["equal"]
    md.close()


def test_a_start_enqueues_a_pack_job_only_where_no_job_will_pack_the_blocks(
    home: Path, tmp_path: Path
) -> None:
    """Blocks waiting unpacked get a pack job as a supervisor starts, unless the
    project's latest run is still going (its finish enqueues one) or a pack job of the
    project is live, or dead (left to `memoryd jobs retry`: it could die the same way)."""
    (tmp_path / "repo").mkdir()
    md = Memoryd(home)
    Projects(md).ingest(_repo(tmp_path / "repo", 4), wait=True, workers=1)
    ((pid, name),) = md.db.query("SELECT id, name FROM projects")

    def at_start() -> list[tuple[str, str | None]]:
        return [(s.kind, s.dedupe_key) for s in stranded_packs(home, md.config, md.db.conn)]

    def run(sql: str) -> None:
        md.db.write(lambda tx: tx.execute(sql))

    assert at_start() == []  # every block packed
    run("UPDATE body_blocks SET packed = 0")
    assert at_start() == [(PACK, f"{PACK}:{pid}")]
    run("UPDATE ingest_runs SET finished_at = NULL WHERE id = (SELECT max(id) FROM ingest_runs)")
    assert at_start() == []
    run("UPDATE ingest_runs SET finished_at = 1")
    job = JobQueue(md.db).enqueue(pack_job(pid, name))
    assert at_start() == []
    run(f"UPDATE jobs SET state = 'dead' WHERE id = {job}")
    assert at_start() == []
    md.close()
