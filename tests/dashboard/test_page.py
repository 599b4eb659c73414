"""The dashboard's data and page on a real home, in process (no server, no browser)."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.faces.dashboard.data import SECONDARY_DIR, DashboardData, pause_intervals
from memoryd.faces.dashboard.page import render
from memoryd.operations.api import Memoryd
from memoryd.operations.archive import Archive
from memoryd.operations.jobs import Jobs


def snapshot(home: Path) -> dict:
    """The dashboard's snapshot of ``home`` over the last hour, its reader closed."""
    data = DashboardData(Memoryd(home))
    try:
        return data.snapshot(3600)
    finally:
        data.close()


def test_a_fresh_home_renders_with_no_samples_yet(home: Path) -> None:
    Memoryd(home).init()
    snap = snapshot(home)
    html = render(snap, refresh_seconds=5, window_seconds=3600)
    assert snap["samples"] == [] and snap["status"]["queue"]["queued"] == 0
    keys = dict(re.findall(r'data-key="([^"]+)"[^>]*>([^<]*)<', html))
    assert keys["queue.queued"] == "0" and keys["claims_paused"] == "no"
    assert html.count("<svg") >= 4


def test_a_drained_run_shows_its_samples_and_dead_jobs(home: Path) -> None:
    md = Memoryd(home, {"sample_period_seconds": 0.01, "retry_backoff_base": 0.0})
    Jobs(md).add("noop", count=300)
    Jobs(md).add("fail", count=1, max_attempts=1)
    md.run(workers=1, drain=True)
    snap = snapshot(home)
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
    Archive(md).add(line, project="demo", source="test", cls="ephemeral", session="s1",
                   new_project=True, allow_expired=True)  # fmt: skip
    md.close()
    snap = snapshot(home)
    assert not any((home / SECONDARY_DIR).iterdir()), "its secondary's directory goes at close"
    ret = snap["retention"]
    arc = ret["archive"]
    assert arc is not None and arc["degraded"] is None
    assert arc["counts"]["documents"] >= 1
    assert arc["due_by_day"].get("overdue", 0) >= 1, "an ephemeral document from 1970 is due"
    assert ret["policy"]["ephemeral"]["age_days"] == 14
    assert "overdue" in render(snap, refresh_seconds=5, window_seconds=3600)


def test_a_chart_does_not_join_samples_across_a_period_without_any() -> None:
    """Two runs of a supervisor with nothing sampled between them: two lines, not a
    straight one inventing the values of the gap."""
    from memoryd.faces.dashboard.svg import Chart

    chart = Chart("WAL", 0.0, 100.0, gap=3.0)
    chart.lines["WAL"] = [(0.0, 1.0), (1.0, 2.0), (2.0, 1.0), (60.0, 5.0), (61.0, 4.0)]
    assert chart.render().count("<polyline") == 2
    chart.gap = None
    assert chart.render().count("<polyline") == 1


def test_the_page_says_what_a_reader_needs_without_internal_names(home: Path) -> None:
    """No supervisor: the page does not also say claims are running; the ingest runs
    show what they retired; every consolidation outcome of a run has its column; the
    effect counters read as words."""
    md = Memoryd(home)
    md.init()
    snap = snapshot(home)
    snap["runs"] = [
        {"id": 1, "project": "p", "finished_at": 2.0, "scanned_at": 1.0, "started_at": 0.0,
         "bytes_done": 10, "bytes_total": 10, "files_done": 3, "files_total": 3,
         "batches_done": 1, "batches": 1, "unchanged": 0, "retired": 7, "finalized": 1}
    ]  # fmt: skip
    snap["memory"]["last_runs"] = [
        {"at": "2026-12-02T00:00:00.000Z", "added": 0, "duplicate": 0, "superseded": 4,
         "merged": 0, "parked": 0, "deadlettered": 2, "discarded": 0}
    ]  # fmt: skip
    html = render(snap, refresh_seconds=5, window_seconds=3600)
    assert "no supervisor running" in html and "claims running" not in html
    assert "<th>retired</th>" in html and '<td class="n">7</td>' in html
    assert "<th>superseded</th>" in html and "<th>deadlettered</th>" in html
    assert "jobs_with_effects</th>" not in html and "<th>effects</th>" not in html
