"""Projects as a user manages them: list, rename, and remove through the queue.

Removal is bounded: ``remove`` renames the project to a tombstone (its name is
free at once, its id stays reserved) and enqueues a ``projects.remove`` job.
Each job's apply, inside the supervisor's group commit, deletes at most
``project_remove_batch_rows`` rows (chunks with their full-text entries, then
files, ingest runs and history) and enqueues its continuation; the last one
drops the index, the dictionaries and the project row. Chunks leave the index
and the chunks table together, so ``memoryd rebuild --verify`` stays equal at
every step.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import apsw
import orjson

from memoryd.errors import ProjectBusy, ProjectExists, UsageError
from memoryd.queue import ClaimedJob, JobQueue, JobSpec
from memoryd.queue.jobs import PENDING
from memoryd.storage import Authority
from memoryd.storage.corpus import (
    CHUNKS_OF_FILE,
    drop_index_rows,
    fts_table,
    project_id,
    reclaim_free_pages,
)
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

REMOVE = "projects.remove"
TOMBSTONE = "~removing~"  # prefix of a project being removed; no user name starts with it


def list_projects(db: Authority) -> list[dict]:
    """Every project with its root, live files, chunks, source bytes and last ingest."""
    rows = db.query(
        "SELECT p.name, p.root, p.created_at,"
        " (SELECT count(*) FROM files f WHERE f.project_id = p.id AND f.live = 1),"
        " (SELECT coalesce(sum(size), 0) FROM files f WHERE f.project_id = p.id AND f.live = 1),"
        " (SELECT coalesce(sum(chunk_count), 0) FROM files f WHERE f.project_id = p.id),"
        " (SELECT max(finished_at) FROM ingest_runs r WHERE r.project_id = p.id)"
        " FROM projects p ORDER BY p.name"
    )
    keys = ("project", "root", "created_at", "files", "source_bytes", "chunks", "last_ingest_at")
    return [dict(zip(keys, r, strict=True)) for r in rows if not r[0].startswith(TOMBSTONE)]


def check_name(name: str) -> str:
    if not name.strip() or name.startswith(TOMBSTONE) or "/" in name:
        raise UsageError(f"{name!r} is not a usable project name")
    return name


def _refuse_if_busy(tx: apsw.Connection, name: str, action: str) -> None:
    marks = ",".join("?" * len(PENDING))
    busy = tx.execute(
        f"SELECT count(*) FROM jobs WHERE project = ? AND state IN ({marks})", (name, *PENDING)
    ).fetchone()[0]
    if busy:
        raise ProjectBusy(
            f"project {name!r} has {busy} job(s) queued or running; let them finish "
            f"(`memoryd run --drain`) and {action} again"
        )


def rename(db: Authority, old: str, new: str) -> dict:
    """Rename a project in one transaction (refused while its jobs are pending)."""
    check_name(old)
    check_name(new)

    def op(tx: apsw.Connection) -> dict:
        pid = project_id(_TxReader(tx), old)
        if tx.execute("SELECT 1 FROM projects WHERE name = ?", (new,)).fetchone():
            raise ProjectExists(f"a project named {new!r} exists already")
        _refuse_if_busy(tx, old, "rename")
        tx.execute("UPDATE projects SET name = ? WHERE id = ?", (new, pid))
        return {"project": new, "renamed_from": old}

    return db.write(op)


def remove(db: Authority, name: str) -> dict:
    """Tombstone ``name`` and queue its bounded removal; returns the first job's id."""

    check_name(name)

    def op(tx: apsw.Connection) -> dict:
        pid = project_id(_TxReader(tx), name)
        _refuse_if_busy(tx, name, "remove it")
        tx.execute("UPDATE projects SET name = ? WHERE id = ?", (f"{TOMBSTONE}{pid}", pid))
        payload = {"project_id": pid, "name": name}
        (job,) = JobQueue(db).enqueue_in(tx, [JobSpec(REMOVE, payload, priority=-1)])
        return {"project": name, "job": job}

    return db.write(op)


def removal_pending(db: Authority, job_id: int) -> bool:
    """Whether the removal that ``job_id`` started still has rows to delete."""
    payload = db.query("SELECT payload FROM jobs WHERE id = ?", (job_id,))
    if not payload:
        return False
    pid = orjson.loads(payload[0][0])["project_id"]
    return bool(db.query("SELECT 1 FROM projects WHERE id = ?", (pid,)))


