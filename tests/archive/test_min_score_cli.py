"""Through the real CLI: ``--min-score`` on ``search`` and ``archive
search`` is optional and only narrows: it never adds an item."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.retention.test_run_cli import archive


def locators(res) -> list[str]:
    assert res.code == 0, res.stderr
    return [item["locator"] for item in res.json()["items"]]


def test_archive_search_min_score_only_narrows(cli, tmp_path):
    topics = [
        "the database schema migration",
        "the login page colours",
        "the deploy script",
        "the flaky clock test",
        "the cache eviction size",
        "the release notes wording",
        "retry backoff with jitter for uploads",
        "jitter on the upload retry backoff again",
    ]
    for i, topic in enumerate(topics):
        archive(cli, tmp_path, f"s{i}", f"we talked about {topic} today", 1)
    query = ("archive", "search", "upload retry backoff jitter", "--project", "demo", "--json")
    base = cli(*query)
    every = locators(base)
    assert every, base.stdout
    scores = [item["score"] for item in base.json()["items"]]
    for floor in (0.0, min(scores), max(scores), 1.0):
        narrowed = locators(cli(*query, "--min-score", str(floor)))
        assert set(narrowed) <= set(every)
        assert narrowed == [loc for loc, s in zip(every, scores, strict=True) if s >= floor]
    none = cli(*query, "--min-score", "1").json()
    if not none["items"]:
        assert none["status"] == "abstained" and "min_score" in none["gap"]
    assert cli(*query, "--min-score", "1.5").code == 2


@pytest.mark.slow
def test_project_search_min_score_only_narrows(cli, tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(4):
        (src / f"m{i}.py").write_text(f"def handshake_timeout_{i}():\n    return {i * 10}\n")
    assert cli("ingest", str(src), "--project", "demo", "--wait").code == 0
    query = ("search", "handshake timeout", "--project", "demo", "--json")
    base = cli(*query)
    assert base.code == 0, base.stderr
    every = [(i["path"], i["start_line"]) for i in base.json()["items"]]
    for floor in ("0", "0.5", "1"):
        res = cli(*query, "--min-score", floor)
        assert res.code == 0, res.stderr
        got = [(i["path"], i["start_line"]) for i in res.json()["items"]]
        assert set(got) <= set(every)
        assert all(i["score"] >= float(floor) for i in res.json()["items"])
