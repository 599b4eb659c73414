"""The dashboard's data and page on a real home, in process (no server, no browser)."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.api import Memoryd
from memoryd.dashboard.data import SECONDARY_DIR, DashboardData, pause_intervals
from memoryd.dashboard.page import render


def test_a_fresh_home_renders_with_no_samples_yet(home: Path) -> None:
    Memoryd(home).init()
    data = DashboardData(Memoryd(home))
    try:
        snap = data.snapshot(3600)
        html = render(snap, refresh_seconds=5, window_seconds=3600)
    finally:
        data.close()
    assert snap["samples"] == [] and snap["status"]["queue"]["queued"] == 0
    keys = dict(re.findall(r'data-key="([^"]+)"[^>]*>([^<]*)<', html))
    assert keys["queue.queued"] == "0" and keys["claims_paused"] == "no"
    assert html.count("<svg") >= 4


def test_a_drained_run_shows_its_samples_and_dead_jobs(home: Path) -> None:
    md = Memoryd(home, {"sample_period_seconds": 0.01, "retry_backoff_base": 0.0})
    md.add_jobs("noop", count=300)
    md.add_jobs("fail", count=1, max_attempts=1)
    md.run(workers=1, drain=True)
    data = DashboardData(Memoryd(home))
    try:
        snap = data.snapshot(3600)
    finally:
        data.close()
    assert snap["samples"], "the run wrote samples"
    assert snap["kinds"] == {"noop": {"done": 300}, "fail": {"dead": 1}}
    assert [j["kind"] for j in snap["dead"]] == ["fail"]
    html = render(snap, refresh_seconds=5, window_seconds=3600)
    assert "polyline" in html and "DrillFailure" in html


def test_pause_intervals_join_consecutive_paused_samples() -> None:
    series = [
        {"at": 1.0, "claims_paused": False},
        {"at": 2.0, "claims_paused": True, "wal_reader_pids": [7], "pause_reason": "r"},
        {"at": 3.0, "claims_paused": True, "wal_reader_pids": [9]},
        {"at": 4.0, "claims_paused": False},
        {"at": 5.0, "claims_paused": True, "wal_reader_pids": []},
    ]
    got = pause_intervals(series)
    assert [(i["start"], i["end"], i["pids"]) for i in got] == [(2.0, 4.0, [7, 9]), (5.0, None, [])]


def test_retention_reads_the_archive_through_a_secondary(home: Path) -> None:
    """An archived transcript's expiry shows as due on its day; the archive is read
    through a secondary instance while nothing holds it (and is left as it was)."""
    md = Memoryd(home)
    md.init()
    line = b'{"role": "user", "content": "we chose exponential backoff", "timestamp": 1}\n'
    md.archive_add(line, project="demo", source="test", cls="ephemeral", session="s1")
    md.close()
    data = DashboardData(Memoryd(home))
    try:
        snap = data.snapshot(3600)
    finally:
        data.close()
    assert not any((home / SECONDARY_DIR).iterdir()), "its secondary's directory goes at close"
    ret = snap["retention"]
    arc = ret["archive"]
    assert arc is not None and arc["degraded"] is None
    assert arc["counts"]["documents"] >= 1
    assert arc["due_by_day"].get("overdue", 0) >= 1, "an ephemeral document from 1970 is due"
    assert ret["policy"]["ephemeral"]["age_days"] == 14
    assert "overdue" in render(snap, refresh_seconds=5, window_seconds=3600)
