"""What a supervisor runs beside its loop: extensions, and the direct work they hand it.

Whoever starts a supervisor passes its extensions (memoryd's own: the control
socket and the dashboard's sampler, see :mod:`memoryd.operations.runtime`); the
supervisor knows none by name and calls each one's hooks, in the order given:

Each hook gets the supervisor as :class:`Running` (what an extension may read):

- ``start(sup)``: once, in the supervisor's process, after the store is open, dead
  supervisors' claims are reclaimed, the start jobs are enqueued and the state file
  is written, before the first turn. ``sup.inbox`` takes direct work from here on.
- ``in_turn(tx, sup, tally)``: inside a turn's group commit, after the turn's
  changes (outcomes, claims), when the turn writes at all (an idle turn does not).
  It may write its own rows in ``tx`` and read the supervisor's state (``tally``:
  what this turn adds to ``sup.stats``); it must not write the queue nor commit.
  The transaction may be retried: then it runs again, and what a rolled-back
  attempt wrote is gone.
- ``after_commit()``: after every transaction the supervisor commits (turns, start
  writes, periodic enqueues), in the supervisor's thread; no transaction is open.
- ``stop()``: once, first thing when the supervisor stops (its loop ended, by drain,
  signal or error), before its workers stop and the store closes; ``sup.inbox``
  refuses new work by then.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from pathlib import Path
from typing import Any, Protocol

import apsw
import orjson

from memoryd.base.config import Config
from memoryd.base.errors import StoreBusy, error_answer
from memoryd.storage import Authority
from memoryd.workers.walguard import WalGuard


class Running(Protocol):
    """What an extension reads of the supervisor running it (never writes)."""

    home: Path
    config: Config
    db: Authority  # the supervisor's connection: its writer, in its thread only
    wal: WalGuard  # checkpoints and the claims' pause state
    pool: Any  # the worker slots (``slots``: pool, index, pid of each)
    stats: Any  # the run's RunStats so far
    inbox: Inbox | None  # takes direct work from any thread while running


class Extension:
    """A supervisor extension: override the hooks it needs (see the module's doc)."""

    def start(self, sup: Running) -> None:
        """Once, before the first turn."""

    def in_turn(self, tx: apsw.Connection, sup: Running, tally: Any) -> None:
        """Inside a turn's group commit, after its changes."""

    def after_commit(self) -> None:
        """After every committed transaction."""

    def stop(self) -> None:
        """Once, when the supervisor stops."""


class Direct:
    """One job run by a worker of its kind's pool without the queue (no claim, no
    authority write): handed over by the supervisor's loop; the thread that submitted
    it waits for its answer (e.g. an archive lease heartbeat the control socket got)."""

    def __init__(self, kind: str, payload: Any) -> None:
        self.kind = kind
        self.payload = orjson.dumps(payload)
        self.pool = ""  # the pool of workers it was handed to (set by the supervisor)
        self.answer: dict | None = None
        self.done = threading.Event()

    def finish(self, ok: bool, value: Any) -> None:
        if ok:
            self.answer = value
        else:  # the worker failed it (its store busy, the worker died): say so
            self.answer = error_answer(StoreBusy(f"the {self.pool} worker failed: {value}"))
        self.done.set()


class Inbox:
    """Direct work for the supervisor's loop, from any thread: a byte per item on a
    pipe wakes the loop's wait (the pool polls :attr:`wake_read`)."""

    def __init__(self) -> None:
        self.items: queue.SimpleQueue[Direct] = queue.SimpleQueue()
        self.wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.closed = False
        self._lock = threading.Lock()  # a submit never writes to a closed (reused) fd

    def submit(self, item: Direct) -> bool:
        """Queue ``item`` for the loop; False once the supervisor stopped (its loop
        will not hand it over)."""
        with self._lock:
            if self.closed:
                return False
            self.items.put(item)
            with contextlib.suppress(BlockingIOError, OSError):  # full: it is awake already
                os.write(self._wake_write, b"!")
        return True

    def take(self) -> list[Direct]:
        """Everything submitted so far (the wake bytes are read with it)."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self.wake_read, 4096)
        taken = []
        while True:
            try:
                taken.append(self.items.get_nowait())
            except queue.Empty:
                return taken

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self.closed = True
                os.close(self.wake_read)
                os.close(self._wake_write)
