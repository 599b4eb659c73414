"""Through the agent's own interface: a fact ``remember``-ed with a ref to code lines
comes back from ``recall`` with the ref checked where the code is now: verified, then
moved (new lines) after the code moved and was ingested again, and once the code is
gone the record is no active evidence but listed as needing review."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.agent.conftest import PROJECT, call, connect
from tests.conftest import WAIT_TIMEOUT, marker, run_cli

pytestmark = pytest.mark.slow

CODE = """def flush_queue(queue, sink):
    while queue:
        sink.write(queue.pop())
    sink.close()
"""


def ingest(home: Path, src: Path) -> None:
    res = run_cli("ingest", str(src), "--project", PROJECT, "--wait", "--json", home=home)
    assert res.code == 0, res.stderr


async def recalled(s, query: str, rid_word: str) -> tuple[list[dict], list[dict]]:
    """(memory items holding ``rid_word``, records needing review holding it), once the
    remembered candidate is decided."""
    with anyio.fail_after(WAIT_TIMEOUT):
        while True:
            found = await call(s, "recall", query=query)
            pending = found.get("memory_pending")
            if pending is None or "not consolidated yet" not in pending["why"]:
                break
            await anyio.sleep(0.1)
    items = [i for i in found["items"] if i.get("source") == "memory" and rid_word in i["text"]]
    review = [r for r in found.get("needs_review", ()) if rid_word in r["text"]]
    return items, review


def test_recall_marks_a_remembered_ref_where_the_code_is_now(home: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "sink.py").write_text(CODE)
    ingest(home, src)
    word = marker("flushsink")
    text = f"The queue flush in {word} closes the sink after draining"
    query = f"{word} queue flush closes sink"

    async def scenario() -> None:
        async with connect(home) as s:
            refs = ["sink.py:2-4"]
            await call(s, "remember", candidates=[{"kind": "fact", "text": text, "refs": refs}])
            [item], _ = await recalled(s, query, word)
            assert item["refs"] == [
                {"ref": "sink.py:2-4", "mark": "verified", "path": "sink.py", "lines": [2, 4]}
            ]

            (src / "sink.py").write_text("import io\n\n\n" + CODE)
            await anyio.to_thread.run_sync(ingest, home, src)
            [item], _ = await recalled(s, query, word)
            assert [(r["mark"], r["path"], r["lines"]) for r in item["refs"]] == [
                ("moved", "sink.py", [5, 7])
            ]

            (src / "sink.py").write_text("import io\n")
            await anyio.to_thread.run_sync(ingest, home, src)
            items, [review] = await recalled(s, query, word)
            assert items == [] and review["status"] == "needs_review"
            assert review["refs"][0]["mark"] == "stale"

    anyio.run(scenario)
