"""What grows per tick or per request has a purge (real RocksDB): the states of expired
segments go once every ledger naming them was packed, and request records go after the
retry horizon, while every redo inside the horizon still answers its first outcome."""

from __future__ import annotations

import pytest

from memoryd.base.config import SETTINGS, load_config
from memoryd.base.errors import ConfigError
from memoryd.retention.boundary import Boundary
from memoryd.retention.maintenance import Maintenance, TickBounds
from memoryd.search import archive_bm25
from memoryd.storage.archive import NewVersion, keys

from .conftest import DAY, NOW, POLICY, populate


def states(store) -> dict[bytes, bytes]:
    return dict(store._prefix(keys.SEGMENT_STATE))


def requests(store) -> list[bytes]:
    return [k for k, _ in store._prefix(keys.REQUEST)]


def test_expired_segments_states_go_once_their_ledgers_are_packed(store):
    docs = populate(store, 60, due_every=2, spread_days=3)  # three due day segments
    due = [loc for loc, (_, is_due) in docs.items() if is_due]
    assert list(states(store).values()).count(keys.SEG_EXPIRED) == 0
    store.segments.expire_segments(now=NOW)
    assert list(states(store).values()).count(keys.SEG_EXPIRED) == 3
    # ledgers still name the expired segments: their states must answer
    assert store.lifetimes.purge_segment_states(limit=100) == 0
    assert {store.ledgers.get(loc)["status"] for loc in due} == {"expired"}
    while not store.segments.slim_expired_ledgers(limit=7)[1]:
        pass
    assert store.lifetimes.purge_segment_states(limit=2) == 2  # bounded
    assert store.lifetimes.purge_segment_states(limit=100) == 1
    assert keys.SEG_EXPIRED not in states(store).values()
    assert {store.ledgers.get(loc)["status"] for loc in due} == {"expired"}
    assert (
        len([h for h in archive_bm25.search(store.postings, "p", "due") if h.locator in due]) == 0
    )
    # a version appended later into one of those buckets is expired by a wave again
    created = NOW - 100 * DAY
    deadline = POLICY.expires_at("conversation", created)
    late = store.ledgers.append("p", "conversation", "late due words", created_at=created,
                        expires_at=deadline, now=NOW)  # fmt: skip
    assert store.ledgers.get(late.locator)["status"] == "expired"
    assert store.segments.expire_segments(now=NOW + 1).expired == [late.locator]
    assert store.postings.verify_postings()["ok"]


def test_request_records_outlive_the_retry_horizon_only(store):
    def add(rid: str, now: float):
        item = NewVersion("p", "durable", f"text of {rid}", now, None, request_id=rid)
        return store.ledgers.append_many([item], now=now)[0]

    old, recent = add("r-old", NOW - 40 * DAY), add("r-recent", NOW - DAY)
    store._db.put(keys.request(b"r-legacy"), old.locator.encode())  # an archive of before
    assert store.lifetimes.purge_request_records(before=NOW - 30 * DAY, now=NOW, limit=100) == 1
    assert store.ledgers.request_locator("r-old") is None
    assert store.ledgers.request_locator("r-recent") == recent.locator
    assert store.ledgers.request_locator("r-legacy") == old.locator  # timed from now on
    again = add("r-recent", NOW)
    assert not again.created and again.locator == recent.locator
    # the legacy record, first seen at NOW, goes a horizon later
    assert store.lifetimes.purge_request_records(before=NOW, now=NOW + 30 * DAY, limit=100) == 1
    assert store.ledgers.request_locator("r-legacy") == old.locator
    assert store.lifetimes.purge_request_records(before=NOW + 1, now=NOW + 30 * DAY, limit=100) == 1
    assert requests(store) == []
    assert [k for k, _ in store._prefix(keys.REQUEST_TIME)] == []


def test_the_tick_purges_both_within_its_bounds(store):
    populate(store, 40, due_every=2, spread_days=2)
    for i in range(5):
        store.ledgers.append_many(
            [NewVersion("p", "durable", f"r{i}", NOW, None, request_id=f"r-{i}")],
            now=NOW - 40 * DAY,
        )
    bounds = TickBounds(max_request_records=3, max_segment_states=1)
    m = Maintenance(store, POLICY, Boundary(store.path), bounds=bounds)
    first = m.tick(now=NOW)
    assert first.requests_purged == 3 and first.segment_states_purged == 1
    second = m.tick(now=NOW)
    assert second.requests_purged == 2 and second.segment_states_purged == 1
    assert requests(store) == [] and keys.SEG_EXPIRED not in states(store).values()
    third = m.tick(now=NOW)
    assert third.requests_purged == 0 and third.segment_states_purged == 0
    idle = store._db.latest_sequence_number()
    store.lifetimes.purge_request_records(before=NOW - 30 * DAY, now=NOW)
    store.lifetimes.purge_segment_states()
    assert store._db.latest_sequence_number() == idle  # idle purges write nothing


def test_an_unchanged_add_past_the_retry_horizon_makes_no_version(store):
    """Content identity with the current live version is permanent; the request record
    only makes a redone request answer its first outcome."""

    def add(content: str, now: float):
        rid = f"r-{len(content)}"
        item = NewVersion("p", "conversation", content, NOW - 41 * DAY, NOW + 49 * DAY,
                          doc_id="s-chat", session="chat", request_id=rid)  # fmt: skip
        return store.ledgers.append_many([item], now=now)[0]

    same, more = "user: the same words", "user: the same words, and more"
    first = add(same, NOW - 40 * DAY)
    assert store.lifetimes.purge_request_records(before=NOW - 30 * DAY, now=NOW, limit=100) == 1
    again = add(same, NOW)
    assert not again.created and again.locator == first.locator
    assert [v.status for v in store.ledgers.versions("s-chat")] == ["live"]
    # the add is answered by a request record again (a spooled redo reads it)
    assert store.ledgers.request_locator(f"r-{len(same)}") == first.locator
    changed = add(more, NOW)
    assert changed.created and changed.superseded == first.locator
    # only the current live version counts: past the horizon, the older content is new
    assert store.lifetimes.purge_request_records(before=NOW + 1, now=NOW, limit=100) == 2
    back = add(same, NOW + 1)
    assert back.created and back.version == 3 and back.superseded == changed.locator


def test_request_records_kept_shorter_than_spool_files_are_refused(cli, tmp_path):
    """A retried add whose spool file is still kept must find its request record."""
    spool = SETTINGS["archive_spool_keep_seconds"].default
    short = {"archive_request_keep_seconds": spool - 1}
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path, short)
    assert "archive_request_keep_seconds" in str(exc.value)
    assert "archive_spool_keep_seconds" in str(exc.value)
    equal = load_config(tmp_path, {"archive_request_keep_seconds": spool})
    assert equal.archive_request_keep_seconds == spool  # equal: fine
    lenient = load_config(tmp_path, short, strict=False)
    assert len(lenient.problems) == 1
    assert lenient.archive_request_keep_seconds >= lenient.archive_spool_keep_seconds
    env = {"MEMORYD_ARCHIVE_SPOOL_KEEP_SECONDS": "7200",
           "MEMORYD_ARCHIVE_REQUEST_KEEP_SECONDS": "3600"}  # fmt: skip
    res = cli("retention", "run", "--json", env=env)
    assert res.code == 2 and res.json()["error"] == "BAD_CONFIG"
    assert "archive_spool_keep_seconds" in res.message
