"""A question naming an archived version by its locator, or a document by its id,
finds it: exact, like a path named to project search."""

from __future__ import annotations

import time

from tests.agent.conftest import PROJECT, write_transcript
from tests.conftest import run_cli


def search(home, query: str) -> dict:
    res = run_cli("archive", "search", query, "--project", PROJECT, "--json", home=home)
    assert res.code == 0, res.stderr
    return res.json()


def test_a_locator_or_document_id_in_the_question_finds_it(home, tmp_path) -> None:
    assert run_cli("init", home=home).code == 0
    chat = write_transcript(tmp_path / "chat.jsonl", time.time() - 3600)
    added = run_cli("archive", "add", str(chat), "--project", PROJECT, "--session", "s1",
                    "--new-project", "--json", home=home)  # fmt: skip
    locator = added.json()["locators"][0]
    doc_id = locator.split("@")[0]
    for query in (f"what does {locator} say", doc_id, f"show me {doc_id} please"):
        found = search(home, query)
        assert found["status"] == "ok", (query, found)
        first = found["items"][0]
        assert first["locator"] == locator and first["score"] == 1.0, (query, first)
        assert "backoff" in first["excerpt"]
    # a name that is not there is no evidence: the usual gate answers
    assert search(home, "what does s-nosuch-0000@1 say")["status"] == "abstained"
