"""No commit of an ingest run's jobs (batches, the pack pass's index
merge, vectors) grows the WAL past the pause bound plus one bounded job, with no reader
pinning it: the run's index is merged in bounded steps, each its own commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import query
from tests.workers.test_wal_pressure import WalSampler, generated_repo

pytestmark = pytest.mark.slow

KiB = 1024
MiB = 1024 * KiB
BATCH_BYTES = 128 * KiB  # source bytes a batch aims for
STEP_PAGES = 64  # FTS5 leaf pages (about 4 KiB each) one merge step writes
PAUSE_BYTES = 2 * MiB  # the pause bound, scaled down with the tree (default 8 MiB)


def test_an_ingest_that_merges_its_index_keeps_the_wal_within_one_job_of_the_bound(
    cli, home: Path, tmp_path: Path, capsys
) -> None:
    repo = generated_repo(tmp_path / "repo", files=32, kib=192, seed=3)  # ~6 MB of text
    env = {
        "MEMORYD_INGEST_BATCH_TARGET_BYTES": str(BATCH_BYTES),  # a file a batch
        "MEMORYD_INDEX_MERGE_STEP_PAGES": str(STEP_PAGES),
        "MEMORYD_COMPACT_MAX_BYTES": "0",  # the project stores its index from the start
        "MEMORYD_WAL_PAUSE_BYTES": str(PAUSE_BYTES),
    }
    sampler = WalSampler(home)
    res = cli("ingest", str(repo), "--wait", "--workers", "2", "--json", env=env)
    peak = sampler.stop()
    assert res.code == 0, res.stderr
    # the run was merged into one segment by the pack pass, which the wait included
    assert query(home, "SELECT count(DISTINCT segid) FROM fts_1_idx") == [(1,)]
    assert query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.pack'")[0][0] > 1
    index = query(home, "SELECT sum(pgsize) FROM dbstat WHERE name = 'fts_1_data'")[0][0]
    # The guard checkpoints between commits once the WAL reaches 1 MiB, and keeps it
    # under the pause bound; one commit adds at most a bounded job's pages: a turn's
    # batches (two workers, each with a finished batch and the next one's result
    # waiting: four files of 192 KiB, a few times their source each) or one merge step
    # (64 pages). The pack pass that indexed every chunk again and merged
    # the whole index in one commit peaked at 7.2 MB here.
    job = max(4 * 4 * 192 * KiB, 4 * STEP_PAGES * 4 * KiB)
    assert index > job, "the index must be larger than a job to tell"
    assert peak <= PAUSE_BYTES + job, f"WAL peaked at {peak:,} bytes (index {index:,})"
    with capsys.disabled():
        print(f"\ningest with its index merge: WAL peak {peak:,} bytes, index {index:,}")
