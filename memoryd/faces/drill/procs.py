"""Processes a drill starts, stops and kills: always by pid, never by name."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from memoryd.base.killpoints import ENV as KILL_ENV
from memoryd.base.killpoints import ONCE_ENV

# Never inherited by what a drill starts: the home is always given with --home, and
# kill points are set per process.
_DROPPED_ENV = ("MEMORYD_HOME", KILL_ENV, ONCE_ENV)


class Started:
    """A ``memoryd`` command the drill started; its output goes to a file outside the home."""

    def __init__(self, args: list[str], home: Path, env: dict[str, str]) -> None:
        self.args = args
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close/kill_tree)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd.faces.cli.main", *args, "--home", str(home)],
            env=child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def output(self) -> str:
        """Everything it printed, last 500 characters."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace").strip()[-500:]

    def tree(self) -> list[int]:
        """Its pid and its descendants' (workers, the retention worker)."""
        try:
            kids = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            kids = []
        return [self.pid, *(k.pid for k in kids)]

    def kill_tree(self) -> None:
        for pid in self.tree():
            signal_pid(pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def close(self) -> None:
        self.log.close()


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment for a child, minus what it must never inherit."""
    base = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    return {**base, **extra}


def signal_pid(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
