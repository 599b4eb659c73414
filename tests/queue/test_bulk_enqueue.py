"""A long bulk enqueue (``jobs add --count``) lets the supervisor in
between its chunks and keeps the WAL under its pause bound, with real processes."""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.conftest import WalSampler, query, run_cli, wait_for, wal_reader, wal_size

CHUNK = 2000
CHUNKS = 30
KiB = 1024
SMALL = {  # the production shape scaled down: a few seconds of chunks, a small WAL bound
    "MEMORYD_ENQUEUE_CHUNK_ROWS": str(CHUNK),
    "MEMORYD_WAL_CHECKPOINT_BYTES": str(64 * KiB),
    "MEMORYD_WAL_PAUSE_BYTES": str(256 * KiB),
}


def chunk_wal_bytes(home: Path) -> int:
    """The WAL one chunk writes, measured in a home of its own (a reader keeps the
    last writer from checkpointing it away on close)."""
    assert run_cli("init", home=home).code == 0
    with wal_reader(home):
        assert run_cli("jobs", "add", "noop", "--count", str(CHUNK), home=home, env=SMALL).code == 0
        return wal_size(home)


def supervisor_turns_between_chunks(home: Path) -> tuple[int, int]:
    """(gaps between two consecutive chunk commits holding a supervisor commit, gaps).
    Every transaction stamps its rows with the clock read under the write lock, so the
    stamps order the commits: a chunk's jobs share their ``created_at``, a supervisor
    turn stamps the jobs it completes with its ``finished_at``."""
    chunks = [
        t
        for (t,) in query(
            home, "SELECT DISTINCT created_at FROM jobs WHERE kind = 'noop' ORDER BY 1"
        )
    ]
    turns = [
        t
        for (t,) in query(
            home, "SELECT DISTINCT finished_at FROM jobs WHERE finished_at IS NOT NULL"
        )
    ]
    gaps = list(itertools.pairwise(chunks))
    served = sum(any(a < t < b for t in turns) for a, b in gaps)
    return served, len(gaps)


def test_bulk_enqueue_yields_to_the_supervisor_and_bounds_the_wal(cli, home, tmp_path, background):
    one_chunk = chunk_wal_bytes(tmp_path / "scratch")
    assert cli("init").code == 0
    sleeps = ["--payload", '{"seconds": 0.02}', "--count", "400", "--priority", "10"]
    assert cli("jobs", "add", "sleep", *sleeps).code == 0
    sup = background("run", "--workers", "2", env=SMALL)
    wait_for(
        lambda: query(home, "SELECT count(*) FROM jobs WHERE state = 'done'")[0][0],
        what="a job done",
    )
    sampler = WalSampler(home)
    res = cli("jobs", "add", "noop", "--count", str(CHUNK * CHUNKS), env=SMALL)
    peak = sampler.stop()
    assert res.code == 0, res.stderr
    served, gaps = supervisor_turns_between_chunks(home)
    assert gaps == CHUNKS - 1
    # the supervisor, busy with short jobs, commits between most chunks (starved: almost none)
    assert served >= gaps // 2, f"the supervisor committed between {served} of {gaps} chunks"
    bound = 256 * KiB + one_chunk
    assert peak <= bound, f"WAL peak {peak:,} bytes past the pause bound plus one chunk ({bound:,})"
    assert sup.alive()
