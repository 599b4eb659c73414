"""Start an ingest run and follow it to the end (``memoryd ingest --wait``).

``--wait`` returns once every job of the run is committed: its files indexed (then
it is searchable: ``searchable_seconds``), the semantic route's codes of its chunks
written (low-priority ``vectors.encode`` jobs after it: ``vectors_seconds`` more, 0
with the default encoder, which stores none; ``vectors_pending`` files still without
codes, 0 unless their jobs died) and its index merged (the ``ingest.pack`` jobs).
The summary's ``seconds`` and ``mb_per_s`` are end to end: from the caller's start
(the command's process) to the last of those commits, and ``cpu_seconds`` beside
them is the CPU the caller, the supervisor it started and its workers spent (None
when it followed a running supervisor, whose CPU is not the run's alone). Waiting
for all of it keeps ``--wait``'s promise that the ingest is done: ``rebuild
--verify`` is equal and search ranks by meaning right after it.
"""

from __future__ import annotations

import gc
import importlib
import os
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from memoryd.base.config import SKIPPED_PATHS_NAMED
from memoryd.base.errors import (
    ForeignProject,
    IngestInterrupted,
    MemorydError,
    QueuePaused,
    UsageError,
)
from memoryd.base.locks import running_supervisor
from memoryd.ingest import progress
from memoryd.ingest.jobs import PACK, SCAN
from memoryd.ingest.vectors import ENCODE
from memoryd.queue import JobQueue, JobReads, JobSpec
from memoryd.queue.reads import queued_payloads_in
from memoryd.storage import Authority, runs, vectors
from memoryd.storage.corpus import ensure_project, find_project_id, project_id, root_named
from memoryd.storage.projects import ingest_options, set_ingest_options
from memoryd.workers.walguard import PauseWatch

FOLLOW_POLL_SECONDS = 0.05  # a look at one row: cheap, and the summary comes sooner
FOLLOW_UP_KINDS = (ENCODE, PACK)  # the jobs a finished run enqueues, waited for too
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


def resolve_options(stored: dict | None, given: dict) -> tuple[dict, dict]:
    """The run's choices of files and those the command line replaced.

    ``given`` holds what the command line said (None: not given); ``stored`` what
    the project's last ingest stored (None: nothing yet). A choice not given is the
    stored one, else the default; a given one replaces it. ``replaced``: name ->
    [stored, given] where they differ."""
    options = {**scan_options(), **(stored or {})}
    replaced = {}
    for name, value in given.items():
        if value is None:
            continue
        value = list(value) if name == "excludes" else bool(value)
        if stored is not None and options[name] != value:
            replaced[name] = [options[name], value]
        options[name] = value
    return options, replaced


def _queued_scan(tx, name: str, options: dict) -> int | None:
    """The run of a scan of this project still waiting in the queue with the same
    options: a second plain ``ingest`` joins it instead of queueing another scan."""
    for p in queued_payloads_in(tx, SCAN, name):
        if {k: p.get(k) for k in options} == options:
            return p["run"]
    return None


def start(db: Authority, root: Path, project: str | None, given: dict) -> dict:
    """Register the project and the run, its choices of files (``given`` over those the
    project stored: :func:`resolve_options`) stored with the project, and enqueue the
    scan, in one transaction (or join the same scan already queued). Returns the run,
    the project, whether it joined, the options and those replaced."""
    name = project or root.name

    def op(tx) -> dict:
        owner = root_named(tx, name)
        if owner and owner != str(root):
            raise ForeignProject(
                f"project {name!r} belongs to {owner}, not {root}; "
                "choose another name with --project"
            )
        known = find_project_id(tx, name)
        stored = ingest_options(tx, known) if known is not None else None
        options, replaced = resolve_options(stored, given)
        out = {"project": name, "options": options, "options_replaced": replaced,
               "options_stored": stored is not None}  # fmt: skip
        queued = _queued_scan(tx, name, options)
        if queued is not None:
            return {**out, "run": queued, "joined": True}
        pid = ensure_project(tx, name, str(root), db.config.compact_max_bytes)
        set_ingest_options(tx, pid, options)
        run = runs.start_run(tx, pid, str(root))
        payload = {"run": run, "project_id": pid, "project": name, **options}
        JobQueue(db).enqueue_in(tx, [JobSpec(SCAN, payload, project=name, priority=1)])
        return {**out, "run": run, "joined": False}

    return db.write(op)


def _pending_jobs(db: Authority, project: str) -> int:
    return JobReads(db).open_count(project)


def _dead_reasons(db: Authority, project: str, since: float) -> list[dict]:
    """The most common errors of the run's dead jobs, for the summary."""
    rows = JobReads(db).dead_reasons(project, since, DEAD_REASONS_SHOWN)
    return [{"kind": kind, "error": error or "", "jobs": n} for kind, error, n in rows]


