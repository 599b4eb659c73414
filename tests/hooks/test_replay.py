"""The hook replay under kills, CI-sized: a few synthetic sessions replayed into a clean
home and into one where hooks, the supervisor and its workers are SIGKILLed at random.
Every text is archived exactly once (the same per session as the clean replay), no
planted secret or ``<private>`` span reaches any file of either home, and the figures
the benchmark reports are there. The full run is ``make bench-hooks``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "ops" / "bench" / "bench_hooks.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_hooks", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.slow
def test_a_replay_under_kills_archives_each_event_once_and_keeps_no_secret(tmp_path):
    bench = load_bench()
    # Sessions pause between hooks as an agent does, so the replay lasts long enough for
    # the drill to kill on any machine (back to back, six sessions take a quarter second).
    r = bench.bench(tmp_path, 6, seed=11, parallel=3, kill_every=0.2, max_output=256 * 1024,
                    drain_timeout=300, think=0.3)  # fmt: skip
    assert r["problems"] == [], r["problems"]
    drill, clean = r["drill"], r["clean"]
    assert sum(drill["kills"].values()) >= 3, drill["kills"]  # the drill did kill
    assert drill["units"]["units_once"] > 0 and clean["units"]["units_once"] > 0
    assert not clean["kills"] and not clean["killed_hooks"]
    assert r["secrets_planted"] > 0 and clean["archive_keys_scanned"] > 0
    assert clean["spool_peak_bytes"] > 0
    for replay in (clean, drill):
        assert set(replay["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PostToolUse",
                                        "Stop"}  # fmt: skip
        assert all(h["p50_ms"] <= h["p95_ms"] <= h["p99_ms"] for h in replay["hooks"].values())
