"""The ledgers component's contract on a real RocksDB: versions append (one by one, in
a batch, idempotently by request id), supersede, read back with their status, are
listed and counted, forgotten, and purged from the queue their retirement fills."""

from __future__ import annotations

from memoryd.storage.archive import NewVersion
from tests.storage.test_archive import DAY, NOW, add


def test_the_ledgers_interface(store) -> None:
    ledgers = store.ledgers
    first = add(store, "alpha beta", session="s1", request_id="r1")
    again = add(store, "alpha beta", session="s1", request_id="r1")
    assert again.locator == first.locator and not again.created
    assert ledgers.request_locator("r1") == first.locator
    second = ledgers.append(
        "p", "conversation", "alpha gamma", created_at=NOW, expires_at=NOW + DAY,
        doc_id=first.doc_id, now=NOW,
    )  # fmt: skip
    assert second.superseded == first.locator and second.version == 2
    many = ledgers.append_many(
        [NewVersion("q", "durable", f"note {i}", NOW, None) for i in range(2)], now=NOW
    )
    assert [r.version for r in many] == [1, 1]

    assert ledgers.get(first.locator)["status"] == "superseded"
    assert ledgers.get(second.locator)["content"] == "alpha gamma"
    assert ledgers.version_info(second.locator).status == "live"
    assert [v.status for v in ledgers.versions(first.doc_id)] == ["superseded", "live"]
    assert {v.doc_id for v in ledgers.documents(project="q")} == {r.doc_id for r in many}
    assert ledgers.session_documents("p", "s1") == [first.doc_id]
    counts = ledgers.counts()
    assert counts["documents"] == 3 and counts["versions"]["superseded"] == 1

    assert ledgers.forget([many[0].doc_id], now=NOW) == [many[0].locator]
    assert ledgers.version_info(many[0].locator).forgotten
    assert ledgers.pending_purge() == 2  # the superseded and the forgotten version
    report = ledgers.purge_pending(max_keys=100_000)
    assert report.versions == 2 and not report.remaining
    assert ledgers.pending_purge() == 0 and store.postings.verify_postings()["ok"]