class _Child:
    """The draining supervisor ``follow`` started, as a forked or a spawned process."""

    def __init__(self, pid: int | None = None, proc: subprocess.Popen | None = None) -> None:
        self.pid, self.proc, self.code = pid, proc, None

    @classmethod
    def start(cls, db: Authority, home: Path, workers: int, drain: str) -> _Child:
        """Fork when this process can (no other thread, no database connection but
        ``db``, which is closed across the fork): no interpreter start-up, a fifth of a
        second of a small ingest; the child runs the module ``drain``'s
        ``drain(home, workers)``. Otherwise start ``python -m DRAIN HOME WORKERS``."""
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
                        code = importlib.import_module(drain).drain(str(home), workers)
                    finally:
                        os._exit(code)
            return cls(pid=pid)
        cmd = [sys.executable, "-m", drain, str(home), str(workers)]
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
    drain: str,
    on_progress: Callable[[dict], None] | None = None,
    started: float | None = None,
    options: dict | None = None,
) -> dict:
    """Run a draining supervisor unless one is running, and wait for the run and the
    jobs it enqueued to end. ``drain``: the module that starts it (its ``drain(home,
    workers)``, or run as ``python -m``: the caller's composition of a supervisor, which
    this capability does not import). ``started``: when the caller started (the
    end-to-end clock's start, and its CPU counted from there; default now). Ctrl-C stops the
    supervisor it started and raises :class:`IngestInterrupted`, whose resume hint
    repeats the run's ``options`` (:func:`scan_options`)."""
    # a caller that gives its start (the command's process) counts its own CPU from there
    cpu = _cpu_seconds(own=started is None)
    started = time.time() if started is None else started
    child = _Child.start(db, home, workers, drain) if running_supervisor(home) is None else None
    watch = PauseWatch(home, db.config.wait_paused_seconds)
    try:
        _wait_for_run(db, home, run, project, child, on_progress, watch)
        stage = _FollowUp(db, run, project, on_progress)
        coded = _wait_for_follow_up(db, home, project, child, watch, stage.of("encoding", ENCODE))
        _wait_for_follow_up(db, home, project, child, watch, stage.of("packing", *FOLLOW_UP_KINDS))
    except QueuePaused:
        if child:
            child.interrupt()  # the run stays queued for the next supervisor
        raise
    except KeyboardInterrupt:
        if child:
            child.interrupt()
            child.wait()  # its last commits count in what is left
        state = runs.get_run(db, run)
        hint = resume_command(state["root"], project, options or scan_options())
        raise _interrupted(db, state, project, hint, stopped=child is not None) from None
    finally:
        if child:
            child.wait()
    state = runs.get_run(db, run, files=True)
    searchable = state["finished_at"] or coded
    state["vectors_seconds"] = max(0.0, coded - searchable) if vectors.stores(db.config) else 0.0
    state["started"] = started
    state["searchable_seconds"] = max(searchable - started, 0.0)
    state["end_to_end_seconds"] = max(_last_commit(db, project, state) - started, 1e-9)
    state["cpu_seconds"] = _cpu_seconds() - cpu if child else None
    state["vectors_pending"] = vectors.pending_files(db, db.config, project_id(db, project))
    state["dead_jobs"] = JobReads(db).dead_count(project, state["started_at"])
    state["dead_reasons"] = _dead_reasons(db, project, state["started_at"])
    return state


def _wait_for_run(
    db: Authority,
    home: Path,
    run: int,
    project: str,
    child: _Child | None,
    on_progress: Callable[[dict], None] | None,
    watch: PauseWatch,
) -> None:
    while True:
        watch.check()
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


class _FollowUp:
    """The jobs a finished run enqueued, as ``ingest --wait`` shows them: each poll
    reports the run's state with ``stage`` ("encoding": the vectors jobs; "packing":
    the index merge's), ``jobs_left`` (open) and ``jobs_done`` (finished from the
    run's first such job on, by id), so the bar does not sit at 100% while they run."""

    def __init__(
        self, db: Authority, run: int, project: str, on_progress: Callable[[dict], None] | None
    ) -> None:
        self.db, self.run, self.project, self.on_progress = db, run, project, on_progress
        self.stage, self.kinds = "", ()
        self.first: int | None = None

    def of(self, stage: str, *kinds: str) -> _FollowUp:
        self.stage, self.kinds = stage, kinds
        return self

    def report(self, left: int) -> None:
        if not self.on_progress:
            return
        reads = JobReads(self.db)
        state = runs.get_run(self.db, self.run)
        if self.first is None:  # the run's first follow-up job: a short range to count
            first = reads.first_since(self.project, state["started_at"], FOLLOW_UP_KINDS)
            self.first = first or 0
        done = reads.finished_from(self.project, self.first, self.kinds)
        state.update(discovered=state["files_total"], stage=self.stage, jobs_left=left,
                     jobs_done=done)  # fmt: skip
        self.on_progress(state)


