"""A busy archive is a typed, retryable error that
names the real holder of the RocksDB LOCK, never an "ERROR" answer blaming the
retention worker. The holder here is a real process with the archive open embedded."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.app import default_registry
from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.queue import JobSpec
from memoryd.storage.archive import ArchiveBusy
from memoryd.workers.contract import WorkContext
from tests.conftest import clean_env, query, status, wait_for

WAIT = "MEMORYD_ARCHIVE_BUSY_WAIT_SECONDS"
HOLD = """
import sys
from pathlib import Path
from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config
home = Path(sys.argv[1])
with ArchiveOwner(home, load_config(home)):
    print("holding", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder(home: Path) -> Iterator[subprocess.Popen]:
    """A memoryd process holding the archive read-write until its stdin closes."""
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=clean_env(home),
        text=True,
    )
    assert proc.stdout.readline().strip() == "holding"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=60)


def test_the_archive_op_raises_typed_retryable_busy_naming_the_holder(home, holder):
    config = load_config(home)
    ctx = WorkContext(home, config, 0)
    with pytest.raises(ArchiveBusy) as caught:
        default_registry().job_kind(ARCHIVE_OP).run(ctx, {"op": "get", "args": {"locator": "x@1"}})
    exc = caught.value
    assert exc.retryable is True and exc.code == "ARCHIVE_BUSY"
    message = str(exc)
    assert f"pid {holder.pid}" in message and "without a supervisor" in message
    assert "retention worker" not in message
    with pytest.raises(ArchiveBusy):
        ArchiveOwner(home, config)


def test_an_embedded_command_meeting_a_busy_archive_says_who_holds_it(cli, holder):
    res = cli("archive", "get", "s-x-1a2b@1", "--json", env={WAIT: "0.5"})
    assert res.code == 1
    body = res.json()
    assert body["error"] == "ARCHIVE_BUSY" and body["retryable"] is True
    assert f"pid {holder.pid}" in body["message"]


def test_an_embedded_command_waits_for_another_to_let_go_of_the_archive(cli, home, holder):
    """Two commands run without a supervisor at once: the second waits for the first's
    operation instead of failing ARCHIVE_BUSY."""
    release = threading.Timer(1.0, holder.stdin.close)
    release.start()
    try:
        res = cli("archive", "get", "s-x-1a2b@1", "--json", env={WAIT: "30"})
    finally:
        release.cancel()
    assert res.json().get("error") != "ARCHIVE_BUSY", res.stdout
    assert holder.wait(timeout=60) == 0


@pytest.mark.slow
def test_a_busy_archive_is_waited_for_without_charging_attempts(cli, home, holder, background):
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)
    md = Memoryd(home)  # an internal kind: enqueued as the archive capability does
    try:
        job = md.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": "retention_status", "args": {}}))
    finally:
        md.close()

    def deferred() -> tuple | None:
        rows = query(home, "SELECT state, attempts, last_error FROM jobs WHERE id = ?", (job,))
        state, attempts, error = rows[0]
        return rows[0] if error and error.startswith("ARCHIVE_BUSY:") else None

    state, attempts, error = wait_for(deferred, timeout=60, what="the busy job deferred")
    assert state in ("queued", "failed") and attempts == 0 and f"pid {holder.pid}" in error
    holder.stdin.close()
    holder.wait(timeout=60)
    wait_for(lambda: query(home, "SELECT state FROM jobs WHERE id = ?", (job,))[0][0] == "done",
             what="the job done once the holder let go")  # fmt: skip
    assert all(s != "dead" for (s,) in query(home, "SELECT state FROM jobs"))


@pytest.mark.slow
def test_busy_because_of_the_retention_worker_says_so(cli, home, tmp_path, background):
    path = tmp_path / "a.jsonl"
    path.write_text('{"role": "user", "content": "hello", "timestamp": 1718000000}\n')
    assert (
        cli("archive", "add", str(path), "--project", "demo", "--new-project", "--imported").code
        == 0
    )
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)

    def retention_pid() -> int | None:
        return (status(home)["supervisor"] or {}).get("retention_worker")

    pid = wait_for(retention_pid, what="the retention worker")
    # it opens the archive at its first job (the startup tick); wait until it holds it
    busy = wait_for(lambda: _open_error(home), what="the archive held by the retention worker")
    assert busy.retryable and busy.code == "ARCHIVE_BUSY"
    assert f"the retention worker (pid {pid}) of the running supervisor (pid {sup.pid})" in str(
        busy
    )


def _open_error(home: Path) -> ArchiveBusy | None:
    try:
        ArchiveOwner(home, load_config(home)).close()
    except ArchiveBusy as exc:
        return exc
    return None
