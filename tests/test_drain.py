"""A draining supervisor started on demand (memoryd.operations.drain): one at a time, none beside a
running supervisor, reaped when it is done, and a failure explained."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from memoryd.base import drainstart
from memoryd.base.config import SUPERVISOR_LOCK_FILE
from memoryd.base.drainstart import FILE as DRAIN_START_FILE
from memoryd.base.locks import running_supervisor
from memoryd.consolidation import settle
from memoryd.operations.api import Memoryd
from memoryd.operations.drain import Drain
from memoryd.operations.home import Home
from memoryd.operations.jobs import Jobs
from tests.conftest import drains, run_cli, wait_for


def test_a_drain_runs_the_queue_then_exits_and_is_reaped(home: Path) -> None:
    md = Memoryd(home)
    Jobs(md).add("noop", count=3)
    first = md.consolidate()
    assert first["started"] is True
    # while it starts (before it holds the lock) or runs, no second one is started
    assert md.consolidate() == {"supervisor": first["supervisor"], "started": False}
    wait_for(lambda: Home(md).status()["queue"]["done"] == 3, what="the queued jobs done")
    md.drain.finish(grace=60)
    assert md.drain.child is None and md.drain.failure is None
    with pytest.raises(psutil.NoSuchProcess):  # reaped: not even a zombie is left
        psutil.Process(first["supervisor"])
    md.close()


def test_beside_a_running_supervisor_nothing_is_started(home: Path, background) -> None:
    Memoryd(home).init()
    sup = background("run", "--workers", "1")
    wait_for(lambda: running_supervisor(home) == sup.pid, what="the supervisor")
    assert Drain(home).ensure() == {"supervisor": sup.pid, "started": False}


def test_a_drain_that_fails_is_explained_and_not_restarted_at_once(home: Path) -> None:
    Memoryd(home).init()
    (home / "memoryd.toml").write_text("workers = 0\n")  # `memoryd run` refuses it
    drain = Drain(home)
    assert drain.ensure()["started"] is True
    child = drain.child
    wait_for(lambda: child.poll() is not None, what="the drain to fail")
    assert drain.ensure() == {"supervisor": None, "started": False}
    assert f"(pid {child.pid}) exited with code {child.returncode}" in drain.failure
    assert "workers" in drain.failure  # its last log line says what was wrong
    why = settle.pending({}, ["c1"], None, drain.failure)
    assert why["ids"] == ["c1"] and drain.failure in why["why"]
    assert "run `memoryd run --drain`" in why["why"]


def test_a_drain_that_lost_the_lock_is_no_failure_and_the_next_one_starts(home: Path) -> None:
    """Two faces start drains at once: the one that loses the lock exits non-zero; once
    the winner is gone too, the loser's face starts a new drain instead of reporting the
    home as failed (and leaving what it staged unconsolidated)."""
    Memoryd(home).init()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(home / SUPERVISOR_LOCK_FILE)],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout.readline() == b"held\n"
    drain = Drain(home)
    log = os.open(drain.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    drain.child = subprocess.Popen(
        drainstart.command(str(home)), stderr=log, stdout=subprocess.DEVNULL
    )
    os.close(log)
    assert drain.child.wait(60) != 0  # it lost the lock
    holder.kill()
    holder.wait()
    drain.reap()
    assert drain.failure is None, drain.failure
    assert drain.ensure()["started"] is True
    drain.finish(grace=60)
    assert drain.failure is None, drain.failure


def test_many_faces_asking_at_once_start_one_drain(home: Path) -> None:
    """After a supervisor dies, every face that stages work asks for a drain: one starts,
    and the others name it (while it starts, before it holds the lock) rather than each
    spending a Python start to find the lock taken."""
    md = Memoryd(home)
    Jobs(md).add("noop", count=3)
    md.close()
    faces = [Drain(home) for _ in range(8)]
    answers = [face.ensure() for face in faces]
    started = [a for a in answers if a["started"]]
    assert len(started) == 1, answers
    assert {a["supervisor"] for a in answers} == {started[0]["supervisor"]}
    for face in faces:
        face.finish(grace=60)
        assert face.failure is None, face.failure


def test_a_running_drain_lets_go_of_the_start_guard(home: Path) -> None:
    """The start guard covers only a drain's start: once it holds the supervisor lock,
    a face sees it as the running supervisor, and a later drain can start after it."""
    md = Memoryd(home)
    Jobs(md).add("sleep", payload={"seconds": 3.0})
    md.close()
    drain = Drain(home)
    pid = drain.ensure()["supervisor"]
    wait_for(lambda: running_supervisor(home) == pid, what="the drain to hold the lock")
    fd = os.open(home / DRAIN_START_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while a drain holds it
    finally:
        os.close(fd)
    drain.finish(grace=60)


def test_a_drain_being_started_elsewhere_is_named_not_doubled(home: Path) -> None:
    Memoryd(home).init()
    fd = os.open(home / DRAIN_START_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another face's drain, still starting
    os.pwrite(fd, b"424242", 0)
    try:
        drain = Drain(home)
        assert drain.ensure() == {"supervisor": 424242, "started": False}
        assert drain.child is None
    finally:
        os.close(fd)
    assert drain.ensure()["started"] is True  # it let go without a supervisor: start one
    drain.finish(grace=60)


def test_a_stop_hook_starts_no_drain_while_another_face_s_is_starting(
    home: Path, tmp_path: Path
) -> None:
    """The hooks start drains through the same guard (Stop, PreCompact and SessionEnd,
    with events waiting and no supervisor listening): the agent's Stop hook, run as
    installed, starts none while another face's drain is starting, and one once the
    guard is free, which archives what waited."""
    from memoryd.base import hookspool
    from tests.hooks.conftest import run_hook, spooled
    from tests.hooks.payloads import payload, transcript_line

    project = tmp_path / "proj"
    project.mkdir()
    (project / "cache.py").write_text("def warm():\n    return 'lru'\n")
    assert run_cli("ingest", str(project), "--project", "proj", "--wait", home=home).code == 0
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(transcript_line("claude-code", "user", "plan the cache"))
    stop = payload("claude-code", "Stop", "s1", project, transcript)
    ran = run_hook(home, "PostToolUse", payload("claude-code", "PostToolUse", "s1", project,
                                                 transcript))  # fmt: skip
    assert ran.returncode == 0 and spooled(home), ran.stderr
    log = Path(hookspool.hooks_dir(str(home))) / "drain.log"
    log.write_text("the last drain's lines\n")
    fd = os.open(home / DRAIN_START_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another face's drain, still starting
    os.pwrite(fd, b"424242", 0)
    try:
        assert run_hook(home, "Stop", stop).returncode == 0
        assert drains(home) == []
        assert log.read_text() == "the last drain's lines\n"
    finally:
        os.close(fd)
    assert run_hook(home, "Stop", stop).returncode == 0  # the guard is free: one starts
    wait_for(lambda: not spooled(home), what="the drain to archive the waiting events")
    wait_for(lambda: not drains(home), what="the drain to end")


def _drains_of(home: Path) -> list[psutil.Process]:
    """This process's children draining ``home`` (a test worker has others too)."""
    found = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):  # one that ended meanwhile
            if str(home) in child.cmdline():
                found.append(child)
    return found


HOLD_LOCK = """
import sys, time
from memoryd.base.locks import FileLock
assert FileLock(sys.argv[1]).try_acquire()
print("held", flush=True)
time.sleep(600)
"""
