"""The meta and maintenance components' contracts on a real RocksDB: cursors, meta
records and the degraded state are durable; counters and properties read; flushes
and compactions run; raw items copy an archive byte for byte."""

from __future__ import annotations

from memoryd.storage.archive import ArchiveStore
from tests.storage.test_archive import NOW, add


def test_the_meta_interface(store) -> None:
    meta = store.meta
    meta.set_cursor("wave", b"\x01")
    meta.set_meta("compaction", {"n": 1})
    meta.set_degraded({"reason": "disk"})
    assert meta.get_cursor("wave") == b"\x01" and meta.get_meta("compaction") == {"n": 1}
    assert meta.degraded() == {"reason": "disk"}
    meta.set_cursor("wave", None)
    meta.set_degraded(None)
    assert meta.get_cursor("wave") is None and meta.degraded() is None
    a = add(store, "alpha")
    store.ledgers.forget([a.doc_id], now=NOW)
    store.ledgers.purge_pending(max_keys=100_000)
    assert meta.deleted_keys_total() > 0
    assert meta.properties()["estimated_keys"] > 0
    assert meta.latest_sequence_number() > 0


def test_the_maintenance_interface(store, tmp_path) -> None:
    maint = store.maintenance
    add(store, "alpha beta", request_id="r1")
    maint.flush()
    maint.compact_content("p")
    maint.compact_all()
    maint.compact_ranges([(b"", None)])
    assert store.meta.properties()["sst_bytes"] > 0
    with ArchiveStore.open_primary(tmp_path / "copy", sync=False) as copy:
        items = list(maint.raw_items())
        assert copy.maintenance.raw_write(items) == len(items)
        assert list(copy.maintenance.raw_items()) == items
        payloads = [k for k, _ in items if maint.is_payload_key(k)]
        assert payloads and not any(maint.is_format_key(k) for k in payloads)
        assert copy.maintenance.raw_delete(payloads) == len(payloads)
        assert len(list(copy.maintenance.raw_items())) == len(items) - len(payloads)
