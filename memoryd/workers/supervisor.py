"""The supervisor: the only claimer and the only writer of job effects.

Each loop turn commits, in one transaction, the outcomes of every job that
finished since the last turn (each fenced by its lease token), lease renewals,
and the claims that keep every worker fed (group commit, DESIGN.md). The
worker processes live in :mod:`memoryd.workers.pool`, claim sizing and batching
in :mod:`memoryd.workers.dispatch`, checkpoints in :mod:`memoryd.workers.walguard`.
It is given its job kinds (a registry) and what runs beside its loop (extensions:
memoryd's control socket and dashboard sampler, :mod:`memoryd.workers.extensions`)
by whoever starts it; it names no capability, face or extension.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import apsw
import orjson
import psutil

from memoryd.base import logs
from memoryd.base.config import (
    SUPERVISOR_APPLYING_FILE,
    SUPERVISOR_LOCK_FILE,
    SUPERVISOR_STATE_FILE,
    Config,
)
from memoryd.base.errors import StoreBusy, SupervisorRunning, WalReplaced
from memoryd.base.locks import FileLock, running_supervisor
from memoryd.queue import LEASE_EXPIRED, ClaimedJob, JobQueue
from memoryd.storage import Authority, corpus, open_authority
from memoryd.storage.maintenance import checkpoint_truncate
from memoryd.workers.contract import ApplyContext
from memoryd.workers.dispatch import Dispatch
from memoryd.workers.extensions import Direct, Extension, Inbox
from memoryd.workers.pool import JOBS_POOL, RETENTION_POOL, PoolEvents, WorkerPool
from memoryd.workers.registry import Registry
from memoryd.workers.walguard import WalGuard
from memoryd.workers.worker import Outcome

POOL_CHECK_SECONDS = 1.0  # how often an idle supervisor looks for retention work
PURGE_STEP_SECONDS = 1.0  # pace of purge steps while a sweep of the jobs table goes on
DIRECT_FIRST_SECONDS = 1.0  # the WAL guard waits at most this long for heartbeats in flight
T = TypeVar("T")


# RunStats fields a turn's tally adds to the run's totals
COUNTED = (
    "done",
    "failed",
    "dead",
    "rejected",
    "deferred",
    "reclaimed",
    "purged",
    "history_purged",
)


@dataclass
class RunStats:
    done: int = 0
    failed: int = 0
    dead: int = 0
    rejected: int = 0  # late results for leases that were no longer ours
    deferred: int = 0  # retryable conditions: requeued without charging an attempt
    respawned: int = 0
    reclaimed: int = 0
    purged: int = 0  # done jobs deleted after jobs_keep_seconds
    history_purged: int = 0  # file history rows deleted after history_keep_seconds
    turns: int = 0


def owner_id(pid: int | None = None) -> str:
    proc = psutil.Process(pid)
    return f"{proc.pid}:{proc.create_time():.3f}"


def owner_alive(owner: str) -> bool:
    try:
        pid, created = owner.split(":")
        return abs(psutil.Process(int(pid)).create_time() - float(created)) < 0.01
    except (ValueError, psutil.Error):
        return False


class ApplyingMark:
    """``supervisor.applying``: the owner and the ids of the jobs whose results are being
    committed right now. If the supervisor dies mid-commit, its successor knows which
    jobs to suspect (a job that kills its supervisor is dead-lettered, not crash-looped).
    One small overwrite of a held file per turn; no fsync (it only has to survive the
    process, not the machine)."""

    def __init__(self, path: Path, owner: str) -> None:
        self.path, self.owner = path, owner
        self.fd: int | None = None

    def previous(self) -> tuple[str, list[int]]:
        """(owner, job ids) left by a supervisor that did not clear its mark."""
        try:
            owner, _, ids = self.path.read_bytes().partition(b"\n")
            return owner.decode(), list(orjson.loads(ids))
        except (OSError, ValueError, UnicodeDecodeError):
            return "", []

    def set(self, ids: list[int]) -> None:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        data = self.owner.encode() + b"\n" + orjson.dumps(ids)
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))

    def clear(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            self.path.unlink(missing_ok=True)


class Supervisor:
    def __init__(
        self,
        home: Path,
        config: Config,
        *,
        workers: int,
        drain: bool,
        registry: Registry,
        extensions: Sequence[Extension] = (),
        executor: str = "local",
        ray_address: str | None = None,
        paused_bound: float | None = None,
        lock: FileLock | None = None,
    ) -> None:
        """``registry``: the job kinds it runs (its modules are imported again by each
        worker process). ``extensions`` run beside the loop, their hooks called in
        order (see :mod:`memoryd.workers.extensions`). ``executor="ray"`` runs job
        batches as Ray tasks (on the cluster at ``ray_address``, else a local one).
        ``paused_bound``: a drain that a caller waits on stops with
        :class:`~memoryd.base.errors.QueuePaused` once claims stayed paused that long.
        ``lock``: the supervisor lock, when the caller took it already (released at
        the end of :meth:`run` all the same)."""
        self.extensions = tuple(extensions)
        self.paused_bound = paused_bound
        self.home = Path(home)
        self.config = config
        self.registry = registry
        self.nworkers = max(1, int(workers))
        self.drain = drain
        self.stats = RunStats()
        self.lock = lock or FileLock(self.home / SUPERVISOR_LOCK_FILE)
        self.owner = owner_id()
        self.pool = _pool(self.home, config, self.registry.modules, executor, ray_address)
        self.dispatch = Dispatch(config.dispatch_target_seconds, config.claim_batch_max)
        self.applying = ApplyingMark(self.home / SUPERVISOR_APPLYING_FILE, self.owner)
        self.inbox: Inbox | None = None  # direct work from the extensions, while running
        self.directs: dict[int, Direct] = {}  # direct work in a worker, by negative id
        self.direct_seq = 0
        self.last_maintain = 0.0  # monotonic time of the WAL guard's last turn
        # claimed, not yet dispatched, per pool of workers
        self.buffers: dict[str, deque[ClaimedJob]] = {JOBS_POOL: deque(), RETENTION_POOL: deque()}
        self.retention_kinds: list[str] = []
        self.next_pool_check = 0.0
        self.first_look = True
        self.next_periodic: dict[str, float] = {}
        self.finished: list[tuple[ClaimedJob, Outcome]] = []
        self.lost: list[tuple[ClaimedJob, str]] = []  # jobs whose worker died running them
        self.freed: list[tuple[ClaimedJob, str]] = []  # other jobs a dead worker held
        self.stopping = False
        self.stop_deadline = 0.0
        self.hurried = False  # a second signal: the retention worker is not waited for
        self.waited_archive = False  # said once that the stop waits for it
        self.lease = config.lease_seconds
        self.next_renew = 0.0
        self.next_reclaim = 0.0
        self.next_purge = 0.0
        self.purge_after = 0  # the job id the next purge step starts after
        self.waiting_since: float | None = None  # set while the store is busy (daemon)
        self.db: Authority
        self.queue: JobQueue
        self.wal: WalGuard

    # -- lifecycle -------------------------------------------------------------

    def run(self) -> RunStats:
        if self.lock.fd is None and not self.lock.try_acquire():
            pid = running_supervisor(self.home)
            raise SupervisorRunning(self.home, pid)
        previous: dict = {}
        try:
            # The first workers are forked before the authority is opened and before
            # our signal handlers exist (see pool._fork_safe); the retention worker too,
            # which opens the archive only at its first job.
            self.retention_kinds = self.registry.pool_kinds(RETENTION_POOL)
            self.pool.start(self.nworkers, (RETENTION_POOL,) if self.retention_kinds else ())
            previous = {
                sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
            }
            self.db = open_authority(self.home, self.config)
            self.queue = JobQueue(self.db)
            self.wal = WalGuard(self.db)
            self._reclaim_dead_supervisors()
            self._enqueue_at_start()
            self._write_state()
            self.inbox = Inbox()
            for extension in self.extensions:
                extension.start(self)
            self._log_start()
            self._loop()
        finally:
            self._shutdown()
            self._log_stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.lock.release()
        return self.stats

    def _log_start(self) -> None:
        pids = [s.pid for s in self.pool.slots if s.pid and s.pool == JOBS_POOL]
        where = f"pids {', '.join(map(str, pids))}" if pids else "Ray tasks"
        logs.event(
            "supervisor_started",
            f"supervisor started on {self.home}: {self.nworkers} workers ({where})"
            f"{', draining' if self.drain else ''}",
            home=str(self.home),
            workers=self.nworkers,
            worker_pids=pids,
            drain=self.drain,
            reclaimed=self.stats.reclaimed,
        )

    def _log_stop(self) -> None:
        st = self.stats
        error = sys.exc_info()[1]  # called in a finally: the error ending the run, if any
        why = "stopped by signal" if self.stopping else "drained" if self.drain else "stopped"
        if error is not None and not isinstance(error, KeyboardInterrupt):
            why = f"stopped on error ({type(error).__name__}: {error})"
        logs.event(
            "supervisor_stopped",
            f"supervisor {why}: done {st.done:,}, failed {st.failed:,}, dead {st.dead:,}, "
            f"rejected {st.rejected:,}, workers respawned {st.respawned}",
            why=why,
            **asdict(st),
        )

    def _on_signal(self, signum, frame) -> None:
        if self.stopping:  # a second signal: stop waiting for in-flight work
            self.stop_deadline = 0.0
            self.hurried = True
            return
        self.stopping = True
        grace = self.config.shutdown_grace_seconds
        self.stop_deadline = time.monotonic() + grace
        logs.event(
            "supervisor_stopping",
            f"stopping on {signal.Signals(signum).name}: no new claims; in-flight jobs get up "
            f"to {grace:g}s to finish (shutdown_grace_seconds), then are released (the "
            "retention worker's bounded job is waited for); a second signal stops at once",
            signal=signal.Signals(signum).name,
        )

    def _reclaim_dead_supervisors(self) -> None:
        """Requeue the claims of dead supervisors; count a death on the jobs the last one
        was committing when it died (poison suspects)."""
        dead = [o for o in self.queue.claim_owners() if o != self.owner and not owner_alive(o)]
        marked_owner, marked = self.applying.previous()
        applying = marked if marked_owner in dead else []
        if dead:
            self.stats.reclaimed += self._write(lambda tx: self._reclaim_in(tx, dead, applying))

    def _enqueue_at_start(self) -> None:
        """Enqueue the jobs each kind's ``at_start`` finds missing (work a crash left
        outside any job); a failed look is logged, never stops the start. No write when
        none is missing."""
        specs = []
        for kind in self.registry.kinds.values():
            if kind.at_start is None:
                continue
            try:
                specs += kind.at_start(self.home, self.config, self.db.conn)
            except Exception as exc:
                logs.event(
                    "start_recovery_failed",
                    f"looking for {kind.name} work left by a crash failed:"
                    f" {type(exc).__name__}: {exc}",
                    level=logging.WARNING,
                    kind=kind.name,
                )
        if specs:
            self._write(lambda tx: self.queue.enqueue_in(tx, specs))

    def _reclaim_in(self, tx: apsw.Connection, dead: list[str], applying: list[int]) -> int:
        """Dead-letter the poison jobs (their kinds recover what they held), requeue the rest."""
        self._recover_in(tx, self.queue.dead_letter_poison_in(tx, dead, applying))
        return self.queue.reclaim_owners_in(tx, dead)

    def _recover_in(self, tx: apsw.Connection, dead: list[ClaimedJob]) -> None:
        """Let the kinds of jobs just dead-lettered recover what they held
        (``JobKind.poisoned``), each kind in a savepoint: a failed recovery is logged,
        never stops the start or the turn."""
        by_kind: dict[str, list[ClaimedJob]] = defaultdict(list)
        for job in dead:
            by_kind[job.kind].append(job)
        for kind, jobs in by_kind.items():
            recover = getattr(self.registry.kinds.get(kind), "poisoned", None)
            if recover is None:
                continue
            try:
                with self.db.savepoint("poisoned"):
                    recover(ApplyContext(tx, self.queue, self.config), jobs)
            except Exception as exc:
                logs.event(
                    "poison_recovery_failed",
                    f"recovering dead-lettered {kind} jobs failed: {type(exc).__name__}: {exc}",
                    level=logging.WARNING,
                    kind=kind,
                    job_ids=[j.id for j in jobs],
                )

    def _write_state(self) -> None:
        slots = self.pool.slots
        state = {
            "pid": os.getpid(),
            "owner": self.owner,
            "workers": [{"index": s.index, "pid": s.pid} for s in slots if s.pool == JOBS_POOL],
            "retention_worker": next((s.pid for s in slots if s.pool == RETENTION_POOL), None),
            "drain": self.drain,
            "claims_paused": self.wal.pause_reason is not None,
            "pause_reason": self.wal.pause_reason,
            "pause_pids": self.wal.pause_pids,
            "store_busy_since": self.waiting_since,
        }
        path = self.home / SUPERVISOR_STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(state))
        os.replace(tmp, path)

    def _shutdown(self) -> None:
        if self.inbox is not None:
            self.inbox.close()
        for extension in self.extensions:
            extension.stop()
        held = self._held()
        for buffer in self.buffers.values():
            buffer.clear()
        self.pool.stop()
        if hasattr(self, "db"):
            try:
                if held:
                    self.db.write(lambda tx: self.queue.release_in(tx, held))
            except WalReplaced:  # said by the error ending the run; the next one reclaims
                pass
            except StoreBusy:  # the next supervisor reclaims them (this owner is dead then)
                logs.event(
                    "store_busy_at_stop",
                    f"the store stayed busy: {len(held)} claims are left to the next supervisor",
                    level=logging.WARNING,
                    claims=len(held),
                )
            with contextlib.suppress(WalReplaced):  # said by the error ending the run
                checkpoint_truncate(self.db)
            self.db.close()
        self.applying.close()
        (self.home / SUPERVISOR_STATE_FILE).unlink(missing_ok=True)

    # -- writing -----------------------------------------------------------------

    def _write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """One transaction. A draining supervisor gives up after write_retry_seconds
        (StoreBusy); a daemon waits as long as another writer holds the store, says so
        once, and says when it resumes (a long outside write must not kill it)."""
        while True:
            try:
                result = self.db.write(fn)
            except StoreBusy:
                if self.drain or (self.stopping and time.monotonic() > self.stop_deadline):
                    raise
                if self.waiting_since is None:
                    self.waiting_since = time.time()
                    logs.event(
                        "store_busy",
                        "the store is busy (another writer holds it); waiting",
                        level=logging.WARNING,
                    )
                    self._write_state()
                continue
            for extension in self.extensions:
                extension.after_commit()
            if self.waiting_since is not None:
                waited = time.time() - self.waiting_since
                logs.event(
                    "store_writable",
                    f"the store is writable again after {waited:.1f}s",
                    waited_seconds=round(waited, 3),
                )
                self.waiting_since = None
                self._write_state()
            return result

    # -- the loop --------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            self._maintain()
            if self.paused_bound is not None:
                self.wal.check_paused(self.paused_bound)
            self._schedule()
            self._collect(timeout=self._wait_timeout())
            self._send_direct()  # at once: a heartbeat must not wait for a checkpoint
            claimed = self._turn()
            if self.wal.pinned:
                self._maintain()  # before handing out more: this turn may have crossed the bound
            if self.stopping:
                if not self.pool.in_flight() or self._stop_now():
                    return
                continue
            self._dispatch()
            if (
                self.drain
                and not claimed
                and not any(self.buffers.values())
                and not self.pool.in_flight()
                and not self.queue.has_pending()
            ):
                return

    def _stop_now(self) -> bool:
        """Past the grace period while stopping: in-flight jobs are given up (killed),
        except the retention worker's, which is waited for (its archive work, a
        retention tick included, is bounded) unless a second signal came."""
        if time.monotonic() <= self.stop_deadline:
            return False
        archive = any(s.outstanding for s in self.pool.slots if s.pool == RETENTION_POOL)
        if not archive or self.hurried:
            return True
        if not self.waited_archive:
            self.waited_archive = True
            logs.event(
                "stop_waits_for_retention",
                "stopping: waiting for the retention worker's job (bounded) to finish",
            )
        return False

    def _maintain(self) -> None:
        """The WAL guard's turn, put off while a control write (a lease heartbeat) is in
        the retention worker: its answer is collected first, never after a checkpoint
        retry (which reads /proc/locks and may republish the state while paused)."""
        now = time.monotonic()
        if self.directs and now - self.last_maintain < DIRECT_FIRST_SECONDS:
            return
        self.last_maintain = now
        if self.wal.maintain():
            self._write_state()

    def _wait_timeout(self) -> float:
        """No wait before the first look at the queue, nor while claimed jobs wait for a
        free worker."""
        if self.first_look:
            self.first_look = False
            return 0.0
        if any(self.buffers[pool] and self._free_slots(pool) for pool in self.buffers):
            return 0.0
        return self.config.poll_seconds

    def _depth(self) -> int:
        return self.dispatch.depth(self.wal.pinned)

    def _free_slots(self, pool: str) -> int:
        outstanding = (len(s.outstanding) for s in self.pool.slots if s.pool == pool)
        return self.dispatch.free_slots(outstanding, self._depth())

    def _collect(self, timeout: float) -> None:
        """Gather finished batches; dead or timed-out workers are replaced by the pool."""
        events = self.pool.poll(timeout, wake=self.inbox.wake_read if self.inbox else None)
        self._finish_direct(events)
        self.dispatch.observe_many((job.kind, outcome.seconds) for job, outcome in events.finished)
        self.finished.extend(events.finished)
        self.lost.extend(events.lost)
        self.freed.extend(events.released)
        if events.respawned:
            self.stats.respawned += events.respawned
            self._write_state()

    def _send_direct(self) -> None:
        """Direct work the extensions submitted (the control socket's lease heartbeats)
        goes straight to a worker of its kind's pool, claims paused or not: it never
        touches the authority. Negative ids mark it."""
        for item in self.inbox.take() if self.inbox else ():
            item.pool = self.registry.job_kind(item.kind).pool
            if not self.pool.has(item.pool):
                self.pool.add(0, item.pool)
                self._write_state()
            self.direct_seq -= 1
            self.directs[self.direct_seq] = item
            slot = next(s for s in self.pool.slots if s.pool == item.pool)
            job = ClaimedJob(self.direct_seq, item.kind, item.payload, "control", 1, None)
            self.pool.send(slot, [job])

    def _finish_direct(self, events: PoolEvents) -> None:
        """Answer the direct work the pool finished or lost; keep it off the queue."""
        for results, lose in (
            (events.finished, False),
            (events.lost, True),
            (events.released, True),
        ):
            for pair in [p for p in results if p[0].id < 0]:
                results.remove(pair)
                job, outcome = pair
                item = self.directs.pop(job.id)
                if lose:
                    item.finish(False, outcome)
                else:
                    item.finish(outcome.ok, outcome.value)

    def _claim_size(self, pool: str) -> int:
        if self.stopping or self.wal.pause_reason:
            return 0
        return self.dispatch.claim_size(
            self._free_slots(pool),
            len(self.buffers[pool]),
            one_at_a_time=pool == RETENTION_POOL,  # archive operations, in order
        )

    def _claim_filter(self, pool: str) -> dict:
        """Each pool claims its own kinds: retention kinds, or every other kind."""
        return {"kinds": self.retention_kinds, "exclude": pool == JOBS_POOL}

    def _ensure_retention_worker(self) -> None:
        """Start the retention worker when its kinds have work and it is not running."""
        if self.pool.has(RETENTION_POOL) or not self.retention_kinds:
            return
        now = time.monotonic()
        if now < self.next_pool_check:
            return
        self.next_pool_check = now + POOL_CHECK_SECONDS
        if self.queue.ready_exists(self.retention_kinds):
            self.pool.add(0, RETENTION_POOL)
            self._write_state()

    def _turn(self) -> int:  # noqa: C901 (listed in pyproject.toml)
        """One group commit: outcomes, lost jobs, renewals, reclaims, a purge step and
        claims. Results of poison suspects are then committed apart (see _isolate)."""
        now = time.time()
        finished, suspects = self._isolate(self.finished)
        lost, freed = self.lost, [job for job, _ in self.freed]
        self._ensure_retention_worker()
        renew = now >= self.next_renew and bool(self._held())
        reclaim = now >= self.next_reclaim
        purge = now >= self.next_purge and not self.wal.pause_reason  # a purge writes
        # Stopping, or paused by WAL pressure: undispatched claims go back unharmed.
        release = (
            [j for b in self.buffers.values() for j in b]
            if self.stopping or self.wal.pause_reason
            else []
        )
        limits = {pool: self._claim_size(pool) for pool in self.buffers}
        busy = finished or lost or freed or renew or reclaim
        if any(limits.values()) and not busy and not self.queue.ready_exists():
            limits = dict.fromkeys(limits, 0)  # nothing to claim: skip the write
        if not (busy or suspects or purge or release or any(limits.values())):
            return 0

        def turn(tx: apsw.Connection) -> tuple[dict, RunStats, int]:
            tally = RunStats()  # fresh per attempt: a retried transaction counts once
            self._apply_outcomes(tx, finished, tally)
            for job, reason in lost:
                self._fail_in(tx, tally, job, reason)
            self.queue.release_in(tx, freed)
            if release:
                self.queue.release_in(tx, release)
            if renew:
                self.queue.renew_in(tx, self._held(), self.lease)
            if reclaim:
                self._reclaim_expired_in(tx, tally)
            after = self.purge_after
            if purge:
                keep, step = self.config.jobs_keep_seconds, self.config.jobs_purge_batch
                tally.purged, after = self.queue.purge_done_in(tx, keep, after, step)
                before = now - self.config.history_keep_seconds
                tally.history_purged = corpus.purge_history_in(tx, before, step)
            claims = {
                pool: self.queue.claim_in(
                    tx, self.owner, limit, self.lease, **self._claim_filter(pool)
                )
                for pool, limit in limits.items()
                if limit
            }
            for extension in self.extensions:  # after this turn's changes
                extension.in_turn(tx, self, tally)
            return claims, tally, after

        self._mark_applying(finished)
        claims, tally, after = self._write(turn)
        self.applying.clear()
        self.finished, self.lost, self.freed = [], [], []
        self._add_tally(tally)
        for group in suspects:
            self._apply_apart(group)
        if release:
            for buffer in self.buffers.values():
                buffer.clear()
        if renew:
            self.next_renew = now + self.lease / 4
        if reclaim:
            self.next_reclaim = now + self.lease / 4
        if purge:
            self.purge_after = after  # a sweep goes on step by step, then rests a period
            rest = self.config.maintenance_period_seconds
            self.next_purge = now + (PURGE_STEP_SECONDS if after else rest)
        for pool, claimed in claims.items():
            self.buffers[pool].extend(claimed)
        return sum(len(c) for c in claims.values())

    def _add_tally(self, tally: RunStats) -> None:
        for name in COUNTED:
            setattr(self.stats, name, getattr(self.stats, name) + getattr(tally, name))
        self.stats.turns += 1

    def _isolate(self, finished: list) -> tuple[list, list[list]]:
        """Split off the results of poison suspects (jobs being applied when a supervisor
        died). Those with fewer than ``cap - 1`` deaths are committed together in one
        extra transaction, those with more each in its own: a healthy job that merely
        shared a fatal commit is then never charged up to the cap (it gets at most
        ``cap - 1`` deaths before it is applied alone and succeeds)."""
        if not any(job.deaths for job, _ in finished):
            return finished, []
        last_chance = self.queue.death_cap - 1
        normal, group, alone = [], [], []
        for job, outcome in finished:
            if not (job.deaths and outcome.ok):
                normal.append((job, outcome))
            elif job.deaths < last_chance:
                group.append((job, outcome))
            else:
                alone.append([(job, outcome)])
        return normal, ([group] if group else []) + alone

    def _mark_applying(self, finished: list) -> None:
        ids = [job.id for job, outcome in finished if outcome.ok]
        if ids:
            self.applying.set(ids)

    def _apply_apart(self, items: list[tuple[ClaimedJob, Outcome]]) -> None:
        """Commit suspects' results in a transaction of their own, under their own mark:
        if they kill us again, only they are charged the death."""
        self._mark_applying(items)

        def apart(tx: apsw.Connection) -> RunStats:
            tally = RunStats()
            self._apply_outcomes(tx, items, tally)
            return tally

        tally = self._write(apart)
        self.applying.clear()
        self._add_tally(tally)

    def _held(self) -> list[ClaimedJob]:
        held = [j for b in self.buffers.values() for j in b] + self.pool.held()
        return [j for j in held if j.id > 0]  # direct work is no queue row

    def _apply_outcomes(self, tx: apsw.Connection, finished: list, tally: RunStats) -> None:
        by_kind: dict[str, list[tuple[ClaimedJob, Any]]] = defaultdict(list)
        for job, outcome in finished:
            if outcome.ok:
                by_kind[job.kind].append((job, outcome.value))
            elif outcome.deferred:
                tally.deferred += self.queue.defer_in(tx, job, outcome.value)
            else:
                self._fail_in(tx, tally, job, outcome.value)
        for kind, items in by_kind.items():
            try:
                self._apply_kind(tx, kind, items, tally)
            except Exception:
                # One job's failure is that job's alone: each job again in its own savepoint.
                for item in items:
                    self._apply_one(tx, kind, item, tally)

    def _apply_kind(self, tx: apsw.Connection, kind: str, items: list, tally: RunStats) -> None:
        """Complete and apply a kind's jobs together, undone as a whole if it raises."""
        with self.db.savepoint("apply"):
            done = self.queue.complete_many_in(tx, (j for j, _ in items))
            accepted = [(j, v) for j, v in items if (j.id, j.token) in done]
            applier = self.registry.job_kind(kind).apply
            if accepted and applier:
                applier(ApplyContext(tx, self.queue, self.config), accepted)
        tally.done += len(accepted)
        tally.rejected += len(items) - len(accepted)

    def _apply_one(self, tx: apsw.Connection, kind: str, item: tuple, tally: RunStats) -> None:
        try:
            self._apply_kind(tx, kind, [item], tally)
        except Exception as exc:
            error = f"applying results failed: {type(exc).__name__}: {exc}"
            self._fail_in(tx, tally, item[0], error)

    def _fail_in(self, tx: apsw.Connection, tally: RunStats, job: ClaimedJob, error: str) -> None:
        """Charge a failed attempt; a job out of attempts is its kind's to recover from
        (``JobKind.poisoned``), as one that killed its supervisors is."""
        state = self.queue.fail_in(tx, job, error)
        self._count_failure(tally, state, job, error)
        if state == "dead":
            self._recover_in(tx, [job])

    def _reclaim_expired_in(self, tx: apsw.Connection, tally: RunStats) -> None:
        """Charge the claims whose lease ran out (their worker died or hung); one out of
        attempts is dead-lettered, reported and recovered like a crashed worker's."""
        for job, state in self.queue.reclaim_expired_in(tx):
            tally.reclaimed += 1
            if state == "dead":
                self._count_failure(tally, state, job, LEASE_EXPIRED)
                self._recover_in(tx, [job])

    @staticmethod
    def _count_failure(tally: RunStats, state: str | None, job: ClaimedJob, error: str) -> None:
        if state == "dead":
            tally.dead += 1
            logs.event(
                "job_dead",
                f"job {job.id} ({job.kind}) is dead after {job.attempts} attempts: {error}",
                level=logging.WARNING,
                job_id=job.id,
                kind=job.kind,
                attempts=job.attempts,
                error=error,
            )
        elif state == "failed":
            tally.failed += 1
        else:
            tally.rejected += 1  # the lease was no longer ours: nothing applied

    def _dispatch(self) -> None:
        """Hand claimed jobs to workers breadth first: every worker gets a batch before
        any gets a second, so long jobs run side by side, not queued behind each other."""
        if self.wal.pause_reason:
            return  # claims are going back; nothing more may start
        for depth in range(self._depth()):
            for slot in self.pool.slots:
                buffer = self.buffers[slot.pool]
                if not buffer or len(slot.outstanding) > depth or slot.broken:
                    continue
                self.pool.send(slot, self.dispatch.next_batch(buffer, self.wal.pinned))

    def _schedule(self) -> None:
        """Enqueue due periodic jobs (e.g. the retention tick); never while draining."""
        if self.drain or self.stopping:
            return
        now = time.monotonic()
        for periodic in self.registry.periodic_jobs():
            if now < self.next_periodic.get(periodic.name, 0.0):
                continue
            self.next_periodic[periodic.name] = now + float(
                getattr(self.config, periodic.every_setting)
            )
            spec = periodic.make(self.home, self.config)
            if spec is not None:
                self._write(lambda tx, spec=spec: self.queue.enqueue_in(tx, [spec]))


def _pool(home: Path, config: Config, modules, executor: str, ray_address: str | None):
    if executor == "ray":
        from memoryd.workers.raypool import RayWorkerPool

        return RayWorkerPool(home, config, modules, ray_address)
    return WorkerPool(home, config, modules)
