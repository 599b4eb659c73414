"""All SQL of memory records: records, history, candidate states, the run log.

Functions named ``*_in`` take a connection inside an open write transaction
(the supervisor's group commit); the others read through any connection
(``db.query`` or ``conn.execute``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import apsw
import orjson

from memoryd.base.lazy import lazy_module
from memoryd.storage.authority import zeroing_freed
from memoryd.storage.lazy import MEMORY, reading, writing

hashlib = lazy_module("hashlib")  # OpenSSL's: loaded by a digest, not by every listing

RECORD_COLUMNS = (
    "id", "project_id", "scope", "kind", "status", "text", "triggers", "refs", "sources",
    "count", "pointer", "created_at", "updated_at", "last_seen_at",
)  # fmt: skip
_SELECT = f"SELECT {', '.join(RECORD_COLUMNS)} FROM memory_records"
JSON_COLUMNS = ("triggers", "refs", "sources")
MAX_SOURCES = 32  # a reinforced record keeps its first sources (bounded row)


def _record(row: tuple) -> dict:
    rec = dict(zip(RECORD_COLUMNS, row, strict=True))
    for name in JSON_COLUMNS:
        rec[name] = orjson.loads(rec[name])
    return rec


def _rows(conn: Any, sql: str, args: tuple = ()) -> list[tuple]:
    return list(conn.execute(sql, args))


def _no_digest() -> str:
    """The digest of an index that holds nothing (no memory tables yet)."""
    return hashlib.sha256().hexdigest()


# -- records ------------------------------------------------------------------------


@reading(MEMORY, lambda: 1)
def next_seq(tx: apsw.Connection, pid: int) -> int:
    row = tx.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM memory_records WHERE project_id = ?", (pid,)
    ).fetchone()
    return row[0]


@writing(MEMORY)
def insert_record_in(tx: apsw.Connection, rec: dict, now: float) -> None:
    """A new active record (``rec`` has the host-owned fields, lists as lists, and
    ``terms``: the indexed terms of its text and triggers, for ``memory_terms``)."""
    (n,) = tx.execute(
        "INSERT INTO memory_records (id, project_id, scope, scope_key, kind, text, norm_hash,"
        " nterms, triggers, refs, sources, count, created_at, updated_at, last_seen_at, seq)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING n",
        (
            rec["id"], rec["project_id"], rec["scope"], rec["scope_key"], rec["kind"],
            rec["text"], rec["norm_hash"], rec["nterms"], orjson.dumps(rec["triggers"]).decode(),
            orjson.dumps(rec["refs"]).decode(), orjson.dumps(rec["sources"]).decode(),
            rec.get("count", 1), now, now, now, next_seq(tx, rec["project_id"]),
        ),
    ).fetchone()  # fmt: skip
    tx.executemany(
        "INSERT OR IGNORE INTO memory_terms (term, n) VALUES (?, ?)", ((t, n) for t in rec["terms"])
    )


@reading(MEMORY, lambda: None)
def reinforce_in(tx: apsw.Connection, record_id: str, source: str | None, now: float) -> None:
    """A duplicate seen again: count, last seen, and its source among the sources."""
    pid, sources = tx.execute(
        "SELECT project_id, sources FROM memory_records WHERE id = ?", (record_id,)
    ).fetchone()
    merged = orjson.loads(sources)
    if source and source not in merged and len(merged) < MAX_SOURCES:
        merged.append(source)
    tx.execute(
        "UPDATE memory_records SET count = count + 1, last_seen_at = ?, updated_at = ?,"
        " sources = ?, seq = ? WHERE id = ?",
        (now, now, orjson.dumps(merged).decode(), next_seq(tx, pid), record_id),
    )


@reading(MEMORY, lambda: None)
def set_status_in(
    tx: apsw.Connection, record_id: str, status: str, pointer: str | None, now: float
) -> None:
    pid = tx.execute("SELECT project_id FROM memory_records WHERE id = ?", (record_id,)).fetchone()
    tx.execute(
        "UPDATE memory_records SET status = ?, pointer = ?, updated_at = ?, seq = ? WHERE id = ?",
        (status, pointer, now, next_seq(tx, pid[0]), record_id),
    )


@reading(MEMORY, dict)
def statuses(conn: Any, ids: Iterable[str]) -> dict[str, str]:
    """``{id: status}`` of the records named (missing ones are absent)."""
    ids = list(ids)
    if not ids:
        return {}
    rows = _rows(
        conn,
        "SELECT id, status FROM memory_records WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(ids).decode(),),
    )
    return dict(rows)


@reading(MEMORY, lambda: None)
def get_record(conn: Any, record_id: str) -> dict | None:
    rows = _rows(conn, f"{_SELECT} WHERE id = ?", (record_id,))
    return _record(rows[0]) if rows else None


@reading(MEMORY, list)
def list_records(
    conn: Any, pid: int, status: str | None, kind: str | None, limit: int
) -> list[dict]:
    """Newest first."""
    where, args = "project_id = ?", [pid]
    for name, value in (("status", status), ("kind", kind)):
        if value:
            where += f" AND {name} = ?"
            args.append(value)
    rows = _rows(conn, f"{_SELECT} WHERE {where} ORDER BY n DESC LIMIT ?", (*args, limit))
    return [_record(r) for r in rows]


@reading(MEMORY, list)
def history(conn: Any, record_id: str) -> list[dict]:
    rows = _rows(
        conn,
        "SELECT at, action, candidate_id, detail FROM memory_history WHERE record_id = ?"
        " ORDER BY id",
        (record_id,),
    )
    return [dict(zip(("at", "action", "candidate_id", "detail"), r, strict=True)) for r in rows]


@writing(MEMORY)
def add_history_in(
    tx: apsw.Connection, record_id: str, action: str, cid: str | None, detail: str | None, now
) -> None:
    tx.execute(
        "INSERT INTO memory_history (record_id, at, action, candidate_id, detail)"
        " VALUES (?, ?, ?, ?, ?)",
        (record_id, now, action, cid, detail),
    )


@reading(MEMORY, list)
def exact_duplicates(conn: Any, pid: int, scope_key: str, norm_hash: str) -> list[str]:
    """Active records of a scope with the same normalized text."""
    rows = _rows(
        conn,
        "SELECT id FROM memory_records WHERE project_id = ? AND scope_key = ? AND norm_hash = ?"
        " AND status = 'active' ORDER BY n",
        (pid, scope_key, norm_hash),
    )
    return [r[0] for r in rows]


@reading(MEMORY, list)
def with_text(conn: Any, pid: int, norm_hash: str) -> list[str]:
    """Active records of a project (any scope) with this normalized text."""
    sql = (
        "SELECT id FROM memory_records WHERE project_id = ? AND norm_hash = ? AND status = 'active'"
    )
    return [r[0] for r in _rows(conn, sql + " ORDER BY n", (pid, norm_hash))]


@reading(MEMORY, list)
def fts_matches(conn: Any, match: str, limit: int) -> list[dict]:
    """Records matching an FTS5 expression over memory_fts, best (bm25) first; ``score``
    is the negated bm25 (higher is better). The key column never scores."""
    rows = _rows(
        conn,
        "SELECT r.id, r.kind, r.status, r.text, r.triggers, -bm25(memory_fts, 1.0, 1.0, 0.0) AS s,"
        " r.n FROM memory_fts JOIN memory_records r ON r.n = memory_fts.rowid"
        " WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts, 1.0, 1.0, 0.0) LIMIT ?",
        (match, limit),
    )
    return [
        {
            "id": i,
            "kind": k,
            "status": st,
            "text": t,
            "triggers": orjson.loads(tr),
            "score": s,
            "n": n,
        }
        for i, k, st, t, tr, s, n in rows
    ]


@reading(MEMORY, list)
def term_rows(conn: Any, terms: list[str]) -> list[int]:
    """Rowids of the records whose text or triggers hold each indexed term (any
    project), one rowid per (record, term): counting them gives the terms a record
    shares. One index range per term in ``memory_terms``."""
    if not terms:
        return []
    rows = conn.execute(
        "SELECT n FROM memory_terms WHERE term IN (SELECT value FROM json_each(?))",
        (orjson.dumps(terms).decode(),),
    )
    return [r[0] for r in rows]


@reading(MEMORY, list)
def active_in_scope(conn: Any, rowids: list[int], pid: int, skey: str) -> list[dict]:
    """The records among ``rowids`` that are active in the project's scope ``skey``."""
    rows = _rows(
        conn,
        "SELECT n, id, kind, status, text, triggers, nterms, norm_hash FROM memory_records"
        " WHERE n IN (SELECT value FROM json_each(?)) AND +project_id = ? AND +scope_key = ?"
        " AND +status = 'active'",  # '+': look the few rowids up, never scan a scope's index
        (orjson.dumps(rowids).decode(), pid, skey),
    )
    keys = ("n", "id", "kind", "status", "text", "triggers", "nterms", "norm_hash")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for rec in out:
        rec["triggers"] = orjson.loads(rec["triggers"])
    return out


