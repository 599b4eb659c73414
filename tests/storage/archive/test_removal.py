"""Removing versions from the derived layer one by one (real RocksDB): the
document-frequency journal, tombstone ledgers, the purge queue and the walk of
protections of a segment wave."""

from __future__ import annotations

from memoryd.search import archive_bm25
from memoryd.storage.archive import NewVersion, codec, keys
from memoryd.storage.archive.core import DF_JOURNAL_FOLD_RECORDS, Batch
from memoryd.storage.archive.removal import version_terms

NOW = 1_700_000_000.0
DAY = 86400.0


def add(store, texts, *, due=True, session=None):
    deadline = NOW - 1 if due else NOW + DAY
    items = [
        NewVersion("p", "conversation", t, NOW - DAY, deadline, session=session) for t in texts
    ]
    return [r.locator for r in store.ledgers.append_many(items, now=NOW)]


def retire_all(store, batch_size=4):
    """Retire the due documents one by one (``forget``: the per-version path a
    superseding append takes too), ``batch_size`` to a batch, and purge them."""
    due = [d.doc_id for d in store.ledgers.documents(limit=10_000) if d.expires_at == NOW - 1]
    for i in range(0, len(due), batch_size):
        store.ledgers.forget(due[i : i + batch_size], now=NOW)
    while store.ledgers.purge_pending().remaining:
        pass


def journal_keys(store):
    return [k for k, _ in store._prefix(keys.df_journal_prefix())]


def test_version_terms_are_the_posted_terms_in_text_order():
    assert version_terms("Beta alpha BETA gamma_1 " + "x" * 65) == ["beta", "alpha", "gamma_1"]


def test_retired_terms_leave_the_statistics_before_and_after_the_fold(store):
    add(store, ["shared apple", "shared pear", "shared plum"], due=False)
    add(store, [f"shared apple gone{i}" for i in range(6)])
    assert store.postings.term_stats("p", ["shared", "apple"]) == {"shared": 9, "apple": 7}
    retire_all(store)
    assert journal_keys(store), "retirements are journaled, not applied per term"
    assert store.postings.term_stats("p", ["shared", "apple", "gone3", "pear"]) == {
        "shared": 3,
        "apple": 1,
        "gone3": 0,
        "pear": 1,
    }
    assert store.postings.verify_postings()["ok"]
    records = len(journal_keys(store))
    assert records > 0 and store.postings.fold_df_journal() == (records, 6)  # gone0..gone5 emptied
    assert journal_keys(store) == []
    assert store._db.get(keys.termstat(b"p", b"gone3")) is None  # emptied: deleted
    assert store.postings.term_stats("p", ["shared", "apple", "gone3"]) == {
        "shared": 3,
        "apple": 1,
        "gone3": 0,
    }
    assert store.postings.verify_postings()["ok"]


def test_a_wave_folds_the_journal_once_it_is_long(store):
    add(store, [f"common word{i}" for i in range(DF_JOURNAL_FOLD_RECORDS + 3)])
    retire_all(store, batch_size=1)  # one journal record per wave
    assert 0 < len(journal_keys(store)) < DF_JOURNAL_FOLD_RECORDS
    assert store.postings.term_stats("p", ["common"]) == {"common": 0}
    assert store.postings.verify_postings()["ok"]


def test_rebuild_drops_the_journal_with_the_statistics(store):
    add(store, ["kept words"], due=False)
    add(store, ["gone words"])
    retire_all(store)
    store.postings.rebuild_postings()
    assert journal_keys(store) == []
    assert store.postings.term_stats("p", ["words", "gone"]) == {"words": 1, "gone": 0}


