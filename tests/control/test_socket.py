"""The control socket: private, peer-checked, and answering while claims are paused."""

from __future__ import annotations

import os
import signal
import socket
import stat
import statistics
import time
from pathlib import Path

import orjson
import pytest

from memoryd.base.errors import PeerRefused
from memoryd.operations.control_client import Client, request, socket_path
from memoryd.workers.control import check_peer, peer_uid
from tests.agent.conftest import PROJECT, archived_session, ingest_sources
from tests.conftest import query, run_cli, wait_for, wal_reader

pytestmark = pytest.mark.slow
# any WAL a pinned reader keeps pauses claims at once
PAUSE_AT_ONCE = {
    "MEMORYD_WAL_PAUSE_BYTES": "1",
    "MEMORYD_WAL_CHECKPOINT_BYTES": "1",
    "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.1",
}


def ok(answer: dict | None) -> dict:
    assert answer is not None and answer["ok"], answer
    return answer["result"]


def started(home: Path, background, env: dict | None = None):
    sup = background("run", "--workers", "1", env=env or {})
    wait_for(lambda: socket_path(home).exists(), what="the control socket")
    return sup


def test_the_socket_is_private_and_refuses_another_uid(home, background) -> None:
    assert run_cli("init", home=home).code == 0
    started(home, background)
    assert stat.S_IMODE(socket_path(home).stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert ok(request(home, "status"))["supervisor"]["pid"]
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert peer_uid(a) == os.geteuid()
    check_peer(os.geteuid())
    with pytest.raises(PeerRefused, match="not the home's owner"):
        check_peer(os.geteuid() + 1)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_a_peer_with_another_uid_is_refused(home, background) -> None:
    """The socket's mode is the first wall; opened up, the peer check still refuses."""
    assert run_cli("init", home=home).code == 0
    started(home, background)
    # a hard link outside the private home, opened to everyone, reaches the same socket
    link = Path(f"/tmp/memoryd-peer-test-{os.getpid()}.sock")
    os.link(socket_path(home), link)
    link.chmod(0o666)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become nobody, then ask
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(str(link))
                conn.sendall(b'{"op": "status"}\n')
                os.write(write, b"".join(iter(lambda: conn.recv(65536), b"")))
        except BaseException as exc:  # the parent shows it
            os.write(write, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        raw = os.read(read, 65536)
    finally:
        os.waitpid(pid, 0)
        link.unlink()
    assert raw.startswith(b"{"), raw
    answer = orjson.loads(raw)
    assert answer["ok"] is False and answer["error"] == "PEER_REFUSED"


def heartbeats_and_reads(home: Path, locator: str, rounds: int = 50) -> tuple[float, float]:
    """Heartbeats, archive gets and searches over the socket: (heartbeat p95, reads p95) ms."""
    seconds, beats = [], []
    renew = {"action": "renew", "client": "agent-1"}
    ask = {"project": PROJECT, "query": "retry backoff", "limit": 3}
    for _ in range(rounds):
        t0 = time.perf_counter()
        assert ok(request(home, "archive", op="lease", args=renew))["client"] == "agent-1"
        beats.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        got = ok(request(home, "archive", op="get", args={"locator": locator}))
        found = ok(request(home, "archive", op="search", args=ask))
        seconds.append(time.perf_counter() - t0)
        assert got["status"] == "live" and "jitter" in got["content"]
        assert [item["locator"] for item in found["items"]] == [locator]
    return (statistics.quantiles(beats, n=20)[-1] * 1000,
            statistics.quantiles(seconds, n=20)[-1] * 1000)  # fmt: skip


def test_heartbeats_and_reads_answer_while_claims_are_paused(
    home, tmp_path, background, capsys
) -> None:
    locator = archived_session(home, tmp_path)
    started(home, background, PAUSE_AT_ONCE)
    lease = {"action": "acquire", "client": "agent-1", "project": PROJECT, "locators": [locator]}
    assert ok(request(home, "archive", op="lease", args=lease))["locators"] == [locator]
    unpaused = heartbeats_and_reads(home, locator)
    # a checkpoint may give way to a concurrent writer for one turn; with no reader
    # pinning the WAL the next one truncates it and claims run again
    wait_for(lambda: not ok(request(home, "status"))["claims_paused"], what="claims to run")
    with wal_reader(home):
        assert run_cli("jobs", "add", "noop", "--count", "50", home=home).code == 0
        wait_for(lambda: ok(request(home, "status"))["claims_paused"], what="claims to pause")
        # claims made before the pause finish, or go back to the queue unharmed
        claimed = "SELECT count(*) FROM jobs WHERE kind = 'noop' AND state = 'claimed'"
        wait_for(lambda: query(home, claimed) == [(0,)], what="earlier claims to settle")
        waiting = "SELECT count(*) FROM jobs WHERE kind = 'noop' AND state = 'queued'"
        queued = query(home, waiting)
        paused = heartbeats_and_reads(home, locator)
        # nothing was claimed meanwhile: these answers did not wait for a claim
        assert ok(request(home, "status"))["claims_paused"]
        assert queued[0][0] > 0 and query(home, waiting) == queued
    with capsys.disabled():
        for label, (beat, reads) in (("unpaused", unpaused), ("paused", paused)):
            print(f"\n{label:>8}, over the socket: heartbeat p95 {beat:.1f} ms, "
                  f"archive get + search p95 {reads:.1f} ms", end="")  # fmt: skip
        print()


def test_heartbeats_answer_again_after_the_retention_worker_is_killed(
    home, tmp_path, background
) -> None:
    locator = archived_session(home, tmp_path)
    started(home, background)
    lease = {"action": "acquire", "client": "agent-1", "project": PROJECT, "locators": [locator]}
    ok(request(home, "archive", op="lease", args=lease))
    worker = ok(request(home, "status"))["supervisor"]["retention_worker"]
    os.kill(worker, signal.SIGKILL)
    renew = {"action": "renew", "client": "agent-1"}

    def renewed() -> bool:
        answer = request(home, "archive", op="lease", args=renew)
        # a heartbeat caught in the death answers a typed, retryable error, never hangs
        assert answer["ok"] or answer["error"] == "STORE_BUSY", answer
        return answer["ok"]

    wait_for(renewed, what="a heartbeat through the respawned retention worker")
    assert ok(request(home, "status"))["supervisor"]["retention_worker"] != worker


def test_a_kept_connection_follows_a_restarted_supervisor(home, background) -> None:
    """A session's client keeps its connection; when the supervisor is replaced, the next
    request goes to the new one, and with none running the client says so (None)."""
    assert run_cli("init", home=home).code == 0
    client = Client(home)
    first = started(home, background)
    assert ok(client.request("status"))["supervisor"]["pid"] == first.pid
    assert client.connected
    first.terminate()
    wait_for(lambda: not socket_path(home).exists(), what="the socket to go")
    assert client.request("status") is None and not client.connected
    second = started(home, background)
    assert ok(client.request("status"))["supervisor"]["pid"] == second.pid
    second.terminate()
    assert client.request("status") is None
    client.close()


def test_archive_reads_answer_while_claims_are_paused_before_any_archive(
    home, tmp_path, background
) -> None:
    """Nothing archived yet: no secondary can answer, and an archive job would wait out
    the pause. The retention worker answers the reads directly instead."""
    ingest_sources(home, tmp_path, PROJECT)
    started(home, background, PAUSE_AT_ONCE)
    with wal_reader(home):
        assert run_cli("jobs", "add", "noop", "--count", "5", home=home).code == 0
        wait_for(lambda: ok(request(home, "status"))["claims_paused"], what="claims to pause")
        found = run_cli("archive", "search", "retry backoff", "--project", PROJECT, "--json",
                        home=home)  # fmt: skip
        # the archive's own answer (nothing archived yet), not a wait for a claim
        assert found.code == 0 and found.json()["status"] == "abstained", found
        retention = run_cli("retention", "status", "--json", home=home)
        assert retention.code == 0, retention.stderr
        assert ok(request(home, "status"))["claims_paused"], "answered while paused"
