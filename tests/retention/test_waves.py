"""Retention waves: tombstone first, bounded purge, protections, idempotence, SIGKILL."""

from __future__ import annotations

import signal

import orjson
import pytest

from memoryd.retention.boundary import Boundary
from memoryd.retention.policy import RetentionPolicy
from memoryd.retention.waves import POLICY_META, WAVE_CURSOR, reindex, run_wave
from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, LeaseRejected, NotLive
from memoryd.storage.archive.core import DF_JOURNAL_FOLD_RECORDS

from .conftest import DAY, NOW, POLICY, check_invariants, child, populate, spawn


def drain(store, now=NOW, docs=256, keys=4096, policy=POLICY):
    expired = []
    while True:
        r = run_wave(
            store, policy, Boundary(store.path), now=now, max_documents=docs, purge_batch_keys=keys
        )
        expired += r.expired
        if r.exhausted:
            return expired


def test_wave_expires_due_skips_protected_and_keeps_metadata(store):
    docs = populate(store, 40)
    due = [loc for loc, (_, d) in docs.items() if d]
    pinned, leased, retr = due[0], due[1], due[2]
    store.protections.pin(pinned, now=NOW)
    # leases are taken before the deadline (a due version can no longer be leased)
    store.protections.acquire_leases(
        "agent", "p", [leased], ttl=11 * DAY + 3600, now=NOW - 11 * DAY
    )
    store.protections.take_retrieval_leases([retr], seconds=11 * DAY + 60, now=NOW - 11 * DAY)
    r = run_wave(store, POLICY, Boundary(store.path), now=NOW, max_documents=256)
    assert r.exhausted and r.outcomes == {"expired": len(due) - 3, "held": 3}
    assert store.ledgers.pending_purge() == 0 and r.purged_versions == len(due) - 3
    live, expired = check_invariants(store, docs, protected={pinned, leased, retr})
    assert (live, expired) == (23, 17)
    assert store.postings.verify_postings()["ok"]
    # protections lapse: the next wave takes them (the pin stays)
    later = NOW + 2 * 3600
    assert set(drain(store, now=later)) == {leased, retr}
    assert store.ledgers.get(pinned)["status"] == "live"
    # idempotent: nothing more to do
    assert drain(store, now=later) == []


def test_waves_are_bounded_and_resume_from_cursor(store):
    """Due segments go whole; the held versions (kept by a lease past their deadline)
    are retired one by one, a bounded number a wave, from the wave cursor."""
    populate(store, 100, due_every=1)
    held = [d.locator for d in store.ledgers.documents(limit=5)]
    for loc in held:
        store.protections.acquire_leases("hold", "p", [loc], ttl=12 * DAY, now=NOW - 11 * DAY)
    b = Boundary(store.path)
    r0 = run_wave(store, POLICY, b, now=NOW, max_documents=2)
    assert r0.segments == 1 and len(r0.expired) == 95 and r0.outcomes["held"] == 5
    assert len(store.expiry.expiry_entries(limit=100)) == 5
    later = NOW + 2 * DAY  # the leases lapsed
    r1 = run_wave(store, POLICY, b, now=later, max_documents=2)
    assert r1.scanned == 2 and not r1.exhausted and store.meta.get_cursor(WAVE_CURSOR) is not None
    total = len(r1.expired)
    while True:
        r = run_wave(store, POLICY, b, now=later, max_documents=2)
        total += len(r.expired)
        if r.exhausted:
            break
    assert total == 5 and store.meta.get_cursor(WAVE_CURSOR) is None
    assert store.ledgers.counts()["versions"]["live"] == 0 and store.ledgers.pending_purge() == 0


def test_superseded_versions_are_purged_and_answer_superseded(store):
    first = store.ledgers.append("p", "durable", "old words", created_at=NOW, expires_at=None)
    second = store.ledgers.append(
        "p", "durable", "new words", created_at=NOW, expires_at=None, doc_id=first.doc_id
    )
    assert store.ledgers.pending_purge() == 1
    drain(store)
    assert store.ledgers.pending_purge() == 0
    assert store.ledgers.get(first.locator)["status"] == "superseded"
    assert (
        archive_bm25.search(store.postings, "p", "old") == []
        and archive_bm25.search(store.postings, "p", "new")[0].locator == second.locator
    )
    assert store.postings.verify_postings()["ok"]


