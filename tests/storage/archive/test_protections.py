"""The protections component's contract on a real RocksDB: pins hold a document until
removed; an active-context lease is authorized whole, published with its owner record
and session references, renewed, released and cleaned up after it lapses; retrieval
leases protect briefly."""

from __future__ import annotations

import pytest

from memoryd.storage.archive import LeaseRejected
from tests.storage.test_archive import DAY, NOW, add


def test_the_protections_interface(store) -> None:
    prot = store.protections
    a = add(store, "pinned evidence", session="s1")
    b = add(store, "leased evidence", session="s2")
    c = add(store, "retrieved evidence")

    record = prot.pin(a.locator, now=NOW, note="keep")
    assert record["note"] == "keep" and prot.is_pinned(a.doc_id)
    assert [p["locator"] for p in prot.pins()] == [a.locator]
    assert prot.protection(a.locator, now=NOW) == "pinned"
    assert prot.unpin(a.doc_id) and not prot.unpin(a.doc_id)

    with pytest.raises(LeaseRejected) as exc:
        prot.acquire_leases("cl", "p", [b.locator, "nope@1"], ttl=DAY, now=NOW)
    assert exc.value.rejected == {"nope@1": "missing"}
    assert prot.client_lease("cl", now=NOW) is None  # rejected whole: nothing written
    grant = prot.acquire_leases("cl", "p", [b.locator], ttl=DAY, now=NOW, sessions=["s1"])
    assert grant.locators == (b.locator,) and grant.sessions == ("s1",) and grant.epoch == 1
    assert prot.protection(b.locator, now=NOW) == "lease:cl"
    assert prot.protection(a.locator, now=NOW) == "session:cl"
    assert prot.renew_leases("cl", ttl=2 * DAY, now=NOW).expires_at == NOW + 2 * DAY
    assert prot.client_lease("cl", now=NOW)["epoch"] == 1
    assert prot.release_leases("cl", [b.locator]) == 1
    assert prot.protection(b.locator, now=NOW) is None
    assert prot.cleanup_expired_leases(now=NOW + 3 * DAY) >= 1
    assert prot.client_lease("cl", now=NOW + 3 * DAY)["live"] is False

    assert prot.take_retrieval_leases([c.locator], seconds=60, now=NOW) == [c.locator]
    assert prot.protection(c.locator, now=NOW) == "retrieval"
    assert prot.cleanup_retrieval_leases(now=NOW + 120) == 1
    assert prot.protection(c.locator, now=NOW + 120) is None
