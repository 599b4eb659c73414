"""The supervisor: the only claimer and the only writer of job effects.

Each loop turn commits, in one transaction, the outcomes of every job that
finished since the last turn (each fenced by its lease token), lease renewals,
and the claims that keep every worker fed (group commit, DESIGN.md).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import multiprocess
import orjson
import psutil
from multiprocess.connection import wait

from memoryd.config import SUPERVISOR_LOCK_FILE, SUPERVISOR_STATE_FILE, Config
from memoryd.errors import MemorydError, SupervisorRunning
from memoryd.locks import FileLock, lock_holder
from memoryd.queue import ClaimedJob, JobQueue
from memoryd.storage import Authority, open_authority
from memoryd.storage.maintenance import checkpoint_truncate, wal_bytes
from memoryd.workers.contract import (
    ApplyContext,
    job_kind,
    load_kinds,
    periodic_jobs,
    pool_kinds,
)
from memoryd.workers.worker import Outcome, worker_main

MAX_OUTSTANDING_BATCHES = 2  # per worker: one running, one waiting in the pipe
MAX_DISPATCH_BATCH = 256
WORKER_QUICK_DEATH_SECONDS = 2.0
WORKER_CRASH_LOOP = 5  # quick deaths in a row before the supervisor gives up
EWMA = 0.2
JOBS_POOL = "jobs"
RETENTION_POOL = "retention"  # one worker: the archive's only read-write owner
POOL_CHECK_SECONDS = 1.0  # how often an idle supervisor looks for retention work


@dataclass
class WorkerSlot:
    index: int
    process: Any
    conn: Any
    pool: str = JOBS_POOL
    outstanding: deque = field(default_factory=deque)  # batches of ClaimedJob, in order
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class RunStats:
    done: int = 0
    failed: int = 0
    dead: int = 0
    rejected: int = 0  # late results for leases that were no longer ours
    respawned: int = 0
    reclaimed: int = 0
    turns: int = 0


class WorkerCrashLoop(MemorydError):
    code = "WORKER_CRASH_LOOP"


def log(message: str) -> None:
    """One line on stderr: operators see pauses and their pinning pids."""
    print(f"memoryd[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _ewma(old: float | None, sample: float) -> float:
    return sample if old is None else old + EWMA * (sample - old)


def owner_id(pid: int | None = None) -> str:
    proc = psutil.Process(pid)
    return f"{proc.pid}:{proc.create_time():.3f}"


def owner_alive(owner: str) -> bool:
    try:
        pid, created = owner.split(":")
        return abs(psutil.Process(int(pid)).create_time() - float(created)) < 0.01
    except (ValueError, psutil.Error):
        return False


def running_supervisor(home: Path) -> int | None:
    """The pid of the supervisor running on ``home``, if any."""
    return lock_holder(Path(home) / SUPERVISOR_LOCK_FILE)


def _fork_safe() -> bool:
    """Whether a worker may be forked from this process instead of spawned.

    Only when the process has no open SQLite connection (a forked child must never
    share one, nor SQLite's per-file lock bookkeeping) and no other thread (whose
    locks the child would inherit held).
    """
    return not apsw.connections() and threading.active_count() == 1


def _forked_worker(inherited: list, *args: Any) -> None:
    """Entry of a forked worker: drop what it inherited from the supervisor, then run."""
    gc.freeze()  # never finalize an inherited object here (it is the supervisor's)
    for conn in inherited:
        conn.close()  # our copy only: the supervisor keeps its end
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    worker_main(*args)


class Supervisor:
    def __init__(self, home: Path, config: Config, *, workers: int, drain: bool) -> None:
        self.home = Path(home)
        self.config = config
        self.nworkers = max(1, int(workers))
        self.drain = drain
        self.stats = RunStats()
        self.lock = FileLock(self.home / SUPERVISOR_LOCK_FILE)
        self.owner = owner_id()
        self.slots: list[WorkerSlot] = []
        # claimed, not yet dispatched, per pool of workers
        self.buffers: dict[str, deque[ClaimedJob]] = {JOBS_POOL: deque(), RETENTION_POOL: deque()}
        self.retention_kinds: list[str] = []
        self.next_pool_check = 0.0
        self.first_look = True
        self.next_periodic: dict[str, float] = {}
        self.finished: list[tuple[ClaimedJob, Outcome]] = []
        self.lost: list[tuple[ClaimedJob, str]] = []  # jobs whose worker died
        self.cost: dict[str, float] = {}  # EWMA seconds per job, by kind (dispatch sizing)
        self.job_seconds: float | None = None  # EWMA over all kinds (claim sizing)
        self.stopping = False
        self.stop_deadline = 0.0
        self.lease = float(config.lease_seconds)
        self.next_renew = 0.0
        self.next_reclaim = 0.0
        self.next_checkpoint = 0.0
        self.pause_reason: str | None = None  # set while claims are paused
        self.wal_pinned = False  # the last checkpoint gave way to a reader or writer
        self.quick_deaths = 0  # consecutive workers that died right after starting
        self.ctx = multiprocess.get_context("spawn")  # respawns: the authority is open then
        self.fork_ctx = multiprocess.get_context("fork")
        self.db: Authority
        self.queue: JobQueue

    # -- lifecycle -------------------------------------------------------------

    def run(self) -> RunStats:
        load_kinds()
        if not self.lock.try_acquire():
            pid = running_supervisor(self.home)
            raise SupervisorRunning(
                f"a supervisor is already running on {self.home} (pid {pid}); "
                "stop it first or use `memoryd status`"
            )
        previous: dict = {}
        try:
            # The first workers are forked, before the authority is opened and before
            # our signal handlers exist: a fork costs milliseconds where a fresh
            # interpreter costs a third of a second, and there is nothing to inherit
            # but imported modules (see _fork_safe).
            fork = _fork_safe()
            for i in range(self.nworkers):
                self.slots.append(self._spawn(i, JOBS_POOL, fork=fork))
            self.retention_kinds = pool_kinds(RETENTION_POOL)
            previous = {
                sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
            }
            self.db = open_authority(self.home, self.config)
            self.queue = JobQueue(self.db)
            self._reclaim_dead_supervisors()
            self._write_state()
            self._loop()
        finally:
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.lock.release()
        return self.stats

    def _on_signal(self, signum, frame) -> None:
        if self.stopping:  # a second signal: stop waiting for in-flight work
            self.stop_deadline = 0.0
            return
        self.stopping = True
        self.stop_deadline = time.monotonic() + float(self.config.shutdown_grace_seconds)

    def _reclaim_dead_supervisors(self) -> None:
        dead = [o for o in self.queue.claim_owners() if o != self.owner and not owner_alive(o)]
        if dead:
            self.stats.reclaimed += self.db.write(lambda tx: self.queue.reclaim_owners_in(tx, dead))

    def _spawn(self, index: int, pool: str, *, fork: bool = False) -> WorkerSlot:
        ctx = self.fork_ctx if fork else self.ctx
        parent, child = ctx.Pipe(duplex=True)
        args = (child, index, str(self.home), self.config.as_dict(), os.getpid())
        if fork:
            inherited = [s.conn for s in self.slots]  # our ends of earlier workers' pipes
            target, args = _forked_worker, (inherited, *args)
        else:
            target = worker_main
        proc = ctx.Process(target=target, args=args, name=f"memoryd-{pool}-{index}", daemon=True)
        proc.start()
        child.close()
        return WorkerSlot(index, proc, parent, pool)

    def _write_state(self) -> None:
        state = {
            "pid": os.getpid(),
            "owner": self.owner,
            "workers": [
                {"index": s.index, "pid": s.pid} for s in self.slots if s.pool == JOBS_POOL
            ],
            "retention_worker": next((s.pid for s in self.slots if s.pool == RETENTION_POOL), None),
            "drain": self.drain,
            "claims_paused": self.pause_reason is not None,
            "pause_reason": self.pause_reason,
        }
        path = self.home / SUPERVISOR_STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(state))
        os.replace(tmp, path)

    def _shutdown(self) -> None:
        held = self._held()
        for buffer in self.buffers.values():
            buffer.clear()
        for slot in self.slots:
            slot.outstanding.clear()
            with contextlib.suppress(OSError):
                slot.conn.send_bytes(pickle.dumps(None))
        for slot in self.slots:
            slot.process.join(timeout=2)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=2)
        if held and hasattr(self, "db"):
            self.db.write(lambda tx: self.queue.release_in(tx, held))
        if hasattr(self, "db"):
            checkpoint_truncate(self.db)
            self.db.close()
        (self.home / SUPERVISOR_STATE_FILE).unlink(missing_ok=True)

    # -- the loop --------------------------------------------------------------

    def _in_flight(self) -> int:
        return sum(len(b) for s in self.slots for b in s.outstanding)

    def _loop(self) -> None:
        while True:
            self._maintain()
            self._schedule()
            self._collect(timeout=self._wait_timeout())
            claimed = self._turn()
            if self.wal_pinned:
                self._maintain()  # before handing out more: this turn may have crossed the bound
            if self.stopping:
                if time.monotonic() > self.stop_deadline or not self._in_flight():
                    return
                continue
            self._dispatch()
            if (
                self.drain
                and not claimed
                and not any(self.buffers.values())
                and not self._in_flight()
                and not self.queue.has_pending()
            ):
                return

    def _wait_timeout(self) -> float:
        """No wait before the first look at the queue, nor while claimed jobs wait for a
        free worker."""
        if self.first_look:
            self.first_look = False
            return 0.0
        if any(self.buffers[pool] and self._free_slots(pool) for pool in self.buffers):
            return 0.0
        return float(self.config.poll_seconds)

    def _free_slots(self, pool: str) -> int:
        depth = self._depth()
        return sum(max(0, depth - len(s.outstanding)) for s in self.slots if s.pool == pool)

    def _depth(self) -> int:
        """Batches a worker may hold. While a reader pins the WAL, one: when claims
        pause, only one bounded job per worker is still to commit past the bound."""
        return 1 if self.wal_pinned else MAX_OUTSTANDING_BATCHES

    def _collect(self, timeout: float) -> None:
        """Gather finished batches and notice dead workers."""
        waitables = [s.conn for s in self.slots] + [s.process.sentinel for s in self.slots]
        ready = set(wait(waitables, timeout=timeout)) if waitables else set()
        for slot in list(self.slots):
            if slot.conn in ready:
                self._receive(slot)
            if slot.process.sentinel in ready:
                self._replace_dead(slot)

    def _receive(self, slot: WorkerSlot) -> None:
        while slot.outstanding and slot.conn.poll(0):
            try:
                outcomes = pickle.loads(slot.conn.recv_bytes())
            except (EOFError, OSError):
                return
            batch = slot.outstanding.popleft()
            for job, outcome in zip(batch, outcomes, strict=True):
                self.finished.append((job, outcome))
                self.cost[job.kind] = _ewma(self.cost.get(job.kind), outcome.seconds)
                self.job_seconds = _ewma(self.job_seconds, outcome.seconds)

    def _replace_dead(self, slot: WorkerSlot) -> None:
        self._receive(slot)  # results it sent before dying still count
        slot.process.join(timeout=1)
        reason = f"worker {slot.index} (pid {slot.pid}) died with exit code {slot.process.exitcode}"
        self.lost.extend((job, reason) for batch in slot.outstanding for job in batch)
        slot.conn.close()
        self._guard_crash_loop(slot)
        self.slots[self.slots.index(slot)] = self._spawn(slot.index, slot.pool)
        self.stats.respawned += 1
        self._write_state()

    def _guard_crash_loop(self, slot: WorkerSlot) -> None:
        """Stop instead of respawning forever when workers cannot even start."""
        if time.monotonic() - slot.started > WORKER_QUICK_DEATH_SECONDS:
            self.quick_deaths = 0
            return
        self.quick_deaths += 1
        if self.quick_deaths >= WORKER_CRASH_LOOP:
            raise WorkerCrashLoop(
                f"{self.quick_deaths} workers in a row died within "
                f"{WORKER_QUICK_DEATH_SECONDS:g}s of starting (last exit code "
                f"{slot.process.exitcode}); check that memoryd imports in a fresh interpreter"
            )

    def _claim_size(self, pool: str) -> int:
        if self.stopping or self.pause_reason:
            return 0
        free = self._free_slots(pool)
        if not free:
            return 0
        if pool == RETENTION_POOL:  # archive operations: one at a time, in order
            return max(0, free - len(self.buffers[pool]))
        target = float(self.config.dispatch_target_seconds)
        per_job = self.job_seconds
        per_batch = 1 if per_job is None else MAX_DISPATCH_BATCH
        if per_job:
            per_batch = max(1, min(MAX_DISPATCH_BATCH, int(target / per_job)))
        want = free * per_batch - len(self.buffers[pool])
        return max(0, min(int(self.config.claim_batch_max), want))

    def _claim_filter(self, pool: str) -> dict:
        """Each pool claims its own kinds: retention kinds, or every other kind."""
        return {"kinds": self.retention_kinds, "exclude": pool == JOBS_POOL}

    def _ensure_retention_worker(self) -> None:
        """Start the retention worker when its kinds have work and it is not running."""
        if any(s.pool == RETENTION_POOL for s in self.slots) or not self.retention_kinds:
            return
        now = time.monotonic()
        if now < self.next_pool_check:
            return
        self.next_pool_check = now + POOL_CHECK_SECONDS
        if self.queue.ready_exists(self.retention_kinds):
            self.slots.append(self._spawn(0, RETENTION_POOL))
            self._write_state()

    def _turn(self) -> int:
        """One group commit: outcomes, lost jobs, renewals, reclaims and claims."""
        now = time.time()
        finished, lost = self.finished, self.lost
        self._ensure_retention_worker()
        renew = now >= self.next_renew and bool(self._held())
        reclaim = now >= self.next_reclaim
        # Stopping, or paused by WAL pressure: undispatched claims go back unharmed.
        release = (
            [j for b in self.buffers.values() for j in b]
            if self.stopping or self.pause_reason
            else []
        )
        limits = {pool: self._claim_size(pool) for pool in self.buffers}
        busy = finished or lost or renew or reclaim
        if any(limits.values()) and not busy and not self.queue.ready_exists():
            limits = dict.fromkeys(limits, 0)  # nothing to claim: skip the write
        if not (finished or lost or renew or reclaim or release or any(limits.values())):
            return 0

        def turn(tx: apsw.Connection) -> tuple[list[ClaimedJob], RunStats]:
            tally = RunStats()  # fresh per attempt: a retried transaction counts once
            self._apply_outcomes(tx, finished, tally)
            for job, reason in lost:
                self._count_failure(tally, self.queue.fail_in(tx, job, reason))
            if release:
                self.queue.release_in(tx, release)
            if renew:
                self.queue.renew_in(tx, self._held(), self.lease)
            if reclaim:
                tally.reclaimed = self.queue.reclaim_expired_in(tx)
            claims = {
                pool: self.queue.claim_in(
                    tx, self.owner, limit, self.lease, **self._claim_filter(pool)
                )
                for pool, limit in limits.items()
                if limit
            }
            return claims, tally

        claims, tally = self.db.write(turn)
        self.finished, self.lost = [], []
        for name in ("done", "failed", "dead", "rejected", "reclaimed"):
            setattr(self.stats, name, getattr(self.stats, name) + getattr(tally, name))
        self.stats.turns += 1
        if release:
            for buffer in self.buffers.values():
                buffer.clear()
        if renew:
            self.next_renew = now + self.lease / 4
        if reclaim:
            self.next_reclaim = now + self.lease / 4
        for pool, claimed in claims.items():
            self.buffers[pool].extend(claimed)
        return sum(len(c) for c in claims.values())

    def _held(self) -> list[ClaimedJob]:
        buffered = [j for b in self.buffers.values() for j in b]
        return buffered + [j for s in self.slots for b in s.outstanding for j in b]

    def _apply_outcomes(self, tx: apsw.Connection, finished: list, tally: RunStats) -> None:
        by_kind: dict[str, list[tuple[ClaimedJob, Any]]] = defaultdict(list)
        for job, outcome in finished:
            if outcome.ok:
                by_kind[job.kind].append((job, outcome.value))
            else:
                self._count_failure(tally, self.queue.fail_in(tx, job, outcome.value))
        for kind, items in by_kind.items():
            try:
                with self.db.savepoint("apply"):
                    done = self.queue.complete_many_in(tx, (j for j, _ in items))
                    accepted = [(j, v) for j, v in items if j.id in done]
                    applier = job_kind(kind).apply
                    if accepted and applier:
                        applier(ApplyContext(tx, self.queue, self.config), accepted)
            except Exception as exc:
                error = f"applying results failed: {type(exc).__name__}: {exc}"
                for job, _ in items:
                    self._count_failure(tally, self.queue.fail_in(tx, job, error))
                continue
            tally.done += len(accepted)
            tally.rejected += len(items) - len(accepted)

    @staticmethod
    def _count_failure(tally: RunStats, state: str | None) -> None:
        if state == "dead":
            tally.dead += 1
        elif state == "failed":
            tally.failed += 1
        else:
            tally.rejected += 1  # the lease was no longer ours: nothing applied

    def _dispatch(self) -> None:
        """Hand claimed jobs to workers breadth first: every worker gets a batch before
        any gets a second, so long jobs run side by side, not queued behind each other."""
        if self.pause_reason:
            return  # claims are going back; nothing more may start
        target = float(self.config.dispatch_target_seconds)
        for depth in range(self._depth()):
            for slot in self.slots:
                buffer = self.buffers[slot.pool]
                if not buffer or len(slot.outstanding) > depth:
                    continue
                batch, estimate = [], 0.0
                while buffer and len(batch) < MAX_DISPATCH_BATCH and estimate < target:
                    job = buffer.popleft()
                    batch.append(job)
                    estimate += self.cost.get(job.kind, target)
                slot.conn.send_bytes(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
                slot.outstanding.append(batch)

    def _schedule(self) -> None:
        """Enqueue due periodic jobs (e.g. the retention tick); never while draining."""
        if self.drain or self.stopping:
            return
        now = time.monotonic()
        for periodic in periodic_jobs():
            if now < self.next_periodic.get(periodic.name, 0.0):
                continue
            self.next_periodic[periodic.name] = now + float(
                getattr(self.config, periodic.every_setting)
            )
            spec = periodic.make(self.home, self.config)
            if spec is not None:
                self.queue.enqueue(spec)

    def _maintain(self) -> None:
        """Checkpoint outside every transaction when the WAL has grown or on a period.

        A pinned reader makes TRUNCATE give way; once the WAL has reached
        ``wal_pause_bytes`` that way, claims pause (a soft bound: in-flight
        jobs still commit) and every later cycle retries until one succeeds.
        """
        size = wal_bytes(self.db)
        now = time.monotonic()
        due = (
            self.pause_reason is not None
            or size >= int(self.config.wal_checkpoint_bytes)
            or (size and now >= self.next_checkpoint)
        )
        if not due:
            return
        self.next_checkpoint = now + float(self.config.maintenance_period_seconds)
        result = checkpoint_truncate(self.db)
        self.wal_pinned = not result.ok
        if result.ok:
            reason = None
        elif result.wal_bytes_after >= int(self.config.wal_pause_bytes):
            pids = ", ".join(map(str, result.reader_pids)) or "unknown"
            reason = (
                f"WAL at {result.wal_bytes_after:,} bytes and the checkpoint gave way: "
                f"{result.blocked_by} (pids holding WAL read locks: {pids})"
            )
        else:
            reason = self.pause_reason  # keep the state until a checkpoint succeeds
        if reason != self.pause_reason:
            log(f"claims {'paused: ' + reason if reason else 'resumed: WAL truncated'}")
            self.pause_reason = reason
            self._write_state()
