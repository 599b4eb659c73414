"""The library API: everything the CLI does is one call here.

from memoryd.api import Memoryd
md = Memoryd(home="/tmp/mdhome")
md.add_jobs("noop", count=10)
md.run(workers=2, drain=True)
md.status()["queue"]  # {"queued": 0, "claimed": 0, "done": 10, ...}
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import orjson
import psutil

from memoryd import control
from memoryd import projects as projects_mod
from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.config import (
    ARCHIVE_DIR,
    ARCHIVE_POLL_SECONDS,
    ARCHIVE_WAIT_SECONDS,
    AUTHORITY_FILE,
    FOLLOW_POLL_SECONDS,
    SETTINGS,
    STOP_MARGIN_SECONDS,
    SUPERVISOR_STATE_FILE,
    Config,
    default_home,
    load_config,
)
from memoryd.errors import (
    BadPayload,
    HomeMissing,
    HomeNotWritable,
    IngestPending,
    InternalJobKind,
    MemorydError,
    NoSuchJob,
    StoreBusy,
    UsageError,
    disk_full,
    is_disk_full,
    typed_disk_full,
)
from memoryd.home import DIR_MODE, make_private, private_umask
from memoryd.locks import running_supervisor
from memoryd.queue import STATES, JobQueue, JobSpec
from memoryd.registry import Registry, default_registry
from memoryd.storage import Authority, open_authority, runs
from memoryd.storage.corpus import project_id, project_stats
from memoryd.storage.effects import effect_counts
from memoryd.storage.maintenance import checkpoint_truncate, wal_bytes, wal_reader_pids
from memoryd.times import iso_time
from memoryd.workers.contract import USER_KINDS

if TYPE_CHECKING:
    from memoryd.archive.owner import ArchiveOwner

# Modules a command needs only when it runs (ingest, memory, the archive, the
# supervisor) are imported in the methods that use them: every CLI start imports this.

ARCHIVE_READS = ("get", "search", "retention_status")  # never create a home
CONTROL_ARCHIVE_OPS = ("get", "search", "access", "lease")  # answered by the control socket


def _waiting(queue: dict[str, int]) -> int:
    """Jobs that wait for a supervisor to run them (queued, or failed and to be retried)."""
    return queue["queued"] + queue["failed"]


def _open_readonly(home: Path, config: Config) -> Authority:
    """A read-only connection; an immutable one when even that cannot open (a WAL
    database whose -shm cannot be created, on a read-only file system)."""
    try:
        return open_authority(home, config, readonly=True)
    except (HomeNotWritable, apsw.CantOpenError):
        return open_authority(home, config, immutable=True)


JOB_TIMES = ("not_before", "created_at", "updated_at", "finished_at", "lease_expires")


def _exited(pid: int) -> bool:
    """Whether ``pid`` is gone (a zombie waiting for its parent counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def job_view(job: dict) -> dict:
    """A queue row as the API shows it: times as ISO strings."""
    return {k: iso_time(v) if k in JOB_TIMES else v for k, v in job.items()}


def parse_payload(text: str | None) -> Any:
    """Parse a payload given as JSON text; a clear error says what was wrong."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadPayload(f"payload is not valid JSON ({exc}): {text[:80]!r}") from None


class Memoryd:
    """One data home: its configuration, authority and queue."""

    def __init__(
        self,
        home: str | Path | None = None,
        overrides: dict | None = None,
        *,
        strict: bool = True,
        registry: Registry | None = None,
    ) -> None:
        """``strict=False`` loads a faulty configuration anyway (``config.problems``);
        ``registry``: the job kinds (default: every capability memoryd ships)."""
        self.registry = registry or default_registry()
        private_umask()  # the library entry: every file this process creates is private
        self.home = Path(home).expanduser() if home else default_home()
        self.config = load_config(self.home, overrides, strict=strict)
        self._db: Authority | None = None
        self.via_control = True  # reads go to a running supervisor's control socket
        self._client = control.Client(self.home)  # its connection, kept for the session
        self._owner: ArchiveOwner | None = None  # the embedded archive held by archive_held()
        # the control server's own archive reads (a secondary instance); NotImplemented: queue
        self.archive_reader: Callable[[str, dict], Any] | None = None

    # -- plumbing --------------------------------------------------------------

    def ensure_home(self) -> Path:
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
            with tempfile.TemporaryFile(dir=self.home):
                pass
            make_private(self.home)
        except OSError as exc:
            raise HomeNotWritable(
                f"data home {self.home} is not writable ({exc.strerror or exc}); "
                "choose another with --home or MEMORYD_HOME"
            ) from None
        return self.home

    @property
    def db(self) -> Authority:
        if self._db is None:
            self.ensure_home()
            self._db = open_authority(self.home, self.config)
        return self._db

    @property
    def reader(self) -> Authority:
        """The authority for a read: never creates a home (a typo'd path must not look
        like an empty one), and opens a home this process cannot write read-only."""
        if self._db is None:
            self._require_home()
            path = self.home / AUTHORITY_FILE
            if os.access(self.home, os.W_OK) and (not path.exists() or os.access(path, os.W_OK)):
                self._db = open_authority(self.home, self.config)
            else:
                self._db = _open_readonly(self.home, self.config)
        return self._db

    def _require_home(self) -> None:
        """A home is a directory holding an authority or an archive (an embedded
        archive command makes only the latter)."""
        if not any((self.home / name).exists() for name in (AUTHORITY_FILE, ARCHIVE_DIR)):
            raise HomeMissing(f"no memoryd home at {self.home} (create it with `memoryd init`)")

    def read_only(self) -> Memoryd:
        """Read through a read-only connection of this process only, never a running
        supervisor's control socket (the dashboard: it must neither write nor ask)."""
        if not (self.home / AUTHORITY_FILE).exists():
            raise HomeMissing(f"no memoryd authority in {self.home} (create it: `memoryd init`)")
        self.close()
        self._db = _open_readonly(self.home, self.config)
        self.via_control = False
        return self

    @property
    def queue(self) -> JobQueue:
        return JobQueue(self.db)

    def close(self) -> None:
        self._client.close()
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- commands --------------------------------------------------------------

    def init(self) -> dict:
        db = self.db
        return {"home": str(self.home), "authority": str(db.path), "schema": db.user_version()}

    def add_jobs(
        self,
        kind: str,
        *,
        count: int = 1,
        payload: Any = None,
        project: str | None = None,
        priority: int = 0,
        max_attempts: int | None = None,
        dedupe_key: str | None = None,
    ) -> list[int | None]:
        """Enqueue ``count`` jobs of a user kind (:data:`USER_KINDS`), committed in chunks of
        ``enqueue_chunk_rows`` so a bulk add never holds the write lock long nor grows the
        WAL past the pause bound (a crash keeps the chunks already committed).

        The other kinds are enqueued by the capability that owns them, with the
        payload it builds: a hand-made one would only fail later, in a worker.
        """
        spec = self.registry.job_kind(kind)
        if kind not in USER_KINDS:
            raise InternalJobKind(
                f"job kind {kind!r} is internal (memoryd enqueues it itself); "
                f"`memoryd jobs add` takes {', '.join(sorted(USER_KINDS))}"
            )
        if spec.validate:
            spec.validate(payload)
        if count < 1:
            raise BadPayload("--count must be at least 1")
        if dedupe_key and count > 1:
            raise BadPayload("a dedupe key names one job; use --count 1")
        job = JobSpec(kind, payload, project, priority, max_attempts, dedupe_key)
        chunk = max(1, int(self.config.enqueue_chunk_rows))
        ids: list[int | None] = []
        for start in range(0, count, chunk):
            ids += self.queue.enqueue_many([job] * min(chunk, count - start))
        return ids

    def run(
        self,
        *,
        workers: int | None = None,
        drain: bool = False,
        executor: str = "local",
        ray_address: str | None = None,
    ) -> dict:
        """Run a supervisor in this process until stopped (or drained); ``executor="ray"``
        runs job batches as Ray tasks (see :mod:`memoryd.workers.raypool`)."""
        from memoryd.workers.supervisor import Supervisor

        self.ensure_home()
        self.close()  # the supervisor opens its own connection
        sup = Supervisor(
            self.home,
            self.config,
            workers=workers or self.config.workers,
            drain=drain,
            executor=executor,
            ray_address=ray_address,
            registry=self.registry,
        )
        with typed_disk_full(str(self.home)):
            return asdict(sup.run())

    def supervisor(self) -> dict | None:
        pid = running_supervisor(self.home)
        if pid is None:
            return None
        try:
            state = orjson.loads((self.home / SUPERVISOR_STATE_FILE).read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            state = {}
        return {**state, "pid": pid}

    def supervised(self) -> bool:
        """Whether requests go to a running supervisor's control socket (a kept
        connection answers for it; else its lock says whether one runs)."""
        return self.via_control and (
            self._client.connected or running_supervisor(self.home) is not None
        )

    def _control(self, request: str, /, **args: Any) -> Any:
        """The answer of a running supervisor's control socket, or None (run embedded)."""
        if not self.supervised():
            return None
        answer = self._client.request(request, **args)
        return None if answer is None else control.unwrap(answer)

    def status(self) -> dict:
        if (routed := self._control("status")) is not None:
            return routed
        db = self.reader
        sup = self.supervisor()
        counts = self.queue.counts()
        return {
            "home": str(self.home),
            "schema": db.user_version(),
            "queue": counts,
            "done_jobs": {"kept": counts["done"], "keep_seconds": self.config.jobs_keep_seconds},
            "waiting_without_supervisor": 0 if sup else _waiting(counts),
            "effects": effect_counts(db),
            "wal_bytes": wal_bytes(db),
            "wal_reader_pids": wal_reader_pids(db),
            "claims_paused": bool(sup and sup.get("claims_paused")),
            "pause_reason": (sup or {}).get("pause_reason"),
            "supervisor": sup,
            "projects": self.projects(),  # the same shape as `memoryd projects`
        }

    def ingest(
        self,
        path: str | Path,
        project: str | None = None,
        *,
        excludes: list[str] | tuple[str, ...] = (),
        include_hidden: bool = False,
        include_secrets: bool = False,
        wait: bool = False,
        workers: int | None = None,
        on_progress: Callable[[dict], None] | None = None,
    ) -> dict:
        """Enqueue an ingest of the repository at ``path``; with ``wait``, see it through.
        Hidden files and common secret files are skipped unless included explicitly."""
        from memoryd.ingest import runner as ingest_runner
        from memoryd.storage import vectors

        root = ingest_runner.resolve_root(path)
        vectors.check(self.db, self.config)  # an encoder change needs a rebuild first
        options = ingest_runner.scan_options(
            excludes, include_hidden=include_hidden, include_secrets=include_secrets
        )
        run, name, joined = ingest_runner.start(self.db, root, project, options)
        if not wait:
            sup = running_supervisor(self.home)
            return {"project": name, "run": run, "queued": True, "joined": joined,
                    "supervisor": sup}  # fmt: skip
        state = ingest_runner.follow(
            self.db,
            self.home,
            run,
            name,
            workers=workers or self.config.workers,
            on_progress=on_progress,
        )
        return ingest_runner.summary(state, name)

    def search(
        self,
        query: str,
        project: str | None = None,
        *,
        limit: int = 10,
        min_score: float | None = None,
    ) -> dict:
        """Answer from project memory, or abstain: ``{"status", "items", "gap"}``.

        ``min_score`` (0..1, on the fused score) only narrows: it drops items the
        gate admitted, never adds one; None leaves the answer as it is.
        """
        from memoryd.memory.recall import RecordSource
        from memoryd.search import pipeline
        from memoryd.search.engine import ProjectSource

        if limit < 1:
            raise UsageError("--limit must be at least 1")
        name = self.default_project(project)  # here: "like the cwd" means the caller's
        routed = self._control(
            "search", query=query, project=name, limit=limit, min_score=min_score
        )
        if routed:
            return routed
        chunks = ProjectSource(self.reader, name, min_score=min_score)
        result = pipeline.run(query, limit, [RecordSource(self.reader, name, chunks), chunks])
        if result["status"] == "abstained":
            run = runs.unfinished_first_run(self.reader, project_id(self.reader, name))
            if run is not None:
                from memoryd.ingest.runner import pending_message

                sup = running_supervisor(self.home)
                raise IngestPending(pending_message(self.reader, name, run, sup))
        return result

    def search_all(self, query: str, *, limit: int = 10, min_score: float | None = None) -> dict:
        """Search every project; each item names its ``project``. Items are ranked by
        their fused score across projects; projects whose first ingest is still under
        way are listed in ``pending`` rather than failing the search."""
        if limit < 1:
            raise UsageError("--limit must be at least 1")
        names = [p["project"] for p in project_stats(self.reader)]
        if not names:
            raise UsageError("there are no projects yet; ingest one with `memoryd ingest PATH`")
        items, gaps, pending = [], [], []
        for name in names:
            try:
                result = self.search(query, name, limit=limit, min_score=min_score)
            except IngestPending:
                pending.append(name)
                continue
            items += [{**item, "project": name} for item in result["items"]]
            if result["gap"]:
                gaps.append(f"{name}: {result['gap']}")
        items.sort(key=lambda item: -item["score"])
        if items:
            return {"status": "ok", "items": items[:limit], "gap": None, "pending": pending}
        gap = "; ".join(gaps) or "no project has finished its first ingest"
        return {"status": "abstained", "items": [], "gap": gap, "pending": pending}

    def recall(self, query: str, project: str | None = None, *, limit: int = 5) -> dict:
        """Project memory plus recent archive evidence, gated; nothing when insufficient."""
        from memoryd.recall import recall

        if limit < 1:
            raise UsageError("--limit must be at least 1")
        name = self.default_project(project)
        if routed := self._control("recall", query=query, project=name, limit=limit):
            return routed
        return recall(self, query, name, limit=limit)

    def default_project(self, project: str | None) -> str:
        """The named project; else the only one; else the one named like the cwd."""
        if project:
            return project
        names = [p["project"] for p in project_stats(self.reader)]
        if len(names) == 1:
            return names[0]
        if Path.cwd().name in names:
            return Path.cwd().name
        raise UsageError(
            "name a project with --project, or search them all with --all; known projects: "
            f"{', '.join(names) or 'none'}"
        )

    def checkpoint_wal(self) -> dict:
        """The manual WAL boundary: checkpoint and truncate now, or say who blocked it."""
        result = checkpoint_truncate(self.db)
        return {
            "ok": result.ok,
            "wal_bytes_before": result.wal_bytes_before,
            "wal_bytes_after": result.wal_bytes_after,
            "blocked_by": result.blocked_by,
            "reader_pids": result.reader_pids,
        }

    def rebuild(self, *, verify: bool = False) -> dict:
        """Drop and rebuild every derived table; with ``verify``, prove it would match.
        Memory records' index and markdown mirror are derived too."""
        from memoryd.archive.owner import archive_path
        from memoryd.memory import service as memory_service
        from memoryd.storage import rebuild as rebuild_mod

        archived = archive_path(self.home).exists()  # its codes are derived too
        if verify:
            out = rebuild_mod.verify(self.db)
            mem = memory_service.verify(self.db, self.home)
            arch = self.archive("vectors_verify", {}) if archived else {"equal": True}
            mismatches = out["mismatches"] + mem["mismatches"]
            mismatches += [] if arch["equal"] else ["archive/vectors"]
            return {
                **out, "equal": not mismatches, "mismatches": mismatches, "memory": mem,
                "archive": arch,
            }  # fmt: skip
        return {
            "rebuilt": rebuild_mod.rebuild(self.db),
            "memory": memory_service.rebuild(self.db, self.home),
            "archive": self.archive("vectors_rebuild", {}) if archived else {"versions": 0},
        }

    # -- the evidence archive ----------------------------------------------------

    def archive(self, op: str, args: dict, *, timeout: float = ARCHIVE_WAIT_SECONDS) -> Any:
        """Run one archive operation in the archive's owner and return its answer.

        With a supervisor running, the operation is a job for its retention
        worker (the only process holding the archive read-write); without one,
        it runs here, embedded, under the archive's own lock.
        """
        from memoryd.archive import ops as archive_ops
        from memoryd.archive import spool

        if op in ARCHIVE_READS:
            self._require_home()
        if self.archive_reader is not None:
            answer = self.archive_reader(op, args)
            if answer is not NotImplemented:
                return answer
        elif op in CONTROL_ARCHIVE_OPS and (routed := self._control("archive", op=op, args=args)):
            return routed
        if self._owner is not None:
            with typed_disk_full(str(self.home)):
                return control.unwrap(archive_ops.run_op(self._owner, op, args))
        if running_supervisor(self.home) is None:
            with self.archive_held():
                return self.archive(op, args, timeout=timeout)
        if op == "add":  # the transcript rides as a spool file, never in the job row
            args = {**spool.put(self.home, args), "requests": archive_ops.request_ids(args)}
        job = self.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": op, "args": args}))
        deadline = time.monotonic() + timeout
        while True:
            state, _, error = self.queue.outcome(job)
            if state == "done":
                return control.unwrap(self.queue.take_result(job))
            if state == "dead":
                if is_disk_full(error or ""):
                    raise disk_full(error, f"archive job {job}")
                raise MemorydError(f"archive job {job} failed: {error}")
            if time.monotonic() > deadline:
                raise StoreBusy(
                    f"archive job {job} is still {state} after {timeout:g}s; the supervisor "
                    "will finish it: check `memoryd jobs list`"
                )
            time.sleep(ARCHIVE_POLL_SECONDS)

    @contextlib.contextmanager
    def archive_held(self) -> Iterator[None]:
        """Embedded (no supervisor): the archive opened once for every operation inside
        (a recall's search and its access record); beside a supervisor, nothing (its
        retention worker owns the archive, even for the control server's instances,
        which read through their ``archive_reader`` without asking the lock)."""
        from memoryd.archive.owner import ArchiveOwner

        if (
            self._owner is not None
            or self.archive_reader is not None
            or running_supervisor(self.home) is not None
        ):
            yield
            return
        self.ensure_home()
        with typed_disk_full(str(self.home)), ArchiveOwner(self.home, self.config) as owner:
            self._owner = owner
            try:
                yield
            finally:
                self._owner = None

    def archive_add(
        self,
        data: bytes,
        *,
        project: str,
        source: str,
        cls: str | None = None,
        session: str | None = None,
        created_at: str | float | None = None,
        sources: tuple[str, ...] = (),
    ) -> dict:
        """Archive one JSONL transcript: one document per session, tool output linked.

        ``sources`` (class derived only): the locators the session was derived
        from; it then expires when its last source does (unless promoted)."""
        from memoryd.archive.transcripts import parse_jsonl, parse_time

        t = parse_jsonl(
            data,
            source=source,
            session=session,
            created_at=parse_time(created_at, "--created-at"),
        )
        args = {
            "project": project,
            "class": cls,
            "session": t.session,
            "created_at": t.created_at,
            "content": t.rendered(),
            "turns": len(t.turns),
            "tools": [{"content": m.content, "timestamp": m.timestamp} for m in t.tools],
            "sources": list(sources),
        }
        return self.archive("add", args)

    def projects(self) -> list[dict]:
        """Every project: root, live files, chunks, source bytes, created and last ingest."""
        return [
            {
                **p,
                "created_at": iso_time(p["created_at"]),
                "last_ingest_at": iso_time(p["last_ingest_at"]),
            }
            for p in projects_mod.list_projects(self.reader)
        ]

    def rename_project(self, old: str, new: str) -> dict:
        renamed = projects_mod.rename(self.db, old, new)
        projects_mod.move_memory_dirs(self.home, old, new)
        return renamed

    def remove_project(self, name: str, *, wait: bool = False) -> dict:
        """Queue the bounded removal of a project; with ``wait``, see it through.

        Waiting follows a running supervisor, or runs a draining one here (which
        also runs whatever else is queued).
        """
        started = projects_mod.remove(self.db, name)
        projects_mod.drop_memory_dirs(self.home, name)
        if not wait:
            return {**started, "removed": False}
        drained = False
        while projects_mod.removal_pending(self.db, started["job"]):
            if running_supervisor(self.home) is not None:
                time.sleep(FOLLOW_POLL_SECONDS)
            elif drained:
                raise MemorydError(
                    f"removal of project {name!r} stopped before the end; "
                    "see `memoryd jobs dead`, then `memoryd jobs retry --all-dead`"
                )
            else:
                self.run(drain=True)
                drained = True
        return {**started, "removed": True}

    def list_jobs(
        self,
        state: str | None = None,
        limit: int = 100,
        *,
        kind: str | None = None,
        project: str | None = None,
    ) -> list[dict]:
        """Jobs newest first, filtered by state, kind and project (times in ISO 8601 UTC)."""
        if state and state not in STATES:
            raise BadPayload(f"unknown state {state!r}; one of {', '.join(STATES)}")
        jobs = JobQueue(self.reader).list(state, limit, kind=kind, project=project)
        return [job_view(j) for j in jobs]

    def job(self, job_id: int) -> dict:
        """One job: payload, full last error, attempts, lease and times."""
        found = self.queue.get(job_id)
        if found is None:
            raise NoSuchJob(f"no job {job_id}; see `memoryd jobs list`")
        return job_view(found)

    def retry(self, ids: list[int] | None = None, *, all_dead: bool = False) -> dict:
        """Requeue dead jobs; ``refused`` says why each other named job was not requeued."""
        requeued = self.queue.retry(ids or [], all_dead=all_dead)
        refused = []
        for job_id in dict.fromkeys(ids or []):
            if job_id in requeued:
                continue
            job = self.queue.get(job_id)
            if job is None:
                reason = "no such job"
            elif job["state"] != "dead":
                reason = f"it is {job['state']}, not dead"
            else:
                reason = "a live job with its dedupe key already exists"
            refused.append({"id": job_id, "reason": reason})
        return {"requeued": requeued, "refused": refused}

    def doctor(self) -> dict:
        """Findings about this home, each with what to do; ``ok`` when none needs action."""
        from memoryd.doctor import diagnose

        self.close()
        findings = diagnose(self.home, self.config)
        return {
            "home": str(self.home),
            "ok": all(f["status"] != "action" for f in findings),
            "findings": findings,
        }

    def stop(self, *, timeout: float | None = None) -> dict:
        """SIGTERM the running supervisor and wait until it has let go of the home."""
        pid = running_supervisor(self.home)
        if pid is None:
            return {"pid": None, "stopped": False}
        limit = float(self.config.shutdown_grace_seconds) + STOP_MARGIN_SECONDS
        deadline = time.monotonic() + (timeout or limit)
        start = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        while running_supervisor(self.home) == pid or not _exited(pid):
            if time.monotonic() > deadline:
                raise StoreBusy(
                    f"supervisor pid {pid} is still running {timeout or limit:g}s after SIGTERM; "
                    f"it may be finishing work: wait, or `kill -KILL {pid}` (its claims requeue)"
                )
            time.sleep(FOLLOW_POLL_SECONDS)
        return {"pid": pid, "stopped": True, "seconds": round(time.monotonic() - start, 2)}

    def config_report(self) -> dict:
        """The effective settings, where each came from, and what was wrong on the way."""
        file = self.config.file
        return {
            "home": str(self.home),
            "config_file": str(file) if file else None,
            "problems": list(self.config.problems),
            "settings": {
                name: {
                    "value": self.config.values[name],
                    "source": self.config.sources[name],
                    "help": SETTINGS[name].help,
                }
                for name in SETTINGS
            },
        }

    @staticmethod
    def job_kinds() -> list[str]:
        """The kinds a user may enqueue."""
        return sorted(USER_KINDS)

    # -- memory consolidation ------------------------------------------------------

    def memory_add(self, data: bytes, project: str, *, wait: bool = False) -> dict:
        """Validate candidate lines, stage the valid ones, enqueue the project's
        consolidation; with ``wait``, see every staged candidate to its outcome."""
        from memoryd.memory import service as memory_service

        self.ensure_home()
        added = memory_service.add(self.db, self.home, self.config, data, project)
        if not wait:
            return {**added, "supervisor": running_supervisor(self.home)}
        return {**added, "outcomes": self._memory_wait(added["candidates"])}

    def _memory_wait(self, ids: list[str]) -> list[dict]:
        """Follow a running supervisor, or drain one here, until every id is decided."""
        from memoryd.memory import service as memory_service

        drained = False
        while (done := memory_service.outcomes(self.db, ids)) is None:
            if running_supervisor(self.home) is not None:
                time.sleep(FOLLOW_POLL_SECONDS)
            elif drained:
                raise MemorydError(
                    "consolidation stopped before every candidate was decided; "
                    "see `memoryd memory status` and `memoryd jobs dead`"
                )
            else:
                self.run(drain=True)
                drained = True
        return done

    def memory_list(
        self, project: str | None, *, status: str | None = None, kind: str | None = None,
        limit: int = 100,
    ) -> list[dict]:  # fmt: skip
        from memoryd.memory import service as memory_service

        name = self.default_project(project)
        found = memory_service.list_records(self.reader, name, status, kind, limit)
        return [_record_view(r) for r in found]

    def memory_show(self, record_id: str) -> dict:
        from memoryd.memory import service as memory_service

        rec = memory_service.show(self.reader, record_id)
        history = [{**h, "at": iso_time(h["at"])} for h in rec["history"]]
        return {**_record_view(rec), "history": history}

    def memory_status(self, project: str | None = None) -> dict:
        from memoryd.memory import service as memory_service

        out = memory_service.status(self.reader, self.home, project)
        runs = [{**r, "at": iso_time(r["at"])} for r in out["last_runs"]]
        return {**out, "last_runs": runs}

    def memory_deadletter(self, project: str | None = None) -> list[dict]:
        from memoryd.memory import service as memory_service

        return [
            {**d, "due_at": iso_time(d["due_at"]), "updated_at": iso_time(d["updated_at"])}
            for d in memory_service.deadletters(self.reader, project)
        ]

    def memory_retry(
        self, ids: list[str], *, every: bool = False, project: str | None = None
    ) -> dict:
        from memoryd.memory import service as memory_service

        return memory_service.retry(self.db, self.home, ids, every=every, project=project)

    def memory_sweep(
        self, project: str | None, *, older_than_days: float = 0.0, dry_run: bool = False
    ) -> dict:
        from memoryd.memory import service as memory_service

        name = self.default_project(project)
        return memory_service.sweep(
            self.db, self.home, name, older_than_days=older_than_days, dry_run=dry_run
        )


RECORD_TIMES = ("created_at", "updated_at", "last_seen_at")


def _record_view(rec: dict) -> dict:
    """A memory record as the API shows it: times as ISO strings, no internal ids."""
    out = {k: iso_time(v) if k in RECORD_TIMES else v for k, v in rec.items()}
    out.pop("project_id", None)
    return out
