"""The dispatch policy alone: claim sizing and batching, without processes or stores."""

from __future__ import annotations

from collections import deque

from memoryd.queue import ClaimedJob
from memoryd.workers.dispatch import MAX_DISPATCH_BATCH, MAX_OUTSTANDING_BATCHES, Dispatch


def jobs(kind: str, n: int) -> deque:
    return deque(ClaimedJob(i, kind, b"null", "t", 1, None) for i in range(n))


def test_an_unmeasured_kind_goes_one_job_per_batch() -> None:
    d = Dispatch(target_seconds=0.02, claim_batch_max=512)
    assert d.claim_size(free=4, buffered=0) == 4
    buffer = jobs("new", 3)
    assert len(d.next_batch(buffer)) == 1 and len(buffer) == 2


def test_measured_cheap_jobs_fill_batches_up_to_the_target() -> None:
    d = Dispatch(target_seconds=1.0, claim_batch_max=10_000)
    d.observe("slow", 0.25)
    assert len(d.next_batch(jobs("slow", 100))) == 4  # a second of quarter-second jobs
    assert d.claim_size(free=2, buffered=5) == 2 * 4 - 5
    d.observe("tiny", 1e-7)
    assert len(d.next_batch(jobs("tiny", 1000))) == MAX_DISPATCH_BATCH
    # while a reader pins the WAL, one job a batch: what commits past the bound is one
    # bounded job per worker, however quick the kind
    assert len(d.next_batch(jobs("tiny", 1000), wal_pinned=True)) == 1


def test_claims_are_capped_and_count_what_is_already_buffered() -> None:
    d = Dispatch(target_seconds=1.0, claim_batch_max=100)
    d.observe("noop", 1e-6)
    assert d.claim_size(free=4, buffered=0) == 100, "claim_batch_max caps a turn"
    assert d.claim_size(free=1, buffered=MAX_DISPATCH_BATCH) == 0
    assert d.claim_size(free=0, buffered=0) == 0


def test_archive_operations_are_claimed_one_per_free_place() -> None:
    d = Dispatch(target_seconds=0.02, claim_batch_max=512)
    assert d.claim_size(free=1, buffered=0, one_at_a_time=True) == 1
    assert d.claim_size(free=1, buffered=1, one_at_a_time=True) == 0


def test_depth_and_free_places() -> None:
    assert Dispatch.depth(wal_pinned=False) == MAX_OUTSTANDING_BATCHES
    assert Dispatch.depth(wal_pinned=True) == 1
    assert Dispatch.free_slots([0, 1, 2], depth=2) == 3
    assert Dispatch.free_slots([0, 1, 2], depth=1) == 1