def test_policy_change_reindexes_instead_of_expiring(store):
    docs = populate(store, 10)
    store.meta.set_meta(POLICY_META, POLICY.fingerprint())  # (maintenance records it)
    longer = RetentionPolicy(ages_days={"ephemeral": 14, "conversation": 0, "derived": 30})
    r = run_wave(store, longer, Boundary(store.path), now=NOW)
    assert r.outcomes == {"deferred_reindex": 1} and r.expired == []  # the old deadlines
    assert all(store.ledgers.get(loc)["status"] == "live" for loc in docs)
    assert reindex(store, longer) == (10, True)  # 0 days: no deadline at all
    store.meta.set_meta(POLICY_META, longer.fingerprint())
    r = run_wave(store, longer, Boundary(store.path), now=NOW)
    assert r.expired == [] and all(store.ledgers.get(loc)["status"] == "live" for loc in docs)
    far = run_wave(store, longer, Boundary(store.path), now=NOW + 1000 * DAY)
    assert far.expired == [] and store.expiry.expiry_entries() == []


def test_requests_racing_a_wave_in_the_same_worker_are_serialized(store):
    """Pins and leases checked against the store lock: a pin accepted is never expired."""
    docs = populate(store, 50, due_every=1)
    locs = list(docs)
    assert len(store.segments.due_segments(NOW)) == 1
    # pin between the scan and the wave's batch: the wave's walk finds the pin
    store.protections.pin(locs[0], now=NOW)
    done = store.segments.expire_segments(now=NOW)
    assert done.held == [locs[0]] and locs[1] in done.expired
    assert store.ledgers.get(locs[0])["content"] == docs[locs[0]][0]
    with pytest.raises(NotLive):
        store.protections.pin(locs[1], now=NOW)
    with pytest.raises(LeaseRejected) as exc:
        store.protections.acquire_leases("late", "p", [locs[1], locs[2]], ttl=60, now=NOW)
    assert exc.value.rejected == {locs[1]: "expired", locs[2]: "expired"}  # due too


KILL_POINTS = [
    "wave_after_check",
    "segment_before_batch",
    "segment_before_batch:2",
    "segment_after_batch",
    "segment_after_batch:2",
    "wave_before_purge",
    "archive_purge_chunk:5",
    "archive_purge_final:3",
]


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_sigkill_mid_wave_then_rerun_is_idempotent(path, kill_at):
    """Must-show 3: the retention worker killed before a segment batch, after it, or in
    the per-version purge (forgotten versions, 4 keys a batch: several chunks each);
    the rerun loses nothing live and shows nothing expired."""
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 300, spread_days=5)  # 150 due over 5 day segments
        due = [loc for loc, (_, d) in docs.items() if d]
        protected = {due[3], due[7]}
        store.protections.pin(due[3], now=NOW)
        store.protections.acquire_leases("agent", "p", [due[7]], ttl=30 * DAY, now=NOW - 20 * DAY)
        store.ledgers.forget([loc.split("@")[0] for loc in due[20:30]], now=NOW)  # queued purges
        assert store.ledgers.pending_purge() == 10
    args = ("wave", str(path), str(NOW), "64", "4", "2")  # 2 segments a batch: 3 batches
    code, _, err = child(*args, env={"MEMORYD_KILL_AT": kill_at})
    assert code == -signal.SIGKILL, err
    with ArchiveStore.open_primary(path) as store:
        check_invariants(store, docs, protected=protected)  # mid-crash state is safe
        assert store.postings.verify_postings()["ok"]
    code, report, err = child(*args)
    assert code == 0, err
    with ArchiveStore.open_primary(path) as store:
        live, expired = check_invariants(store, docs, protected=protected)
        assert expired == len(due) - 2 and live == 300 - expired
        assert store.ledgers.pending_purge() == 0 and store.segments.due_segments(NOW) == []
        assert store.postings.verify_postings()["ok"]
        assert all(store.ledgers.version_info(loc).purged for loc in due if loc not in protected)
        assert store.postings.term_stats("p", ["shared", "due"]) == {
            "shared": 152,
            "due": 2,
        }  # held
        assert store.ledgers.counts()["versions"]["expired"] == expired
    code, report, _ = child(*args)  # once more: nothing to do
    assert code == 0 and report["expired"] == []


