"""Start an ingest run and follow it to the end (``memoryd ingest --wait``).

``--wait`` returns once the run is searchable (its files indexed; the summary's
``seconds`` and ``mb_per_s`` end there, on the run's clock) *and* the semantic
route's codes of its chunks are written: they come after, from low-priority
``vectors.encode`` jobs, and the summary gives that extra time as
``vectors_seconds`` (0 with the default encoder, which stores none) and the
files still without codes as ``vectors_pending`` (0 unless their jobs died).
Waiting for the codes keeps ``--wait``'s promise that the ingest is done:
``rebuild --verify`` is equal and search ranks by meaning right after it.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import apsw
import orjson

from memoryd.config import load_config
from memoryd.errors import (
    ForeignProject,
    IngestInterrupted,
    MemorydError,
    UsageError,
    typed_disk_full,
)
from memoryd.home import private_umask
from memoryd.ingest import progress
from memoryd.ingest.jobs import SCAN
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import Authority, runs, vectors
from memoryd.storage.corpus import ensure_project, project_id
from memoryd.workers.supervisor import Supervisor, running_supervisor
from memoryd.workers.vectors import ENCODE

FOLLOW_POLL_SECONDS = 0.05  # a look at one row: cheap, and the summary comes sooner
DEAD_REASONS_SHOWN = 5  # distinct (kind, error) pairs an incomplete summary names


class IngestIncomplete(MemorydError):
    code = "INGEST_INCOMPLETE"


def pending_message(db: Authority, project: str, run: dict, supervisor: int | None) -> str:
    """What a user must know about a first ingest that has not finished."""
    done = f"{run['files_done']:,} of {run['files_total']:,} files indexed"
    state = done if run["scanned_at"] else "not scanned yet"
    if not _pending_jobs(db, project):
        how = "its remaining jobs are dead: see `memoryd jobs dead`, then `memoryd jobs retry`"
    elif supervisor:
        how = f"the supervisor (pid {supervisor}) is working on it; search again when it is done"
    else:
        how = (
            "no supervisor is running: process it with `memoryd run --drain` "
            "(or `memoryd ingest PATH --wait`)"
        )
    first = f"the first ingest of project {project!r} (run {run['id']})"
    return f"{first} has not finished ({state}); {how}"


def resolve_root(path: str | Path) -> Path:
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"{path}: no such directory")
    if not root.is_dir():
        raise UsageError(f"{path}: not a directory (ingest takes a repository folder)")
    root = root.resolve()
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{os.fsencode(root)!r}: the repository path is not UTF-8; rename it or "
            "ingest it through a symlink whose path is"
        ) from None
    return root


def scan_options(
    excludes: list[str] | tuple[str, ...] = (),
    *,
    include_hidden: bool = False,
    include_secrets: bool = False,
) -> dict:
    """What a scan payload carries besides its run: the user's choices of files."""
    return {
        "excludes": list(excludes),
        "include_hidden": include_hidden,
        "include_secrets": include_secrets,
    }


def _queued_scan(tx, name: str, options: dict) -> int | None:
    """The run of a scan of this project still waiting in the queue with the same
    options: a second plain ``ingest`` joins it instead of queueing another scan."""
    for (payload,) in tx.execute(
        "SELECT payload FROM jobs WHERE kind = ? AND project = ? AND state = 'queued'",
        (SCAN, name),
    ).fetchall():
        p = orjson.loads(payload)
        if {k: p.get(k) for k in options} == options:
            return p["run"]
    return None


def start(db: Authority, root: Path, project: str | None, options: dict) -> tuple[int, str, bool]:
    """Register the project and the run, and enqueue the scan, in one transaction
    (or join the same scan already queued). Returns (run, project, joined)."""
    name = project or root.name

    def op(tx) -> tuple[int, bool]:
        row = tx.execute("SELECT root FROM projects WHERE name = ?", (name,)).fetchone()
        if row and row[0] and row[0] != str(root):
            raise ForeignProject(
                f"project {name!r} belongs to {row[0]}, not {root}; "
                "choose another name with --project"
            )
        queued = _queued_scan(tx, name, options)
        if queued is not None:
            return queued, True
        pid = ensure_project(tx, name, str(root), int(db.config.compact_max_bytes))
        run = runs.start_run(tx, pid, str(root))
        payload = {"run": run, "project_id": pid, "project": name, **options}
        JobQueue(db).enqueue_in(tx, [JobSpec(SCAN, payload, project=name, priority=1)])
        return run, False

    run, joined = db.write(op)
    return run, name, joined


