"""Issue 13: migration 13 builds an older home's project index again without the words
search never looks up alone (memoryd.storage.unsearched). It runs in the migration's
transaction: a kill leaves the old index and schema 12, and the next open finishes it;
answers, sizes and `rebuild --verify` stay equal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.api import Memoryd
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


def _migrate_killed(home: Path) -> int:
    """Open the home in a process SIGKILLed after the migration's first file."""
    env = {**os.environ, "MEMORYD_KILL_AT": "index_mid_fill"}
    code = "import sys; from memoryd.api import Memoryd; Memoryd(sys.argv[1]).db"
    return subprocess.run([sys.executable, "-c", code, str(home)], env=env, timeout=120).returncode


@pytest.mark.slow
def test_an_older_home_is_indexed_again(home: Path, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    repo = _repo(tmp_path / "repo", 12)
    (repo / "notes.md").write_text("The request of a handler is the page it renders.\n" * 40)
    home.mkdir()
    (home / "memoryd.toml").write_text("compact_max_bytes = 0\n")  # its index stored
    md = Memoryd(home)
    md.ingest(repo, wait=True, workers=1)
    before = [md.search(q, limit=5) for q in QUERIES]
    md.close()
    new_state = _index_state(home)
    _as_schema_12(home)
    assert query(home, "PRAGMA user_version") == [(12,)]
    old_state = _index_state(home)
    assert old_state[:2] == new_state[:2] and old_state[2] == [(1,)] != new_state[2]

    # Killed mid-migration: nothing of it committed, the old index whole.
    assert _migrate_killed(home) == -9
    assert query(home, "PRAGMA user_version") == [(12,)]
    assert _index_state(home) == old_state

    md = Memoryd(home)  # the next open migrates
    assert md.db.user_version() == CURRENT_VERSION
    assert _index_state(home) == new_state
    assert [md.search(q, limit=5) for q in QUERIES] == before
    assert md.rebuild(verify=True)["equal"]
    md.close()