def test_an_expired_purged_document_keeps_a_packed_tombstone_ledger(store):
    [loc] = add(store, ["a transcript line " * 20], session="s1")
    before = len(store._db.get(keys.doc(loc.split("@")[0].encode())))
    retire_all(store)
    raw = store._db.get(keys.doc(loc.split("@")[0].encode()))
    assert raw[:1] == b"\x01" and len(raw) < 64 < before
    got = store.ledgers.get(loc)
    assert got["status"] == "expired" and got["session"] == "s1" and "content" not in got
    assert got["expired_at"] == "2023-11-14T22:13:20.000Z"
    info = store.ledgers.version_info(loc)
    assert (info.status, info.purged, info.created_at, info.cls) == (
        "expired",
        True,
        NOW - DAY,
        "conversation",
    )


def test_a_superseded_purged_version_keeps_only_status_and_times(store):
    first = store.ledgers.append(
        "p", "conversation", "old text", created_at=NOW, expires_at=None, now=NOW
    )
    second = store.ledgers.append(
        "p", "conversation", "new text", created_at=NOW, expires_at=None, doc_id=first.doc_id
    )
    store.ledgers.purge_pending()
    ledger = store._db.get(keys.doc(first.doc_id.encode()))
    assert ledger[:1] == b"{" and b"sha256" in ledger  # the live version keeps everything
    old = codec.decode_ledger(ledger)["versions"][0]
    assert {k for k, v in old.items() if v not in (0, None, "", False)} <= {
        "status",
        "created_at",
        "retired_at",
        "purged",
    }
    assert store.ledgers.get(first.locator)["superseded_by"] == second.locator


def test_ledger_codec_round_trips_what_a_tombstone_keeps():
    ledger = {
        "project": "prøject",
        "class": "ephemeral",
        "session": None,
        "created_at": 12.5,
        "current": 2,
        "versions": [
            {"status": "superseded", "created_at": 12.5, "retired_at": 13.0, "purged": True},
            {
                "status": "expired",
                "created_at": 13.0,
                "retired_at": 99.25,
                "purged": True,
                "forgotten": True,
                "sha256": "ab" * 32,
                "len": 3,
            },
        ],
    }
    raw = codec.encode_ledger(ledger)
    assert raw[:1] == b"\x01"
    back = codec.decode_ledger(raw)
    assert {k: back[k] for k in ("project", "class", "session", "created_at", "current")} == {
        k: ledger[k] for k in ("project", "class", "session", "created_at", "current")
    }
    assert [(v["status"], v["created_at"], v["retired_at"]) for v in back["versions"]] == [
        ("superseded", 12.5, 13.0),
        ("expired", 13.0, 99.25),
    ]
    assert back["versions"][1]["forgotten"] and "forgotten" not in back["versions"][0]
    assert codec.encode_ledger({**ledger, "derived": True})[:1] == b"{"  # more than a tombstone


def test_the_lease_read_ahead_finds_exactly_the_versions_with_references(store):
    locs = add(store, [f"text {i}" for i in range(30)], due=False)
    leased = {locs[3], locs[17], locs[29]}
    store.protections.acquire_leases("agent", "p", sorted(leased), ttl=3600, now=NOW)
    batch = Batch()
    dvs = {loc: keys.dv(loc.split("@")[0].encode(), 1) for loc in locs}
    store._read_ahead_leased(batch, list(dvs.values()))
    assert batch.leased == {dvs[loc] for loc in leased}


def test_journal_reads_of_two_projects_do_not_disturb_each_other(store):
    for project in ("p", "q"):
        items = [
            NewVersion(project, "conversation", f"word{i} common", NOW, NOW - 1) for i in range(3)
        ]
        store.ledgers.append_many(items, now=NOW)
        store.ledgers.append_many(
            [NewVersion(project, "durable", "common kept", NOW, None)], now=NOW
        )
    retire_all(store, batch_size=1)
    for _ in range(2):  # each read leaves the other project's decoded records cached
        assert store.postings.term_stats("p", ["common", "word1"]) == {"common": 1, "word1": 0}
        assert store.postings.term_stats("q", ["common", "kept"]) == {"common": 1, "kept": 1}
    store.postings.fold_df_journal()
    assert store.postings.term_stats("q", ["common", "word2"]) == {"common": 1, "word2": 0}


