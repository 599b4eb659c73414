"""The Ray executor: job batches run as Ray tasks instead of local worker processes.

Only the ``run`` half of a job moves: the supervisor stays the only claimer and the
only writer, so leases, fencing and exactly-once effects are those of the local
pool. Each job slot is a virtual worker that holds Ray task references instead of
a pipe; a task whose Ray worker dies (or that passes ``job_timeout_seconds`` and is
cancelled) loses its batch exactly as a dead local worker does: the attempt is
charged and the jobs go back to the queue through their leases. Ray's own task
retries are off (``max_retries=0``), so nothing runs twice behind the lease.

The retention worker stays local: it alone owns the archive's RocksDB.

Tasks read files where they run: the home and the projects' roots must be at the
same paths on every Ray node (a shared filesystem), as they are on one machine.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.base import logs
from memoryd.base.config import Config
from memoryd.base.errors import MemorydError
from memoryd.queue import ClaimedJob
from memoryd.workers.pool import JOBS_POOL, PoolEvents, WorkerPool

_CONTEXTS: dict[str, Any] = {}  # per Ray worker process: one WorkContext per home


class RayUnavailable(MemorydError):
    code = "RAY_UNAVAILABLE"
    exit_code = 2


def _run_batch(
    home: str, config_values: dict, modules: tuple[str, ...], index: int, batch: list
) -> list:
    """The task: run a batch in a Ray worker, with a context kept for its later tasks."""
    from memoryd.workers.contract import WorkContext
    from memoryd.workers.registry import Registry
    from memoryd.workers.worker import run_batch

    ctx = _CONTEXTS.get(home)
    if ctx is None:
        registry = Registry.from_modules(modules)
        ctx = _CONTEXTS[home] = WorkContext(Path(home), Config(**config_values), index, registry)
    return run_batch(ctx, batch)


@dataclass(eq=False)
class RaySlot:
    """A virtual job worker: the Ray tasks of the batches sent to it, oldest first."""

    index: int
    pool: str = JOBS_POOL
    outstanding: deque = field(default_factory=deque)  # batches of ClaimedJob, in order
    refs: deque = field(default_factory=deque)  # their Ray task references
    sent_at: deque = field(default_factory=deque)  # monotonic time each batch was sent
    outbox: deque = field(default_factory=deque)  # always empty: no pipe to fill
    death: str | None = None
    broken: bool = False
    pid: None = None  # no process of ours


class RayWorkerPool:
    """Job slots on Ray; the retention worker local, in a :class:`WorkerPool` of its own.
    The supervisor sees the same interface as the local pool's."""

    def __init__(
        self, home: Path, config: Config, modules: tuple[str, ...], address: str | None = None
    ) -> None:
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--executor ray needs Ray: pip install 'memoryd[ray]'") from None
        self.home, self.config, self.ray = Path(home), config, ray
        self.modules = modules  # the registry's capability modules, for each task
        self.local = WorkerPool(home, config, modules)
        self.ray_slots: list[RaySlot] = []
        if not ray.is_initialized():
            ray.init(
                address=address, include_dashboard=False, log_to_driver=False,
                configure_logging=False,
            )  # fmt: skip
        self.task = ray.remote(max_retries=0)(_run_batch)

    @property
    def slots(self) -> list:
        return [*self.ray_slots, *self.local.slots]

    def start(self, count: int, beside: tuple[str, ...] = ()) -> None:
        self.ray_slots = [RaySlot(i) for i in range(count)]
        self.local.start(0, beside)

    def add(self, index: int, pool: str) -> None:
        self.local.add(index, pool)

    def has(self, pool: str) -> bool:
        return any(s.pool == pool for s in self.slots)

    def in_flight(self) -> int:
        return sum(len(b) for s in self.slots for b in s.outstanding)

    def held(self) -> list[ClaimedJob]:
        return [j for s in self.slots for b in s.outstanding for j in b]

    def send(self, slot, batch: list[ClaimedJob]) -> None:
        if not isinstance(slot, RaySlot):
            return self.local.send(slot, batch)
        ref = self.task.remote(
            str(self.home), self.config.as_dict(), self.modules, slot.index, batch
        )
        slot.outstanding.append(batch)
        slot.refs.append(ref)
        slot.sent_at.append(time.monotonic())

    def poll(self, timeout: float, wake: int | None = None) -> PoolEvents:
        """Finished and lost Ray batches, then the local retention worker's events (its
        wait ends early on a readable ``wake``, as the local pool's does)."""
        events = self._poll_ray(0.0 if self.local.slots else timeout)
        if self.local.slots:
            wait = 0.0 if events.finished or events.lost else timeout
            local = self.local.poll(wait, wake=wake)
            events.finished += local.finished
            events.lost += local.lost
            events.released += local.released
            events.respawned += local.respawned
        return events

    def _poll_ray(self, timeout: float) -> PoolEvents:
        events = PoolEvents()
        self._cancel_overdue()
        refs = [r for s in self.ray_slots for r in s.refs]
        if not refs:
            if timeout > 0 and not self.local.slots:
                time.sleep(timeout)
            return events
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=timeout)
        done = set(ready)
        for slot in self.ray_slots:
            while slot.refs and slot.refs[0] in done:
                self._settle(slot, events)
        return events

    def _settle(self, slot: RaySlot, events: PoolEvents) -> None:
        batch, ref = slot.outstanding.popleft(), slot.refs.popleft()
        slot.sent_at.popleft()
        try:
            outcomes = self.ray.get(ref)
        except Exception as exc:  # the Ray worker died, or the task was cancelled
            reason = slot.death or f"Ray task of slot {slot.index} lost: {type(exc).__name__}"
            events.lost.extend((job, reason) for job in batch)
            logs.event(
                "ray_task_lost",
                f"{reason}; its {len(batch)} jobs go back to the queue",
                level=logging.WARNING,
                slot=slot.index,
                jobs_lost=len(batch),
            )
            slot.death = None
            return
        events.finished.extend(zip(batch, outcomes, strict=True))

    def _cancel_overdue(self) -> None:
        limit = self.config.job_timeout_seconds
        now = time.monotonic()
        for slot in self.ray_slots:
            if slot.refs and slot.death is None and now - slot.sent_at[0] > limit:
                slot.death = (
                    f"job {slot.outstanding[0][0].id} exceeded job_timeout_seconds "
                    f"({limit:g}s): its Ray task was cancelled"
                )
                self.ray.cancel(slot.refs[0], force=True)

    def stop(self) -> None:
        for slot in self.ray_slots:
            for ref in slot.refs:
                self.ray.cancel(ref, force=True)
            slot.outstanding.clear()
            slot.refs.clear()
            slot.sent_at.clear()
        self.local.stop()
