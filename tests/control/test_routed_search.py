"""Project search over the control socket keeps its options: ``min_score`` narrows there
too, ``dense=False`` asks the lexical route alone."""

from __future__ import annotations

import pytest

from memoryd.operations.control_client import request, socket_path
from tests.conftest import run_cli, wait_for

pytestmark = pytest.mark.slow
QUERY = "upload retry backoff jitter"
TOPICS = [
    "the database schema migration",
    "the login page colours",
    "the deploy script and the release notes",
    "retry backoff with jitter for uploads",
    "jitter on the upload retry backoff again",
    "an upload that failed without any retry",
    "backoff settings of the upload client",
]


def routed(home, **extra) -> dict:
    answer = request(home, "search", query=QUERY, project="demo", limit=10, **extra)
    assert answer is not None and answer["ok"], answer
    return answer["result"]


def test_min_score_narrows_over_the_socket(home, tmp_path, background) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i, topic in enumerate(TOPICS):
        (src / f"note{i}.md").write_text(f"# Note {i}\n\nWe talked about {topic} today.\n")
    assert run_cli("ingest", str(src), "--project", "demo", "--wait", home=home).code == 0
    background("run", "--workers", "1")
    wait_for(lambda: socket_path(home).exists(), what="the control socket")
    plain = routed(home)
    scores = [item["score"] for item in plain["items"]]
    assert len(set(scores)) > 1, plain
    for floor in (0.0, *scores):
        kept = [item for item in plain["items"] if item["score"] >= floor]
        assert routed(home, min_score=floor)["items"] == kept
    # the CLI under a running supervisor answers the same (it goes through the socket)
    cli = run_cli("search", QUERY, "--project", "demo", "--min-score", str(max(scores)),
                  "--json", home=home)  # fmt: skip
    assert cli.json()["items"] == routed(home, min_score=max(scores))["items"]
    # the lexical route alone, asked over the socket (as `memoryd diagnose` compares)
    lexical = routed(home, dense=False)
    assert lexical["status"] == "ok" and {i["path"] for i in lexical["items"]} <= {
        i["path"] for i in plain["items"]
    }
