"""Bytes of candidate project-index layouts on the chunks of an existing home (issue 13
part 3): what each way of indexing the same rows would cost, before building it.

Reads every live chunk of one project (its text from the stored file bodies, as
``corpus.rebuild_index`` does) and builds each layout in a scratch database of
its own, with memoryd's tokenizer, then ``optimize`` and ``VACUUM`` so that every
layout is measured merged (the store's own index is the yardstick: ``today`` is
the layout memoryd stores, rebuilt the same way). Layouts:

* ``today``: ``fts5(body, path)``, ``detail=full`` (positions: BM25's term
  frequencies and phrase queries);
* ``column`` / ``none``: the same with ``detail=column`` / ``detail=none``
  (no positions, so no term frequencies and no phrases);
* ``body+paths``: ``detail=full`` over the body only, each file's path indexed
  once in a table of its own (rowid = file id);
* ``tf-columns``: one ``detail=column`` table whose column says each term's
  frequency (columns 0-7: 1-8 occurrences; 8: more, plus its binary digits in
  columns 9-24), the FTS5-only way to keep exact frequencies without positions;
* ``none+tf-bits``: ``detail=none`` plus twelve ``detail=none`` tables, table
  ``k`` holding a chunk's term when bit ``k`` of its frequency less one is set
  (exact frequencies up to 4096); ``docsize`` of those tables shown apart,
  because ``contentless_delete`` requires it;
* ``none+tf-bits-nosize``: the same, the twelve tables with ``columnsize=0``
  (no ``docsize``; a row is then deleted by giving its terms back).

The projection replaces the store's index bytes (``fts_<id>*`` in dbstat) by each
layout's and divides by the project's live source bytes.

    .venv/bin/python ops/bench/bench_index_layouts.py HOME [--project NAME] [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import apsw

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memoryd.search.terms import stems  # noqa: E402
from memoryd.storage.corpus import FTS_TOKENIZER, file_text, fts_table  # noqa: E402

TF_BITS = 12
TF_UNARY = 8  # tf-columns: frequencies 1..8 by column alone
TF_BINARY = 16


def read_chunks(conn: apsw.Connection, pid: int) -> list[tuple[int, int, str, str]]:
    """Every live chunk of the project with its text, as the index sees it."""
    out = []
    files = conn.execute(
        "SELECT id, path, body FROM files WHERE project_id = ? AND live = 1", (pid,)
    ).fetchall()
    for file_id, path, body in files:
        lines = file_text(body, conn).split("\n")
        for rowid, start, end in conn.execute(
            "SELECT id, start_line, end_line FROM chunks WHERE file_id = ? ORDER BY ordinal",
            (file_id,),
        ):
            out.append((rowid, file_id, path, "\n".join(lines[start - 1 : end])))
    return out


def _fts(name: str, columns: str, detail: str, sizes: bool = True) -> str:
    """A contentless FTS5 table; without ``sizes`` no ``docsize`` (and so no
    ``contentless_delete``: rows are deleted by giving their indexed values back)."""
    options = "contentless_delete=1" if sizes else "columnsize=0"
    return (
        f"CREATE VIRTUAL TABLE {name} USING fts5({columns}, content='', {options},"
        f" detail={detail}, tokenize='{FTS_TOKENIZER}')"
    )


def _freqs(chunks) -> list[tuple[int, collections.Counter]]:
    """(rowid, stem -> occurrences over body and path) of each chunk."""
    return [(r, collections.Counter(stems(text) + stems(path))) for r, _, path, text in chunks]


def plain(detail: str) -> Callable:
    def fill(conn: apsw.Connection, chunks) -> None:
        conn.execute(_fts("t", "body, path", detail))
        conn.executemany(
            "INSERT INTO t (rowid, body, path) VALUES (?, ?, ?)",
            [(r, text, path) for r, _, path, text in chunks],
        )

    return fill


def body_and_paths(conn: apsw.Connection, chunks) -> None:
    conn.execute(_fts("t", "body", "full"))
    conn.execute(_fts("p", "path", "full"))
    conn.executemany(
        "INSERT INTO t (rowid, body) VALUES (?, ?)", [(r, text) for r, _, _, text in chunks]
    )
    paths = {f: p for _, f, p, _ in chunks}
    conn.executemany("INSERT INTO p (rowid, path) VALUES (?, ?)", sorted(paths.items()))


def _tf_columns_of(n: int) -> list[int]:
    if n <= TF_UNARY:
        return [n - 1]
    rest = n - TF_UNARY - 1
    return [TF_UNARY] + [TF_UNARY + 1 + k for k in range(TF_BINARY) if rest >> k & 1]


def tf_columns(conn: apsw.Connection, chunks) -> None:
    width = TF_UNARY + 1 + TF_BINARY
    names = [f"c{k}" for k in range(width)]
    conn.execute(_fts("t", ", ".join(names), "column"))
    rows = []
    for rowid, freq in _freqs(chunks):
        cols: list[list[str]] = [[] for _ in range(width)]
        for s, n in freq.items():
            for k in _tf_columns_of(n):
                cols[k].append(s)
        rows.append((rowid, *(" ".join(c) for c in cols)))
    marks = ",".join("?" * (width + 1))
    conn.executemany(f"INSERT INTO t (rowid, {', '.join(names)}) VALUES ({marks})", rows)


def none_tf_bits(conn: apsw.Connection, chunks, sizes: bool = True) -> None:
    plain("none")(conn, chunks)
    bits: list[list[tuple[int, str]]] = [[] for _ in range(TF_BITS)]
    for rowid, freq in _freqs(chunks):
        for k in range(TF_BITS):
            held = [s for s, n in freq.items() if (n - 1) >> k & 1]
            if held:
                bits[k].append((rowid, " ".join(held)))
    for k, rows in enumerate(bits):
        conn.execute(_fts(f"tf{k}", "b", "none", sizes))
        conn.executemany(f"INSERT INTO tf{k} (rowid, b) VALUES (?, ?)", rows)


LAYOUTS: dict[str, Callable] = {
    "today": plain("full"),
    "column": plain("column"),
    "none": plain("none"),
    "body+paths": body_and_paths,
    "tf-columns": tf_columns,
    "none+tf-bits": none_tf_bits,
    "none+tf-bits-nosize": lambda conn, chunks: none_tf_bits(conn, chunks, sizes=False),
}


def _optimize_all(conn: apsw.Connection) -> None:
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5(%'"
    ).fetchall():
        conn.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")


def measure(fill: Callable, chunks, page_size: int) -> dict[str, int]:
    """Bytes of the layout by table, merged and vacuumed, in a scratch database."""
    with tempfile.TemporaryDirectory(prefix="memoryd-layout-") as tmp:
        conn = apsw.Connection(str(Path(tmp) / "layout.db"))
        conn.execute(f"PRAGMA page_size = {page_size}")
        with conn:
            fill(conn, chunks)
            _optimize_all(conn)
        conn.execute("VACUUM")
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat WHERE name NOT LIKE 'sqlite_%' GROUP BY name"
        ).fetchall()
        conn.close()
    return dict(rows)


def _stored_index_bytes(conn: apsw.Connection, pid: int) -> int:
    prefix = fts_table(pid)
    return conn.execute(
        "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ? OR name GLOB ?",
        (prefix, prefix + "_*"),
    ).fetchone()[0]


def tf_histogram(chunks) -> dict[str, int]:
    """(term, chunk) pairs by occurrences: what any frequency encoding must hold."""
    hist: collections.Counter = collections.Counter()
    for _, freq in _freqs(chunks):
        for n in freq.values():
            hist["1" if n == 1 else "2-4" if n <= 4 else "5-8" if n <= 8 else "9+"] += 1
    return dict(hist)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("home", type=Path)
    ap.add_argument("--project", default=None, help="default: the home's only project")
    ap.add_argument("--only", nargs="*", choices=list(LAYOUTS), help="measure these layouts")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    conn = apsw.Connection(str(args.home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    if args.project:
        pid = conn.execute("SELECT id FROM projects WHERE name = ?", (args.project,)).fetchone()[0]
    else:
        (pid,) = conn.execute("SELECT id FROM projects").fetchone()
    source = conn.execute(
        "SELECT sum(size) FROM files WHERE project_id = ? AND live = 1", (pid,)
    ).fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    store = page_size * conn.execute("PRAGMA page_count").fetchone()[0]
    stored_index = _stored_index_bytes(conn, pid)
    chunks = read_chunks(conn, pid)
    report: dict = {
        "source_bytes": source,
        "store_bytes": store,
        "stored_index_bytes": stored_index,
        "chunks": len(chunks),
        "tf_pairs": tf_histogram(chunks),
        "layouts": {},
    }
    for name in args.only or LAYOUTS:
        tables = measure(LAYOUTS[name], chunks, page_size)
        total = sum(tables.values())
        report["layouts"][name] = {
            "index_bytes": total,
            "docsize_bytes": sum(v for k, v in tables.items() if k.endswith("_docsize")),
            "projected_store_bytes": store - stored_index + total,
            "projected_ratio": round((store - stored_index + total) / source, 3),
        }
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    ratio = store / source
    print(f"source {source:,} B, store {store:,} B ({ratio:.3f}x), index {stored_index:,} B")
    print(f"{len(chunks):,} chunks; (term, chunk) pairs by occurrences: {report['tf_pairs']}")
    for name, r in report["layouts"].items():
        print(
            f"{name:>13}: index {r['index_bytes']:>10,} B (docsize {r['docsize_bytes']:,})"
            f"  store {r['projected_store_bytes']:>10,} B  {r['projected_ratio']:.3f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
