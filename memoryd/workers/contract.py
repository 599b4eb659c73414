"""The job contract between capabilities, job workers and the supervisor.

A capability lists its :class:`JobKind` values in ``KINDS`` (the composition
root, :mod:`memoryd.app`, collects them):

- ``run(ctx, payload)`` executes in a job worker process. It may read files and
  the authority, and returns the prepared rows to write (any picklable value).
- ``apply(actx, done)`` executes in the supervisor, inside the group-commit
  transaction (``actx.tx``), for every job of that kind whose lease was still
  valid. It is the only place job effects are written; it may enqueue follow-up
  jobs with ``actx.queue.enqueue_in(actx.tx, ...)`` in the same commit.
- ``poisoned(actx, jobs)`` (optional) executes in the supervisor, in the
  transaction that dead-letters jobs of that kind for killing their supervisor
  ``supervisor_death_cap`` times (``job.deaths`` reaches it), or for failing their
  last attempt (``max_attempts``): the kind sets aside what killed it and
  enqueues what should go on (the dead job itself stays dead).
- ``at_start(home, config, conn)`` (optional) executes in the supervisor as it starts,
  after the dead supervisors' claims are reclaimed, over a read connection: it returns
  the jobs (``JobSpec``, under dedupe keys) that work a crash left outside any job
  needs; the supervisor enqueues them in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from memoryd.base.config import Config
from memoryd.queue import ClaimedJob, JobQueue, JobSpec
from memoryd.storage.authority import savepoint


@dataclass
class WorkContext:
    """What a running job may use inside its worker process."""

    home: Path
    config: Config
    worker_index: int
    registry: Any = field(default=None, repr=False)  # memoryd.workers.registry.Registry
    job: ClaimedJob | None = None  # the job being run (its attempt: a retry may want care)
    _authority: Any = field(default=None, repr=False)
    _resources: dict = field(default_factory=dict, repr=False)

    def authority(self):
        """A lazily opened connection of this worker (reads only, by contract)."""
        if self._authority is None:
            from memoryd.storage import open_authority

            self._authority = open_authority(self.home, self.config)
        return self._authority

    def resource(self, name: str, factory: Callable[[], Any]) -> Any:
        """A long-lived object of this worker (e.g. the archive owner), made once."""
        if name not in self._resources:
            self._resources[name] = factory()
        return self._resources[name]

    def close(self) -> None:
        for res in self._resources.values():
            close = getattr(res, "close", None)
            if close:
                close()
        self._resources.clear()
        if self._authority is not None:
            self._authority.close()
            self._authority = None


@dataclass(frozen=True)
class ApplyContext:
    """What an ``apply`` may use inside the supervisor's group commit."""

    tx: apsw.Connection
    queue: JobQueue
    config: Config

    def savepoint(self, name: str = "job") -> AbstractContextManager[None]:
        """A scope of ``tx`` undone alone if its body raises. A job's apply runs inside
        the group commit, beside the other jobs of the same commit: one whose effects
        fail rolls back only its own savepoint (and is failed or parked), never the
        others' effects nor the commit."""
        return savepoint(self.tx, name)


Runner = Callable[[WorkContext, Any], Any]
Applier = Callable[[ApplyContext, list[tuple[ClaimedJob, Any]]], None]
Recovery = Callable[[ApplyContext, list[ClaimedJob]], None]


@dataclass(frozen=True)
class JobKind:
    name: str
    run: Runner
    apply: Applier | None = None
    validate: Callable[[Any], None] | None = None  # raises BadPayload at enqueue time
    doc: str = ""
    pool: str = "jobs"  # "retention": run by the single retention worker (the archive owner)
    # in the supervisor, in the transaction that dead-letters jobs of this kind (killing
    # ``supervisor_death_cap`` supervisors, or out of attempts): recover what they held
    # (never rerun them)
    poisoned: Recovery | None = None
    # in the supervisor at start: the jobs to enqueue for work a crash left outside any job
    at_start: Callable[[Path, Config, apsw.Connection], list[JobSpec]] | None = None


@dataclass(frozen=True)
class Periodic:
    """A job a running (non-draining) supervisor enqueues every ``every_setting`` seconds.

    ``make(home, config)`` returns the job, or None when there is nothing to do
    (for example no archive yet). Its dedupe key keeps at most one live copy.
    """

    name: str
    every_setting: str  # name of the config setting holding the period
    make: Callable[[Path, Config], Any]


USER_KINDS = frozenset({"noop", "sleep", "fail"})  # all `memoryd jobs add` may enqueue
