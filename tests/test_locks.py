"""Inter-process locks: held until release or death, and never dropped by looking at them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.base.locks import FileLock, lock_holder
from tests.conftest import clean_env, wait_for

HOLDER = """
import sys, time
from pathlib import Path
from memoryd.base.locks import FileLock, lock_holder
path, shared, ready = Path(sys.argv[1]), sys.argv[2] == "shared", Path(sys.argv[3])
lock = FileLock(path)
assert lock.try_acquire(shared=shared)
# Looking at our own lock (as `memoryd status` does) must not drop it.
for _ in range(3):
    seen = lock_holder(path)
tmp = ready.with_suffix(".tmp")
tmp.write_text(str(seen))
tmp.rename(ready)  # whole: the test reads it as soon as it exists
time.sleep(600)
"""


@pytest.fixture
def hold(tmp_path: Path):
    procs: list[subprocess.Popen] = []

    def start(path: Path, *, shared: bool = False) -> tuple[subprocess.Popen, str]:
        ready = tmp_path / f"ready-{len(procs)}"
        mode = "shared" if shared else "exclusive"
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), mode, str(ready)], env=clean_env(None)
        )
        procs.append(proc)
        wait_for(lambda: ready.exists() or proc.poll() is not None, what="the lock holder")
        assert proc.poll() is None, "the holder died"
        return proc, ready.read_text()

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.mark.slow
def test_exclusive_lock_is_held_until_its_holder_dies(tmp_path: Path, hold) -> None:
    path = tmp_path / "x.lock"
    proc, seen_by_holder = hold(path)
    assert seen_by_holder == str(proc.pid), "the holder sees itself as the holder"
    assert lock_holder(path) == proc.pid, "lock_holder() in the holder kept the lock"
    mine = FileLock(path)
    assert not mine.try_acquire()
    assert not mine.try_acquire(shared=True)

    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lock_holder(path) is None
    assert mine.try_acquire()
    mine.release()


@pytest.mark.slow
def test_shared_locks_coexist_and_exclude_a_writer(tmp_path: Path, hold) -> None:
    path = tmp_path / "rw.lock"
    hold(path, shared=True)
    _, seen = hold(path, shared=True)
    assert seen == "None", "shared holders conflict with nobody"
    other = FileLock(path)
    assert not other.try_acquire(), "an exclusive lock waits for the shared holders"
    assert other.try_acquire(shared=True)
    other.release()


def test_lock_holder_in_the_holding_process(tmp_path: Path) -> None:
    path = tmp_path / "self.lock"
    lock = FileLock(path)
    assert lock.try_acquire()
    try:
        assert lock_holder(path) == os.getpid()
        assert not FileLock(path).try_acquire(), "a second lock object in this process waits"
        assert lock_holder(path) == os.getpid(), "and did not drop the first one"
    finally:
        lock.release()
    assert lock_holder(path) is None
    assert lock_holder(tmp_path / "missing.lock") is None
