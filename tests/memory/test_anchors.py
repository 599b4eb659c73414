"""Refs of memory records anchored to the code they cite: each mark after the code
moves on, re-anchored in the ingest's own commit (with a history row), a record
citing only gone code set apart for review, the sweep's report, and forgetting."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.consolidation import anchors
from memoryd.operations.api import Memoryd
from memoryd.operations.memory import Memory
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from tests.conftest import query
from tests.memory.conftest import lines

RETRY = """import time


def retry_upload(client, blob, attempts):
    for attempt in range(attempts):
        if client.put(blob):
            return True
        time.sleep(2 ** attempt)
    return False


def checksum(blob):
    return sum(blob) % 65521
"""
# the same functions in another order, a header line added, checksum rewritten
RETRY_MOVED = """import time
import random


def checksum(blob):
    return zlib_adler(blob)


def retry_upload(client, blob, attempts):
    for attempt in range(attempts):
        if client.put(blob):
            return True
        time.sleep(2 ** attempt)
    return False
"""
CODEC = "def decode_frame(frame):\n    header = frame[:4]\n    return parse_header(header)\n"
NOTES = "unrelated = 1\n"


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    return repo


def rewrite(repo: Path, files: dict[str, str | None]) -> None:
    for path, text in files.items():
        if text is None:
            (repo / path).unlink()
        else:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)


@pytest.fixture(params=["compact", "stored"])
def cited(request, tmp_path: Path):
    """(Memoryd, repo) with project ``app`` ingested from the two files, compact (its
    index built per read) or with a stored index (``compact_max_bytes`` 0)."""
    repo = repo_with(tmp_path, {"src/upload.py": RETRY, "src/codec.py": CODEC})
    compact = 256 * 1024 if request.param == "compact" else 0
    md = Memoryd(tmp_path / "home", {"workers": 1, "compact_max_bytes": compact})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    yield md, repo
    md.close()


def remember(md: Memoryd, text: str, *refs: str) -> str:
    added = Memory(md).add(lines({"kind": "fact", "text": text, "refs": list(refs)}), "app",
                           wait=True)  # fmt: skip
    return added["outcomes"][0]["record_id"]


def cited_marks(md: Memoryd, rid: str) -> list[tuple]:
    return [(m["mark"], m["path"], m["lines"]) for m in Memory(md).show(rid)["cited"]]


def test_each_mark_after_the_code_moves_on(cited) -> None:
    md, repo = cited
    loop = remember(md, "Uploads retry with exponential backoff", "src/upload.py:5-9")
    summed = remember(md, "The checksum sums the bytes modulo a prime", "src/upload.py:13-14")
    codec = remember(md, "Frames start with a four byte header", "src/codec.py:2-3")
    whole = remember(md, "Codec helpers live in one module", "src/codec.py")
    assert cited_marks(md, loop) == [("verified", "src/upload.py", [5, 9])]

    rewrite(repo, {"src/upload.py": RETRY_MOVED, "src/codec.py": None, "src/wire.py": CODEC})
    Projects(md).ingest(repo, "app", wait=True, workers=1)

    assert cited_marks(md, loop) == [("moved", "src/upload.py", [10, 14])]
    assert cited_marks(md, summed) == [("changed", "src/upload.py", [5, 5])]
    assert cited_marks(md, codec) == [("moved", "src/wire.py", [2, 3])]
    assert cited_marks(md, whole) == [("moved", "src/wire.py", None)]

    rewrite(repo, {"src/wire.py": NOTES})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    assert cited_marks(md, codec) == [("stale", "src/wire.py", [2, 3])]
    assert cited_marks(md, whole) == [("changed", "src/wire.py", None)]  # the file, edited
    rewrite(repo, {"src/wire.py": None})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    assert cited_marks(md, whole) == [("stale", "src/wire.py", None)]


def test_a_span_two_other_files_hold_did_not_move_to_either(cited) -> None:
    """A cited line gone from its file but standing in two others (as common as an
    import) is no evidence of where the code went: stale, not moved to one of them;
    a line one other file holds moved there."""
    md, repo = cited
    common = remember(md, "The codec names its decoder", "src/codec.py:1-1")
    single = remember(md, "The codec's header is four bytes", "src/codec.py:2-2")
    first, second, rest = CODEC.splitlines()
    rewrite(repo, {"src/codec.py": f"{rest}\n", "src/a.py": f"{first}\n    pass\n",
                   "src/b.py": f"B = 2\n{first}\n    pass\n",
                   "src/c.py": f"def frame_head(frame):\n{second}\n"})  # fmt: skip
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    assert cited_marks(md, common)[0][0] == "stale"
    assert cited_marks(md, single) == [("moved", "src/c.py", [2, 2])]


def test_an_ingest_moves_the_anchor_in_its_own_commit_with_a_history_row(cited) -> None:
    md, repo = cited
    home = md.home
    rid = remember(md, "Uploads retry with exponential backoff", "src/upload.py:5-9")
    rewrite(repo, {"src/upload.py": RETRY_MOVED})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    # nothing has read the record since: the ingest wrote its new place
    assert query(home, "SELECT cur_path, cur_start, cur_end, state FROM memory_anchors") == [
        ("src/upload.py", 10, 14, "moved")
    ]
    (batch,) = query(
        home, "SELECT job_id FROM history WHERE kind = 'file.put' AND ref = 'src/upload.py'"
        " ORDER BY id DESC LIMIT 1",
    )[0]  # fmt: skip
    moved = [h for h in Memory(md).show(rid)["history"] if h["action"] == "ref_moved"]
    assert [h["detail"] for h in moved] == [
        f"src/upload.py:5-9 -> src/upload.py:10-14 (ingest job {batch})"
    ]
    # the kept mark answers reads while the file stays as that ingest found it
    assert query(home, "SELECT count(*) FROM memory_anchors WHERE checked_hash IS NOT"
                 " (SELECT content_hash FROM files WHERE path = cur_path)") == [(0,)]  # fmt: skip


def test_a_record_citing_only_gone_code_is_set_apart_for_review(cited) -> None:
    md, repo = cited
    rid = remember(md, "Frames start with a four byte header", "src/codec.py:2-3")
    found = Search(md).search("four byte header frames", "app")
    [item] = [i for i in found["items"] if i.get("id") == rid]
    assert item["status"] == "active" and item["refs"][0]["mark"] == "verified"

    rewrite(repo, {"src/codec.py": NOTES})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    found = Search(md).search("four byte header frames", "app")
    assert rid not in [i.get("id") for i in found["items"]]
    [review] = found["needs_review"]
    assert (review["id"], review["status"]) == (rid, "needs_review")
    assert review["refs"][0]["mark"] == "stale"


def test_sweep_reports_each_kind_and_archives_stale_evidence_when_asked(cited) -> None:
    md, repo = cited
    kept = remember(md, "Uploads retry with exponential backoff", "src/upload.py:5-9")
    gone = remember(md, "Frames start with a four byte header", "src/codec.py:2-3")
    rewrite(repo, {"src/upload.py": RETRY_MOVED, "src/codec.py": None})
    Projects(md).ingest(repo, "app", wait=True, workers=1)
    dry = Memory(md).sweep("app", dry_run=True)
    refs = dry["refs"]
    assert (refs["verified"], refs["changed"]) == (0, [])
    assert [(m["id"], m["lines"]) for m in refs["moved"]] == [(kept, [10, 14])]
    assert [m["id"] for m in refs["stale"]] == [gone] and dry["flagged"] == [gone]
    swept = Memory(md).sweep("app", archive_stale=True)
    assert swept["archived"] == [gone] and swept["flagged"] == []
    statuses = dict(query(md.home, "SELECT id, status FROM memory_records"))
    assert statuses == {kept: "active", gone: "archived"}


def test_forgetting_a_record_deletes_its_anchors(cited) -> None:
    md, _ = cited
    rid = remember(md, "Frames start with a four byte header", "src/codec.py:2-3")
    assert query(md.home, "SELECT count(*) FROM memory_anchors") == [(1,)]
    Memory(md).forget(rid)
    assert query(md.home, "SELECT count(*) FROM memory_anchors") == [(0,)]


def test_refs_to_no_live_file_or_no_path_get_no_anchor(cited) -> None:
    md, _ = cited
    rid = remember(md, "Frames start with a four byte header",
                   "docs/none.md:1-3", "app@s1#v1", "src/codec.py:40-50")  # fmt: skip
    assert Memory(md).show(rid)["cited"] == []


# -- the policy alone -----------------------------------------------------------------


def test_refs_parse_to_paths_and_lines() -> None:
    parse = anchors.parse_ref
    assert parse("src/a.py:10-20") == anchors.Ref("src/a.py", 10, 20)
    assert parse("./src/a.py:7") == anchors.Ref("src/a.py", 7, 7)
    assert parse("src/a.py#L3-L9") == anchors.Ref("src/a.py", 3, 9)
    assert parse("src/a.py") == anchors.Ref("src/a.py")
    assert parse("app@s1#v2") is None and parse("src/a.py:9-3") is None


def test_enclosing_definitions_across_languages() -> None:
    name = anchors.definition_name
    assert name("    async def fetch(url):") == "fetch"
    assert name("pub(crate) fn parse_header(buf: &[u8]) -> Header {") == "parse_header"
    assert name("export function render(props) {") == "render"
    assert name("return type(x)") is None and name("object = 3") is None
    raw = RETRY.split("\n")
    assert anchors.enclosing(raw, 6) == "retry_upload"  # inside the loop's if
    assert anchors.enclosing(raw, 1) is None


def test_a_span_is_found_again_whatever_its_indentation_and_blank_lines() -> None:
    before = anchors.Lines("a = 1\nif ok:\n    x = f(y)\n    return x\n")
    hashes = before.hashes[2:4]
    digest = anchors._span_hash(s for _, s in before.lines[2:4])
    after = anchors.Lines(
        "a = 1\n\nclass K:\n    def m(self):\n        x = f(y)\n\n        return x\n"
    )
    assert after.starts(hashes, digest) == [(5, 7)]