@reading(MEMORY, list)
def mirror_rows(conn: Any, pid: int, after_seq: int) -> list[tuple[int, dict]]:
    """(seq, record) of the project's records changed after ``after_seq``, in order."""
    rows = _rows(
        conn,
        f"SELECT seq, {', '.join(RECORD_COLUMNS)} FROM memory_records"
        " WHERE project_id = ? AND seq > ? ORDER BY seq",
        (pid, after_seq),
    )
    return [(r[0], _record(r[1:])) for r in rows]


@contextlib.contextmanager
def _fts_instances(conn: apsw.Connection) -> Iterator[str]:
    """A temporary fts5vocab table of memory_fts's (term, doc, col, offset) rows."""
    conn.execute("DROP TABLE IF EXISTS temp.memory_fts_instances")
    conn.execute(
        "CREATE VIRTUAL TABLE temp.memory_fts_instances USING fts5vocab(main, memory_fts, instance)"
    )
    try:
        yield "temp.memory_fts_instances"
    finally:
        conn.execute("DROP TABLE temp.memory_fts_instances")


@reading(MEMORY, _no_digest)
def fts_digest(conn: apsw.Connection) -> str:
    """Every (term, record, column, offset) of memory_fts, hashed in order."""
    return _fts_digest(conn)


def _fts_digest(conn: apsw.Connection) -> str:
    with _fts_instances(conn) as table:
        h = hashlib.sha256()
        for row in conn.execute(f"SELECT term, doc, col, offset FROM {table} ORDER BY 1, 2, 3, 4"):
            h.update(repr(row).encode())
        return h.hexdigest()