PART_KILL_POINTS = [
    "segment_before_batch",
    "segment_before_batch:3",
    "segment_after_batch",
    "segment_after_batch:2",
    "archive_purge_final:2",
]


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", PART_KILL_POINTS)
def test_sigkill_while_a_large_segment_goes_in_parts_then_rerun(path, kill_at):
    """A due segment larger than a wave's version cap goes in parts
    (one synced batch each: tombstones, copy-outs of protected versions, inline purges);
    killed before a part's batch, after it, or mid-purge, the rerun loses nothing live,
    shows nothing expired and leaves the statistics exact."""
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 300, due_every=1)  # one segment of 300 due versions
        due = list(docs)
        protected = {due[3], due[150]}
        store.protections.pin(due[3], now=NOW)
        store.protections.acquire_leases("agent", "p", [due[150]], ttl=30 * DAY, now=NOW - 20 * DAY)
    args = ("wave", str(path), str(NOW), "64", "40", "64", "70")  # 70 versions a wave
    code, _, err = child(*args, env={"MEMORYD_KILL_AT": kill_at})
    assert code == -signal.SIGKILL, err
    with ArchiveStore.open_primary(path) as store:
        check_invariants(store, docs, protected=protected)
        assert store.postings.verify_postings()["ok"]
    code, report, err = child(*args)
    assert code == 0, err
    with ArchiveStore.open_primary(path) as store:
        live, expired = check_invariants(store, docs, protected=protected)
        assert expired == 298 and live == 2
        assert store.ledgers.pending_purge() == 0 and store.segments.due_segments(NOW) == []
        assert store.postings.verify_postings()["ok"]
        assert store.postings.term_stats("p", ["shared", "due"]) == {"shared": 2, "due": 2}
        assert store.ledgers.counts()["versions"]["expired"] == expired


BATCH_KILL_POINTS = [
    "wave_before_batch",
    "wave_before_batch:3",
    "wave_after_batch",
    "wave_after_batch:2",
    "archive_purge_final:2",
]


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", BATCH_KILL_POINTS)
def test_sigkill_around_the_batched_wave_then_rerun_is_idempotent(path, kill_at):
    """Held versions (kept past their deadline by a lease that then lapsed) go one by
    one: a wave's tombstones, the deletes that fit its purge budget and its cursor are
    one batch: killed before it, the wave is redone whole; after it, nothing is redone."""
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 300)
        due = [loc for loc, (_, d) in docs.items() if d]
        protected = {due[5], due[60]}
        store.protections.pin(due[5], now=NOW)
        store.protections.acquire_leases("agent", "p", [due[60]], ttl=20 * DAY, now=NOW - 11 * DAY)
        store.protections.acquire_leases("brief", "p", due[70:], ttl=10 * DAY, now=NOW - 11 * DAY)
        done = store.segments.expire_segments(now=NOW - 2 * DAY)  # the brief lease still holds
        assert len(done.held) == 2 + len(due[70:])
    # 16 documents a wave, 100 deletes of purge budget: some versions purged in the
    # wave's batch, the rest queued for the purge that follows
    args = ("wave", str(path), str(NOW), "16", "100")
    code, _, err = child(*args, env={"MEMORYD_KILL_AT": kill_at})
    assert code == -signal.SIGKILL, err
    with ArchiveStore.open_primary(path) as store:
        check_invariants(store, docs, protected=protected)
    code, report, err = child(*args)
    assert code == 0, err
    with ArchiveStore.open_primary(path) as store:
        live, expired = check_invariants(store, docs, protected=protected)
        assert expired == len(due) - 2 and live == 300 - expired
        assert store.ledgers.pending_purge() == 0 and store.postings.verify_postings()["ok"]
        assert all(store.ledgers.version_info(loc).purged for loc in due if loc not in protected)
        assert store.ledgers.counts()["versions"]["expired"] == expired


