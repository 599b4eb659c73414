"""Archive codes: written in the version's WriteBatch, gone with its retirement
(and from disk after compaction), rebuilt and verified, never mixed across encoders."""

from __future__ import annotations

import pytest

from memoryd.base.errors import EncoderChanged
from memoryd.storage.archive import ArchiveStore, keys
from memoryd.storage.archive.vectors import GROUP_LINES, Coder, line_groups
from memoryd.text.dense import HashingEncoder, load_encoder
from tests.conftest import files_holding

NOW = 1_700_000_000.0


TOPICS = ["harbor cranes", "violin lessons", "tax forms", "garden soil", "train tickets"]


def transcript(i: int, lines: int = 5) -> str:
    """Lines on one topic each (distinct topics: distinct codes)."""
    return "\n".join(f"user: question {j} about {TOPICS[i]}" for j in range(lines))


def codes(store: ArchiveStore, project: str = "p") -> dict[str, bytes]:
    return dict(store.vectors.version_codes(project))


@pytest.fixture
def coded(tmp_path):
    with ArchiveStore.open_primary(tmp_path / "archive", sync=False) as s:
        s.vectors.coder = Coder(load_encoder("wordllama"))
        yield s


def test_codes_come_with_the_version_and_go_with_its_retirement(coded, tmp_path):
    store = coded
    kept = store.ledgers.append(
        "p", "durable", transcript(0), created_at=NOW, expires_at=None, now=NOW
    )
    old = store.ledgers.append(
        "p", "conversation", transcript(1), created_at=NOW, expires_at=NOW - 1, now=NOW
    )
    doc = store.ledgers.append(
        "p", "durable", transcript(2, 3), created_at=NOW, expires_at=None, now=NOW
    )
    assert len(line_groups(transcript(0))) == 3 and GROUP_LINES == 2
    assert {k: len(v) for k, v in codes(store).items()} == {
        kept.locator: 3 * 32,
        old.locator: 3 * 32,
        doc.locator: 2 * 32,
    }
    assert store.vectors.vectors_meta() == {"encoder": "wordllama:l2_supercat:256", "dim": 256,
                                    "group_lines": 2}  # fmt: skip

    newer = store.ledgers.append("p", "durable", transcript(3), created_at=NOW, expires_at=None,
                         doc_id=doc.doc_id, now=NOW)  # fmt: skip
    assert newer.superseded == doc.locator
    gone_codes = codes(store)[old.locator][:16]  # (a block's compression may split more)
    store.maintenance.flush()
    assert files_holding(tmp_path / "archive", gone_codes), "precondition: the codes are on disk"
    assert store.segments.expire_segments(now=NOW + 86400).expired == [old.locator]  # its day ended
    assert set(codes(store)) == {kept.locator, newer.locator}
    store.ledgers.purge_pending()
    store.maintenance.flush()
    store.maintenance.compact_content("p")
    assert files_holding(tmp_path / "archive", gone_codes) == []  # no derived bytes remain
    assert store.vectors.verify_vectors()["equal"]


def test_verify_sees_damaged_codes_and_rebuild_recomputes_them(coded):
    store = coded
    for i in range(4):
        store.ledgers.append(
            "p", "durable", transcript(i), created_at=NOW, expires_at=None, now=NOW
        )
    assert store.vectors.verify_vectors()["equal"]
    victim = next(iter(store.vectors.version_codes("p")))[0]
    [seg] = store._live_segments(b"p")  # durable: the held segment
    store._db.put(keys.seg_codes(seg, keys.dv(*_split(victim))), bytes(96))
    assert not store.vectors.verify_vectors()["equal"]
    assert store.vectors.rebuild_vectors() == 4
    assert store.vectors.verify_vectors()["equal"]


def _split(locator: str) -> tuple[bytes, int]:
    doc, ver = locator.split("@")
    return doc.encode(), int(ver)


def test_an_encoder_change_is_refused_until_a_rebuild(coded):
    store = coded
    store.ledgers.append("p", "durable", transcript(0), created_at=NOW, expires_at=None, now=NOW)
    store.vectors.coder = Coder(HashingEncoder())
    with pytest.raises(EncoderChanged, match="memoryd rebuild"):
        store.ledgers.append(
            "p", "durable", transcript(1), created_at=NOW, expires_at=None, now=NOW
        )
    store.vectors.coder = None  # the default encoder stores no codes: still another encoder
    with pytest.raises(EncoderChanged):
        store.ledgers.append(
            "p", "durable", transcript(1), created_at=NOW, expires_at=None, now=NOW
        )
    assert store.ledgers.counts()["versions"]["live"] == 1  # the refused appends wrote nothing
    assert (
        store.vectors.rebuild_vectors() == 0
        and store.vectors.vectors_meta() is None
        and not codes(store)
    )
    store.ledgers.append("p", "durable", transcript(1), created_at=NOW, expires_at=None, now=NOW)
    store.vectors.coder = Coder(HashingEncoder())
    assert store.vectors.rebuild_vectors() == 2
    assert store.vectors.vectors_meta()["encoder"] == "hashing:256:0.5"
    assert store.vectors.verify_vectors()["equal"]


def test_the_vectors_interface(tmp_path):
    """With a coder, codes are written with each version under the recorded encoder;
    another encoder is refused; the stored codes verify, digest, and rebuild."""
    with ArchiveStore.open_primary(tmp_path / "archive", sync=False) as store:
        vec = store.vectors
        vec.coder = Coder(HashingEncoder())
        made = store.ledgers.append(
            "p", "durable", transcript(0), created_at=NOW, expires_at=None, now=NOW
        )
        assert vec.vectors_meta() == vec.coder.meta
        vec.check_vectors(vec.coder.meta["encoder"])
        with pytest.raises(EncoderChanged):
            vec.check_vectors("another")
        assert list(dict(vec.version_codes("p"))) == [made.locator]
        seq, digest = vec.sequence(), vec.vectors_digest()
        assert vec.verify_vectors()["equal"] and vec.sequence() == seq  # it writes nothing
        assert vec.rebuild_vectors() == 1 and vec.vectors_digest() == digest