def _fts_terms(table: str) -> str:
    """SQL: the distinct (term, record) pairs of the text and triggers columns."""
    return f"SELECT DISTINCT term, doc FROM {table} WHERE col IN ('text', 'triggers')"


@reading(MEMORY, lambda: 0)
def rebuild_fts_in(tx: apsw.Connection) -> int:
    """Refill memory_fts from memory_records, then memory_terms from memory_fts.
    Returns the records indexed."""
    tx.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    tx.execute("DELETE FROM memory_terms")
    with _fts_instances(tx) as table:
        tx.execute(f"INSERT INTO memory_terms (term, n) {_fts_terms(table)}")
    return tx.execute("SELECT count(*) FROM memory_records").fetchone()[0]


@reading(MEMORY, lambda: 0)
def terms_mismatches(conn: apsw.Connection) -> int:
    """(term, record) pairs memory_terms and memory_fts disagree on (0: equal)."""
    with _fts_instances(conn) as table:
        fts = _fts_terms(table)
        sql = (
            f"SELECT (SELECT count(*) FROM ({fts} EXCEPT SELECT term, n FROM memory_terms))"
            f" + (SELECT count(*) FROM (SELECT term, n FROM memory_terms EXCEPT {fts}))"
        )
        return conn.execute(sql).fetchone()[0]


