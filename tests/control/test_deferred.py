"""The writes control-socket reads imply: coalesced into few archive jobs, each document
at most once per access bucket, each version leased again only past half its lease."""

from __future__ import annotations

from pathlib import Path

import orjson

from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.operations.api import Memoryd
from memoryd.operations.control_deferred import DeferredWrites
from memoryd.queue import JobSpec
from tests.conftest import query

BUCKET = 3600.0
T0 = 1_700_000_000.0 - 1_700_000_000.0 % BUCKET  # a bucket's start


def writes(home: Path) -> DeferredWrites:
    md = Memoryd(home)
    md.init()
    return DeferredWrites(
        lambda op, args: md.queue.enqueue(JobSpec(ARCHIVE_OP, {"op": op, "args": args})),
        period=0.1,
        access_bucket_seconds=BUCKET,
    )


def queued(home: Path) -> list[dict]:
    rows = query(home, "SELECT payload FROM jobs WHERE kind = ? ORDER BY id", (ARCHIVE_OP,))
    return [orjson.loads(payload) for (payload,) in rows]


def test_access_records_once_per_document_per_bucket(home: Path) -> None:
    w = writes(home)
    assert w.access({"locators": ["d1@1", "d2@1"], "now": T0 + 1}) == {"deferred": 2}
    assert w.access({"locators": ["d1@2", "d2@1"], "now": T0 + 2}) == {"deferred": 0}
    w.flush()
    w.flush()  # nothing pending: no job
    assert queued(home) == [{"op": "access", "args": {"locators": ["d1@1", "d2@1"], "now": T0 + 1}}]
    assert w.access({"locators": ["d1@1"], "now": T0 + BUCKET}) == {"deferred": 1}  # next bucket
    w.flush()
    assert queued(home)[-1]["args"] == {"locators": ["d1@1"], "now": T0 + BUCKET}


def test_retrieval_leases_are_taken_again_only_past_half_a_lease(home: Path) -> None:
    w = writes(home)
    lease = {"locators": ["d1@1"], "seconds": 300.0}
    assert w.retrieval_lease({**lease, "now": T0}) == {"deferred": 1}
    assert w.retrieval_lease({**lease, "now": T0 + 100}) == {"deferred": 0}  # 200 s left
    w.flush()
    assert w.retrieval_lease({**lease, "now": T0 + 151}) == {"deferred": 1}  # 149 s left
    w.flush()
    assert [job["args"]["now"] for job in queued(home)] == [T0, T0 + 151]
    assert {job["op"] for job in queued(home)} == {"retrieval_lease"}


def test_the_flusher_thread_queues_and_stop_hands_over_the_rest(home: Path) -> None:
    w = writes(home)
    w.start()
    w.access({"locators": ["d1@1"], "now": T0})
    w.retrieval_lease({"locators": ["d1@1"], "seconds": 300.0, "now": T0})
    w.stop()  # flushed by the thread or, at the latest, by stop
    assert sorted(job["op"] for job in queued(home)) == ["access", "retrieval_lease"]


def test_requests_keep_to_one_api_instance_while_the_flusher_enqueues(home: Path) -> None:
    """The control server's requests take the warmest idle API instance (its connection
    caches what its queries read); the flusher enqueues through its own, so a flush
    during a request does not add a cold instance that later requests alternate with."""
    from memoryd.operations.control_requests import ControlRequests

    md = Memoryd(home)
    md.init()
    server = ControlRequests(home, md.config, Memoryd)
    try:
        with server._api() as first:
            server.deferred.access({"locators": ["d1@1"], "now": T0})
            server.deferred.flush()  # as the flusher's thread would, mid-request
        for _ in range(3):
            with server._api() as again:
                assert again is first
        assert [job["op"] for job in queued(home)] == ["access"]
    finally:
        server.stop()
        md.close()
