"""Session leases against the retention clock, on a real RocksDB: a lease protects what
is still live; it never brings back a version already past its deadline."""

from __future__ import annotations

import pytest

from memoryd.search import archive_bm25
from memoryd.storage.archive import LeaseRejected
from tests.storage.test_archive import DAY, NOW, add

#: The start of NOW's day segment: a deadline after it is in a bucket that has not
#: ended at NOW, so its segment stays while the retention clock passes the deadline.
DAY_START = NOW // DAY * DAY


def due_early_today(store, text: str):
    """A version of session s1 whose deadline is a minute into NOW's day segment."""
    created = NOW - 9 * DAY
    return add(store, text, session="s1", created=created, ttl=DAY_START + 60 - created)


def test_a_session_lease_taken_after_the_deadline_does_not_bring_a_version_back(store):
    past = due_early_today(store, "turn the wave already passed")
    fresh = add(store, "turn still well within its age", session="s1")
    store.segments.expire_segments(now=NOW)  # the clock passes the first deadline, not its bucket
    assert store.ledgers.get(past.locator)["status"] == "expired"
    assert [h.locator for h in archive_bm25.search(store.postings, "p", "wave")] == []
    grant = store.protections.acquire_leases(
        "agent", "p", [], sessions=["s1"], ttl=30 * DAY, now=NOW + 60
    )
    assert grant.unprotected == (past.locator,)  # said, not silently dropped
    assert store.ledgers.get(past.locator)["status"] == "expired"
    assert store.protections.protection(past.locator, now=NOW + 60) is None
    assert [h.locator for h in archive_bm25.search(store.postings, "p", "wave")] == []
    assert store.protections.protection(fresh.locator, now=NOW + 60) == "session:agent"
    # the day's segment goes: the version is not copied out to a held segment either
    report = store.segments.expire_segments(now=DAY_START + DAY + 1)
    assert past.locator in report.expired and past.locator not in report.held
    assert store.ledgers.get(fresh.locator)["status"] == "live"


def test_a_session_lease_taken_before_the_deadline_keeps_protecting_after_it(store):
    held = due_early_today(store, "turn the agent still has open")
    grant = store.protections.acquire_leases(
        "agent", "p", [], sessions=["s1"], ttl=30 * DAY, now=DAY_START
    )
    assert grant.unprotected == ()
    store.segments.expire_segments(now=NOW)  # the clock passes the deadline: the lease holds it
    assert store.ledgers.get(held.locator)["status"] == "live"
    # the same client naming the session again keeps what it protected
    again = store.protections.acquire_leases(
        "agent", "p", [], sessions=["s1"], ttl=30 * DAY, now=NOW + 60
    )
    assert again.epoch == grant.epoch and again.unprotected == ()
    assert store.ledgers.get(held.locator)["status"] == "live"
    report = store.segments.expire_segments(now=DAY_START + DAY + 1)
    assert report.held == [held.locator]
    assert store.ledgers.get(held.locator)["status"] == "live"


def test_a_locator_lease_and_a_session_lease_judge_a_deadline_by_the_same_clock(store):
    store.segments.expire_segments(now=DAY_START)  # the retention clock: the start of the day
    due = due_early_today(store, "turn whose deadline the wall clock passed")
    # the wall clock (NOW) is past the deadline, the retention clock is not: still live,
    # and both kinds of lease take it
    assert store.ledgers.get(due.locator)["status"] == "live"
    by_session = store.protections.acquire_leases("s", "p", [], sessions=["s1"], ttl=DAY, now=NOW)
    assert by_session.unprotected == ()
    by_locator = store.protections.acquire_leases("l", "p", [due.locator], ttl=DAY, now=NOW)
    assert by_locator.locators == (due.locator,)
    store.segments.expire_segments(now=NOW)  # the clock passes the deadline: each lease holds it
    assert store.ledgers.get(due.locator)["status"] == "live"
    assert store.protections.protection(due.locator, now=NOW) == "lease:l"
    assert store.protections.release_leases("l") == 1
    assert store.protections.protection(due.locator, now=NOW) == "session:s"
    # past the deadline at the retention clock: neither kind brings it back to a newcomer
    late = store.protections.acquire_leases("late-s", "p", [], sessions=["s1"], ttl=DAY, now=NOW)
    assert late.unprotected == (due.locator,)
    with pytest.raises(LeaseRejected) as exc:
        store.protections.acquire_leases("late-l", "p", [due.locator], ttl=DAY, now=NOW)
    assert exc.value.rejected == {due.locator: "expired"}