def _pending_jobs(db: Authority, project: str) -> int:
    return db.query(
        "SELECT count(*) FROM jobs WHERE project = ? AND state IN ('queued', 'claimed', 'failed')",
        (project,),
    )[0][0]


def _dead_jobs(db: Authority, project: str, since: float) -> int:
    return db.query(
        "SELECT count(*) FROM jobs WHERE project = ? AND state = 'dead' AND created_at >= ?",
        (project, since),
    )[0][0]


def _dead_reasons(db: Authority, project: str, since: float) -> list[dict]:
    """The most common errors of the run's dead jobs, for the summary."""
    rows = db.query(
        "SELECT kind, last_error, count(*) FROM jobs WHERE project = ? AND state = 'dead'"
        " AND created_at >= ? GROUP BY kind, last_error ORDER BY count(*) DESC, kind"
        f" LIMIT {DEAD_REASONS_SHOWN}",
        (project, since),
    )
    return [{"kind": kind, "error": error or "", "jobs": n} for kind, error, n in rows]


class _Child:
    """The draining supervisor ``follow`` started, as a forked or a spawned process."""

    def __init__(self, pid: int | None = None, proc: subprocess.Popen | None = None) -> None:
        self.pid, self.proc, self.code = pid, proc, None

    @classmethod
    def start(cls, db: Authority, home: Path, workers: int) -> _Child:
        """Fork when this process can (no other thread, no database connection but
        ``db``, which is closed across the fork): no interpreter start-up, a fifth of a
        second of a small ingest. Otherwise start ``python -m memoryd.ingest.runner``."""
        files = [c for c in apsw.connections() if c.filename]  # in-memory ones hold no lock
        if threading.active_count() == 1 and files == [db.conn]:
            sys.stdout.flush()
            sys.stderr.flush()
            with db.released():
                pid = os.fork()
                if pid == 0:  # the child: supervise, never return into the caller
                    gc.freeze()  # never finalize what was the parent's
                    code = 1
                    try:
                        code = supervise(str(home), workers)
                    finally:
                        os._exit(code)
            return cls(pid=pid)
        cmd = [sys.executable, "-m", "memoryd.ingest.runner", str(home), str(workers)]
        return cls(proc=subprocess.Popen(cmd, stdout=subprocess.DEVNULL))

    def poll(self) -> int | None:
        if self.code is None:
            if self.proc is not None:
                self.code = self.proc.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def interrupt(self) -> None:
        """Ask the supervisor to stop. A terminal's Ctrl-C reaches it too (one process
        group); a second SIGINT only makes it stop sooner, without waiting for the
        work in flight (which is redone later: nothing committed is lost)."""
        if self.poll() is None:
            os.kill(self.pid if self.proc is None else self.proc.pid, signal.SIGINT)

    def wait(self) -> int:
        if self.code is None:
            if self.proc is not None:
                self.code = self.proc.wait()
            else:
                self.code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.code


