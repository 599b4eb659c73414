"""Through the real CLI: an archive search item's score says
how much of the question it evidences (one 0..1 scale, items in its order), and an
excerpt around a matched question includes the reply that follows it."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

QUESTION = "which retry backoff did we choose for the uploader"


def add_session(cli, tmp_path: Path, session: str, turns: list[tuple[str, str]]) -> str:
    """Archive ``turns`` (role, text) as one transcript session an hour old."""
    start = time.time() - 3600
    lines = [{"role": r, "content": c, "timestamp": start + i} for i, (r, c) in enumerate(turns)]
    path = tmp_path / f"{session}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    res = cli(
        "archive",
        "add",
        str(path),
        "--project",
        "demo",
        "--new-project",
        "--session",
        session,
        "--json",
    )
    assert res.code == 0, res.stderr
    return res.json()["locators"][0]


def search(cli, query: str, *extra: str) -> dict:
    res = cli("archive", "search", query, "--project", "demo", "--json", *extra)
    assert res.code == 0, res.stderr
    return res.json()


def fillers(cli, tmp_path: Path) -> None:
    """Other sessions, so the question's words are rare in the archive as in real use."""
    for i in range(3):
        add_session(cli, tmp_path, f"filler{i}", [
            ("user", f"Can you summarize chapter {i} of the novel for my book club?"),
            ("assistant", "Here is a short summary of the chapter's main events."),
        ])  # fmt: skip


def assert_one_scale_in_order(items: list[dict]) -> None:
    scores = [item["score"] for item in items]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores


def test_a_hit_holding_part_of_the_question_scores_below_one_holding_all(cli, tmp_path):
    fillers(cli, tmp_path)
    part = add_session(cli, tmp_path, "part", [
        ("user", "The uploader waits with a retry backoff of two seconds."),
        ("assistant", "Noted, two seconds between attempts."),
    ])  # fmt: skip
    [alone] = search(cli, QUESTION)["items"]
    assert alone["locator"] == part
    # first in every ranking of its source, yet it evidences only part of the question
    assert alone["score"] < 1.0

    full = add_session(cli, tmp_path, "full", [
        ("user", "We chose exponential retry backoff with jitter for the uploader."),
        ("assistant", "Agreed, exponential backoff with jitter it is."),
    ])  # fmt: skip
    found = search(cli, QUESTION)
    assert [i["locator"] for i in found["items"]] == [full, part]
    assert_one_scale_in_order(found["items"])
    assert found["items"][0]["score"] > alone["score"]
    # --min-score between the two keeps the whole answer only
    floor = (found["items"][0]["score"] + found["items"][1]["score"]) / 2
    kept = search(cli, QUESTION, "--min-score", f"{floor:.4f}")["items"]
    assert [i["locator"] for i in kept] == [full]


def test_an_excerpt_around_a_matched_question_includes_its_reply(cli, tmp_path):
    locator = add_session(cli, tmp_path, "flips", [
        ("user", "Morning. The canary for the billing release looked clean overnight."),
        ("assistant", "Good, the dashboards agree with that."),
        ("user", "Before we go further: who approves production flips?"),
        ("assistant", "Marisol Okafor signs them off after the change board on Thursdays."),
        ("user", "Thanks, I will ping her later today."),
        ("assistant", "Sounds good."),
    ])  # fmt: skip
    [item] = search(cli, "who approves production flips?")["items"]
    assert item["locator"] == locator
    # the question's words are only in the question; its answer is the next turn
    assert "who approves production flips?" in item["excerpt"]
    assert "Marisol Okafor signs them off" in item["excerpt"]
    assert item["start_line"] <= 3 < 4 <= item["end_line"]
    # bounded: the reply, not the rest of the session
    assert "ping her" not in item["excerpt"]
