"""The control socket bounds what a client may send and answers every request typed."""

from __future__ import annotations

import socket
import time

import orjson
import pytest

from memoryd.operations.control_client import request, socket_path
from tests.conftest import run_cli, wait_for

pytestmark = pytest.mark.slow
LIMIT = 64 * 1024  # control_max_request_bytes for these tests


def started(home, background, limit: int = LIMIT):
    assert run_cli("init", home=home).code == 0
    env = {"MEMORYD_CONTROL_MAX_REQUEST_BYTES": str(limit)}
    sup = background("run", "--workers", "1", env=env)
    wait_for(lambda: socket_path(home).exists(), what="the control socket")
    return sup


def raw(home, payload: bytes, *, chunk: int = 1 << 16) -> bytes:
    """Send ``payload`` on one connection (stopping when the server closes it) and
    return everything the server answered."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(socket_path(home)))
        try:
            for start in range(0, len(payload), chunk):
                conn.sendall(payload[start : start + chunk])
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused and closed mid-send: what it answered is still readable
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(30)
        return b"".join(iter(lambda: conn.recv(65536), b""))


def test_a_request_past_the_bound_is_refused_typed_and_the_server_goes_on(home, background) -> None:
    started(home, background)
    answer = orjson.loads(raw(home, b"x" * (LIMIT * 40)).splitlines()[0])
    assert answer["ok"] is False and answer["error"] == "BAD_USAGE", answer
    assert "control_max_request_bytes" in answer["message"]
    # requests split across many chunks, within the bound, are answered whole
    line = orjson.dumps({"op": "status", "args": {"pad": "y" * (LIMIT // 2)}}) + b"\n"
    answers = raw(home, line * 3, chunk=1000).splitlines()
    assert len(answers) == 3 and all(orjson.loads(a)["ok"] for a in answers)


@pytest.mark.parametrize(
    "req",
    [
        {"op": "search"},  # no query
        {"op": "search", "args": {"query": 5}},
        {"op": "search", "args": {"query": "x", "limit": "ten"}},
        {"op": "search", "args": {"query": "x", "dense": "no"}},
        {"op": "recall", "args": {"query": "x", "min_score": True}},
        {"op": "recall", "args": {"query": ["x"]}},
        {"op": "archive", "args": {"op": 3}},
        {"op": "status", "args": "not an object"},
        {"op": ["status"]},
    ],
)
def test_wrong_arguments_answer_bad_usage_not_a_python_repr(home, background, req) -> None:
    started(home, background)
    answer = orjson.loads(raw(home, orjson.dumps(req) + b"\n"))
    assert answer["ok"] is False and answer["error"] == "BAD_USAGE", answer
    assert "Error(" not in answer["message"], answer


def test_a_huge_query_is_refused_at_once_on_every_path(home, background, tmp_path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("def decode_payload(blob):\n    return blob\n")
    assert run_cli("ingest", str(src), "--project", "p", "--wait", home=home).code == 0
    huge = "payload " * 12_000  # 96 KB, past query_max_bytes
    embedded = run_cli("search", huge, "--project", "p", "--json", home=home)
    assert embedded.code == 2 and "query_max_bytes" in embedded.message, embedded
    started(home, background, limit=8 * len(huge))
    started_at = time.monotonic()
    for op in ("search", "recall"):
        answer = request(home, op, query=huge, project="p")
        assert answer["ok"] is False and answer["error"] == "BAD_USAGE", answer
    answer = request(home, "archive", op="search", args={"project": "p", "query": huge})
    assert answer["ok"] is False and "query_max_bytes" in answer["message"]
    assert time.monotonic() - started_at < 30  # refused, not tokenized for seconds
