"""The job worker process: run claimed jobs, send back what they produced.

Messages are pickled lists over a private pipe. A worker receives a batch of
:class:`ClaimedJob` and answers with one :class:`Outcome` per job, in order.
It never writes job effects, and it dies with its supervisor. While a job runs,
its start (monotonic) and id are in the shared ``progress`` array, so the
supervisor can enforce ``job_timeout_seconds``.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import time
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from memoryd.base import logs
from memoryd.base.config import Config
from memoryd.base.errors import MemorydError
from memoryd.workers.contract import WorkContext
from memoryd.workers.registry import Registry

PR_SET_PDEATHSIG = 1
PARENT_CHECK_SECONDS = 1.0


class Outcome(NamedTuple):
    """What one job produced (a named tuple: cheap to pickle back by the thousand)."""

    job_id: int
    ok: bool
    value: Any  # the job's result, or the error text
    seconds: float
    deferred: bool = False  # a retryable condition: requeue without charging an attempt


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL us when the supervisor dies; exit now if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the periodic parent check below still applies
    if os.getppid() != parent_pid:
        os._exit(0)


def run_batch(ctx: WorkContext, batch: list, progress: Any = None) -> list[Outcome]:
    outcomes = []
    for job in batch:
        start = time.perf_counter()
        if progress is not None:
            progress[1], progress[0] = job.id, time.monotonic()
        deferred = False
        ctx.job = job
        try:
            value = ctx.registry.job_kind(job.kind).run(ctx, orjson.loads(job.payload))
            ok = True
        except MemorydError as exc:
            deferred = exc.retryable  # e.g. a busy archive: waited for, not charged
            name = exc.code if deferred else type(exc).__name__
            value, ok = f"{name}: {exc}", False
        except Exception as exc:  # a job's failure is data, never the worker's death
            value, ok = f"{type(exc).__name__}: {exc}", False
        outcomes.append(Outcome(job.id, ok, value, time.perf_counter() - start, deferred))
    if progress is not None:
        progress[0] = 0.0
    return outcomes


def worker_main(
    conn,
    index: int,
    home: str,
    config_values: dict,
    parent_pid: int,
    progress: Any = None,
    capabilities: tuple[str, ...] = (),
) -> None:
    """``capabilities``: the modules of the supervisor's registry (the composition
    root's list), imported here into this process's own registry."""
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides about Ctrl-C
    config = Config(**config_values)
    logs.configure(config.log_format, config.log_level)  # a spawned worker starts bare
    registry = Registry.from_modules(capabilities)
    ctx = WorkContext(Path(home), config, index, registry)
    try:
        _serve(conn, ctx, parent_pid, progress)
    finally:
        ctx.close()  # e.g. the archive: a clean close on a graceful stop


def _serve(conn, ctx: WorkContext, parent_pid: int, progress: Any) -> None:
    while True:
        if not conn.poll(PARENT_CHECK_SECONDS):
            if os.getppid() != parent_pid:
                return
            continue
        try:
            batch = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if batch is None:
            return
        outcomes = run_batch(ctx, batch, progress)
        conn.send_bytes(pickle.dumps(outcomes, protocol=pickle.HIGHEST_PROTOCOL))
