"""A ``--wait`` does not wait on paused claims forever. With a real
reader pinning the WAL (so claims pause), ``ingest --wait`` and ``memory add --wait``
answer ``QUEUE_PAUSED`` (retryable) naming the reader's pid once the claims stayed
paused past ``wait_paused_seconds``; the work stays queued and finishes once the
reader lets go."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import (
    CLI_TIMEOUT,
    MEMORYD,
    Result,
    clean_env,
    memory_record_count,
    query,
    run_cli,
    status,
    wait_for,
    wal_reader,
)

pytestmark = pytest.mark.slow

#: Claims pause as soon as a checkpoint gives way to a reader; a waiter gives up after 2 s.
PAUSE = {
    "MEMORYD_WAL_PAUSE_BYTES": "1",
    "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.2",
    "MEMORYD_WAIT_PAUSED_SECONDS": "2",
}


def small_repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def handler():\n    return 'pinned reader'\n")
    return root


def remember(home: Path, text: str) -> Result:
    """``memory add --wait`` of one fact, under the pause settings."""
    args = ("memory", "add", "-", "--project", "app", "--wait", "--json")
    data = orjson.dumps({"kind": "fact", "text": text}) + b"\n"
    p = subprocess.run(
        [*MEMORYD, *args],
        input=data,
        capture_output=True,
        env=clean_env(home, PAUSE),
        timeout=CLI_TIMEOUT,
    )
    return Result(p.returncode, p.stdout.decode(), p.stderr.decode())


def assert_paused(res, reader_pid: int) -> None:
    assert res.code == 1, (res.stdout, res.stderr)
    text = res.stdout  # the last JSON document (ingest's progress lines come first)
    answer = orjson.loads(text[text.rfind("\n{") + 1 :])
    assert answer["error"] == "QUEUE_PAUSED" and answer["retryable"] is True
    assert reader_pid in answer["reader_pids"]
    assert str(reader_pid) in answer["message"]


def test_ingest_wait_answers_queue_paused_then_a_rerun_finishes(home, tmp_path):
    repo = small_repo(tmp_path / "repo")
    assert run_cli("init", home=home).code == 0
    with wal_reader(home) as reader:
        res = run_cli("ingest", str(repo), "--wait", "--json", home=home, env=PAUSE)
        assert_paused(res, reader.pid)
        # its own draining supervisor was stopped; the run is still queued
        assert status(home)["supervisor"] is None
        assert query(home, "SELECT finished_at FROM ingest_runs") == [(None,)]
    res = run_cli("ingest", str(repo), "--wait", "--json", home=home, env=PAUSE)
    assert res.code == 0, res.stderr
    assert query(home, "SELECT count(*) FROM files")[0][0] == 1


def test_memory_add_wait_answers_queue_paused_following_a_supervisor(home, tmp_path, background):
    repo = small_repo(tmp_path / "repo")
    assert run_cli("ingest", str(repo), "--project", "app", "--wait", home=home).code == 0
    with wal_reader(home) as reader:
        sup = background("run", "--workers", "1", env=PAUSE)
        wait_for(lambda: status(home)["claims_paused"], what="claims to pause")
        res = remember(home, "Deploys go through the queue.")
        assert_paused(res, reader.pid)
    wait_for(lambda: not status(home)["claims_paused"], what="claims to resume")
    wait_for(
        lambda: memory_record_count(home) == 1,
        what="the staged fact to be consolidated",
    )
    sup.terminate()


def test_memory_add_wait_draining_here_answers_queue_paused(home, tmp_path):
    repo = small_repo(tmp_path / "repo")
    assert run_cli("ingest", str(repo), "--project", "app", "--wait", home=home).code == 0
    with wal_reader(home) as reader:
        res = remember(home, "Releases are tagged on main.")
        assert_paused(res, reader.pid)
    assert status(home)["supervisor"] is None
    res = remember(home, "Releases are tagged on main.")
    assert res.code == 0, res.stderr
    assert memory_record_count(home) == 1


def test_a_settle_does_not_wait_out_paused_claims(home, tmp_path, background):
    """Search and recall wait a moment for their session's remembered candidates; while
    the supervisor's claims are paused nothing decides them until the reader lets go, so
    they answer at once, saying why, instead of waiting out their timeout."""
    from memoryd.operations.api import Memoryd
    from memoryd.operations.memory import Memory

    repo = small_repo(tmp_path / "repo")
    assert run_cli("ingest", str(repo), "--project", "app", "--wait", home=home).code == 0
    with wal_reader(home):
        sup = background("run", "--workers", "1", env=PAUSE)
        wait_for(lambda: status(home)["claims_paused"], what="claims to pause")
        md = Memoryd(home)
        fact = orjson.dumps({"kind": "fact", "text": "Tags are cut from main."}) + b"\n"
        ids = Memory(md).add(fact, "app")["candidates"]
        started = time.monotonic()
        settled = Memory(md).settle(ids, timeout=120)
        assert time.monotonic() - started < 60, "it waited for the paused claims"
        assert settled["open"] == ids
        assert "paused claims" in settled["pending"]["why"]
        # forget by text needs the record: it waits on through the pause, to its bound
        started = time.monotonic()
        assert Memory(md).settle(ids, timeout=3, through_pause=True)["open"] == ids
        assert time.monotonic() - started >= 3
        md.close()
    sup.terminate()
