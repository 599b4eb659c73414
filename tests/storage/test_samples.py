"""The supervisor's samples stay bounded and say what it committed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.operations.jobs import Jobs
from memoryd.storage import open_authority, samples
from tests.conftest import query, wait_for


def test_record_drops_the_oldest_beyond_the_bound(tmp_path: Path) -> None:
    db = open_authority(tmp_path, load_config(tmp_path))
    try:
        for i in range(500):
            db.write(lambda tx, i=i: samples.record_in(tx, float(i), {"i": i}, keep=40))
        assert samples.count(db) == 40
        kept = [s["i"] for s in samples.since(db, 0.0)]
        assert kept == list(range(460, 500)), "the newest 40 are kept, oldest first"
        assert [s["at"] for s in samples.since(db, 490.0)] == [float(i) for i in range(490, 500)]
    finally:
        db.close()


def test_keep_rows_covers_the_keep_time() -> None:
    assert samples.keep_rows(5.0, 86400.0) == 17280  # a day at the default period
    assert samples.keep_rows(0.3, 1.0) == 4


@pytest.mark.slow
def test_samples_stay_bounded_over_a_long_run(home: Path, cli, background) -> None:
    """A running supervisor with a short period and a long stream of jobs: samples keep
    coming, the table never holds more than the bound, and the oldest are dropped."""
    period, keep_seconds = 0.01, 0.1
    bound = samples.keep_rows(period, keep_seconds)
    env = {"MEMORYD_SAMPLE_PERIOD_SECONDS": str(period)}
    env["MEMORYD_SAMPLE_KEEP_SECONDS"] = str(keep_seconds)
    sup = background("run", "--workers", "2", env=env)
    sup.wait_running(2)
    job = '{"seconds": 0.01}'
    assert cli("jobs", "add", "sleep", "--count", "5000", "--payload", job).code == 0

    def written_while_bounded() -> bool:
        (written, kept, oldest) = query(home, "SELECT max(id), count(*), min(id) FROM samples")[0]
        assert kept <= bound, f"{kept} samples kept, bound {bound}"
        assert written is None or oldest >= written - bound + 1
        return bool(written and written > 20 * bound)

    wait_for(written_while_bounded, what=f"{20 * bound} samples written")
    assert sup.terminate() == 0


def test_each_sample_counts_what_its_turn_committed(home: Path) -> None:
    """Samples are written inside the turn: in each, the jobs waiting, claimed and dead
    plus those the run had done by then add up to every job (a fresh home)."""
    md = Memoryd(home, {"sample_period_seconds": 0.01})
    Jobs(md).add("sleep", count=20, payload={"seconds": 0.01})
    Jobs(md).add("noop", count=500)
    assert md.run(workers=2, drain=True)["done"] == 520
    rows = [orjson.loads(d) for (d,) in query(home, "SELECT data FROM samples ORDER BY id")]
    assert rows, "a run of several turns writes samples"
    for sample in rows:  # every job is waiting, claimed, dead or done by this run
        assert sum(sample["queue"].values()) + sample["done_total"] == 520
        claimed = sum(s.get("claimed", 0) for s in sample["kinds"].values())
        assert claimed == sample["queue"]["claimed"] and sample["queue"]["dead"] == 0
        workers = [w for w in sample["workers"] if w["pool"] == "jobs"]
        assert len(workers) == 2 and all(w["rss_bytes"] > 0 for w in workers)
    assert [s["done_total"] for s in rows] == sorted(s["done_total"] for s in rows)
    assert rows[-1]["done_total"] > 0


def test_sampling_off_writes_none(home: Path) -> None:
    md = Memoryd(home, {"sample_period_seconds": 0})
    Jobs(md).add("noop", count=50)
    md.run(workers=1, drain=True)
    assert query(home, "SELECT count(*) FROM samples")[0][0] == 0