def test_a_wave_purges_what_fits_its_budget_in_the_same_batch(store):
    """Held versions: retired one by one, purged in the wave's batch within its budget."""
    docs = populate(store, 40)
    due = [loc for loc, (_, d) in docs.items() if d]
    store.protections.acquire_leases("a", "p", due, ttl=11 * DAY + 60, now=NOW - 11 * DAY)
    assert len(store.segments.expire_segments(now=NOW).held) == 20
    entries = store.expiry.expiry_entries(until=NOW + 120, limit=100)
    done = store.expiry.retire_due(
        entries, now=NOW + 120, deadline_of=POLICY.expires_at, cursor_name="w", cursor_value=None
    )
    assert done.outcomes == ["expired"] * 20 and done.purged_versions == 20
    assert store.ledgers.pending_purge() == 0 and store.meta.get_cursor("w") is None
    check_invariants(store, docs)
    assert store.postings.verify_postings()["ok"]


def test_the_purge_queue_resumes_at_its_head_and_wraps_around(store):
    old = NOW - 100 * DAY
    for i in range(30):
        text = f"due{i} words of an old session"
        store.ledgers.append(
            "p", "conversation", text, created_at=old, expires_at=old, doc_id=f"m{i:02d}"
        )
    store.ledgers.append("p", "conversation", "first in key order", created_at=NOW, expires_at=None,
                 doc_id="a0")  # fmt: skip
    store.ledgers.forget([f"m{i:02d}" for i in range(30)], now=NOW)
    assert store.ledgers.pending_purge() == 30
    first = store.ledgers.purge_pending(max_keys=40)  # whole versions packed into one batch
    assert first.remaining and first.versions >= 2
    # a version tombstoned now sorts before the head: the queue wraps around to it
    store.ledgers.forget(["a0"], now=NOW)
    while store.ledgers.purge_pending(max_keys=40).remaining:
        pass
    assert store.ledgers.pending_purge() == 0 and store.postings.verify_postings()["ok"]
    assert store.ledgers.version_info("a0@1").purged and store.ledgers.version_info("m00@1").purged


@pytest.mark.slow
def test_sigkill_right_after_flush_then_rerun(path):
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 400)
    env = {"MEMORYD_KILL_AT": "retention_after_flush"}
    code, _, err = child("tick", str(path), str(NOW), "100", env=env)
    assert code == -signal.SIGKILL, err
    with ArchiveStore.open_primary(path) as store:
        assert check_invariants(store, docs) == (200, 200)
    code, report, err = child("tick", str(path), str(NOW), "100")
    assert code == 0, err
    assert report["expired"] == 0
    with ArchiveStore.open_primary(path) as store:
        assert check_invariants(store, docs) == (200, 200)
        assert store.postings.verify_postings()["ok"] and store.ledgers.pending_purge() == 0


