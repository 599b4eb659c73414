"""Starting ``memoryd run --drain`` for a home: one at a time, whichever face asks.

The face that starts a drain takes an exclusive ``flock`` on ``drain.start`` in
the home and hands that lock to the child (an inherited descriptor named by
:data:`ENV`); the child lets go once it has taken or lost the supervisor lock
(:func:`release`). A face finding the lock held names the starting drain (its
pid is in the file) instead of starting another: after a supervisor dies,
sixteen faces start one drain, not sixteen that each spend a Python start to
find the lock taken. Light on purpose (no memoryd import): the agents' hooks
start drains too (:mod:`memoryd.faces.hooks.event`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time

FILE = "drain.start"  # in the home; the starting drain's pid inside
ENV = "MEMORYD_DRAIN_START_FD"  # the drain's inherited descriptor of that file
PID_WAIT = 1.0  # seconds a face waits for a starting drain's pid in the file
FILE_MODE = 0o600


class Starting:
    """A drain another face started and that has not yet taken (or lost) the lock."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid


def command(home: str) -> list[str]:
    return [sys.executable, "-m", "memoryd.faces.cli.main", "run", "--drain", "--home", home]


def start(home: str, log_path: str):  # -> subprocess.Popen | Starting
    """``memoryd run --drain`` for ``home``, detached (its own session, stdin and stdout
    on /dev/null, stderr to ``log_path``, truncated), holding the start guard until it
    has taken or lost the supervisor lock; or the drain another face is starting.
    Raises OSError when it cannot be started."""
    guard = _take(home)
    if isinstance(guard, Starting):
        return guard
    import subprocess  # here: most faces never start one (4 ms)

    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            child = subprocess.Popen(
                command(home),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                pass_fds=(guard,),
                env={**os.environ, ENV: str(guard)},
            )
        finally:
            os.close(log)
        os.ftruncate(guard, 0)
        os.pwrite(guard, str(child.pid).encode(), 0)
        return child
    finally:
        os.close(guard)  # the child holds the start guard now (or nobody does)


def _take(home: str) -> int | Starting:
    """The start guard's descriptor, locked (``flock``: the lock goes with the descriptor
    to the child it is passed to); or the drain holding it."""
    fd = os.open(os.path.join(home, FILE), os.O_RDWR | os.O_CREAT, FILE_MODE)
    deadline = time.monotonic() + PID_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            text = os.pread(fd, 32, 0)  # empty until its face has written the pid
        if text.strip().isdigit() or time.monotonic() > deadline:
            os.close(fd)
            return Starting(int(text) if text.strip().isdigit() else None)
        time.sleep(PID_WAIT / 100)


def release() -> None:
    """In a drain, once it holds or lost the supervisor lock: let the faces see it (or
    the supervisor that won) instead of a drain starting. Nothing outside a drain."""
    if (fd := os.environ.pop(ENV, None)) is not None:
        with contextlib.suppress(OSError, ValueError):
            os.close(int(fd))