# -- candidates ---------------------------------------------------------------------

CANDIDATE_COLUMNS = ("id", "state", "outcome", "record_id", "attempts", "reason", "due_at")


@reading(MEMORY, dict)
def candidate_states(conn: Any, ids: Iterable[str]) -> dict[str, dict]:
    ids = list(ids)
    if not ids:
        return {}
    rows = _rows(
        conn,
        f"SELECT {', '.join(CANDIDATE_COLUMNS)} FROM memory_candidates"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(ids).decode(),),
    )
    return {r[0]: dict(zip(CANDIDATE_COLUMNS, r, strict=True)) for r in rows}


@writing(MEMORY)
def set_candidate_in(tx: apsw.Connection, pid: int, cid: str, state: str, now: float, **f) -> None:
    """Record a candidate's state (``outcome``, ``record_id``, ``attempts``, ``reason``,
    ``due_at``, ``candidate``); a consumed candidate drops its kept content."""
    candidate = None if state == "consumed" else orjson.dumps(f.get("candidate"))
    tx.execute(
        "INSERT OR REPLACE INTO memory_candidates (id, project_id, state, outcome, record_id,"
        " attempts, reason, due_at, candidate, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            cid, pid, state, f.get("outcome"), f.get("record_id"), f.get("attempts", 0),
            f.get("reason"), f.get("due_at", 0.0), candidate, now,
        ),
    )  # fmt: skip


@reading(MEMORY, list)
def pending_candidates(conn: Any, pid: int | None, state: str) -> list[dict]:
    """Parked or dead-lettered candidates (with their content and project)."""
    where, args = "c.state = ?", [state]
    if pid is not None:
        where += " AND c.project_id = ?"
        args.append(pid)
    rows = _rows(
        conn,
        "SELECT c.id, p.name, c.attempts, c.reason, c.due_at, c.updated_at, c.candidate"
        " FROM memory_candidates c JOIN projects p ON p.id = c.project_id"
        f" WHERE {where} ORDER BY c.updated_at",
        tuple(args),
    )
    keys = ("id", "project", "attempts", "reason", "due_at", "updated_at", "candidate")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for item in out:
        item["candidate"] = orjson.loads(item["candidate"]) if item["candidate"] else None
    return out


@reading(MEMORY, list)
def requeue_candidates_in(tx: apsw.Connection, ids: list[str], now: float) -> list[tuple]:
    """Dead letters back to parked, due now, attempts reset. Returns (id, project) pairs."""
    return list(
        tx.execute(
            "UPDATE memory_candidates SET state = 'parked', attempts = 0, due_at = 0,"
            " updated_at = ? WHERE state = 'deadletter' AND id IN"
            " (SELECT value FROM json_each(?)) RETURNING id, project_id",
            (now, orjson.dumps(ids).decode()),
        )
    )


# -- run log ------------------------------------------------------------------------

RATES = ("added", "duplicate", "superseded", "merged", "parked", "deadlettered", "discarded")


@writing(MEMORY)
def log_run_in(
    tx: apsw.Connection, pid: int, job_id: int | None, now: float, rates: dict[str, int]
) -> int:
    return tx.execute(
        f"INSERT INTO memory_runs (project_id, job_id, at, {', '.join(RATES)})"
        f" VALUES (?, ?, ?, {', '.join('?' * len(RATES))}) RETURNING id",
        (pid, job_id, now, *(rates.get(r, 0) for r in RATES)),
    ).fetchone()[0]


