"""Running ``memoryd hook`` as an agent does: the real script, JSON on stdin."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import orjson

from memoryd.base import hooklog
from memoryd.faces.hooks.install import command
from tests.conftest import MEMORYD, clean_env


def run_hook(
    home: Path,
    event: str,
    payload: dict | bytes,
    agent: str = "claude-code",
    env: dict | None = None,
    via_cli: bool = False,
) -> subprocess.CompletedProcess:
    """The hook as the agent runs it: the command ``memoryd hooks install`` writes into
    its settings (``via_cli``: ``memoryd hook EVENT`` instead)."""
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    if via_cli:
        argv = [*MEMORYD, "hook", event, "--agent", agent]
    else:
        argv = shlex.split(command(event, agent, None))  # the home from MEMORYD_HOME
    return subprocess.run(argv, input=data, capture_output=True, env=clean_env(home, env),
                          timeout=120)  # fmt: skip


def spooled(home: Path) -> list[dict]:
    """The events waiting in the spool (event files and logs' records), oldest first."""
    return [e for _, e in hooklog.spooled(str(home))]


def context_of(proc: subprocess.CompletedProcess, event: str) -> str | None:
    """The context the agent reads from a hook's stdout (None: nothing injected)."""
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.strip():
        return None
    out = orjson.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]
