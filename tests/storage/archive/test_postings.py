"""Positional postings in the store (real RocksDB): appends and rebuilds write the same
values, and an archive with frequency-only postings is rebuilt when opened."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.search import archive_bm25
from memoryd.storage.archive import ArchiveStore, keys, positions

NOW = 1_700_000_000.0
DAY = 86400.0

SESSIONS = [
    [("Lena", "I planted three apple trees behind the barn."),
     ("Omar", "Which apple variety did you choose?"),
     ("Lena", "Two Braeburn and one Gala, the Gala is for my sister.")],
    [("Omar", "My sister visited and we fixed the barn roof."),
     ("Lena", "Did the roof leak during the storm?"),
     ("Omar", "Only above the old apple press.")],
    [("Lena", "The trees survived the frost, I wrapped them in burlap."),
     ("Omar", "Burlap works, my grandfather used straw.")],
]  # fmt: skip


def add_sessions(store: ArchiveStore) -> list[str]:
    """Each session as a conversation document (role, then ``Name: text``) plus one
    tool output document linked to it, as archiving a JSONL transcript stores them;
    one session is then superseded by a corrected version, one tool output expires."""
    out = []
    for i, turns in enumerate(SESSIONS):
        text = "\n".join(
            f"{'user' if j % 2 == 0 else 'assistant'}: {who}: {said}"
            for j, (who, said) in enumerate(turns)
        )
        doc = f"s-{i}"
        r = store.ledgers.append(
            "farm",
            "conversation",
            text,
            created_at=NOW + i,
            expires_at=None,
            doc_id=doc,
            session=f"sess{i}",
            meta={"turns": len(turns)},
            now=NOW,
        )
        store.ledgers.append("farm", "ephemeral", f"$ ls barn\napple_press.txt roof_{i}.log",
                     created_at=NOW + i, expires_at=NOW + (i + 1) * DAY, doc_id=f"t-{i}",
                     session=f"sess{i}", meta={"session_doc": doc}, now=NOW)  # fmt: skip
        out.append(r.locator)
    store.ledgers.append("farm", "conversation", "user: Lena: I planted four apple trees.\n"
                 "assistant: Omar: Four is plenty.", created_at=NOW + 9, expires_at=None,
                 doc_id="s-0", now=NOW)  # fmt: skip
    store.segments.expire_segments(now=NOW + 1.5 * DAY)
    return out


def derived_records(store: ArchiveStore) -> dict[bytes, bytes]:
    """Every live posting (tombstoned versions' ones aside) and statistic, with the
    document-frequency journal of retired versions folded in."""
    store.postings.fold_df_journal()
    out = {}
    for key, raw in store.maintenance.raw_items():
        if key.startswith(keys.df_journal_prefix()) or key == keys.DF_JOURNAL_SEQ:
            continue
        if is_posting(key):
            doc, ver = keys.split_dv(posting_version(key))
            if store.ledgers.version_info(f"{doc}@{ver}").status != "live":
                continue
        if is_posting(key) or key[:1] in (keys.TERMSTAT, keys.CORPUS) or is_stat(key):
            out[key] = raw
    return out


def _family(key: bytes) -> bytes:
    """The family byte inside a segment key (``Z project 0 bucket class FAMILY ...``)."""
    return (
        key[key.index(keys.SEP, 1) + 10 : key.index(keys.SEP, 1) + 11] if key[:1] == b"Z" else b""
    )


def is_posting(key: bytes) -> bool:
    return _family(key) == keys.SEG_POSTING


def is_stat(key: bytes) -> bool:
    return _family(key) in (keys.SEG_TERMSTAT, keys.SEG_CORPUS)


def posting_version(key: bytes) -> bytes:
    seg = key[1 : key.index(keys.SEP, 1) + 10]
    return keys.parse_seg_posting(key, seg)[1]


@pytest.fixture
def store(tmp_path: Path):
    s = ArchiveStore.open_primary(tmp_path / "archive", sync=False)
    yield s
    s.close()


def test_rebuild_equals_incremental_with_positions_and_structure(store):
    add_sessions(store)
    incremental = derived_records(store)
    assert store.postings.verify_postings()["ok"]
    store.postings.rebuild_postings()
    assert derived_records(store) == incremental
    assert store.postings.verify_postings()["ok"]
    postings = [positions.decode(v) for k, v in incremental.items() if is_posting(k)]
    turns = [h.turn for p in postings for h in p.turns]
    assert {t.speaker for t in turns} == {"lena", "omar", None}
    assert {t.role for t in turns} == {"user", "assistant", None}
    assert any(t.tool for t in turns) and any(not t.tool for t in turns)
    assert all(p.tf == len(p.positions) for p in postings)


def test_read_postings_gives_each_versions_structure(store):
    s0, s1, _ = add_sessions(store)
    sister0, sister1, roof0 = store.postings.read_postings(
        "farm", [("s-0@2", "planted"), (s1, "sister"), ("s-0@2", "roof")]
    )
    assert roof0 is None
    assert [(h.turn.index, h.turn.speaker, h.turn.role) for h in sister0.turns] == [
        (0, "lena", "user")
    ]
    assert [(h.turn.speaker, h.turn.role) for h in sister1.turns] == [("omar", "user")]
    (tool,) = store.postings.read_postings("farm", [("t-2@1", "apple_press")])
    assert tool.turns[0].turn.tool and tool.turns[0].turn.speaker is None
    assert s0 == "s-0@1"


def make_layout_1(path: Path) -> dict[bytes, bytes]:
    """An archive as memoryd wrote it before positions: frequency-only posting values
    (u32) and no postings layout in its format record. Returns its fresh postings."""
    with ArchiveStore.open_primary(path, sync=False) as s:
        add_sessions(s)
        fresh = derived_records(s)
        old = [
            (k, keys.U32.pack(positions.decode(v).tf))
            for k, v in s.maintenance.raw_items()
            if is_posting(k)
        ]
        fmt = orjson.loads(dict(s.maintenance.raw_items())[keys.FORMAT])
        del fmt["postings_layout"]
        s.maintenance.raw_write([*old, (keys.FORMAT, orjson.dumps(fmt))])
        assert s.postings.postings_layout() == 1
    return fresh


def test_an_old_archive_is_read_then_rebuilt_with_positions_on_open(tmp_path):
    path = tmp_path / "archive"
    fresh = make_layout_1(path)
    reader = ArchiveStore.open_secondary(path, tmp_path / "secondary")
    try:  # frequency-only values still read (and rank) before the rebuild
        assert reader.postings.postings_layout() == 1
        (old,) = reader.postings.read_postings("farm", [("s-0@2", "apple")])
        assert old.tf == 1 and old.positions == ()
        assert [
            h.locator for h in archive_bm25.search(reader.postings, "farm", "apple barn", limit=3)
        ]
    finally:
        reader.close()
    with ArchiveStore.open_primary(path, sync=False) as s:
        assert s.postings.postings_layout() == positions.LAYOUT
        assert derived_records(s) == fresh
        assert s.postings.verify_postings()["ok"]
        (new,) = s.postings.read_postings("farm", [("s-0@2", "apple")])
        assert new.turns[0].turn.speaker == "lena"
        raw = dict(s.maintenance.raw_items())[keys.FORMAT]
    with ArchiveStore.open_primary(path, sync=False) as s:  # once: the layout is recorded
        assert dict(s.maintenance.raw_items())[keys.FORMAT] == raw


def test_the_postings_interface(store):
    """Statistics and postings count live versions: the live matches of a term, its
    stored structure, a retirement through the journal and its fold, a rebuild that
    equals the incremental state."""
    post = store.postings
    a = store.ledgers.append("p", "durable", "apple barn apple", created_at=NOW, expires_at=None)
    b = store.ledgers.append("p", "durable", "apple cider", created_at=NOW, expires_at=None)
    assert post.projects() == ["p"] and post.postings_layout() == positions.LAYOUT
    assert post.corpus_stats("p").versions == 2
    assert post.term_stats("p", ["apple", "cider", "nope"]) == {"apple": 2, "cider": 1, "nope": 0}
    assert dict(post.postings("p", "apple")) == {a.locator: 2, b.locator: 1}
    hits = post.live_matches("p", ["apple"])
    assert {h.locator: h.matched for h in hits} == {
        a.locator: {"apple": 2},
        b.locator: {"apple": 1},
    }
    got = post.read_postings("p", [(a.locator, "apple"), (a.locator, "nope")])
    assert got[0] is not None and got[0].tf == 2 and got[1] is None
    store.ledgers.forget([b.doc_id], now=NOW)
    assert post.df_journal_records() == 1
    assert post.term_stats("p", ["apple", "cider"]) == {"apple": 1, "cider": 0}  # journal
    assert post.fold_df_journal() == (1, 1)  # cider's statistic reaches zero
    assert post.df_journal_records() == 0 and post.verify_postings()["ok"]
    assert post.rebuild_postings()["postings"] > 0 and post.verify_postings()["ok"]
