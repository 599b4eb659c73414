"""A supervisor's start: it takes the supervisor lock before it loads the supervisor (a
run that cannot have it, a drain a face started while another supervisor starts,
ends at once, and the faces see a supervisor from the start of the one that has it),
and forks every worker it starts with, the retention worker included."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import orjson
import psutil

from memoryd.base.config import SUPERVISOR_STATE_FILE
from memoryd.operations.control_client import socket_path
from tests.conftest import clean_env, run_cli, wait_for

#: What only a supervisor that runs needs: its loop, its workers, its control socket.
SUPERVISOR_MODULES = ["memoryd.workers.supervisor", "memoryd.workers.pool",
                      "memoryd.operations.runtime", "multiprocess"]  # fmt: skip


def test_a_run_refused_the_lock_loads_no_supervisor(home: Path, tmp_path: Path, background) -> None:
    assert run_cli("init", home=home).code == 0
    first = background("run", "--workers", "1")
    wait_for(lambda: socket_path(home).exists(), what="the first supervisor's socket")
    code = (
        "import atexit, os, sys; atexit.register(lambda: os.write(2, b'imported=%a' % "
        f"sorted(m for m in {SUPERVISOR_MODULES!r} if m in sys.modules))); "
        "from memoryd.faces.cli.main import main; main()"
    )
    argv = [sys.executable, "-c", code, "run", "--drain", "--json"]
    proc = subprocess.run(argv, cwd=tmp_path, env=clean_env(home), capture_output=True)
    assert proc.returncode == 1, proc.stderr
    assert b"SUPERVISOR_RUNNING" in proc.stdout + proc.stderr
    assert str(first.pid).encode() in proc.stdout + proc.stderr, "names the running one"
    loaded = ast.literal_eval(re.search(rb"imported=(\[.*?\])", proc.stderr)[1].decode())
    assert loaded == [], f"a run refused the lock loaded {loaded}"
    assert first.alive()


def test_the_retention_worker_is_forked_at_the_start(home: Path, background) -> None:
    """The retention worker (every archive operation beside a supervisor needs it) is
    forked with the job workers, before any archive work: no fresh interpreter for it,
    nor the resource tracker a spawn starts besides."""
    assert run_cli("init", home=home).code == 0
    sup = background("run", "--workers", "1")
    wait_for(lambda: socket_path(home).exists(), what="the supervisor's socket")
    state = orjson.loads((home / SUPERVISOR_STATE_FILE).read_bytes())
    assert state["retention_worker"], "a retention worker from the start"
    children = psutil.Process(sup.pid).children(recursive=True)
    lines = {p.pid: " ".join(p.cmdline()) for p in children}
    assert state["retention_worker"] in lines
    assert not any(
        "multiprocessing-fork" in c or "resource_tracker" in c for c in lines.values()
    ), lines
