"""A worker's memo of chunk index texts: a repeated chunk's index text is the one
made fresh, an entry answers only its own text, and the memo stays bounded."""

from __future__ import annotations

from memoryd.ingest.chunking import _IndexTexts, line_ranges, prepare_batch
from memoryd.storage.unsearched import index_text

TEXT = b"/* the licence of the file */\n" + b"".join(
    f"int the_{i}(int a) {{ return a + {i}; }}\n".encode() for i in range(120)
)


def test_a_repeated_file_is_indexed_as_a_fresh_one() -> None:
    rows, _ = prepare_batch([("a.h", TEXT), ("b/a.h", TEXT)], level=3)
    lines = TEXT.decode().split("\n")[:-1]
    fresh = [index_text("\n".join(lines[s - 1 : e])) for s, e in line_ranges(lines)]
    for row in rows:
        assert [(c.text, c.left_out) for c in row.chunks] == fresh


def test_an_entry_answers_its_own_text_only_and_the_memo_is_bounded() -> None:
    memo = _IndexTexts(2)
    assert memo.get(b"k", "read the file") == index_text("read the file")
    assert memo.get(b"k", "a file to read") == index_text("a file to read")  # same key
    for i in range(5):
        memo.get(bytes([i]), f"the word {i}")
    assert len(memo.memo) == 2