def place(store, locator):
    """``(segment, dv)`` of a version (its ledger names its segment)."""
    doc_id, ver = locator.split("@")
    ledger = store._ledger(doc_id.encode())
    return store._seg(ledger, ledger["versions"][int(ver) - 1]), keys.dv(doc_id.encode(), int(ver))


def postings_of_version(store, locator):
    seg, dv = place(store, locator)
    found = store._prefix(keys.seg_family(seg, keys.SEG_POSTING))
    return [k for k, _ in found if keys.parse_seg_posting(k, seg)[1] == dv]


def test_a_term_list_names_exactly_the_posted_terms_and_goes_with_the_version(store):
    (loc,) = add(store, ["Zebra crossing, zebra CROSSING at dawn_2 " + "x" * 65])
    seg, dv = place(store, loc)
    listed = keys.split_terms(store._db[keys.seg_terms(seg, dv)])
    posted = sorted(keys.parse_seg_posting(k, seg)[0] for k in postings_of_version(store, loc))
    assert sorted(listed) == posted == sorted([b"zebra", b"crossing", b"at", b"dawn_2"])
    retire_all(store)
    assert store.ledgers.pending_purge() == 0 and postings_of_version(store, loc) == []
    own = (keys.seg_terms, keys.seg_payload, keys.seg_member, keys.seg_codes)
    assert all(store._db.get(key(seg, dv)) is None for key in own)
    assert store.ledgers.get(loc)["status"] == "expired" and store.postings.verify_postings()["ok"]


def test_a_wave_purges_what_it_queued_and_the_empty_queue_is_not_walked_again(store):
    """A segment wave deletes its versions whole (nothing queued); a retirement that
    queues (forget) after the queue went empty is purged again."""
    locs = add(store, [f"alpha beta gamma delta item{i}" for i in range(8)])
    done = store.segments.expire_segments(now=NOW + DAY)
    assert sorted(done.expired) == sorted(locs) and done.segments == 1
    assert store.ledgers.pending_purge() == 0 and store.ledgers.purge_pending().versions == 0
    assert all(store.ledgers.version_info(loc).purged for loc in locs)
    kept = add(store, ["alpha kept words"], due=False)[0]
    store.ledgers.forget([kept.split("@")[0]], now=NOW)
    assert store.ledgers.pending_purge() == 1
    assert store.ledgers.purge_pending().versions == 1 and store.ledgers.pending_purge() == 0
    assert (
        archive_bm25.search(store.postings, "p", "alpha") == []
        and store.postings.verify_postings()["ok"]
    )


def test_the_wave_walks_pins_and_retrieval_leases_exactly(store):
    """Pins and retrieval leases are found by one walk in key order: a pin on a document
    whose id another's starts protects only its own; a lease only its own version."""
    ids = ["d1", "d10", "d2", "d20", "d3"]
    items = [
        NewVersion("p", "conversation", f"words {d}", NOW - DAY, NOW - 1, doc_id=d) for d in ids
    ]
    locs = [r.locator for r in store.ledgers.append_many(items, now=NOW)]
    store.protections.pin(locs[1], now=NOW)  # d10: the walk for d1 lands on its pin
    store.protections.take_retrieval_leases([locs[2]], seconds=2 * DAY, now=NOW)  # d2
    done = store.segments.expire_segments(now=NOW + DAY)
    assert sorted(done.expired) == ["d1@1", "d20@1", "d3@1"]
    assert sorted(done.held) == ["d10@1", "d2@1"]  # copied out whole
    status = [store.ledgers.version_info(loc).status for loc in locs]
    assert status == ["expired", "live", "live", "expired", "expired"]
    assert (
        store.ledgers.get(locs[2])["content"] == "words d2"
        and store.postings.verify_postings()["ok"]
    )
    assert [e.doc_id for e in store.expiry.expiry_entries()] == [
        "d2"
    ]  # the pinned one: not indexed