@writing(MEMORY)
def log_outcomes_in(tx: apsw.Connection, run_id: int, outcomes: list[tuple], now: float) -> None:
    """(candidate id, outcome, record id, reason) rows of one run."""
    tx.executemany(
        "INSERT INTO memory_outcomes (run_id, candidate_id, outcome, record_id, reason, at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(run_id, *o, now) for o in outcomes],
    )


@reading(MEMORY, lambda: None)
def trim_log_in(tx: apsw.Connection, keep_runs: int, keep_outcomes: int) -> None:
    """Keep the newest ``keep_runs`` runs and ``keep_outcomes`` outcomes (bounded log)."""
    for table, keep in (("memory_runs", keep_runs), ("memory_outcomes", keep_outcomes)):
        tx.execute(f"DELETE FROM {table} WHERE id <= (SELECT max(id) FROM {table}) - ?", (keep,))


@reading(MEMORY, list)
def last_runs(conn: Any, pid: int | None, limit: int) -> list[dict]:
    where, args = ("WHERE r.project_id = ?", (pid,)) if pid is not None else ("", ())
    rows = _rows(
        conn,
        f"SELECT r.id, p.name, r.job_id, r.at, {', '.join('r.' + x for x in RATES)}"
        f" FROM memory_runs r JOIN projects p ON p.id = r.project_id {where}"
        " ORDER BY r.id DESC LIMIT ?",
        (*args, limit),
    )
    keys = ("id", "project", "job_id", "at", *RATES)
    return [dict(zip(keys, r, strict=True)) for r in rows]


@reading(MEMORY, lambda: {"records": {}, "candidates": {}})
def totals(conn: Any, pid: int | None) -> dict[str, Any]:
    """Record counts by status and candidate counts by state."""
    where, args = ("WHERE project_id = ?", (pid,)) if pid is not None else ("", ())
    records = dict(
        _rows(conn, f"SELECT status, count(*) FROM memory_records {where} GROUP BY 1", args)
    )
    cands = dict(
        _rows(conn, f"SELECT state, count(*) FROM memory_candidates {where} GROUP BY 1", args)
    )
    return {"records": records, "candidates": cands}


@reading(MEMORY, dict)
def every_candidate_state(conn: Any) -> dict[str, str]:
    """Every memory candidate's state, by id."""
    return dict(_rows(conn, "SELECT id, state FROM memory_candidates", ()))


@reading(MEMORY, list)
def active_twins(conn: Any) -> list[tuple[str, int]]:
    """``(normalized text hash, records)`` of each text with more than one active record
    in one project and scope (a record made twice)."""
    return _rows(
        conn,
        "SELECT norm_hash, count(*) FROM memory_records WHERE status = 'active'"
        " GROUP BY project_id, scope_key, norm_hash HAVING count(*) > 1",
        (),
    )


@reading(MEMORY, lambda: 0)
def sightings(conn: Any) -> int:
    """The sightings every record counts (its adds and duplicates), summed."""
    return _rows(conn, "SELECT coalesce(sum(count), 0) FROM memory_records", ())[0][0]


@reading(MEMORY, lambda: 0)
def consumed_sightings(conn: Any) -> int:
    """The candidates consumed as an add or a duplicate (each one a record's sighting)."""
    return _rows(
        conn,
        "SELECT count(*) FROM memory_candidates WHERE state = 'consumed'"
        " AND outcome IN ('added', 'duplicate')",
        (),
    )[0][0]


@reading(MEMORY, lambda: None)
def next_due(conn: Any, pid: int) -> float | None:
    """When the project's earliest parked candidate is due again, if any is parked."""
    rows = _rows(
        conn,
        "SELECT min(due_at) FROM memory_candidates WHERE project_id = ? AND state = 'parked'",
        (pid,),
    )
    return rows[0][0]


