"""Compacting the content ranges drops an expired version's text from every file,
where flushing alone leaves it in the SST that held it."""

from __future__ import annotations

from memoryd.storage.archive import ArchiveStore, NewVersion, keys
from tests.archive.test_forget import files_holding

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
        store.append_many(items, now=NOW)
        store.compact_all()  # everything settled in the last level
        gone = store.expiry_entries(until=NOW)
        assert len(gone) == 1
        store.retire_due(gone, now=NOW, cursor_name="w", cursor_value=None)
        store.flush()  # a few deletes: not enough for background compaction
        assert files_holding(path, MARKER), "precondition: a flush leaves the term on disk"
        store.compact_content("p")
        assert files_holding(path, MARKER) == []
        assert store.get(gone[0].locator)["status"] == "expired"
        assert len(store.search("p", "harbors", limit=1000)) == 300
        assert store.verify_postings()["ok"]


def test_content_ranges_cover_payloads_postings_statistics_and_codes():
    whole = keys.content_ranges()
    families = [keys.PAYLOAD, keys.TERM_LIST, keys.POSTING, keys.TERMSTAT, keys.VECTORS]
    assert [begin for begin, _ in whole] == families
    one = keys.content_ranges(b"p")
    posting = keys.posting(b"p", b"word", keys.dv(b"d", 1))
    assert any(begin <= posting < end for begin, end in one)
    assert any(begin <= keys.term_list(keys.dv(b"d", 1)) < end for begin, end in one)
    other = keys.posting(b"q", b"word", keys.dv(b"d", 1))
    assert not any(begin <= other < end for begin, end in one[2:])
