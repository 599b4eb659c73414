"""A positional FTS5 copy of a project's index, the layout memoryd stored before its
index dropped positions: what tests compare BM25 and phrase answers with."""

from __future__ import annotations

from memoryd.storage import corpus


def positional_index(db, pid: int) -> str:
    """Build (again) ``temp.ref_<pid>``: ``fts5(body, path)`` with positions over the
    very rows the project's index holds (texts from the stored bodies). Returns its
    name, for MATCH and ``ORDER BY rank``."""
    name = f"ref_{int(pid)}"
    conn = db.conn
    rowids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE project_id = ?", (pid,))]
    conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    conn.execute(
        f"CREATE VIRTUAL TABLE temp.{name} USING fts5(body, path, content='',"
        f" tokenize='{corpus.FTS_TOKENIZER}')"
    )
    rows = corpus.chunk_rows(conn, rowids) if rowids else []
    conn.executemany(f"INSERT INTO temp.{name} (rowid, body, path) VALUES (?, ?, ?)", rows)
    return name
