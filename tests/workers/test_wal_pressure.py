"""WAL pressure, bounded growth and named kill points,
with independent processes and real SIGKILLs."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.conftest import WalSampler, query, status, wait_for, wal_reader, wal_size

MiB = 1024 * 1024
BATCH_BYTES = 512 * 1024
WAL_PER_SOURCE_BYTE = 4
pytestmark = pytest.mark.slow


def generated_repo(root: Path, files: int, kib: int, seed: int = 0) -> Path:
    """Files of varied vocabulary, so the index grows the way real text makes it grow."""
    rng = random.Random(seed)
    words = [f"w{rng.randrange(10**6):06d}" for _ in range(20000)]
    root.mkdir(parents=True)
    for i in range(files):
        lines, size = [], 0
        while size < kib * 1024:
            line = " ".join(rng.choices(words, k=12))
            lines.append(line)
            size += len(line) + 1
        (root / f"doc{i:04d}.txt").write_text("\n".join(lines))
    return root


def test_pinned_reader_pauses_claims_near_the_bound_and_claims_resume(
    cli, home, tmp_path, background, capsys
):
    repo = generated_repo(tmp_path / "repo", files=60, kib=256)  # ~15 MB of text
    env = {
        "MEMORYD_INGEST_BATCH_TARGET_BYTES": str(BATCH_BYTES),
        "MEMORYD_MAINTENANCE_PERIOD_SECONDS": "0.2",
        "MEMORYD_SAMPLE_PERIOD_SECONDS": "0.2",  # samples and purges hold off while paused
    }
    assert cli("init").code == 0
    sampler = WalSampler(home)
    with wal_reader(home) as reader:
        assert cli("ingest", str(repo), env=env).code == 0
        sup = background("run", "--workers", "2", env=env)
        paused = wait_for(
            lambda: (s := status(home))["claims_paused"] and s, what="claims to pause"
        )
        assert str(reader.pid) in paused["pause_reason"]
        assert reader.pid in paused["wal_reader_pids"]
        # In-flight jobs finish; then the WAL stops growing while the reader stays.
        settled = wait_for(
            lambda: not query(home, "SELECT 1 FROM jobs WHERE state = 'claimed'") or None,
            what="in-flight jobs to commit",
            interval=0.05,
        )
        assert settled
        held_size = wal_size(home)
        time.sleep(1.0)
        assert wal_size(home) == held_size, "the WAL grew while claims were paused"
        peak = sampler.max
        # Soft bound: 8 MiB plus the bounded job a worker may still be running when
        # claims pause (two workers; while a reader pins the WAL a worker holds one
        # batch, and nothing more is handed out once a turn crosses the bound). A batch
        # writes at most a few times its source to the WAL (body, index, rows, pages).
        batch_wal = WAL_PER_SOURCE_BYTE * BATCH_BYTES
        assert 8 * MiB <= peak <= 8 * MiB + 2 * batch_wal, f"WAL peaked at {peak:,} bytes"
        with capsys.disabled():
            print(f"\npinned reader: WAL peaked at {peak:,} bytes (bound 8 MiB + 2 batches)")
        pending = query(home, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'failed')")
        assert pending[0][0] > 0, "the ingest should still have work left while paused"
    wait_for(lambda: not status(home)["claims_paused"], what="claims to resume")
    wait_for(
        lambda: query(home, "SELECT finished_at FROM ingest_runs")[0][0] is not None,
        what="the ingest to finish",
    )
    wait_for(lambda: wal_size(home) == 0, what="maintenance to truncate the WAL to 0 bytes")
    sampler.stop()
    assert "claims resumed: WAL truncated" in sup.stderr
    sup.terminate()


def test_thirty_ingestion_batches_keep_the_wal_bounded(cli, home, tmp_path, capsys):
    repo = generated_repo(tmp_path / "repo", files=30, kib=200, seed=1)
    env = {"MEMORYD_INGEST_BATCH_TARGET_BYTES": str(150 * 1024)}  # one file per batch
    sampler = WalSampler(home)
    res = cli("ingest", str(repo), "--wait", "--workers", "2", "--json", env=env)
    peak = sampler.stop()
    assert res.code == 0, res.stderr
    assert query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.batch'") == [(30,)]
    # Checkpoints run at 1 MiB between turns; a turn commits at most a few batches.
    assert peak < 8 * MiB, f"WAL peaked at {peak:,} bytes"
    with capsys.disabled():
        print(f"\n30 ingestion batches: maximum WAL {peak:,} bytes")


@pytest.mark.parametrize("point", ["before_commit", "after_commit", "after_checkpoint"])
def test_sigkill_at_a_kill_point_then_reopen_and_rebuild(cli, home, tmp_path, point):
    repo = generated_repo(tmp_path / "repo", files=12, kib=64, seed=2)
    env = {"MEMORYD_INGEST_BATCH_TARGET_BYTES": str(64 * 1024)}
    assert cli("ingest", str(repo), env=env).code == 0
    assert cli("jobs", "add", "noop", "--count", "500").code == 0

    killed = cli("run", "--workers", "2", "--drain", env={**env, "MEMORYD_KILL_AT": f"{point}:2"})
    assert killed.code == -9, f"the supervisor was not killed at {point}: {killed.stderr}"

    # Reopened after the kill: consistent, every done job has its one effect, no other does.
    assert query(home, "PRAGMA integrity_check") == [("ok",)]
    done = {r[0] for r in query(home, "SELECT id FROM jobs WHERE state = 'done' AND kind = 'noop'")}
    effects = query(home, "SELECT job_id, count(*) FROM job_effects GROUP BY job_id")
    assert {job for job, _ in effects} == done and all(n == 1 for _, n in effects)
    if point == "after_checkpoint":
        assert query(home, "SELECT count(*) FROM jobs")[0][0] > 0  # the truncation kept it all
    verify = cli("rebuild", "--verify", "--json")
    assert verify.code == 0 and verify.json()["equal"]
    assert cli("rebuild").code == 0

    # A restarted supervisor finishes everything exactly once.
    finished = cli("run", "--workers", "2", "--drain", env=env)
    assert finished.code == 0, finished.stderr
    assert query(home, "SELECT DISTINCT state FROM jobs") == [("done",)]
    assert query(home, "SELECT count(*), count(DISTINCT job_id) FROM job_effects") == [(500, 500)]
    live = {r[0] for r in query(home, "SELECT path FROM files WHERE live = 1")}
    assert live == {p.name for p in repo.iterdir()}
    assert cli("rebuild", "--verify", "--json").json()["equal"]
