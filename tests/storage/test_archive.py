"""The archive store on a real RocksDB (rocksdict) in tmp dirs: no mocks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memoryd.search import archive_bm25
from memoryd.storage.archive import (
    MAX_LEASE_TARGETS,
    ArchiveBusy,
    ArchiveReadOnly,
    ArchiveStore,
    BadArchiveInput,
    BadLocator,
    ForeignProject,
    LeaseExpired,
    LeaseNotFound,
    LeaseRejected,
    LocatorNotFound,
    NewVersion,
    NotLive,
    keys,
    parse_locator,
)

NOW = 1_700_000_000.0
DAY = 86400.0


@pytest.fixture
def store(tmp_path: Path):
    s = ArchiveStore.open_primary(tmp_path / "archive", sync=False)
    yield s
    s.close()


def add(store, text, *, project="p", cls="conversation", created=NOW, ttl=10 * DAY, **kw):
    return store.ledgers.append(
        project,
        cls,
        text,
        created_at=created,
        expires_at=created + ttl if ttl else None,
        now=kw.pop("now", NOW),
        **kw,
    )


def due_entries(store, now):
    return [e for e in store.expiry.expiry_entries(until=now, limit=100_000)]


def expire_all_due(store, now):
    """What waves do at ``now``: due segments whole, then held versions one by one."""
    report = store.segments.expire_segments(now=now)
    out = ["expired"] * len(report.expired)
    return out + [store.expiry.retire_expired(e, now=now) for e in due_entries(store, now)]


def hold(store, locator, now):
    """Put a version in the per-version path: leased (until a day after ``now``) while
    its segment expires at ``now``, it is copied out to the held segment and enters
    the per-version expiry index."""
    created = store.ledgers.version_info(locator).created_at
    store.protections.acquire_leases("holder", "p", [locator], ttl=now + DAY - created, now=created)
    assert store.segments.expire_segments(now=now).held == [locator]
    return store.ledgers.version_info(locator)


def test_locator_statuses_and_expired_never_answers_newer(store):
    v1 = add(store, "the first draft of the plan")
    v2 = add(store, "the second draft of the plan", doc_id=v1.doc_id)
    assert v2.superseded == v1.locator and v2.version == 2
    got = store.ledgers.get(v1.locator)
    assert got["status"] == "superseded" and "content" not in got
    assert got["superseded_by"] == v2.locator
    live = store.ledgers.get(v2.locator)
    assert live["status"] == "live" and live["content"] == "the second draft of the plan"
    # v2 expires; a v3 appears; v2's locator says expired and never shows v3's content
    assert expire_all_due(store, NOW + 11 * DAY) == ["expired"]
    v3 = add(store, "third text", doc_id=v1.doc_id, created=NOW + 12 * DAY, now=NOW + 12 * DAY)
    got = store.ledgers.get(v2.locator)
    assert got["status"] == "expired" and "content" not in got and "superseded_by" not in got
    assert "third" not in repr(got)
    assert store.ledgers.get(v3.locator)["content"] == "third text"
    with pytest.raises(LocatorNotFound):
        store.ledgers.get(f"{v1.doc_id}@9")
    with pytest.raises(LocatorNotFound):
        store.ledgers.get("nosuchdoc@1")
    for bad in ("nodoc", "a@0", "a@x", "@1", "a b@1", 5):
        with pytest.raises(BadLocator):
            store.ledgers.get(bad)


def test_expired_leaves_search_at_its_deadline_before_its_segment_goes(store):
    a = add(store, "retention wave deletes zebra evidence", ttl=1 * DAY)
    b = add(store, "zebra crossing notes stay", ttl=30 * DAY)
    assert {h.locator for h in archive_bm25.search(store.postings, "p", "zebra")} == {
        a.locator,
        b.locator,
    }
    assert store.postings.term_stats("p", ["zebra"]) == {"zebra": 2}
    # a wave just after a's deadline: its day segment has not ended
    just_after = NOW + DAY + 60
    assert store.segments.expire_segments(now=just_after).segments == 0
    assert store.clock() == just_after
    assert [h.locator for h in archive_bm25.search(store.postings, "p", "zebra")] == [
        b.locator
    ]  # out at once
    assert store.ledgers.get(a.locator)[
        "status"
    ] == "expired" and "content" not in store.ledgers.get(a.locator)
    assert a.locator in {
        loc for loc, _ in store.postings.postings("p", "zebra")
    }  # keys still there
    assert not store.ledgers.version_info(a.locator).purged
    # the segment's bucket ends: one range delete, the statistics folded
    done = store.segments.expire_segments(now=NOW + 2 * DAY)
    assert done.segments == 1 and done.expired == [a.locator]
    assert store.postings.term_stats("p", ["zebra"]) == {"zebra": 1}
    assert a.locator not in {loc for loc, _ in store.postings.postings("p", "zebra")}
    assert store.ledgers.get(a.locator)["status"] == "expired"  # metadata kept
    assert store.ledgers.version_info(a.locator).purged
    assert store.postings.verify_postings()["ok"]


def test_purge_is_resumable_per_chunk(store):
    text = " ".join(f"term{i}" for i in range(50))
    a = add(store, text, ttl=1 * DAY)
    add(store, "a short new version", doc_id=a.doc_id)  # a is superseded: purged by version
    assert store.ledgers.pending_purge() == 1
    first = store.ledgers.purge_pending(max_keys=20)
    assert first.remaining and first.versions == 0 and first.keys_deleted == 20
    ledger = store._ledger(a.doc_id.encode())
    seg = store._seg(ledger, ledger["versions"][0])
    left = sum(1 for _ in store._prefix(keys.seg_family(seg, keys.SEG_POSTING)))
    assert left == 30  # (the new version: another deadline, another segment)
    rest = store.ledgers.purge_pending(max_keys=1000)
    assert rest.versions == 1 and rest.keys_deleted == 33  # 30 postings, term list, member,
    assert store.ledgers.get(a.locator)["status"] == "superseded"  # payload
    assert store.postings.verify_postings()["ok"]


def test_request_id_makes_append_idempotent(store):
    r1 = add(store, "tool output", cls="ephemeral", request_id="job-17")
    r2 = add(store, "tool output", cls="ephemeral", request_id="job-17")
    assert r1.created and not r2.created and r1.locator == r2.locator
    assert store.ledgers.counts()["documents"] == 1
    items = [NewVersion("p", "derived", "x", NOW, None, request_id="job-18")] * 2
    res = store.ledgers.append_many(items, now=NOW)
    assert res[0].locator == res[1].locator and store.ledgers.counts()["documents"] == 2


def test_request_id_outlives_the_purge_of_its_version(store):
    """A redone add after expiry and purge creates no live version 2."""
    first = add(store, "secret tool output", request_id="job-19", doc_id="d1", ttl=DAY)
    expire_all_due(store, NOW + 2 * DAY)
    while store.ledgers.purge_pending(max_keys=2).remaining:
        pass
    assert store.ledgers.version_info(first.locator).purged
    again = add(store, "secret tool output", request_id="job-19", doc_id="d1", ttl=DAY)
    assert not again.created and again.locator == first.locator
    assert [v.status for v in store.ledgers.versions("d1")] == ["expired"]


def test_bad_input_writes_nothing(store):
    add(store, "kept")
    before = store.ledgers.counts()
    with pytest.raises(BadArchiveInput):
        store.ledgers.append("p", "nosuchclass", "x", created_at=NOW, expires_at=None)
    with pytest.raises(BadArchiveInput):
        store.ledgers.append("p/q", "derived", "x", created_at=NOW, expires_at=None)
    with pytest.raises(BadArchiveInput):
        store.ledgers.append("p", "derived", "x", created_at=float("nan"), expires_at=None)
    good = NewVersion("p", "derived", "fine", NOW, None)
    with pytest.raises(BadArchiveInput):  # one bad item: the whole batch is refused
        store.ledgers.append_many([good, NewVersion("p", "derived", b"bytes", NOW, None)])
    doc = add(store, "owned by p").doc_id
    with pytest.raises(ForeignProject):
        store.ledgers.append(
            "other", "conversation", "x", created_at=NOW, expires_at=None, doc_id=doc
        )
    with pytest.raises(BadArchiveInput):
        store.ledgers.append("p", "derived", "x", created_at=NOW, expires_at=None, doc_id=doc)
    after = store.ledgers.counts()
    assert after["documents"] == before["documents"] + 1


def test_segments_are_due_in_deadline_order_and_the_due_scan_stops(store):
    # created out of order; the due segments come in deadline order, project by project
    ttls = [5, 1, 3, 2, 4]
    locs = {ttl: add(store, f"doc {ttl}", ttl=ttl * DAY).locator for ttl in ttls}
    other = add(store, "other project", project="o", ttl=DAY).locator
    due = store.segments.due_segments(NOW + 2.5 * DAY)
    members = [[f"{d}@{v}" for d, v in map(keys.split_dv, store.segments.segment_versions(seg))]
               for seg in due]  # fmt: skip
    assert members == [[other], [locs[1]], [locs[2]]]
    assert [keys.parse_segment(seg)[0] for seg in due] == [b"o", b"p", b"p"]
    assert len(store.segments.due_segments(NOW + 10 * DAY)) == 6
    assert store.expiry.expiry_entries(limit=100) == []  # dated versions: no per-version entry


def test_stale_generation_is_harmless(store):
    a = add(store, "renewed evidence", ttl=1 * DAY)
    hold(store, a.locator, NOW + 2 * DAY)
    old = store.expiry.expiry_entries(limit=10)[0]
    gen = store.expiry.set_expiry(a.locator, NOW + 100 * DAY)
    assert gen == old.generation + 1
    assert store.expiry.retire_expired(old, now=NOW + 2 * DAY) == "stale"
    assert store.ledgers.get(a.locator)["status"] == "live"
    assert store.expiry.expiry_entries(limit=10) == []  # back in a dated segment: its deadline's
    assert store.ledgers.version_info(a.locator).generation == gen


def test_pins_protect_until_removed(store):
    a = add(store, "pinned evidence", ttl=1 * DAY)
    store.protections.pin(a.locator, now=NOW)
    assert store.protections.protection(a.locator) == "pinned"
    assert store.ledgers.get(a.locator)["pinned"] is True
    assert store.protections.pin(a.locator)["locator"] == a.locator  # idempotent
    # its segment expires: the pinned version is copied out and stays whole
    assert expire_all_due(store, NOW + 2 * DAY) == []
    assert store.ledgers.get(a.locator)["content"] == "pinned evidence"
    assert store.expiry.expiry_entries(limit=10) == []  # pinned: not in the per-version index
    assert store.protections.unpin(a.doc_id) and not store.protections.unpin(a.locator)
    assert store.ledgers.get(a.locator)["status"] == "expired"  # past its deadline, unprotected
    [entry] = store.expiry.expiry_entries(limit=10)
    assert store.expiry.retire_expired(entry, now=NOW + 2 * DAY) == "expired"
    assert store.ledgers.version_info(a.locator).purged or store.ledgers.pending_purge() == 1
    with pytest.raises(NotLive):
        store.protections.pin(a.locator)


def _versions(store, n, project="p", ttl=10 * DAY):
    items = [
        NewVersion(project, "conversation", f"message {i} about leases", NOW, NOW + ttl)
        for i in range(n)
    ]
    return [r.locator for r in store.ledgers.append_many(items, now=NOW)]


@pytest.mark.parametrize("bad", ["foreign_project", "expired", "superseded", "missing"])
def test_lease_of_1000_with_one_bad_target_is_rejected_whole(store, bad):
    locs = _versions(store, MAX_LEASE_TARGETS - 1)
    if bad == "foreign_project":
        target = _versions(store, 1, project="q")[0]
    elif bad == "expired":
        target = _versions(store, 1, ttl=1 * DAY)[0]
        assert store.segments.expire_segments(now=NOW + 2 * DAY).expired == [target]
    elif bad == "superseded":
        target = _versions(store, 1)[0]
        add(store, "newer", doc_id=parse_locator(target)[0])
    else:
        target = "nosuchdoc@1"
    request = locs[:500] + [target] + locs[500:]
    assert len(request) == MAX_LEASE_TARGETS
    with pytest.raises(LeaseRejected) as exc:
        store.protections.acquire_leases("agent-a", "p", request, ttl=60, now=NOW)
    assert exc.value.rejected == {target: bad}
    assert store.protections.client_lease("agent-a") is None
    assert all(store.protections.protection(loc, now=NOW) is None for loc in locs)
    grant = store.protections.acquire_leases("agent-a", "p", locs, ttl=60, now=NOW)
    assert len(grant.locators) == len(locs)
    assert all(store.protections.protection(loc, now=NOW) == "lease:agent-a" for loc in locs[:50])


def test_lease_limit_and_due_target(store):
    locs = _versions(store, MAX_LEASE_TARGETS + 1)
    with pytest.raises(BadArchiveInput):
        store.protections.acquire_leases("c", "p", locs, ttl=60, now=NOW)
    # past its deadline at the retention clock, its segment not yet gone: not leasable
    due = _versions(store, 1, ttl=1 * DAY)[0]
    assert store.segments.expire_segments(now=NOW + DAY + 60).expired == []
    with pytest.raises(LeaseRejected) as exc:
        store.protections.acquire_leases("c", "p", [due], ttl=60, now=NOW + 2 * DAY)
    assert exc.value.rejected == {due: "expired"}


def test_release_of_one_client_never_releases_another(store):
    locs = _versions(store, 10)
    store.protections.acquire_leases("a", "p", locs, ttl=60, now=NOW)
    store.protections.acquire_leases("b", "p", locs[:5], ttl=60, now=NOW)
    assert store.protections.release_leases("a") == 10
    assert [store.protections.protection(x, now=NOW) for x in locs[:5]] == ["lease:b"] * 5
    assert [store.protections.protection(x, now=NOW) for x in locs[5:]] == [None] * 5
    assert store.protections.release_leases("b", locs[:2]) == 2
    assert store.protections.protection(locs[2], now=NOW) == "lease:b"
    assert set(store.protections.client_lease("b", now=NOW)["locators"]) == set(locs[2:5])


def test_client_lease_lapses_recovers_and_epochs(store):
    locs = _versions(store, 4)
    store.protections.acquire_leases("crashy", "p", locs, ttl=60, now=NOW)
    assert store.protections.renew_leases("crashy", now=NOW + 50).expires_at == NOW + 110
    # the client crashes: no heartbeat; protection lapses by itself
    assert store.protections.protection(locs[0], now=NOW + 111) is None
    with pytest.raises(LeaseExpired):
        store.protections.renew_leases("crashy", now=NOW + 111)
    with pytest.raises(LeaseNotFound):
        store.protections.renew_leases("never-seen", now=NOW)
    # restarted client re-acquires one version: new epoch, old references protect nothing
    grant = store.protections.acquire_leases("crashy", "p", locs[:1], ttl=60, now=NOW + 200)
    assert grant.epoch == 2
    assert store.protections.protection(locs[0], now=NOW + 201) == "lease:crashy"
    assert store.protections.protection(locs[1], now=NOW + 201) is None
    # cleanup removes lapsed references in bounded steps
    assert store.protections.cleanup_expired_leases(now=NOW + 1000, limit=3) == 3
    total = 3
    while (n := store.protections.cleanup_expired_leases(now=NOW + 1000, limit=3)) > 0:
        total += n
    assert store.protections.client_lease("crashy", now=NOW + 1000)["locators"] == []
    with pytest.raises(LeaseExpired):
        store.protections.renew_leases("crashy", now=NOW + 1000)


def test_retrieval_leases_protect_then_lapse(store):
    a, b = _versions(store, 2)
    assert store.protections.take_retrieval_leases([a, "zz@1"], seconds=30, now=NOW) == [a]
    assert store.protections.protection(a, now=NOW + 10) == "retrieval"
    assert store.protections.protection(a, now=NOW + 31) is None
    assert store.protections.cleanup_retrieval_leases(now=NOW + 31, limit=10) == 1
    assert store.protections.cleanup_retrieval_leases(now=NOW + 31, limit=10) == 0
    assert store.protections.protection(b, now=NOW) is None


def test_access_records_are_coarse_and_never_move_deadlines(store):
    a = add(store, "read often", ttl=5 * DAY)
    deadline = store.ledgers.version_info(a.locator).expires_at
    assert store.access.record_access([a.locator, a.locator], now=NOW) == 1
    assert store.access.record_access([a.locator], now=NOW + 3600) == 0  # same day bucket
    assert store.access.record_access([a.locator], now=NOW + DAY) == 1
    assert len(store.access.access_buckets(a.doc_id)) == 2
    assert store.ledgers.version_info(a.locator).expires_at == deadline
    assert store.access.cleanup_access_records(before=NOW + DAY, limit=10) == 1


def test_cursors_meta_degraded_are_durable(tmp_path):
    path = tmp_path / "archive"
    with ArchiveStore.open_primary(path) as s:
        s.meta.set_cursor("c", b"\x00\x01")
        s.meta.set_meta("m", {"a": 1})
        s.meta.set_degraded({"degraded": True})
    with ArchiveStore.open_primary(path) as s:
        assert s.meta.get_cursor("c") == b"\x00\x01"
        assert s.meta.get_meta("m") == {"a": 1}
        assert s.meta.degraded() == {"degraded": True}


def test_rebuild_postings_equals_incremental(store):
    for i in range(30):
        r = add(store, f"alpha beta {i} gamma{i % 3}", ttl=(i % 4 + 1) * DAY)
        if i % 5 == 0:
            add(store, f"replacement {i}", doc_id=r.doc_id)
    expire_all_due(store, NOW + 2.5 * DAY)
    before = {t: store.postings.term_stats("p", [t])[t] for t in ("alpha", "gamma0", "replacement")}
    hits = [h.locator for h in archive_bm25.search(store.postings, "p", "alpha gamma1", limit=100)]
    assert store.postings.verify_postings()["ok"]
    store.postings.rebuild_postings()
    assert store.postings.verify_postings()["ok"]
    assert {t: store.postings.term_stats("p", [t])[t] for t in before} == before
    assert [
        h.locator for h in archive_bm25.search(store.postings, "p", "alpha gamma1", limit=100)
    ] == hits
    while store.ledgers.purge_pending().remaining:
        pass
    assert store.postings.verify_postings()["ok"]


def test_payload_formats_read_back(tmp_path):
    for fmt in (1, 2):
        with ArchiveStore.open_primary(tmp_path / f"a{fmt}", payload_format=fmt) as s:
            r = s.ledgers.append(
                "p", "durable", "héllo ✓", created_at=NOW, expires_at=None, meta={"k": 1}
            )
            assert s.ledgers.get(r.locator)["content"] == "héllo ✓"
            assert s.ledgers.get(r.locator)["meta"] == {"k": 1}
            assert s.payload_format == fmt


def test_search_filters_and_bm25(store):
    add(store, "deploy failed on staging", cls="ephemeral", created=NOW - 10 * DAY, ttl=14 * DAY)
    c = add(store, "deploy deploy deploy to production", session="s1")
    d = add(store, "we talked about the deploy", session="s2")
    hits = archive_bm25.search(store.postings, "p", "deploy production")
    assert hits[0].locator == c.locator
    assert {
        h.locator for h in archive_bm25.search(store.postings, "p", "deploy", session="s2")
    } == {d.locator}
    assert all(
        h.cls == "conversation"
        for h in archive_bm25.search(store.postings, "p", "deploy", classes=["conversation"])
    )
    recent = archive_bm25.search(
        store.postings, "p", "deploy", created_after={"ephemeral": NOW - 7 * DAY}
    )
    assert all(h.cls != "ephemeral" for h in recent) and len(recent) == 2
    assert archive_bm25.search(store.postings, "other", "deploy") == []
    assert "production" in archive_bm25.excerpt(store.ledgers, c.locator, ["production"])


def test_second_primary_is_busy_and_secondary_refuses_writes(tmp_path):
    path = tmp_path / "archive"
    with ArchiveStore.open_primary(path) as s:
        s.ledgers.append("p", "durable", "x", created_at=NOW, expires_at=None)
        code = textwrap.dedent(
            f"""
            from memoryd.storage.archive import ArchiveStore, ArchiveBusy
            try:
                ArchiveStore.open_primary({str(path)!r})
            except ArchiveBusy as exc:
                print(exc.code, exc.retryable)
            """
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stdout.split() == ["ARCHIVE_BUSY", "True"], out.stderr
        with pytest.raises(ArchiveBusy):  # in-process as well
            ArchiveStore.open_primary(path)
        sec = ArchiveStore.open_secondary(path, tmp_path / "sec")
        with pytest.raises(ArchiveReadOnly):
            sec.ledgers.append("p", "durable", "y", created_at=NOW, expires_at=None)
        with pytest.raises(ArchiveReadOnly):
            sec.protections.pin("a@1")
        sec.close()


SECONDARY_READER = textwrap.dedent(
    """
    import sys, time, json
    from memoryd.search import archive_bm25
    from memoryd.storage.archive import ArchiveStore
    path, sec, want = sys.argv[1], sys.argv[2], sys.argv[3]
    s = ArchiveStore.open_secondary(path, sec)
    print("ready", flush=True)
    for line in sys.stdin:
        loc = line.strip()
        deadline = time.time() + 30
        while True:
            s.catch_up()
            got = s.ledgers.get(loc) if loc else None
            hits = [h.locator for h in archive_bm25.search(s.postings, "p", "secondary")]
            if got and got["status"] == want.split(",")[0]:
                print(json.dumps({"get": got, "hits": hits}), flush=True)
                want = ",".join(want.split(",")[1:]) or want
                break
            if time.time() > deadline:
                print(json.dumps({"timeout": True}), flush=True)
                break
            time.sleep(0.02)
    """
)


def test_secondary_in_another_process_catches_up(tmp_path):
    import orjson

    path = tmp_path / "archive"
    primary = ArchiveStore.open_primary(path)
    seed = primary.ledgers.append("p", "conversation", "seed", created_at=NOW, expires_at=None)
    proc = subprocess.Popen(
        [sys.executable, "-c", SECONDARY_READER, str(path), str(tmp_path / "sec"), "live,expired"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        a = primary.ledgers.append(
            "p",
            "conversation",
            "written after the reader opened",
            created_at=NOW,
            expires_at=NOW + DAY,
            now=NOW,
        )
        b = primary.ledgers.append(
            "p",
            "conversation",
            "secondary search target",
            created_at=NOW,
            expires_at=NOW + 1,
            now=NOW,
        )
        proc.stdin.write(a.locator + "\n")
        proc.stdin.flush()
        seen = orjson.loads(proc.stdout.readline())
        assert seen["get"]["content"] == "written after the reader opened"
        assert seen["hits"] == [b.locator]
        primary.segments.expire_segments(now=NOW + 2)  # the clock passes b's deadline
        proc.stdin.write(b.locator + "\n")
        proc.stdin.flush()
        seen = orjson.loads(proc.stdout.readline())
        assert seen["get"]["status"] == "expired" and "content" not in seen["get"]
        assert seen["hits"] == []  # past its deadline: gone from the secondary's search too
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        primary.close()
    assert seed.locator


def test_cleanup_removes_exposure_records_of_retired_documents(store):
    kept, gone = add(store, "still live"), add(store, "forgotten soon")
    assert store.access.record_access([kept.locator, gone.locator], now=NOW) == 2
    assert store.access.cleanup_access_records(before=NOW - DAY, limit=10) == 0  # both recent, live
    store.ledgers.forget([gone.doc_id], now=NOW)
    assert store.access.cleanup_access_records(before=NOW - DAY, limit=10) == 1
    assert (
        store.access.access_buckets(gone.doc_id) == []
        and len(store.access.access_buckets(kept.doc_id)) == 1
    )
    # bounded: one record looked at per call, the cursor carries the sweep on
    for i in range(3):
        store.access.record_access([add(store, f"doc {i}").locator], now=NOW)
    store.ledgers.forget(
        [d.doc_id for d in store.ledgers.documents() if d.doc_id != kept.doc_id], now=NOW
    )
    cleaned = [store.access.cleanup_access_records(before=NOW - DAY, limit=1) for _ in range(6)]
    assert sum(cleaned) == 3 and max(cleaned) == 1
    assert len(store.access.access_buckets(kept.doc_id)) == 1


def test_a_session_lease_protects_the_sessions_current_versions(store):
    old = dict(created=NOW - 100 * DAY, ttl=1)  # due at NOW
    first = add(store, "session turn one", session="s1", **old)
    other = add(store, "another session", session="s2", **old)
    store.protections.acquire_leases("agent", "p", [], sessions=["s1"], ttl=30 * DAY, now=NOW - DAY)
    assert store.protections.protection(first.locator, now=NOW) == "session:agent"
    assert store.protections.protection(other.locator, now=NOW) is None
    # a later version of the session's document is protected, the superseded one not
    second = add(store, "session turn one, edited", session="s1", doc_id=first.doc_id, **old)
    assert store.protections.protection(second.locator, now=NOW) == "session:agent"
    assert store.protections.protection(first.locator, now=NOW) is None
    expire_all_due(store, NOW)
    assert store.ledgers.get(second.locator)["status"] == "live"
    assert store.ledgers.get(other.locator)["status"] == "expired"
    lease = store.protections.client_lease("agent", now=NOW)
    assert lease["sessions"] == ["p/s1"] and lease["locators"] == []
    with pytest.raises(LeaseRejected) as exc:
        store.protections.acquire_leases("agent", "p", [], sessions=["nope"], ttl=60, now=NOW)
    assert exc.value.rejected == {"session:nope": "missing"}
    # the lease lapses: its session references are cleaned and protect nothing
    assert store.protections.cleanup_expired_leases(now=NOW + 40 * DAY) >= 1
    assert store.protections.client_lease("agent", now=NOW + 40 * DAY)["sessions"] == []
    assert store.protections.protection(second.locator, now=NOW + 40 * DAY) is None
    assert store.protections.release_leases("agent") == 0


def test_renew_writes_a_new_generation_and_the_old_entry_is_harmless(store):
    v = add(store, "renew me", created=NOW - 20 * DAY, ttl=DAY)  # due at NOW
    hold(store, v.locator, NOW - 10 * DAY)
    old = due_entries(store, NOW)
    assert [e.locator for e in old] == [v.locator]
    gen = store.expiry.renew(v.locator, NOW + 30 * DAY)
    info = store.ledgers.version_info(v.locator)
    assert gen == old[0].generation + 1 and info.override and info.expires_at == NOW + 30 * DAY
    assert store.expiry.retire_expired(old[0], now=NOW) == "stale"  # the old entry is harmless
    assert expire_all_due(store, NOW) == [] and store.ledgers.get(v.locator)["status"] == "live"
    assert expire_all_due(store, NOW + 31 * DAY) == ["expired"]
    with pytest.raises(NotLive):
        store.expiry.renew(v.locator, None)
    w1 = add(store, "first")
    add(store, "second", doc_id=w1.doc_id)
    with pytest.raises(NotLive):
        store.expiry.renew(w1.locator, NOW + DAY)


def test_a_derived_document_of_a_durable_source_expires_at_its_own_age(store):
    """A derived document expires at the earlier of its class age and
    its last source's expiry; a digest of a durable source does not live forever."""
    source = store.ledgers.append(
        "p", "durable", "the design notes", created_at=NOW - 40 * DAY, expires_at=None
    )
    digest = store.ledgers.append(
        "p",
        "derived",
        "digest of the design notes",
        created_at=NOW - DAY,
        expires_at=NOW + 29 * DAY,
        sources=(source.locator,),
    )
    assert expire_all_due(store, NOW + 28 * DAY) == []
    assert store.ledgers.get(digest.locator)["status"] == "live"
    assert expire_all_due(store, NOW + 31 * DAY) == ["expired"]
    assert store.ledgers.get(digest.locator)["status"] == "expired"
    assert archive_bm25.search(store.postings, "p", "digest") == []
    assert store.ledgers.get(source.locator)["status"] == "live"
    assert store.postings.verify_postings()["ok"]


