"""Compacting the content ranges drops an expired version's text from every file,
where flushing alone leaves it in the SST that held it."""

from __future__ import annotations

from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, NewVersion, keys
from tests.conftest import files_holding

NOW = 1_700_000_000.0
MARKER = b"tinselgrovemarker3318"


def test_compact_content_removes_expired_terms_that_a_flush_leaves(tmp_path):
    path = tmp_path / "archive"
    with ArchiveStore.open_primary(path, sync=False) as store:
        items = [
            NewVersion("p", "durable", f"kept note {i} about harbors", NOW, None)
            for i in range(300)
        ]
        items.append(NewVersion("p", "conversation", f"old {MARKER.decode()}", NOW, NOW - 1))
        store.ledgers.append_many(items, now=NOW)
        store.maintenance.compact_all()  # everything settled in the last level
        gone = store.segments.expire_segments(now=NOW + 86400).expired
        assert len(gone) == 1
        store.maintenance.flush()  # a few deletes: not enough for background compaction
        assert files_holding(path, MARKER), "precondition: a flush leaves the term on disk"
        store.maintenance.compact_content("p")
        assert files_holding(path, MARKER) == []
        assert store.ledgers.get(gone[0])["status"] == "expired"
        assert len(archive_bm25.search(store.postings, "p", "harbors", limit=1000)) == 300
        assert store.postings.verify_postings()["ok"]


def test_content_ranges_cover_segments_and_statistics():
    whole = keys.content_ranges()
    assert [begin for begin, _ in whole] == [keys.SEGMENT, keys.TERMSTAT]
    one = keys.content_ranges(b"p")
    seg = keys.segment(b"p", 19_676, keys.CLASS_CODE["conversation"])
    own = [keys.seg_posting(seg, b"word", keys.dv(b"d", 1)), keys.seg_payload(seg, b"d")]
    own += [keys.termstat(b"p", b"word"), keys.df_journal(b"p", 3)]
    assert all(any(begin <= key < end for begin, end in one) for key in own)
    other = keys.segment(b"q", 19_676, keys.CLASS_CODE["conversation"])
    assert not any(begin <= keys.seg_payload(other, b"d") < end for begin, end in one)