@reading(MEMORY, _no_digest)
def scratch_fts_digest(conn: Any) -> str:
    """The digest :func:`fts_digest` would give after a rebuild, computed in a private
    in-memory index filled from the live records (the live index is not touched)."""
    scratch = apsw.Connection(":memory:")
    try:
        scratch.execute(
            "CREATE VIRTUAL TABLE memory_fts USING fts5(text, triggers, key,"
            " tokenize='porter unicode61 remove_diacritics 2')"
        )
        with scratch:
            scratch.executemany(
                "INSERT INTO memory_fts (rowid, text, triggers, key) VALUES (?, ?, ?, ?)",
                conn.execute("SELECT n, text, triggers, key FROM memory_records ORDER BY n"),
            )
        return _fts_digest(scratch)
    finally:
        scratch.close()


@reading(MEMORY, list)
def sweep_candidates(
    conn: Any,
    pid: int,
    cutoff: float | None,
    anchored: dict[str, set[str]] | None = None,
    path_of: Callable[[str], str | None] = lambda ref: ref,
) -> list[tuple[str, str, str]]:
    """(record id, new status, reason) for the project's active records a sweep changes:
    ``flagged`` when a path ref names no live file (projects with ingested files only;
    ``path_of`` gives a ref's path, None for no path; a ref in ``anchored[record id]``
    is left out: its anchor follows its code), ``archived`` when last seen before
    ``cutoff``."""
    anchored = anchored or {}
    live = {
        r[0]
        for r in _rows(conn, "SELECT path FROM files WHERE project_id = ? AND live = 1", (pid,))
    }
    out = []
    for rid, refs, seen in _rows(
        conn,
        "SELECT id, refs, last_seen_at FROM memory_records WHERE project_id = ?"
        " AND status = 'active' ORDER BY n",
        (pid,),
    ):
        skip = anchored.get(rid, set())  # archive locators have an @
        paths = [r for r in orjson.loads(refs) if "@" not in r and r not in skip]
        missing = [r for r in paths if live and (p := path_of(r)) is not None and p not in live]
        if missing:
            out.append((rid, "flagged", f"ref(s) to no live file: {', '.join(missing)[:200]}"))
        elif cutoff is not None and seen < cutoff:
            out.append((rid, "archived", "not seen since the sweep's cutoff"))
    return out


# -- forgetting ---------------------------------------------------------------------


@reading(MEMORY, list)
def forget_chain(conn: Any, record_id: str) -> list[str]:
    """The record and every record it replaced (superseded or merged into it, at any
    depth): its history, which forgetting removes with it. Oldest first."""
    rows = _rows(
        conn,
        "WITH RECURSIVE chain(id) AS (SELECT id FROM memory_records WHERE id = ?"
        " UNION SELECT r.id FROM memory_records r JOIN chain c ON r.pointer = c.id)"
        " SELECT r.id FROM memory_records r JOIN chain USING (id) ORDER BY r.n",
        (record_id,),
    )
    return [r[0] for r in rows]


@reading(MEMORY, list)
def record_candidates(conn: Any, ids: list[str]) -> list[str]:
    """Ids of the candidates that made or reinforced these records."""
    rows = _rows(
        conn,
        "SELECT id FROM memory_candidates WHERE record_id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(ids).decode(),),
    )
    return [r[0] for r in rows]


@reading(MEMORY, lambda: 0)
def last_seq(conn: Any, pid: int, without: list[str]) -> int:
    """The project's last change ``seq`` among its records not in ``without`` (0: none)."""
    rows = _rows(
        conn,
        "SELECT coalesce(max(seq), 0) FROM memory_records WHERE project_id = ?"
        " AND id NOT IN (SELECT value FROM json_each(?))",
        (pid, orjson.dumps(without).decode()),
    )
    return rows[0][0]


