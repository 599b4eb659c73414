"""The dispatch policy: how many jobs to claim and how to batch them for workers.

Pure: no processes, no store. The supervisor feeds it the measured seconds per
job and asks it for claim sizes and batches (unit-tested in isolation).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

MAX_OUTSTANDING_BATCHES = 2  # per worker: one running, one waiting in the pipe
MAX_DISPATCH_BATCH = 256
EWMA = 0.2


def ewma(old: float | None, sample: float) -> float:
    return sample if old is None else old + EWMA * (sample - old)


class Dispatch:
    """Claim sizing and batching from the measured cost of each kind of job."""

    def __init__(self, target_seconds: float, claim_batch_max: int) -> None:
        self.target = target_seconds
        self.claim_batch_max = claim_batch_max
        self.cost: dict[str, float] = {}  # EWMA seconds per job, by kind (batch sizing)
        self.job_seconds: float | None = None  # EWMA over all kinds (claim sizing)

    def observe(self, kind: str, seconds: float) -> None:
        self.cost[kind] = ewma(self.cost.get(kind), seconds)
        self.job_seconds = ewma(self.job_seconds, seconds)

    def observe_many(self, samples: Iterable[tuple[str, float]]) -> None:
        """One sample per kind: the mean seconds of its jobs that just finished (a
        poll's worth of results counts once, not once per job)."""
        sums: dict[str, list[float]] = {}
        for kind, seconds in samples:
            acc = sums.setdefault(kind, [0.0, 0])
            acc[0] += seconds
            acc[1] += 1
        for kind, (total, count) in sums.items():
            self.observe(kind, total / count)

    @staticmethod
    def depth(wal_pinned: bool) -> int:
        """Batches a worker may hold. While a reader pins the WAL, one: when claims
        pause, only one bounded job per worker is still to commit past the bound."""
        return 1 if wal_pinned else MAX_OUTSTANDING_BATCHES

    @staticmethod
    def free_slots(outstanding: Iterable[int], depth: int) -> int:
        """Batches the workers (their outstanding batch counts given) can still take."""
        return sum(max(0, depth - n) for n in outstanding)

    def claim_size(self, free: int, buffered: int, *, one_at_a_time: bool = False) -> int:
        """Jobs to claim so ``free`` batch places fill up, given ``buffered`` jobs waiting.

        ``one_at_a_time``: each batch is a single job (archive operations, in order).
        """
        if free <= 0:
            return 0
        if one_at_a_time:
            return max(0, free - buffered)
        per_job = self.job_seconds
        per_batch = 1 if per_job is None else MAX_DISPATCH_BATCH
        if per_job:
            per_batch = max(1, min(MAX_DISPATCH_BATCH, int(self.target / per_job)))
        return max(0, min(self.claim_batch_max, free * per_batch - buffered))

    def next_batch(self, buffer: deque, wal_pinned: bool = False) -> list:
        """Take from ``buffer`` about ``target`` seconds of work (an unknown kind counts
        as a whole target, so it goes alone until it has been measured). While a reader
        pins the WAL, one job: a worker's one batch (:meth:`depth`) is then one bounded
        job, however quick its kind has been."""
        batch, estimate = [], 0.0
        cost, target, take = self.cost, self.target, buffer.popleft  # a hot loop
        most = 1 if wal_pinned else MAX_DISPATCH_BATCH
        while buffer and len(batch) < most and estimate < target:
            job = take()
            batch.append(job)
            estimate += cost.get(job.kind, target)
        return batch
