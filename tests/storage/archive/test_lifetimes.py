"""The lifetimes component's contract on a real RocksDB: the states of segments that
expired whole and request records older than their window are purged in bounds."""

from __future__ import annotations

from tests.storage.test_archive import DAY, NOW, add, expire_all_due


def test_the_lifetimes_interface(store) -> None:
    lifetimes = store.lifetimes
    done = add(store, "short evidence", ttl=DAY, request_id="old-request")
    add(store, "kept evidence", ttl=None, request_id="new-request", now=NOW + 50 * DAY)
    assert expire_all_due(store, NOW + 2 * DAY) == ["expired"]
    store.ledgers.purge_pending(max_keys=100_000)
    assert store.segments.slim_expired_ledgers(limit=100) == (1, True)
    assert lifetimes.purge_segment_states(limit=10) == 1
    assert lifetimes.purge_segment_states(limit=10) == 0
    purged = lifetimes.purge_request_records(before=NOW + DAY, now=NOW + 60 * DAY, limit=10)
    assert purged == 1
    assert store.ledgers.request_locator("old-request") is None
    assert store.ledgers.request_locator("new-request") is not None
    assert store.ledgers.get(done.locator)["status"] == "expired"
