"""Expiry segments on a real RocksDB: what a segment's expiry leaves, what moves a
version between segments, and the ledgers packed afterwards."""

from __future__ import annotations

from memoryd.search import archive_bm25
from memoryd.storage.archive import NewVersion, keys

NOW = 1_700_000_000.0
DAY = 86400.0


def add(store, texts, *, deadline, project="p", cls="conversation"):
    items = [NewVersion(project, cls, t, deadline - 90 * DAY, deadline) for t in texts]
    return [r.locator for r in store.ledgers.append_many(items, now=NOW)]


def segment_keys(store, project=b"p"):
    return [k for k, _ in store._prefix(keys.segments_prefix(project))]


def test_a_due_segment_goes_whole_and_its_statistics_are_folded(store):
    gone = add(store, [f"harbor crane {i}" for i in range(30)], deadline=NOW - 3 * DAY)
    kept = add(store, ["harbor tide tables"], deadline=NOW + 30 * DAY)
    other = add(store, ["harbor in another project"], deadline=NOW - 3 * DAY, project="q")
    assert store.postings.term_stats("p", ["harbor", "crane"]) == {"harbor": 31, "crane": 30}
    [due_p, due_q] = sorted(store.segments.due_segments(NOW))
    done = store.segments.expire_segments(now=NOW, max_segments=1)  # project p's first
    assert done.segments == 1 and sorted(done.expired) == sorted(gone) and done.remaining
    assert store.postings.term_stats("p", ["harbor", "crane"]) == {"harbor": 1, "crane": 0}
    assert store.postings.corpus_stats("p").versions == 1
    start = keys.segment_prefix(due_p)
    assert not [k for k in segment_keys(store) if k.startswith(start)]  # one range delete
    assert store._db.get(keys.segment_state(due_p)) == keys.SEG_EXPIRED
    assert store.ledgers.get(other[0])["status"] == "expired"  # by the clock, before its segment
    assert store.segments.expire_segments(now=NOW).expired == other
    assert store.segments.due_segments(NOW) == [] and store.postings.verify_postings()["ok"]
    assert [h.locator for h in archive_bm25.search(store.postings, "p", "harbor")] == kept