def test_a_derived_document_outlives_none_of_its_sources_unless_promoted(store):
    a = add(store, "source a", created=NOW - 20 * DAY, ttl=DAY)
    b = add(store, "source b", created=NOW - DAY, ttl=5 * DAY)
    d = store.ledgers.append("p", "derived", "facts from a and b", created_at=NOW - DAY,
                     expires_at=NOW + 30 * DAY, sources=(a.locator, b.locator))  # fmt: skip
    kept = store.ledgers.append("p", "derived", "facts from b, promoted", created_at=NOW - DAY,
                        expires_at=None, sources=(b.locator,))  # fmt: skip
    assert store.ledgers.version_info(d.locator).expires_at == NOW + 30 * DAY  # its own age too
    expire_all_due(store, NOW)  # a expires; b still live: d stays
    assert store.ledgers.get(a.locator)["status"] == "expired"
    assert store.ledgers.get(d.locator)["status"] == "live"
    store.expiry.promote(kept.locator, "durable", None)
    done = store.segments.expire_segments(now=NOW + 10 * DAY)  # b expires: d with it, not kept
    assert done.expired == [b.locator] and done.followed == [d.locator]
    assert store.ledgers.get(b.locator)["status"] == "expired"
    assert store.ledgers.get(d.locator)["status"] == "expired"
    assert store.ledgers.get(kept.locator)["status"] == "live"
    assert store.ledgers.version_info(kept.locator).cls == "durable"
    with pytest.raises(BadArchiveInput):
        store.expiry.promote(kept.locator, "durable", None)  # not derived any more
    with pytest.raises(NotLive):
        store.ledgers.append("p", "derived", "from a retired source", created_at=NOW,
                     expires_at=None, sources=(a.locator,))  # fmt: skip
    assert store.postings.verify_postings()["ok"]
