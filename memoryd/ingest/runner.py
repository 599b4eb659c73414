"""Start an ingest run and follow it to the end (``memoryd ingest --wait``)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memoryd.config import load_config
from memoryd.errors import MemorydError, UsageError
from memoryd.ingest.jobs import SCAN
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import Authority, runs
from memoryd.storage.corpus import ensure_project
from memoryd.workers.supervisor import Supervisor, running_supervisor

FOLLOW_POLL_SECONDS = 0.05  # a look at one row: cheap, and the summary comes sooner


class ForeignProject(MemorydError):
    code = "FOREIGN_PROJECT"


class IngestIncomplete(MemorydError):
    code = "INGEST_INCOMPLETE"


def resolve_root(path: str | Path) -> Path:
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"{path}: no such directory")
    if not root.is_dir():
        raise UsageError(f"{path}: not a directory (ingest takes a repository folder)")
    return root.resolve()


def start(db: Authority, root: Path, project: str | None, excludes: list[str]) -> tuple[int, str]:
    """Register the project and the run, and enqueue the scan, in one transaction."""
    name = project or root.name

    def op(tx) -> int:
        row = tx.execute("SELECT root FROM projects WHERE name = ?", (name,)).fetchone()
        if row and row[0] and row[0] != str(root):
            raise ForeignProject(
                f"project {name!r} belongs to {row[0]}, not {root}; "
                "choose another name with --project"
            )
        pid = ensure_project(tx, name, str(root))
        run = runs.start_run(tx, pid, str(root))
        payload = {
            "run": run,
            "project_id": pid,
            "project": name,
            "root": str(root),
            "excludes": list(excludes),
        }
        JobQueue(db).enqueue_in(tx, [JobSpec(SCAN, payload, project=name, priority=1)])
        return run

    return db.write(op), name


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


def follow(
    db: Authority,
    home: Path,
    run: int,
    project: str,
    *,
    workers: int,
    on_progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run a draining supervisor unless one is running, and wait for the run to end."""
    child = None
    if running_supervisor(home) is None:
        child = subprocess.Popen(
            [sys.executable, "-m", "memoryd.ingest.runner", str(home), str(workers)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    try:
        while True:
            state = runs.get_run(db, run)
            if on_progress:
                on_progress(state)
            if state["finished_at"] or (state["scanned_at"] and not _pending_jobs(db, project)):
                break
            if child and child.poll() is not None and running_supervisor(home) is None:
                if not _pending_jobs(db, project):
                    break  # nothing left to do (finished, or dead jobs): read the final state
                err = child.stderr.read().decode(errors="replace").strip() if child.stderr else ""
                raise IngestIncomplete(
                    f"the supervisor exited (code {child.returncode}) before the ingest "
                    f"finished: {err or 'no message'}; run `memoryd ingest --wait` again"
                )
            time.sleep(FOLLOW_POLL_SECONDS)
    finally:
        if child:
            child.wait()
    state = runs.get_run(db, run)
    state["dead_jobs"] = _dead_jobs(db, project, state["started_at"])
    return state


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
        "seconds": round(seconds, 3),
        "mb_per_s": round(state["bytes_done"] / seconds / 1e6, 2),
    }


def supervise(home: str, workers: int) -> int:
    """The draining supervisor ``follow`` starts: what ``memoryd run --drain --home HOME
    --workers N`` does, without importing the CLI (a tenth of a second of every
    ``ingest --wait``). Errors go to stderr, where ``follow`` reads them."""
    try:
        config = load_config(Path(home), {"workers": workers})
        Supervisor(Path(home), config, workers=workers, drain=True).run()
    except MemorydError as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(supervise(sys.argv[1], int(sys.argv[2])))
