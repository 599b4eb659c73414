"""Must-show 6: disk-low emergency mode with injected free-space measurements."""

from __future__ import annotations

import pytest

from memoryd.base.errors import MemorydError
from memoryd.retention.boundary import Boundary
from memoryd.retention.diskguard import DiskGuard
from memoryd.retention.maintenance import Maintenance
from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, DiskLow

from .conftest import DAY, NOW, POLICY, populate

GiB = 1024**3
MiB = 1024**2


def test_threshold_above_free_space(path):
    free = [10 * GiB]
    store = ArchiveStore.open_primary(path, sync=False)
    docs = populate(store, 20)
    live = next(loc for loc, (_, due) in docs.items() if not due)
    guard = DiskGuard(store, threshold_bytes=20 * GiB, free_bytes=lambda: free[0]).install()
    # below the threshold, an append that leaves the reserve alone is accepted...
    store.ledgers.append("p", "conversation", "accepted", created_at=NOW, expires_at=None)
    assert store.meta.degraded()["reason"] == "disk_low"  # ...and records the degraded state
    free[0] = 64 * MiB + 10  # now any append would eat the 64 MiB reserve
    with pytest.raises(DiskLow) as exc:
        store.ledgers.append("p", "conversation", "x" * 500, created_at=NOW, expires_at=None)
    assert isinstance(exc.value, MemorydError)
    assert exc.value.code == "DISK_LOW" and exc.value.retryable
    free[0] = 10 * GiB
    m = Maintenance(store, POLICY, Boundary(path), disk_guard=guard)
    report = m.tick(now=NOW)
    assert report.disk["degraded"] and report.disk["free_bytes"] == 10 * GiB
    assert report.emergency["flushed"] and report.emergency["expired"] == 10
    # search, pins and leases keep working
    assert [
        h.locator for h in archive_bm25.search(store.postings, "p", docs[live][0].split()[1])
    ] == [live]
    store.protections.pin(live, now=NOW)
    grant = store.protections.acquire_leases("agent", "p", [live], ttl=60, now=NOW)
    assert store.protections.renew_leases("agent", now=NOW + 1).epoch == grant.epoch
    assert m.status(now=NOW)["degraded"]["degraded"] is True
    store.close()
    # durable: a restart with the same threshold still says degraded
    store = ArchiveStore.open_primary(path, sync=False)
    assert store.meta.degraded()["reason"] == "disk_low"
    DiskGuard(store, threshold_bytes=20 * GiB, free_bytes=lambda: free[0]).on_open(now=NOW)
    assert store.meta.degraded() is not None
    store.close()
    # threshold 0 clears the flag on open and admits writes again
    store = ArchiveStore.open_primary(path, sync=False)
    DiskGuard(store, threshold_bytes=0, free_bytes=lambda: 0).install().on_open(now=NOW)
    assert store.meta.degraded() is None
    store.ledgers.append("p", "conversation", "accepted", created_at=NOW, expires_at=None)
    store.close()


def test_space_recovers_and_reserve(path):
    free = [100 * MiB]
    with ArchiveStore.open_primary(path, sync=False) as store:
        guard = DiskGuard(
            store, threshold_bytes=50 * MiB, reserve_bytes=64 * MiB, free_bytes=lambda: free[0]
        ).install()
        assert guard.check(now=NOW) is None
        store.ledgers.append("p", "derived", "fits", created_at=NOW, expires_at=None)
        free[0] = 64 * MiB + 10  # above the threshold, but this write would eat the reserve
        guard.threshold = 1
        with pytest.raises(DiskLow):
            store.ledgers.append("p", "derived", "x" * 200, created_at=NOW, expires_at=None)
        free[0] = 10 * MiB
        guard.threshold = 50 * MiB
        assert guard.check(now=NOW)["degraded"]
        free[0] = 100 * MiB
        assert guard.check(now=NOW) is None and store.meta.degraded() is None
        assert DiskGuard(store).free_bytes() > 0  # default: shutil.disk_usage


def test_emergency_shortens_only_unprotected_future_ephemeral(path):
    with ArchiveStore.open_primary(path, sync=False) as store:
        eph = [
            store.ledgers.append(
                "p",
                "ephemeral",
                f"tool output {i}",
                created_at=NOW - DAY,
                expires_at=POLICY.expires_at("ephemeral", NOW - DAY),
                now=NOW,
            ).locator
            for i in range(6)
        ]
        conv = store.ledgers.append(
            "p",
            "conversation",
            "a user turn",
            created_at=NOW - DAY,
            expires_at=POLICY.expires_at("conversation", NOW - DAY),
        ).locator
        durable = store.ledgers.append(
            "p", "durable", "manual", created_at=NOW, expires_at=None
        ).locator
        store.protections.pin(eph[0], now=NOW)
        store.protections.acquire_leases("agent", "p", [eph[1]], ttl=3600, now=NOW)
        store.protections.take_retrieval_leases([eph[2]], seconds=3600, now=NOW)
        guard = DiskGuard(store, threshold_bytes=GiB, free_bytes=lambda: 1)
        assert guard.check(now=NOW)
        out = guard.emergency(POLICY, Boundary(path), now=NOW)
        assert out["shortened"] == 3 and out["expired"] == 3
        status = {loc: store.ledgers.get(loc)["status"] for loc in eph + [conv, durable]}
        assert [status[x] for x in eph] == ["live"] * 3 + ["expired"] * 3
        assert status[conv] == "live" and status[durable] == "live"
        assert store.postings.verify_postings()["ok"]