def test_renewal_moves_a_version_to_its_new_deadlines_segment(store):
    [loc] = add(store, ["kept by renewal"], deadline=NOW - 3 * DAY)
    store.protections.acquire_leases("a", "p", [loc], ttl=10 * DAY, now=NOW - 5 * DAY)
    store.expiry.renew(loc, NOW + 400 * DAY)  # past today: a dated segment, not the held one
    ledger = store._ledger(loc.split("@")[0].encode())
    assert ledger["versions"][0]["b"] == int((NOW + 400 * DAY) // DAY)
    assert (
        store.segments.due_segments(NOW) != []
        and store.segments.expire_segments(now=NOW).expired == []
    )
    assert (
        store.ledgers.get(loc)["content"] == "kept by renewal"
        and store.postings.verify_postings()["ok"]
    )
    assert store.postings.term_stats("p", ["renewal"]) == {"renewal": 1}


def test_expired_segments_ledgers_are_packed_afterwards(store):
    locs = add(store, [f"a transcript line {i} " * 10 for i in range(5)], deadline=NOW - DAY)
    doc = locs[0].split("@")[0].encode()
    before = store._db.get(keys.doc(doc))
    assert store.segments.slim_expired_ledgers() == (0, True)  # nothing expired yet: no walk
    store.segments.expire_segments(now=NOW + DAY)
    assert store._db.get(keys.doc(doc))[:1] == b"{"  # the expiry rewrote no ledger
    assert store.segments.slim_expired_ledgers(limit=2) == (2, False)  # bounded, from a cursor
    assert store.segments.slim_expired_ledgers(limit=100) == (3, True)
    raw = store._db.get(keys.doc(doc))
    assert raw[:1] == b"\x01" and len(raw) < len(before) // 3  # a packed tombstone
    info = store.ledgers.version_info(locs[0])
    assert (info.status, info.purged, info.retired_at) == ("expired", True, NOW - DAY)
    assert (
        store.segments.slim_expired_ledgers() == (0, True)
        and store.ledgers.counts()["versions"]["expired"] == 5
    )


def test_a_disk_low_pass_expires_a_future_segment_early_keeping_protected(store):
    locs = add(store, [f"tool output {i}" for i in range(4)], deadline=NOW + 5 * DAY,
               cls="ephemeral")  # fmt: skip
    store.protections.pin(locs[0], now=NOW)
    [seg] = store.segments.future_segments("ephemeral", NOW)
    done = store.segments.expire_segments(now=NOW, early=[seg])
    assert done.held == [locs[0]] and sorted(done.expired) == sorted(locs[1:])
    assert [store.ledgers.get(x)["status"] for x in locs] == ["live"] + ["expired"] * 3
    assert store.ledgers.version_info(locs[1]).retired_at == NOW  # not its later deadline
    assert store.postings.verify_postings()["ok"]


def test_a_promoted_derived_document_moves_to_its_new_class_and_deadline(store):
    [source] = add(store, ["the source transcript"], deadline=NOW + 5 * DAY)
    derived = store.ledgers.append("p", "derived", "facts drawn from it", created_at=NOW,
                           expires_at=None, sources=(source,)).locator  # fmt: skip
    store.expiry.promote(derived, "conversation", NOW + 40 * DAY)
    info = store.ledgers.version_info(derived)
    assert (info.cls, info.expires_at, info.status) == ("conversation", NOW + 40 * DAY, "live")
    assert store.ledgers.get(derived)["content"] == "facts drawn from it"
    assert [h.locator for h in archive_bm25.search(store.postings, "p", "facts")] == [derived]
    assert store.postings.verify_postings()["ok"]
    assert store.segments.expire_segments(now=NOW + 41 * DAY).expired == [source, derived]


def test_the_clock_moves_only_when_a_deadline_may_have_passed(store):
    [loc] = add(store, ["due in a month"], deadline=NOW + 30 * DAY)
    seq = store.vectors.sequence()
    assert store.segments.expire_segments(now=NOW).segments == 0
    assert store.vectors.sequence() == seq and store.clock() == 0  # an idle wave writes nothing
    store.segments.expire_segments(now=NOW + 30 * DAY + 60)  # its day began: the clock moves
    assert store.clock() == NOW + 30 * DAY + 60 and store.ledgers.get(loc)["status"] == "expired"


def test_the_segments_interface(store):
    """Due segments are listed, scheduled and expired whole (a protected version is held
    out first), their members enumerated, their expired versions' ledgers slimmed."""
    segs = store.segments
    gone = add(store, ["gone one", "gone two"], deadline=NOW + DAY)
    kept = add(store, ["kept"], deadline=NOW + DAY)
    later = add(store, ["later"], deadline=NOW + 5 * DAY)
    store.protections.pin(kept[0], now=NOW)
    assert [n for _, n in segs.expiry_schedule(NOW + 10 * DAY)] == [3, 1]  # by segment
    assert sorted(segs.due_locators(NOW + 2 * DAY)) == sorted(gone + kept)
    due = segs.due_segments(NOW + 2 * DAY)
    assert len(due) == 1 and len(list(segs.segment_versions(due[0]))) == 3
    assert len(segs.future_segments("conversation", NOW + 2 * DAY)) == 1
    report = segs.expire_segments(now=NOW + 2 * DAY)
    assert sorted(report.expired) == sorted(gone) and report.held == kept
    assert segs.due_segments(NOW + 2 * DAY) == []
    assert store.ledgers.get(later[0])["status"] == "live"
    assert segs.slim_expired_ledgers(limit=100) == (2, True)