@reading(MEMORY, lambda: 0)
def forget_in(tx: apsw.Connection, ids: list[str]) -> int:
    """Delete these records with their history and their candidates' run-log outcomes,
    leaving no byte of their text in the database file. The candidates stay
    ``consumed`` (rows without text: a staging file still naming one is never consumed
    again), with outcome ``forgotten`` and no record. The triggers drop the records'
    full-text entries, shortlist terms and vectors; ``secure_delete`` zeroes the freed
    cells and pages; an FTS ``optimize`` rewrites the index as one segment (a delete
    only adds tombstones, older segments keep the terms); the freed pages go back to
    the file system (:func:`reclaim_free_pages`). Their projects' vector count is
    bumped: search drops the record codes it cached. Returns the records deleted."""
    from memoryd.storage.corpus import reclaim_free_pages

    with zeroing_freed(tx):
        deleted = _delete_records_in(tx, orjson.dumps(ids).decode())
        optimize_fts_in(tx)
        reclaim_free_pages(tx)
    return deleted


@reading(MEMORY, lambda: None)
def optimize_fts_in(tx: apsw.Connection) -> None:
    """Rewrite ``memory_fts`` as one segment: a delete only adds tombstones, and the
    older segments keep the deleted records' terms until then."""
    tx.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")


@reading(MEMORY, dict)
def candidate_outcomes(conn: Any) -> dict[str, tuple[str, str | None]]:
    """Every candidate's (state, outcome), by id (the drill's evidence)."""
    rows = _rows(conn, "SELECT id, state, outcome FROM memory_candidates", ())
    return {cid: (state, outcome) for cid, state, outcome in rows}


@reading(MEMORY, list)
def active_text_counts(conn: Any) -> list[tuple[str, int]]:
    """(text, count) of every active record (the drill's evidence)."""
    return _rows(conn, "SELECT text, count FROM memory_records WHERE status = 'active'", ())


def _delete_records_in(tx: apsw.Connection, ids_json: str) -> int:
    """The rows of :func:`forget_in`; ``ids_json``: the record ids as a JSON array."""
    from memoryd.storage import vectors

    in_ids = "IN (SELECT value FROM json_each(?1))"
    tx.execute(f"DELETE FROM memory_history WHERE record_id {in_ids}", (ids_json,))
    tx.execute(f"DELETE FROM memory_anchors WHERE record_id {in_ids}", (ids_json,))
    tx.execute(  # a parked try's reason may quote the text (an adjudicator's answer)
        f"DELETE FROM memory_outcomes WHERE record_id {in_ids} OR candidate_id IN"
        f" (SELECT id FROM memory_candidates WHERE record_id {in_ids})",
        (ids_json,),
    )
    tx.execute(
        "UPDATE memory_candidates SET outcome = 'forgotten', record_id = NULL"
        f" WHERE record_id {in_ids}",
        (ids_json,),
    )
    pids = tx.execute(
        f"SELECT DISTINCT project_id FROM memory_records WHERE id {in_ids}", (ids_json,)
    ).fetchall()
    tx.execute(f"DELETE FROM memory_records WHERE id {in_ids}", (ids_json,))
    deleted = tx.changes()
    for (pid,) in pids:
        vectors.bump(tx, pid)
    return deleted


# -- conflicts ----------------------------------------------------------------------


@reading(MEMORY, dict)
def conflicts(conn: Any, ids: Iterable[str]) -> dict[str, list[str]]:
    """``{id: [record ids]}``: for each record named, the active records it is in
    conflict with (a ``conflict`` history row on it names the other; the mark holds
    while both are active, so a later supersession or merge of either clears it).
    Records in no conflict are absent."""
    ids = list(ids)
    if not ids:
        return {}
    rows = _rows(
        conn,
        "SELECT h.record_id, h.detail FROM memory_history h"
        " JOIN memory_records mine ON mine.id = h.record_id AND mine.status = 'active'"
        " JOIN memory_records other ON other.id = h.detail AND other.status = 'active'"
        " WHERE h.action = 'conflict' AND h.record_id IN (SELECT value FROM json_each(?))"
        " ORDER BY h.id",
        (orjson.dumps(ids).decode(),),
    )
    out: dict[str, list[str]] = {}
    for rid, other in rows:
        out.setdefault(rid, []).append(other)
    return out
