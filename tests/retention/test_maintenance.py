"""The maintenance tick: bounds, cursors, compaction trigger, non-overlap, status."""

from __future__ import annotations

import threading
import time

from memoryd.base.config import load_config
from memoryd.retention.boundary import Boundary
from memoryd.retention.maintenance import Maintenance, TickBounds, flush_decision
from memoryd.retention.policy import RetentionPolicy
from memoryd.search import archive_bm25
from memoryd.storage.archive import NewVersion
from memoryd.storage.archive.keys import split_dv
from memoryd.storage.archive.records import make_locator

from .conftest import DAY, NOW, POLICY, populate


def test_tick_bounds_and_cursors(store):
    """A due segment within the version cap goes whole in one wave; the held
    versions (a lease kept them past their deadline) go at most 256 a wave, four waves
    a tick, from the wave cursor."""
    docs = populate(store, 2200, due_every=1)
    for part in (list(docs)[:550], list(docs)[550:1100]):
        store.protections.acquire_leases("a", "p", part, ttl=11 * DAY, now=NOW - 11 * DAY)
    m = Maintenance(store, POLICY, Boundary(store.path))
    r0 = m.tick(now=NOW - DAY)
    assert r0.waves == 1 and r0.expired == 1100 and r0.exhausted
    r1 = m.tick(now=NOW)  # the lease lapsed
    assert r1.waves == 4 and r1.expired == 1024 and not r1.exhausted
    r2 = m.tick(now=NOW)
    assert r2.expired == 76 and r2.exhausted
    assert m.tick(now=NOW).expired == 0


def test_a_due_segment_larger_than_a_wave_goes_in_parts(store):
    """A wave expires at most ``wave_versions`` versions, however large
    its due segment; the rest (protected ones copied out, never lost) goes in later
    waves and ticks, the statistics exact throughout."""
    docs = populate(store, 1100, due_every=1)  # one day segment of 1,100 due versions
    [seg] = store.segments.due_segments(NOW)
    first = [make_locator(*split_dv(dv)) for dv in store.segments.segment_versions(seg)][:200]
    pinned, leased = first[10], first[20]  # both in the first wave's part
    store.protections.pin(pinned, now=NOW)
    store.protections.acquire_leases("a", "p", [leased], ttl=30 * DAY, now=NOW)
    bounds = TickBounds(wave_versions=200, waves_per_tick=2)
    m = Maintenance(store, POLICY, Boundary(store.path), bounds=bounds)
    r = m.tick(now=NOW)
    assert r.waves == 2 and r.expired == 398 and not r.exhausted  # 2 held, 398 expired
    assert store.postings.verify_postings()["ok"]
    assert store.postings.term_stats("p", ["shared"]) == {"shared": 1100 - 398}
    expired = 398
    while not r.exhausted:
        r = m.tick(now=NOW)
        assert r.expired <= 400
        expired += r.expired
    assert expired == 1098 and store.segments.due_segments(NOW) == []
    for loc in (pinned, leased):
        assert store.ledgers.get(loc)["status"] == "live" and archive_bm25.search(
            store.postings, "p", docs[loc][0].split()[1]
        )
    gone = next(loc for loc in first if loc not in (pinned, leased))
    assert (
        store.ledgers.get(gone)["status"] == "expired" and store.ledgers.version_info(gone).purged
    )
    assert store.postings.term_stats("p", ["shared", docs[gone][0].split()[1]])["shared"] == 2
    assert store.postings.verify_postings()["ok"] and store.ledgers.pending_purge() == 0