@pytest.mark.slow
def test_pins_and_leases_survive_a_wave_racing_requests_from_another_process(path):
    """Must-show 2, modelled as the worker runs it: RocksDB admits one read-write
    process, so the worker process owns the primary and serves pin/lease requests
    (here from this test process over a pipe) on a thread *while* its main thread
    runs retention waves; the store lock makes each check-and-write atomic."""
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 1200, due_every=1, spread_days=30)  # 30 segments
    locs = list(docs)
    proc = spawn("serve", str(path), str(NOW))
    try:
        assert orjson.loads(proc.stdout.readline()) == {"ready": True}
        requests = [{"op": "go"}]
        pins = locs[0::6]
        for i, loc in enumerate(pins):
            requests.append({"op": "pin", "id": f"pin{i}", "locator": loc})
        leases = locs[1::6]
        for i in range(0, len(leases), 5):
            client = f"client{i}"
            requests.append(
                {"op": "lease", "id": f"lease{i}", "client": client, "locators": leases[i : i + 5]}
            )
        # a second client shares some versions, then the first releases: the second holds
        requests.append({"op": "lease", "id": "shareA", "client": "A", "locators": locs[2:4]})
        requests.append({"op": "lease", "id": "shareB", "client": "B", "locators": locs[2:4]})
        requests.append({"op": "release", "id": "relA", "client": "A"})
        for r in requests:
            proc.stdin.write(orjson.dumps(r).decode() + "\n")
        proc.stdin.flush()
        answers, done = {}, None
        while len(answers) < len(requests) - 1 or done is None:
            msg = orjson.loads(proc.stdout.readline())
            if "wave_done" in msg:
                done = msg
            else:
                answers[msg["id"]] = msg
        proc.stdin.write(orjson.dumps({"op": "stop"}).decode() + "\n")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    with ArchiveStore.open_primary(path) as store:
        won = lost = 0
        for i, loc in enumerate(pins):
            status = store.ledgers.get(loc)["status"]
            if answers[f"pin{i}"]["ok"]:
                won += 1
                assert status == "live" and store.protections.is_pinned(loc.split("@")[0])
            else:
                lost += 1
                assert answers[f"pin{i}"]["code"] == "NOT_LIVE" and status == "expired"
        for i in range(0, len(leases), 5):
            statuses = {store.ledgers.get(x)["status"] for x in leases[i : i + 5]}
            if answers[f"lease{i}"]["ok"]:
                won += 1
                assert statuses == {"live"}
            else:
                assert answers[f"lease{i}"]["code"] == "LEASE_REJECTED"
                assert "expired" in statuses  # rejected because a target was already gone
        if answers["shareB"]["ok"]:
            assert {store.ledgers.get(x)["status"] for x in locs[2:4]} == {"live"}
            assert all(store.protections.protection(x, now=NOW) == "lease:B" for x in locs[2:4])
        # everything unprotected was expired; nothing protected was
        protected = {
            loc
            for loc in locs
            if store.protections.is_pinned(loc.split("@")[0])
            or store.protections.protection(loc, now=NOW)
        }
        for loc in locs:
            assert store.ledgers.get(loc)["status"] == ("live" if loc in protected else "expired")
        assert store.postings.verify_postings()["ok"]
        assert won > 0 and done["wave_done"] > 10


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", ["segment_before_batch", "segment_after_batch"])
def test_sigkill_around_a_wave_that_folds_the_statistics_journal(path, kill_at):
    """A wave that finds the document-frequency journal long folds it in its segment
    batch: killed before the batch nothing is folded, after it the journal is empty;
    either way the statistics stay exact and a rerun finishes."""
    with ArchiveStore.open_primary(path) as store:
        docs = populate(store, 120)
        fresh = [loc for loc, (_, d) in docs.items() if not d]
        for loc in fresh[:DF_JOURNAL_FOLD_RECORDS]:  # one journal record each
            store.ledgers.forget([loc.split("@")[0]], now=NOW)
        assert store.postings.df_journal_records() == DF_JOURNAL_FOLD_RECORDS
    args = ("wave", str(path), str(NOW), "64", "4096")
    code, _, err = child(*args, env={"MEMORYD_KILL_AT": kill_at})
    assert code == -signal.SIGKILL, err
    with ArchiveStore.open_primary(path) as store:
        folded = kill_at == "segment_after_batch"
        assert store.postings.df_journal_records() == (0 if folded else DF_JOURNAL_FOLD_RECORDS)
        assert store.postings.verify_postings()["ok"]
    code, _, err = child(*args)
    assert code == 0, err
    with ArchiveStore.open_primary(path) as store:
        due = [loc for loc, (_, d) in docs.items() if d]
        assert all(store.ledgers.get(loc)["status"] == "expired" for loc in due)
        assert store.postings.term_stats("p", ["shared", "uniq119"]) == {
            "shared": 60 - 32,
            "uniq119": 1,
        }
        assert store.ledgers.pending_purge() == 0 and store.postings.verify_postings()["ok"]
