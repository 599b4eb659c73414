"""A draining supervisor started on demand: staged work is seen through without an operator.

``remember`` (MCP) and ``memory add`` (CLI) stage candidates and enqueue their
consolidation. A running supervisor polls the queue every ``poll_seconds`` and
takes it; when none runs for the home, :meth:`Drain.ensure` starts ``memoryd run
--drain`` for it, detached: its own session (a signal to the face's process
group does not reach it), stdin and stdout on /dev/null, its log lines in
``drain.log`` in the home (the last drain's: a failure is explained there), this
process's environment (the same settings). It runs whatever is queued and exits
when nothing is claimable or in flight. The supervisor lock keeps the
single-writer rule: a drain started while another supervisor took the lock exits
at once, doing nothing.

One drain starts at a time for a home, whichever face asks
(:mod:`memoryd.base.drainstart`).

A face that lives on (the MCP server) keeps its child, so it never starts a
second one while the first is still starting, reaps it, and at its end lets it
finish (or stops it: :meth:`Drain.finish`). A short-lived face (the CLI) leaves
it running; its exit hands the child to init, which reaps it.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.base import drainstart
from memoryd.base.config import DRAIN_LOG_FILE, DRAIN_RETRY_SECONDS
from memoryd.base.errors import SupervisorRunning
from memoryd.base.locks import running_supervisor

if TYPE_CHECKING:
    import subprocess


class Drain:
    """The draining supervisor one face started for a home, if any."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.child: subprocess.Popen | None = None
        self.failure: str | None = None  # why the last drain started here did not run
        self.failed_at = 0.0

    @property
    def log(self) -> Path:
        return self.home / DRAIN_LOG_FILE

    def ensure(self) -> dict:
        """A supervisor for the queued work: ``{"supervisor": pid | None, "started": bool}``.

        The running one (or the drain started here and still starting); else a new
        drain, unless one started here failed less than ``DRAIN_RETRY_SECONDS`` ago
        or cannot be started (then ``supervisor`` is None and :attr:`failure` says why).
        """
        self.reap()
        if self.child is not None:
            return {"supervisor": self.child.pid, "started": False}
        if (pid := running_supervisor(self.home)) is not None:
            return {"supervisor": pid, "started": False}
        if self.failure and time.monotonic() - self.failed_at < DRAIN_RETRY_SECONDS:
            return {"supervisor": None, "started": False}
        try:
            child = drainstart.start(str(self.home), str(self.log))
        except OSError as exc:
            self._failed(f"`memoryd run --drain` could not start ({exc})")
            return {"supervisor": None, "started": False}
        if isinstance(child, drainstart.Starting):
            return {"supervisor": child.pid, "started": False}  # another face's drain starts
        self.child, self.failure = child, None
        return {"supervisor": child.pid, "started": True}

    def reap(self) -> None:
        """Collect a drain started here that has exited; a non-zero exit is a failure
        unless it lost the lock to another supervisor. That one may have been a drain
        exiting as this one started: it is gone now, and the next :meth:`ensure` starts
        a new drain for the work it left."""
        if self.child is None or (code := self.child.poll()) is None:
            return
        pid, self.child = self.child.pid, None
        last = _last_message(self.log)
        if code != 0 and SupervisorRunning.LEAD not in last:
            self._failed(
                f"the draining supervisor started for it (pid {pid}) exited with code {code}: "
                f"{last or 'no log line'} ({self.log})"
            )

    def finish(self, grace: float) -> None:
        """At the face's end: let the drain finish within ``grace``, else stop it with
        SIGTERM (a supervisor's graceful stop; queued work stays queued) and reap it."""
        if self.child is None:
            return
        import subprocess

        try:
            self.child.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self.child.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.child.wait(grace)
        self.reap()

    def _failed(self, why: str) -> None:
        self.failure, self.failed_at = why, time.monotonic()


def _last_message(path: Path) -> str:
    """The last error a small log file reports, its wrapped lines joined: from the last
    line starting ``memoryd:`` (how a command fails) to the end, else the last non-blank
    line ('' when there is none)."""
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
        lines = [line for line in lines if line]
        starts = [i for i, line in enumerate(lines) if line.startswith("memoryd:")]
        return " ".join(lines[starts[-1] if starts else -1 :]) if lines else ""
    return ""