class _TxReader:
    """``corpus.project_id`` reads through ``db.query``; inside a transaction, use ``tx``."""

    def __init__(self, tx: apsw.Connection) -> None:
        self.tx = tx

    def query(self, sql: str, bindings: tuple = ()) -> list[tuple]:
        return self.tx.execute(sql, bindings).fetchall()


# -- the job kind ---------------------------------------------------------------------


def _delete_some(tx: apsw.Connection, table: str, where: str, args: tuple, limit: int) -> int:
    return len(
        tx.execute(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} LIMIT ?)"
            " RETURNING id",
            (*args, limit),
        ).fetchall()
    )


# A project's memory records and their bookkeeping (record ids and run ids lead there).
_RECORDS = "record_id IN (SELECT id FROM memory_records WHERE project_id = ?)"
_RUNS = "run_id IN (SELECT id FROM memory_runs WHERE project_id = ?)"
MEMORY_ROWS = (
    ("memory_history", _RECORDS),
    ("memory_outcomes", _RUNS),
    ("memory_records", "project_id = ?"),  # its FTS rows go with it (triggers)
    ("memory_candidates", "project_id = ?"),
    ("memory_runs", "project_id = ?"),
)


def remove_step(tx: apsw.Connection, pid: int, limit: int) -> bool:
    """Delete at most ``limit`` rows of project ``pid``; True once nothing is left."""
    chunk_ids = [  # through files: (project_id, path) is indexed, a file's chunks a range
        r[0]
        for r in tx.execute(
            f"SELECT c.id FROM files f JOIN chunks c ON {CHUNKS_OF_FILE}"
            " WHERE f.project_id = ? LIMIT ?",
            (pid, limit),
        )
    ]
    if chunk_ids:
        drop_index_rows(tx, pid, chunk_ids)
        tx.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in chunk_ids])
        return False
    for table, where, key in (
        ("files", "project_id = ?", pid),
        ("body_blocks", "project_id = ?", pid),
        ("ingest_runs", "project_id = ?", pid),
        ("history", "project = ?", str(pid)),
        *((table, where, pid) for table, where in MEMORY_ROWS),
    ):
        if _delete_some(tx, table, where, (key,), limit):
            return False
    tx.execute(f"DROP TABLE IF EXISTS {fts_table(pid)}_vocab")
    tx.execute(f"DROP TABLE IF EXISTS {fts_table(pid)}")
    tx.execute("DELETE FROM zdicts WHERE project_id = ?", (pid,))
    tx.execute("DELETE FROM projects WHERE id = ?", (pid,))
    reclaim_free_pages(tx)
    return True


def _run_remove(ctx: WorkContext, payload: Any) -> None:
    return None  # all of the work is writes: the apply does it, in bounded steps


def _apply_remove(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    limit = int(actx.config.project_remove_batch_rows)
    for job, _ in done:
        if not remove_step(actx.tx, job.data["project_id"], limit):
            actx.queue.enqueue_in(actx.tx, [JobSpec(REMOVE, job.data, priority=-1)])


KINDS = [
    JobKind(
        REMOVE,
        _run_remove,
        _apply_remove,
        doc="delete a bounded slice of a removed project, queue the rest",
    )
]


def memory_dirs(home: Path, name: str) -> list[Path]:
    """The project's memory files on disk: staging, dead letters, the markdown mirror."""
    from memoryd.memory.mirror import mirror_dir
    from memoryd.memory.staging import deadletter_dir, staging_dir

    return [f(home, name) for f in (staging_dir, deadletter_dir, mirror_dir)]


def move_memory_dirs(home: Path, old: str, new: str) -> None:
    """After a rename commits: the files follow the name (they are found by it)."""
    for src, dst in zip(memory_dirs(home, old), memory_dirs(home, new), strict=True):
        if src.exists():
            src.rename(dst)


def drop_memory_dirs(home: Path, name: str) -> None:
    """After a removal is queued: the project's staged, dead-lettered and mirrored
    memory goes with it (nothing is pending: removal refuses a busy project)."""
    for folder in memory_dirs(home, name):
        shutil.rmtree(folder, ignore_errors=True)
