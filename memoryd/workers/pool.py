"""The worker pool: slots, fork/spawn/respawn, the crash-loop guard, and pipe I/O.

The supervisor's loop must never block on a worker. Every pipe is read and
written without blocking: a batch is framed exactly as
``Connection.send_bytes`` frames it (the worker reads it with ``recv_bytes``)
and queued in the slot's outbox, which is drained whenever the socket is
writable; results are reassembled from whatever bytes have arrived. So a
supervisor sending a big batch while its worker sends a big result cannot
deadlock, and a pipe error is that worker's death, never the supervisor's.

Each worker publishes, in a shared two-double array, the monotonic start time
and id of the job it is running: past ``job_timeout_seconds`` the pool kills it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import select
import signal
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import multiprocess

from memoryd.base import logs
from memoryd.base.config import Config
from memoryd.base.errors import WorkerCrashLoop
from memoryd.queue import ClaimedJob
from memoryd.workers.worker import Outcome, worker_main

JOBS_POOL = "jobs"
RETENTION_POOL = "retention"  # one worker: the archive's only read-write owner
WORKER_QUICK_DEATH_SECONDS = 2.0
WORKER_CRASH_LOOP = 5  # quick deaths in a row before the supervisor gives up
RECV_CHUNK = 1 << 20
_HEADER = struct.Struct("!i")
_LONG_HEADER = struct.Struct("!Q")
_READ = select.POLLIN | select.POLLHUP | select.POLLERR


def exit_text(code: int | None) -> str:
    """How a worker process ended, for a person: the signal that killed it, by name."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"died with exit code {code}"


class WorkerGone(Exception):
    """A worker's pipe failed: the worker is dead or must be treated as such."""


def frame(payload: bytes) -> bytes:
    """The header ``Connection.send_bytes`` puts before ``payload``."""
    n = len(payload)
    return _HEADER.pack(n) if n <= 0x7FFFFFFF else _HEADER.pack(-1) + _LONG_HEADER.pack(n)


def unframe(buffer: bytearray) -> bytes | None:
    """Take one whole message off the front of ``buffer``, or None if incomplete."""
    if len(buffer) < 4:
        return None
    (size,) = _HEADER.unpack_from(buffer)
    start = 4
    if size == -1:
        if len(buffer) < 12:
            return None
        (size,) = _LONG_HEADER.unpack_from(buffer, 4)
        start = 12
    if len(buffer) < start + size:
        return None
    message = bytes(buffer[start : start + size])
    del buffer[: start + size]
    return message