def _wait_for_follow_up(
    db: Authority,
    home: Path,
    project: str,
    child: _Child | None,
    watch: PauseWatch,
    jobs: _FollowUp,
) -> float:
    """After the run: until the project's queued jobs of ``jobs.kinds`` are done (the
    route's codes, :mod:`memoryd.ingest.vectors`; the index merge,
    :mod:`memoryd.ingest.jobs`), or no supervisor is left to do them, reporting each
    poll. Returns when that was."""
    while left := JobReads(db).open_count(project, jobs.kinds):
        jobs.report(left)
        if (child is None or child.poll() is not None) and running_supervisor(home) is None:
            break
        watch.check()
        time.sleep(FOLLOW_POLL_SECONDS)
    return time.time()


def _last_commit(db: Authority, project: str, state: dict) -> float:
    """When the last job of the run (its own and those it enqueued) was committed."""
    last = JobReads(db).last_finished(project, state["started_at"])
    return max(last or 0.0, state["finished_at"] or 0.0)


def process_started() -> float:
    """When this process started (epoch seconds, to a clock tick): its start in ticks
    since boot, from /proc, set against the boot clock now (psutil's create_time adds
    a boot time rounded to the second)."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def _cpu_seconds(own: bool = True) -> float:
    """CPU this process (unless not ``own``) and its waited-for descendants (a draining
    supervisor it started, with the workers that supervisor reaped) spent so far."""
    who = [resource.RUSAGE_CHILDREN, *([resource.RUSAGE_SELF] if own else [])]
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, who))


def resume_command(root: str, project: str, options: dict) -> str:
    """The ``memoryd ingest`` command that goes on with this run: the same project and
    the same choices of files (another set of options is another scan)."""
    argv = ["memoryd", "ingest", root, "--project", project, *option_flags(options)]
    return shlex.join([*argv, "--wait"])


def option_flags(options: dict) -> list[str]:
    """The command-line flags that choose these files (none for the defaults)."""
    argv = []
    for pattern in options.get("excludes") or ():
        argv += ["--exclude", pattern]
    argv += [f"--{flag.replace('_', '-')}" for flag in ("include_hidden", "include_secrets")
             if options.get(flag)]  # fmt: skip
    return argv


def _interrupted(
    db: Authority, state: dict, project: str, hint: str, *, stopped: bool
) -> IngestInterrupted:
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
            f"resume with `memoryd run --drain`, or `{hint}`"
            if stopped
            else "the running supervisor goes on with them (`memoryd status` shows it)"
        )
    )


def summary(state: dict, project: str, max_file_bytes: int) -> dict:
    """The run's answer: ``seconds`` and ``mb_per_s`` end to end (:func:`follow`);
    ``too_large`` (files skipped for their size: the first few, the limit and the
    setting that raises it) or null; ``skipped_files``: every skipped file (up to
    ``SKIPPED_PATHS_LISTED``, ``skipped_unlisted`` more) with its reason."""
    seconds, cpu = state["end_to_end_seconds"], state["cpu_seconds"]
    return {
        "project": project,
        "run": state["id"],
        "complete": bool(state["finished_at"]),
        "files_ingested": state["files_done"],
        "bytes_ingested": state["bytes_done"],
        "unchanged": state["unchanged"],
        "retired": state["retired"],
        "skipped": state["skipped"],
        "skipped_files": state["skipped_files"],
        "skipped_unlisted": sum(state["skipped"].values()) - len(state["skipped_files"]),
        "too_large": _too_large(state, max_file_bytes),
        "dead_jobs": state.get("dead_jobs", 0),
        "dead_reasons": state.get("dead_reasons", []),
        "seconds": round(seconds, 3),
        "mb_per_s": round(state["bytes_done"] / seconds / 1e6, 2),
        "cpu_seconds": None if cpu is None else round(cpu, 3),
        "searchable_seconds": round(state["searchable_seconds"], 3),
        "vectors_seconds": round(state.get("vectors_seconds", 0.0), 3),
        "vectors_pending": state.get("vectors_pending", 0),
    }


def _too_large(state: dict, max_file_bytes: int) -> dict | None:
    count = state["skipped"].get("too_large", 0)
    if not count:
        return None
    return {
        "files": count,
        "paths": state["skipped_named"].get("too_large", [])[:SKIPPED_PATHS_NAMED],
        "max_file_bytes": max_file_bytes,
        "setting": "max_file_bytes",
    }
