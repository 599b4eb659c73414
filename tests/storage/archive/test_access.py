"""Access (hint and exposure) records' cleanup on a real RocksDB: an idle pass writes
nothing (no fsync per maintenance tick), a busy one still sweeps to the end."""

from __future__ import annotations

from memoryd.storage.archive import NewVersion

NOW = 1_700_000_000.0
DAY = 86400.0


def test_an_idle_cleanup_writes_nothing_and_a_busy_one_still_sweeps(store):
    made = store.ledgers.append_many(
        [NewVersion("p", "conversation", f"text {i}", NOW, None) for i in range(3)], now=NOW
    )
    assert store.access.record_access([r.locator for r in made], now=NOW) == 3
    store.access.cleanup_access_records(before=NOW - DAY, limit=10)  # the sweep reaches the end
    seq = store._db.latest_sequence_number()
    assert store.access.cleanup_access_records(before=NOW - DAY, limit=10) == 0
    assert store._db.latest_sequence_number() == seq  # nothing written
    store.ledgers.forget([made[0].doc_id], now=NOW)
    assert (
        sum(store.access.cleanup_access_records(before=NOW - DAY, limit=2) for _ in range(2)) == 1
    )
    assert store.access.access_buckets(made[0].doc_id) == []
    assert len(store.access.access_buckets(made[1].doc_id)) == 1
