"""How long an authority connection waits on a lock another connection holds: its
SQLite busy handler.

A WAL home's readers never wait; its writers wait ``busy_timeout_ms`` for the write
lock and then retry the whole transaction. A small home keeps a rollback journal, where
a commit takes the pending lock and waits for the readers already in to finish, and a
reader arriving meanwhile waits behind the commit. One timeout for both made a reader
that arrived behind a waiting commit time out with it (``STORE_BUSY`` in drill runs).
So the wait depends on what this connection is doing when it meets the lock:

- a commit (its transaction writes, ``txn_state`` WRITE): ``rollback_busy_timeout_ms``
  for the readers in to finish (new ones queue behind it, so it is not starved), then
  the write is retried whole;
- taking the write lock (inside :meth:`Authority.write`, before the transaction writes):
  ``busy_timeout_ms``, then the whole transaction is retried with backoff, as in WAL;
- anything else, a read: ``read_busy_seconds``, longer than a commit's wait, in short
  sleeps so that it takes the lock in the gap a commit that gave up leaves.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from memoryd.base.config import Config

#: the sleeps between two looks at the lock, by look (then the last one): a read waits
#: on a commit of a few milliseconds, and must not sleep through the gap between two
SLEEPS_SECONDS = (0.001, 0.002, 0.005, 0.01)


class Patience:
    """The busy handler of one connection (``conn.set_busy_handler(patience)``)."""

    def __init__(self, conn: apsw.Connection, config: Config) -> None:
        self.conn = conn
        self.write_lock_s = config.busy_timeout_ms / 1000
        self.commit_s = config.rollback_busy_timeout_ms / 1000
        self.read_s = config.read_busy_seconds
        self.writing = False  # inside Authority.write: taking the write lock is short
        self.override: float | None = None  # one limit for every wait (see ``only``)
        self._since = 0.0

    def __call__(self, tries: int) -> bool:
        """SQLite's busy callback: True to look at the lock again, False for SQLITE_BUSY."""
        now = time.monotonic()
        if tries == 0:
            self._since = now
        left = self.limit() - (now - self._since)
        if left <= 0:
            return False
        time.sleep(min(left, SLEEPS_SECONDS[min(tries, len(SLEEPS_SECONDS) - 1)]))
        return True

    def limit(self) -> float:
        """How long the wait in progress may last, in seconds."""
        if self.override is not None:
            return self.override
        if self.conn.txn_state("main") == apsw.SQLITE_TXN_WRITE:
            return self.commit_s
        return self.write_lock_s if self.writing else self.read_s

    @contextmanager
    def only(self, seconds: float) -> Iterator[None]:
        """Every wait of the block at most ``seconds`` (0: give way at once)."""
        previous, self.override = self.override, seconds
        try:
            yield
        finally:
            self.override = previous

    @contextmanager
    def write(self) -> Iterator[None]:
        """The block takes the write lock: the short wait, then a whole retry."""
        previous, self.writing = self.writing, True
        try:
            yield
        finally:
            self.writing = previous


def patient(conn: apsw.Connection, config: Config) -> Patience:
    """Install and return ``conn``'s busy handler."""
    patience = Patience(conn, config)
    conn.set_busy_handler(patience)
    return patience
