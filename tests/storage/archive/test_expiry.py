"""The expiry component's contract on a real RocksDB: held versions with a deadline
have per-version entries, which a deadline change re-generates (an old entry is then
harmless), a class change moves, and a due check retires one by one or in a wave's
batch with its cursor."""

from __future__ import annotations

from tests.storage.test_archive import DAY, NOW, add


def test_the_expiry_interface(store) -> None:
    expiry = store.expiry
    a = add(store, "renewed evidence", ttl=DAY)
    b = add(store, "promoted evidence", cls="derived", ttl=DAY)
    c = add(store, "waved evidence", ttl=DAY)
    locs = [a.locator, b.locator, c.locator]
    store.protections.acquire_leases("holder", "p", locs, ttl=3 * DAY, now=NOW)
    held = store.segments.expire_segments(now=NOW + 2 * DAY).held  # leased: per-version now
    assert sorted(held) == sorted(locs)
    entries = expiry.expiry_entries(limit=10)
    assert {e.locator for e in entries} == {a.locator, b.locator, c.locator}
    assert expiry.expiry_entries(classes=["durable"], limit=10) == []

    old = next(e for e in entries if e.locator == a.locator)
    gen = expiry.renew(a.locator, NOW + 100 * DAY)
    assert gen == old.generation + 1
    assert expiry.retire_expired(old, now=NOW + 3 * DAY) == "stale"
    assert expiry.set_expiry(a.locator, None, expected_generation=gen - 1) is None  # raced
    assert expiry.set_expiry(a.locator, None, expected_generation=gen) == gen + 1
    expiry.promote(b.locator, "durable", None)
    assert store.ledgers.version_info(b.locator).cls == "durable"

    due = expiry.expiry_entries(until=NOW + 3 * DAY, limit=10)
    stale = [e for e in due if e.locator != c.locator]  # entries older generations left
    assert all(expiry.retire_expired(e, now=NOW + 3 * DAY) == "stale" for e in stale)
    due = [e for e in due if e.locator == c.locator]
    store.protections.release_leases("holder")
    report = expiry.retire_due(
        due, now=NOW + 3 * DAY, cursor_name="wave", cursor_value=b"next", purge_keys=4096
    )
    assert report.outcomes == ["expired"] and report.purged_versions == 1
    assert store.meta.get_cursor("wave") == b"next"
    assert store.ledgers.get(c.locator)["status"] == "expired"
    assert store.ledgers.get(a.locator)["status"] == "live"