def test_lapsed_protections_cleaned_at_most_1000_per_tick(store):
    items = [NewVersion("p", "durable", f"v{i}", NOW, None) for i in range(1000)]
    locs = [r.locator for r in store.ledgers.append_many(items, now=NOW)]
    for c in range(3):
        store.protections.acquire_leases(f"c{c}", "p", locs[:900], ttl=10, now=NOW)
    store.protections.take_retrieval_leases(locs, seconds=10, now=NOW)
    m = Maintenance(store, POLICY, Boundary(store.path))
    later = NOW + 60
    counts = []
    while True:
        r = m.tick(now=later)
        counts.append((r.protections_cleaned, r.retrieval_leases_cleaned))
        if r.protections_cleaned == 0 and r.retrieval_leases_cleaned == 0:
            break
    assert all(p <= 1000 and q <= 1000 for p, q in counts)
    assert sum(p for p, _ in counts) >= 2700 and sum(q for _, q in counts) == 1000
    assert all(store.protections.protection(x, now=later) is None for x in locs[:10])


def test_compaction_trigger_flushes_then_watches_until_reclaimed(store):
    populate(store, 3000, due_every=2)
    store.maintenance.flush()
    bounds = TickBounds(compaction_deleted_keys=10_000, wave_documents=2000)
    m = Maintenance(store, POLICY, Boundary(store.path), bounds=bounds)
    r = m.tick(now=NOW, force=True)
    assert r.keys_deleted >= 10_000
    assert r.compaction["flushed"] and r.compaction["armed"]
    deadline = time.time() + 60
    while True:  # later ticks re-read RocksDB properties until bytes were reclaimed
        r = m.tick(now=NOW)
        if not r.compaction["armed"]:
            break
        assert time.time() < deadline, r.compaction
        time.sleep(0.5)
    assert r.compaction["total_reclaimed_bytes"] > 0 and r.compaction.get("reclaimed_bytes")
    full = m.compact()
    assert full["sst_bytes_after"] <= full["sst_bytes_before"] + 64 * 1024  # already compacted


def test_ticks_do_not_overlap_and_policy_change_reindexes(store):
    populate(store, 10)
    m = Maintenance(store, POLICY, Boundary(store.path))
    m._running.acquire()
    try:
        out = []
        t = threading.Thread(target=lambda: out.append(m.tick(now=NOW)))
        t.start()
        t.join()
        assert out[0].skipped
    finally:
        m._running.release()
    m.tick(now=NOW - 30 * DAY)  # records the policy fingerprint, nothing due yet
    keep = RetentionPolicy(ages_days={"ephemeral": 14, "conversation": 0, "derived": 30})
    m2 = Maintenance(store, keep, Boundary(store.path))
    r = m2.tick(now=NOW)
    assert r.reindexed == 10 and r.expired == 0  # every conversation deadline dropped
    assert store.expiry.expiry_entries(limit=100) == []
    status = m2.status(now=NOW)
    assert status["migration"] == {"state": "committed"} and status["due_entries"] == 0


def test_from_config(tmp_path, store):
    cfg = load_config(tmp_path, {"retention_wave_documents": 3, "retention_disk_low_bytes": 0})
    m = Maintenance.from_config(store, cfg)
    assert m.bounds.wave_documents == 3 and m.disk_guard.threshold == 0
    assert store.admission is not None


def test_the_trigger_defers_its_flush_while_the_last_one_still_compacts(store):
    """Past the threshold, a flush waits while RocksDB still flushes or compacts after the
    last one (armed); unarmed or idle, it flushes; below the threshold, nothing."""
    b = TickBounds(compaction_deleted_keys=100)
    props = store.meta.properties()
    busy = {**props, "running_compactions": 1}
    flushing = {**props, "running_flushes": 1}
    quiet = {**props, "running_compactions": 0, "running_flushes": 0}
    assert flush_decision(b, armed=True, deleted=100, props=busy) == "deferred"
    assert flush_decision(b, armed=True, deleted=100, props=flushing) == "deferred"
    assert flush_decision(b, armed=True, deleted=100, props=quiet) == "flush"
    assert flush_decision(b, armed=False, deleted=100, props=busy) == "flush"
    assert flush_decision(b, armed=True, deleted=99, props=quiet) == "idle"