def follow(
    db: Authority,
    home: Path,
    run: int,
    project: str,
    *,
    workers: int,
    on_progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run a draining supervisor unless one is running, and wait for the run to end.
    Ctrl-C stops the supervisor it started and raises :class:`IngestInterrupted`."""
    child = _Child.start(db, home, workers) if running_supervisor(home) is None else None
    try:
        _wait_for_run(db, home, run, project, child, on_progress)
        coded = _wait_for_vectors(db, home, project, child)
    except KeyboardInterrupt:
        if child:
            child.interrupt()
            child.wait()  # its last commits count in what is left
        raise _interrupted(db, runs.get_run(db, run), project, stopped=child is not None) from None
    finally:
        if child:
            child.wait()
    state = runs.get_run(db, run)
    searchable = state["finished_at"] or coded
    state["vectors_seconds"] = max(0.0, coded - searchable) if vectors.stores(db.config) else 0.0
    state["vectors_pending"] = vectors.pending_files(db, db.config, project_id(db, project))
    state["dead_jobs"] = _dead_jobs(db, project, state["started_at"])
    state["dead_reasons"] = _dead_reasons(db, project, state["started_at"])
    return state


def _wait_for_run(
    db: Authority,
    home: Path,
    run: int,
    project: str,
    child: _Child | None,
    on_progress: Callable[[dict], None] | None,
) -> None:
    while True:
        state = runs.get_run(db, run)
        if on_progress:
            state["discovered"] = progress.discovered(home, run)
            on_progress(state)
        if state["finished_at"] or (state["scanned_at"] and not _pending_jobs(db, project)):
            return
        if child and child.poll() is not None and running_supervisor(home) is None:
            if not _pending_jobs(db, project):
                return  # nothing left to do (finished, or dead jobs): read the final state
            raise IngestIncomplete(
                f"the supervisor exited (code {child.code}) before the ingest finished "
                "(its message is above); run `memoryd ingest --wait` again"
            )
        time.sleep(FOLLOW_POLL_SECONDS)


def _wait_for_vectors(db: Authority, home: Path, project: str, child: _Child | None) -> float:
    """After the run: until the project's queued ``vectors.encode`` jobs are done (the
    route's codes, :mod:`memoryd.workers.vectors`), or no supervisor is left to do
    them. Returns when that was."""
    while db.query(
        "SELECT count(*) FROM jobs WHERE project = ? AND kind = ?"
        " AND state IN ('queued', 'claimed', 'failed')",
        (project, ENCODE),
    )[0][0]:
        if (child is None or child.poll() is not None) and running_supervisor(home) is None:
            break
        time.sleep(FOLLOW_POLL_SECONDS)
    return time.time()


def _interrupted(db: Authority, state: dict, project: str, *, stopped: bool) -> IngestInterrupted:
    """What a Ctrl-C left behind, and how to go on (``stopped``: the supervisor was
    ours and is gone; else the running one goes on with the run)."""
    done = (
        f"{state['files_done']:,} of {state['files_total']:,} files indexed"
        if state["scanned_at"]
        else "the scan had not finished"
    )
    return IngestInterrupted(
        f"interrupted: ingest run {state['id']} of project {project!r}: {done}, "
        f"{_pending_jobs(db, project):,} jobs left in the queue (nothing committed is lost); "
        + (
            f"resume with `memoryd run --drain`, or `memoryd ingest {state['root']} --wait`"
            if stopped
            else "the running supervisor goes on with them (`memoryd status` shows it)"
        )
    )


def summary(state: dict, project: str) -> dict:
    end = state["finished_at"] or time.time()
    seconds = max(end - state["started_at"], 1e-9)
    return {
        "project": project,
        "run": state["id"],
        "complete": bool(state["finished_at"]),
        "files_ingested": state["files_done"],
        "bytes_ingested": state["bytes_done"],
        "unchanged": state["unchanged"],
        "retired": state["retired"],
        "skipped": state["skipped"],
        "dead_jobs": state.get("dead_jobs", 0),
        "dead_reasons": state.get("dead_reasons", []),
        "seconds": round(seconds, 3),
        "mb_per_s": round(state["bytes_done"] / seconds / 1e6, 2),
        "vectors_seconds": round(state.get("vectors_seconds", 0.0), 3),
        "vectors_pending": state.get("vectors_pending", 0),
    }


def supervise(home: str, workers: int) -> int:
    """The draining supervisor ``follow`` starts: what ``memoryd run --drain --home HOME
    --workers N`` does, without the CLI. Every error goes to stderr (a forked child
    leaves through ``os._exit``, which would print nothing), a full disk as DISK_FULL."""
    try:
        config = load_config(Path(home), {"workers": workers})
        with typed_disk_full(home):
            Supervisor(Path(home), config, workers=workers, drain=True).run()
    except MemorydError as exc:
        print(f"memoryd: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    private_umask()
    raise SystemExit(supervise(sys.argv[1], int(sys.argv[2])))
