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

from pathlib import Path
from typing import Any

import apsw

from memoryd.base.errors import ProjectBusy, ProjectExists, UsageError
from memoryd.queue import ClaimedJob, JobQueue, JobReads, JobSpec
from memoryd.queue.reads import pending_in
from memoryd.storage import Authority, projects, runs
from memoryd.storage.corpus import find_project_id, project_id
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

REMOVE = "projects.remove"


def show(db: Authority, name: str) -> dict:
    """One project: its listing row, the choices of files it stored (null: none yet) and
    its latest ingest run, with every file that run skipped and why."""
    pid = project_id(db, name)
    row = next(p for p in projects.listing(db) if p["project"] == name)
    latest = runs.latest_run(db, pid)
    return {**row, "ingest_options": projects.ingest_options(db, pid), "last_run": latest}


def check_name(name: str) -> str:
    if not name.strip() or name.startswith(projects.TOMBSTONE) or "/" in name:
        raise UsageError(f"{name!r} is not a usable project name")
    return name


def _refuse_if_busy(tx: apsw.Connection, name: str, action: str) -> None:
    if busy := pending_in(tx, name):
        raise ProjectBusy(
            f"project {name!r} has {busy} job(s) queued or running; let them finish "
            f"(`memoryd run --drain`) and {action} again"
        )


def rename(db: Authority, old: str, new: str) -> dict:
    """Rename a project in one transaction (refused while its jobs are pending)."""
    check_name(old)
    check_name(new)

    def op(tx: apsw.Connection) -> dict:
        pid = project_id(tx, old)
        if find_project_id(tx, new) is not None:
            raise ProjectExists(f"a project named {new!r} exists already")
        _refuse_if_busy(tx, old, "rename")
        projects.rename_in(tx, pid, new)
        return {"project": new, "renamed_from": old}

    return db.write(op)


def remove(db: Authority, name: str) -> dict:
    """Tombstone ``name`` and queue its bounded removal; returns the first job's id."""

    check_name(name)

    def op(tx: apsw.Connection) -> dict:
        pid = project_id(tx, name)
        _refuse_if_busy(tx, name, "remove it")
        projects.rename_in(tx, pid, f"{projects.TOMBSTONE}{pid}")
        payload = {"project_id": pid, "name": name}
        (job,) = JobQueue(db).enqueue_in(tx, [JobSpec(REMOVE, payload, priority=-1)])
        return {"project": name, "job": job}

    return db.write(op)


def removal_pending(db: Authority, job_id: int) -> bool:
    """Whether the removal that ``job_id`` started still has rows to delete."""
    job = JobReads(db).get(job_id)
    return job is not None and projects.exists(db, job["payload"]["project_id"])


# -- the job kind ---------------------------------------------------------------------


def _run_remove(ctx: WorkContext, payload: Any) -> None:
    return None  # all of the work is writes: the apply does it, in bounded steps


def _apply_remove(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    limit = actx.config.project_remove_batch_rows
    for job, _ in done:
        if not projects.remove_step(actx.tx, job.data["project_id"], limit):
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
    from memoryd.consolidation.mirror import mirror_dir
    from memoryd.consolidation.staging import deadletter_dir, staging_dir

    return [f(home, name) for f in (staging_dir, deadletter_dir, mirror_dir)]


def move_memory_dirs(home: Path, old: str, new: str) -> None:
    """After a rename commits: the files follow the name (they are found by it)."""
    for src, dst in zip(memory_dirs(home, old), memory_dirs(home, new), strict=True):
        if src.exists():
            src.rename(dst)


def drop_memory_dirs(home: Path, name: str) -> None:
    """After a removal is queued: the project's staged, dead-lettered and mirrored
    memory goes with it (nothing is pending: removal refuses a busy project)."""
    import shutil  # here: its compressors' imports are not on every command's path

    for folder in memory_dirs(home, name):
        shutil.rmtree(folder, ignore_errors=True)