@dataclass(eq=False)  # identity: a slot is one process
class WorkerSlot:
    index: int
    process: Any
    sock: socket.socket
    progress: Any  # shared doubles: [monotonic start of the running job or 0, its id]
    pool: str = JOBS_POOL
    outstanding: deque = field(default_factory=deque)  # batches of ClaimedJob, in order
    started: float = field(default_factory=time.monotonic)
    outbox: deque = field(default_factory=deque)  # memoryviews still to send
    inbox: bytearray = field(default_factory=bytearray)
    death: str | None = None  # why the pool killed it, when it did
    broken: bool = False  # its pipe failed: it is dead or treated as such

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, batch: list[ClaimedJob]) -> None:
        """Queue a batch and send what the socket takes now."""
        data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
        self.outbox.append(memoryview(frame(data)))
        self.outbox.append(memoryview(data))
        self.outstanding.append(batch)
        self.flush()

    def flush(self) -> None:
        while self.outbox:
            try:
                sent = self.sock.send(self.outbox[0], socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                raise WorkerGone(f"pipe write failed: {exc}") from None
            head = self.outbox[0]
            if sent == len(head):
                self.outbox.popleft()
            else:
                self.outbox[0] = head[sent:]

    def receive(self) -> tuple[list[list[Outcome]], str | None]:
        """Every whole answer that has arrived (each: the outcomes of one batch), and
        why the pipe is gone when it is (answers sent before a death still count)."""
        gone = None
        while True:
            try:
                chunk = self.sock.recv(RECV_CHUNK, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                gone = f"pipe read failed: {exc}"
                break
            if not chunk:
                gone = "pipe closed"
                break
            self.inbox += chunk
        answers = []
        while (message := unframe(self.inbox)) is not None:
            answers.append(pickle.loads(message))
        return answers, gone

    def running_since(self) -> tuple[float, int]:
        return self.progress[0], int(self.progress[1])


@dataclass
class PoolEvents:
    """What one look at the pool found."""

    finished: list[tuple[ClaimedJob, Outcome]] = field(default_factory=list)
    lost: list[tuple[ClaimedJob, str]] = field(default_factory=list)  # died running it
    # held by a worker that died running another job (or none): they never caused it
    released: list[tuple[ClaimedJob, str]] = field(default_factory=list)
    respawned: int = 0


def _fork_safe() -> bool:
    """Whether a worker may be forked from this process instead of spawned.

    Only when the process has no open SQLite connection (a forked child must never
    share one, nor SQLite's per-file lock bookkeeping) and no other thread (whose
    locks the child would inherit held).
    """
    files = [c for c in apsw.connections() if c.filename]  # in-memory ones hold no lock
    return not files and threading.active_count() == 1


def _forked_worker(inherited: list, *args: Any) -> None:
    """Entry of a forked worker: drop what it inherited from the supervisor, then run."""
    gc.freeze()  # never finalize an inherited object here (it is the supervisor's)
    for sock in inherited:
        sock.close()  # our copy only: the supervisor keeps its end
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    worker_main(*args)


class WorkerPool:
    """Every worker process of one supervisor."""

    def __init__(self, home: Path, config: Config, capabilities: tuple[str, ...]) -> None:
        self.home = Path(home)
        self.config = config
        self.capabilities = capabilities  # the registry's modules, for each worker
        self.slots: list[WorkerSlot] = []
        self.quick_deaths = 0  # consecutive workers that died right after starting
        self.ctx = multiprocess.get_context("spawn")  # respawns: the authority is open then
        self.fork_ctx = multiprocess.get_context("fork")

    def start(self, count: int, beside: tuple[str, ...] = ()) -> None:
        """The first job workers, and one worker of each pool in ``beside`` (the
        retention worker: archive work beside a supervisor is common, and a worker
        started later is spawned): forked when nothing unsafe to inherit exists yet
        (milliseconds instead of a third of a second for a fresh interpreter, and a
        resource tracker process besides)."""
        fork = _fork_safe()
        for i in range(count):
            self.slots.append(self._spawn(i, JOBS_POOL, fork=fork))
        for pool in beside:
            self.slots.append(self._spawn(0, pool, fork=fork))

    def add(self, index: int, pool: str) -> None:
        self.slots.append(self._spawn(index, pool))

    def has(self, pool: str) -> bool:
        return any(s.pool == pool for s in self.slots)

    def _spawn(self, index: int, pool: str, *, fork: bool = False) -> WorkerSlot:
        ctx = self.fork_ctx if fork else self.ctx
        parent, child = ctx.Pipe(duplex=True)
        progress = ctx.RawArray("d", 2)
        args = (
            child, index, str(self.home), self.config.as_dict(), os.getpid(), progress,
            self.capabilities,
        )  # fmt: skip
        if fork:
            inherited = [s.sock for s in self.slots]  # our ends of earlier workers' pipes
            target, args = _forked_worker, (inherited, *args)
        else:
            target = worker_main
        proc = ctx.Process(target=target, args=args, name=f"memoryd-{pool}-{index}", daemon=True)
        proc.start()
        child.close()
        sock = socket.socket(fileno=os.dup(parent.fileno()))  # raw, never-blocking I/O
        parent.close()
        return WorkerSlot(index, proc, sock, progress, pool)

    # -- looking at the workers ------------------------------------------------

    def in_flight(self) -> int:
        return sum(len(b) for s in self.slots for b in s.outstanding)

    def held(self) -> list[ClaimedJob]:
        return [j for s in self.slots for b in s.outstanding for j in b]

    def send(self, slot: WorkerSlot, batch: list[ClaimedJob]) -> None:
        try:
            slot.send(batch)
        except WorkerGone:
            slot.broken = True  # the next poll replaces it and fails its jobs

    def poll(self, timeout: float, wake: int | None = None) -> PoolEvents:
        """Wait up to ``timeout`` for results, writable pipes or deaths; handle them.
        A readable ``wake`` descriptor (the control socket's) ends the wait early."""
        events = PoolEvents()
        self._enforce_timeouts()
        poller = select.poll()
        if wake is not None:
            poller.register(wake, _READ)
        by_fd: dict[int, WorkerSlot] = {}
        for slot in self.slots:
            by_fd[slot.sock.fileno()] = slot
            poller.register(slot.sock, _READ | (select.POLLOUT if slot.outbox else 0))
            by_fd[slot.process.sentinel] = slot
            poller.register(slot.process.sentinel, _READ)
        if any(slot.broken or slot.death is not None for slot in self.slots):
            timeout = 0.0  # a worker to replace: no wait
        ready = {by_fd.get(fd) for fd, _ in poller.poll(max(0.0, timeout) * 1000)}
        for slot in list(self.slots):
            if slot in ready or slot.outbox or slot.broken or slot.death is not None:
                self._service(slot, events)
        return events

    def _service(self, slot: WorkerSlot, events: PoolEvents) -> None:
        try:
            slot.flush()
        except WorkerGone:
            slot.broken = True
        answers, gone = slot.receive()
        slot.broken = slot.broken or gone is not None
        for outcomes in answers:
            batch = slot.outstanding.popleft()
            events.finished.extend(zip(batch, outcomes, strict=True))
        if slot.broken or slot.death is not None or not slot.process.is_alive():
            self._replace(slot, events)

    def _enforce_timeouts(self) -> None:
        """SIGKILL a worker whose current job has run past ``job_timeout_seconds``."""
        limit = self.config.job_timeout_seconds
        now = time.monotonic()
        for slot in self.slots:
            since, job_id = slot.running_since()
            if since and slot.death is None and now - since > limit:
                self._kill(
                    slot,
                    f"job {job_id} exceeded job_timeout_seconds ({limit:g}s): "
                    f"worker {slot.index} (pid {slot.pid}) killed",
                )

    def _kill(self, slot: WorkerSlot, reason: str) -> None:
        slot.death = slot.death or reason
        with contextlib.suppress(OSError):
            slot.process.kill()

    def _replace(self, slot: WorkerSlot, events: PoolEvents) -> None:
        """The job it was running is lost (its attempt is charged); the others it held go
        back uncharged (done but unanswered, or never started); a fresh worker takes its
        place."""
        since, running = slot.running_since()  # read before the kill: it is shared memory
        slot.process.kill()
        slot.process.join(timeout=5)
        reason = slot.death or (
            f"worker {slot.index} (pid {slot.pid}) {exit_text(slot.process.exitcode)}"
        )
        held = [job for batch in slot.outstanding for job in batch]
        lost = [job for job in held if since and job.id == running]
        events.lost.extend((job, reason) for job in lost)
        events.released.extend((job, reason) for job in held if job not in lost)
        charged = f"job {lost[0].id} charged an attempt, " if lost else ""
        logs.event(
            "worker_respawned",
            f"{reason}; {charged}{len(held) - len(lost)} other held job(s) back to the queue"
            " uncharged, a new worker takes its place",
            level=logging.WARNING,
            worker=slot.index,
            pid=slot.pid,
            exit_code=slot.process.exitcode,
            jobs_lost=len(lost),
            jobs_released=len(held) - len(lost),
        )
        slot.outstanding.clear()
        slot.sock.close()
        self._guard_crash_loop(slot)
        self.slots[self.slots.index(slot)] = self._spawn(slot.index, slot.pool)
        events.respawned += 1

    def _guard_crash_loop(self, slot: WorkerSlot) -> None:
        """Stop instead of respawning forever when workers cannot even start."""
        if slot.death is not None or time.monotonic() - slot.started > WORKER_QUICK_DEATH_SECONDS:
            self.quick_deaths = 0
            return
        self.quick_deaths += 1
        if self.quick_deaths >= WORKER_CRASH_LOOP:
            code = slot.process.exitcode
            if code is not None and code < 0:  # something killed them: not a start failure
                why = f"the last {exit_text(code)}: find what sends it (an OOM killer, a user)"
            else:
                why = (
                    f"the last {exit_text(code)}: check that memoryd imports in a fresh interpreter"
                )
            raise WorkerCrashLoop(
                f"{self.quick_deaths} workers in a row died within "
                f"{WORKER_QUICK_DEATH_SECONDS:g}s of starting; {why}"
            )

    # -- stopping --------------------------------------------------------------

    def stop(self) -> None:
        """Ask every worker to finish, then make sure none is left. Never blocks on a
        pipe: a worker whose pipe is full or mid-frame is simply killed after the wait."""
        goodbye = pickle.dumps(None)
        for slot in self.slots:
            slot.outstanding.clear()
            if slot.outbox:
                self._kill(slot, "stopping with a batch half sent")
                continue
            with contextlib.suppress(OSError):
                slot.sock.send(frame(goodbye) + goodbye, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
        for slot in self.slots:
            slot.process.join(timeout=2)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=2)
            slot.sock.close()
