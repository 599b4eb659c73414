"""The library API: everything the CLI does is one call here or in a subject module.

:class:`Memoryd` is the handle on one home: its configuration, the authority, the
archive (:meth:`Memoryd.archive`) and the routing of a request to a running
supervisor (:meth:`Memoryd.routed`). What a request does lives by subject, each a
small class over the handle: :mod:`~memoryd.operations.home` (status, settings,
checkpoint, rebuild, stop), :mod:`~memoryd.operations.jobs`,
:mod:`~memoryd.operations.projects` (ingest too), :mod:`~memoryd.operations.search`,
:mod:`~memoryd.operations.recall`, :mod:`~memoryd.operations.memory`,
:mod:`~memoryd.operations.archive`.

from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.operations.jobs import Jobs
md = Memoryd(home="/tmp/mdhome")
Jobs(md).add("noop", count=10)
md.run(workers=2, drain=True)
Home(md).status()["queue"]  # {"queued": 0, "claimed": 0, "done": 10, ...}
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memoryd.base import drainstart
from memoryd.base.config import (
    ARCHIVE_DIR,
    ARCHIVE_POLL_SECONDS,
    ARCHIVE_WAIT_SECONDS,
    AUTHORITY_FILE,
    CONTROL_STOPPING_TRIES,
    FOLLOW_POLL_SECONDS,
    SUPERVISOR_LOCK_FILE,
    SUPERVISOR_STATE_FILE,
    Config,
    default_home,
    load_config,
)
from memoryd.base.errors import (
    ArchiveBusy,
    HomeMissing,
    HomeNotWritable,
    MemorydError,
    StoreBusy,
    SupervisorRunning,
    SupervisorStopping,
    UsageError,
    disk_full,
    is_disk_full,
    typed_disk_full,
)
from memoryd.base.home import DIR_MODE, make_private, private_umask
from memoryd.base.locks import FileLock, running_supervisor
from memoryd.operations import control_client
from memoryd.operations.control_client import ARCHIVE_READS, Disconnected
from memoryd.operations.drain import Drain

if TYPE_CHECKING:
    from memoryd.archive.owner import ArchiveOwner
    from memoryd.queue import JobQueue
    from memoryd.storage import Authority
    from memoryd.workers.registry import Registry

# Modules a command needs only when it runs (ingest, memory, the archive, the
# supervisor, the stores: a request a supervisor answers opens none) are imported in
# the methods that use them: every CLI start imports this.

CONTROL_ARCHIVE_OPS = (
    "get",
    "search",
    "retention_status",
    "projects",
    "access",
    "retrieval_lease",
    "lease",
)  # the control socket's


class NotRouted(Exception):
    """A ``route_only`` request that no supervisor answered (it stopped meanwhile)."""


_STOPPED = object()  # a control answer cut off by the supervisor's exit


def _stopping(answer: dict) -> bool:
    return not answer.get("ok") and answer.get("error") == SupervisorStopping.code


def _probe_writable(folder: Path) -> None:
    """Create and remove a file in ``folder`` (an ``OSError`` when it cannot be written);
    ``tempfile``'s import (random, shutil and its compressors) is not on every command's
    path for it."""
    probe = folder / f".probe-{os.getpid()}-{time.monotonic_ns()}"
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    probe.unlink()


def _open_readonly(home: Path, config: Config) -> Authority:
    """A read-only connection; an immutable one when even that cannot open (a WAL
    database whose -shm cannot be created, on a read-only file system)."""
    import apsw

    from memoryd.storage import open_authority

    try:
        return open_authority(home, config, readonly=True)
    except (HomeNotWritable, apsw.CantOpenError):
        return open_authority(home, config, immutable=True)


class Memoryd:
    """One data home: its configuration, authority, queue and archive, and the running
    supervisor a request goes to."""

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
        self._registry = registry  # built on first use: its import of every capability
        # (numpy, the scanner) costs a plain command like status or search a third of its start
        private_umask()  # the library entry: every file this process creates is private
        self.home = Path(home).expanduser() if home else default_home()
        self.config = load_config(self.home, overrides, strict=strict)
        self._db: Authority | None = None
        self.via_control = True  # reads go to a running supervisor's control socket
        # never run embedded: a request no supervisor answers raises NotRouted (the MCP
        # server's event-loop reads, which must not open stores beside its worker thread)
        self.route_only = False
        self._client = control_client.Client(self.home)  # its connection, kept for the session
        self._owner: ArchiveOwner | None = None  # the embedded archive held by archive_held()
        self.drain = Drain(self.home)  # the draining supervisor consolidate() started, if any
        # the control server's own archive reads (a secondary instance); NotImplemented: queue
        self.archive_reader: Callable[[str, dict], Any] | None = None

    @property
    def registry(self) -> Registry:
        """The job kinds (default: every capability memoryd ships)."""
        if self._registry is None:
            from memoryd.app import default_registry

            self._registry = default_registry()
        return self._registry

    # -- plumbing --------------------------------------------------------------

    def ensure_home(self) -> Path:
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
            _probe_writable(self.home)
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
            from memoryd.storage import open_authority

            self.ensure_home()
            self._db = open_authority(self.home, self.config)
        return self._db

    @property
    def reader(self) -> Authority:
        """The authority for a read: never creates a home (a typo'd path must not look
        like an empty one), and opens a home this process cannot write read-only."""
        if self._db is None:
            from memoryd.storage import open_authority

            self.require_home()
            path = self.home / AUTHORITY_FILE
            if os.access(self.home, os.W_OK) and (not path.exists() or os.access(path, os.W_OK)):
                self._db = open_authority(self.home, self.config)
            else:
                self._db = _open_readonly(self.home, self.config)
        return self._db

    def require_home(self) -> None:
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
        from memoryd.queue import JobQueue

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

    def run(
        self,
        *,
        workers: int | None = None,
        drain: bool = False,
        executor: str = "local",
        ray_address: str | None = None,
        paused_bound: float | None = None,
    ) -> dict:
        """Run a supervisor in this process until stopped (or drained); ``executor="ray"``
        runs job batches as Ray tasks (see :mod:`memoryd.workers.raypool`);
        ``paused_bound``: see :class:`~memoryd.workers.supervisor.Supervisor`.

        The supervisor lock is taken first: a run that cannot have it (a drain started
        by a face while another supervisor starts) ends before loading the supervisor,
        and the other faces see a supervisor from the start of this one's."""
        self.ensure_home()
        lock = FileLock(self.home / SUPERVISOR_LOCK_FILE)
        took = lock.try_acquire()
        drainstart.release()  # a drain: the other faces now see who holds the lock
        if not took:
            raise SupervisorRunning(self.home, running_supervisor(self.home))
        try:
            sup = self._supervisor(lock, workers, drain, executor, ray_address, paused_bound)
        except BaseException:
            lock.release()
            raise
        with typed_disk_full(str(self.home)):
            return asdict(sup.run())  # releases the lock at its end

    def _supervisor(
        self,
        lock: FileLock,
        workers: int | None,
        drain: bool,
        executor: str,
        ray_address: str | None,
        paused_bound: float | None,
    ) -> Any:
        from memoryd.operations import runtime  # the socket's request side: not at every start
        from memoryd.workers.supervisor import Supervisor

        self.close()  # the supervisor opens its own connection
        return Supervisor(
            self.home,
            self.config,
            workers=workers or self.config.workers,
            drain=drain,
            executor=executor,
            ray_address=ray_address,
            registry=self.registry,
            extensions=runtime.extensions(self.home, self.config, Memoryd),
            paused_bound=paused_bound,
            lock=lock,
        )

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

    def routed(self, request: str, /, **args: Any) -> Any:
        """The answer of a running supervisor's control socket, or None (run embedded;
        a ``route_only`` instance raises :class:`NotRouted` instead)."""
        if not self.supervised():
            return self._unrouted()
        tries = 1 if self.route_only else CONTROL_STOPPING_TRIES
        for _ in range(tries):
            try:
                answer = self._client.request(request, **args)
            except (Disconnected, ConnectionError):
                answer = _STOPPED  # it stopped mid-answer (a drain whose queue ran out)
            if answer is None or (answer is not _STOPPED and not _stopping(answer)):
                break
            # once more after a beat: a stopped supervisor no longer listens, and then the
            # request runs embedded (or at the next supervisor)
            time.sleep(FOLLOW_POLL_SECONDS)
            if not self.supervised():
                return self._unrouted()
        if answer is None or answer is _STOPPED or (self.route_only and _stopping(answer)):
            return self._unrouted()
        return control_client.unwrap(answer)

    def _unrouted(self) -> None:
        if self.route_only:
            raise NotRouted("no supervisor answered: run it embedded")
        return None

    def check_query(self, query: object) -> None:
        """A query is non-blank text of at most ``query_max_bytes`` (a pasted file is not
        a query: refused at once rather than tokenized for seconds), on every face."""
        if not isinstance(query, str):
            raise UsageError(f"a query is text, got {type(query).__name__}")
        if not query.strip():
            raise UsageError("empty query: say what to look for, in plain words")
        size = len(query.encode("utf-8", errors="surrogatepass"))
        if size > self.config.query_max_bytes:
            raise UsageError(
                f"the query is {size} bytes; at most {self.config.query_max_bytes} "
                "(query_max_bytes): ask with the words that matter"
            )

    # -- the evidence archive ----------------------------------------------------

    def archive(self, op: str, args: dict, *, timeout: float = ARCHIVE_WAIT_SECONDS) -> Any:  # noqa: C901 (listed in pyproject.toml)
        """Run one archive operation in the archive's owner and return its answer.

        With a supervisor running, the operation is a job for its retention
        worker (the only process holding the archive read-write); without one,
        it runs here, embedded, under the archive's own lock.
        """
        from memoryd.archive import ops as archive_ops
        from memoryd.archive import spool
        from memoryd.archive.jobs import ARCHIVE_OP
        from memoryd.queue import JobReads, JobSpec

        if op in ARCHIVE_READS:
            self.require_home()
        if op == "search":
            self.check_query(args.get("query"))
        if self.archive_reader is not None:
            answer = self.archive_reader(op, args)
            if answer is not NotImplemented:
                return answer
        elif op in CONTROL_ARCHIVE_OPS and (routed := self.routed("archive", op=op, args=args)):
            return routed
        if self._owner is not None:
            with typed_disk_full(str(self.home)):
                return control_client.unwrap(archive_ops.run_op(self._owner, op, args))
        if running_supervisor(self.home) is None:
            with self.archive_held():
                return self.archive(op, args, timeout=timeout)
        if op == "add":  # the transcript rides as a spool file, never in the job row
            args = {**spool.put(self.home, args), "requests": archive_ops.request_ids(args)}
        try:
            with typed_disk_full(str(self.home)):
                job = self.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": op, "args": args}))
        except BaseException:  # no job will read the spool file: it goes too
            if "spool" in args:
                spool.remove(self.home, args["spool"])
            raise
        deadline = time.monotonic() + timeout
        while True:
            state, _, error = JobReads(self.db).outcome(job)
            if state == "done":
                return control_client.unwrap(self.queue.take_result(job))
            if state == "dead":
                if is_disk_full(error or ""):
                    raise disk_full(error, f"archive job {job}")
                raise MemorydError(f"archive job {job} failed: {error}")
            if state == "queued" and running_supervisor(self.home) is None:
                self.drain.ensure()  # its supervisor exited before claiming it
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
        if (
            self._owner is not None
            or self.archive_reader is not None
            or running_supervisor(self.home) is not None
        ):
            yield
            return
        self.ensure_home()
        with typed_disk_full(str(self.home)):
            owner = self._archive_owner()
        if owner is None:  # a supervisor started meanwhile: its retention worker owns it
            yield
            return
        with owner:
            self._owner = owner
            try:
                yield
            finally:
                self._owner = None

    def _archive_owner(self) -> ArchiveOwner | None:
        """The archive opened embedded, waiting ``archive_busy_wait_seconds`` for another
        command run without a supervisor (it holds the archive for one operation) to let
        go; None when a supervisor started meanwhile."""
        import tenacity

        from memoryd.archive.owner import ArchiveOwner

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, ArchiveBusy) and not e.in_this_process
            ),
            stop=tenacity.stop_after_delay(self.config.archive_busy_wait_seconds),
            wait=tenacity.wait_random_exponential(multiplier=0.01, max=0.25),
            reraise=True,
        )

        def open_owner() -> ArchiveOwner | None:
            if running_supervisor(self.home) is not None:
                return None
            return ArchiveOwner(self.home, self.config)

        return retrying(open_owner)

    def doctor(self, *, deep: bool = False) -> dict:
        """Findings about this home, each with what to do; ``ok`` when none needs action.
        ``deep`` reads every byte of both stores (see :mod:`memoryd.operations.doctor`)."""
        from memoryd.operations.doctor import diagnose

        self.close()
        findings = diagnose(self.home, self.config, deep=deep)
        return {
            "home": str(self.home),
            "ok": all(f["status"] != "action" for f in findings),
            "findings": findings,
        }

    # -- memory consolidation ------------------------------------------------------

    def consolidate(self) -> dict:
        """See queued work through without an operator: a running supervisor takes it
        from the queue; else a draining one is started for the home
        (:mod:`memoryd.operations.drain`).
        ``{"supervisor": pid | None, "started": bool}``; None: none could be started."""
        return self.drain.ensure()

    def consolidator(self) -> dict | None:
        """The running supervisor's state, or the drain started here while it starts."""
        self.drain.reap()
        if (sup := self.supervisor()) is None and self.drain.child is not None:
            return {"pid": self.drain.child.pid}
        return sup
