"""Dense archive candidates: a short query finds an exchange by meaning through
the pipeline under the gate's dense rule; a long one still needs the words; codes are
rebuilt and verified with the authority's through `rebuild`; another
encoder's archiving is refused."""

from __future__ import annotations

import os
import signal
import sys
import threading

import orjson
import pytest

from memoryd.archive.ops import run_op
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.base.config import ARCHIVE_DIR, load_config
from memoryd.base.errors import ArchiveOpError
from memoryd.operations.api import Memoryd
from memoryd.operations.archive import Archive
from memoryd.operations.control_client import unwrap
from memoryd.operations.home import Home
from memoryd.storage.archive import ArchiveStore
from tests.conftest import status, wait_for

NOW = 1_800_000_000.0
# the floor is lowered to this model's similarity of one word to a two-line exchange:
# the rule under test is that only a short query may be answered on it (the gate's
# rule: a similarity this low is no confident answer, so no answer threshold either)
SETTINGS = {"encoder": "wordllama", "dense_rescue_similarity": 0.2, "answer_threshold": 0.0}
SESSIONS = {
    "pets": [("user", "We adopted a puppy last week."),
             ("assistant", "Congratulations on the new puppy!")],
    "garden": [("user", "My tomato plants have yellow leaves."),
               ("assistant", "Let the soil dry between waterings.")],
    "novel": [("user", "Can you summarize chapter 3 of the novel?"),
              ("assistant", "Here is a short summary of the chapter.")],
}  # fmt: skip


def _add(owner: ArchiveOwner, name: str, turns: list[tuple[str, str]]) -> None:
    content = "\n".join(f"{role}: {text}" for role, text in turns)
    args = {"project": "demo", "session": name, "created_at": NOW - 3600, "now": NOW,
            "content": content, "turns": len(turns)}  # fmt: skip
    unwrap(run_op(owner, "add", args))


@pytest.fixture
def demo(tmp_path):
    """A home whose archive holds the sessions, coded by wordllama."""
    home = tmp_path / "demo"
    with ArchiveOwner(home, load_config(home, SETTINGS)) as owner:
        for name, turns in SESSIONS.items():
            _add(owner, name, turns)
    return home


def _search(home, query: str, **settings) -> dict:
    with ArchiveOwner(home, load_config(home, {**SETTINGS, **settings})) as owner:
        return search_archive(owner, "demo", query, 5, NOW)


def test_a_short_query_finds_an_exchange_by_meaning_and_a_long_one_needs_words(demo):
    home = demo
    found = _search(home, "dog")
    assert found["status"] == "ok"
    assert [(i["path"], i["start_line"], i["end_line"]) for i in found["items"]] == [("pets", 1, 2)]
    assert _search(home, "dog", dense_rescue_similarity=1.0)["status"] == "abstained"
    long = _search(home, "which dog breed did the neighbours across the street buy")
    assert long["status"] == "abstained"
    lexical = _search(home, "tomato leaves")  # words still answer, listed once
    assert [i["path"] for i in lexical["items"]] == ["garden"]


def test_rebuild_verifies_and_recomputes_archive_codes_and_refuses_a_mix(demo):
    home = demo
    md = Memoryd(home, SETTINGS)
    try:
        assert Home(md).rebuild(verify=True)["archive"]["equal"]
        hashing_owner = ArchiveOwner(home, load_config(home, {"encoder": "hashing"}))
        with hashing_owner as owner, pytest.raises(ArchiveOpError) as refused:
            _add(owner, "late", SESSIONS["pets"])  # codes of one encoder only
        assert refused.value.code == "ENCODER_CHANGED" and "memoryd rebuild" in str(refused.value)
        hashing = Memoryd(home, {"encoder": "hashing"})
        try:
            assert not Home(hashing).rebuild(verify=True)["equal"]  # its rebuild stores no codes
            assert Home(hashing).rebuild()["archive"] == {"versions": 0}
            assert _search(home, "dog", encoder="hashing")["status"] == "abstained"
        finally:
            hashing.close()
        assert Home(md).rebuild()["archive"] == {"versions": 3}
        assert Home(md).rebuild(verify=True)["equal"]
        assert _search(home, "dog")["status"] == "ok"
    finally:
        md.close()


@pytest.mark.slow
def test_sigkill_of_the_retention_worker_coding_a_version_leaves_none_and_resumes(
    home, tmp_path, background
):
    """The retention worker is SIGKILLed while it encodes a transcript's exchanges: the
    version and its codes are one WriteBatch, so neither is written; the supervisor
    respawns the worker, the job is redone, and the codes equal a rebuild's."""
    from tests.memory.test_record_vectors import BLOCKING

    script, block, pidfile = tmp_path / "enc.py", tmp_path / "block", tmp_path / "pid"
    script.write_text(BLOCKING)
    encoder = f"command:{sys.executable} {script} {block} {pidfile}"
    block.touch()
    env = {"MEMORYD_ENCODER": encoder, "MEMORYD_RETRY_BACKOFF_BASE": "0.01"}
    sup = background("run", "--workers", "1", env=env, home=home)
    sup.wait_running(1)
    md = Memoryd(home, {"encoder": encoder})
    line = {"role": "user", "content": "We adopted a puppy last week.", "timestamp": NOW}
    adding = threading.Thread(
        target=Archive(md).add, args=(orjson.dumps(line) + b"\n",),
        kwargs={"project": "demo", "source": "pets", "new_project": True},
    )  # fmt: skip
    adding.start()
    worker = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), what="encoding"))
    assert status(home)["supervisor"]["retention_worker"] == worker
    pidfile.unlink()
    os.kill(worker, signal.SIGKILL)
    reader = ArchiveStore.open_secondary(home / ARCHIVE_DIR, tmp_path / "secondary")
    try:
        reader.catch_up()
        assert reader.ledgers.counts()["documents"] == 0 and not list(
            reader.vectors.version_codes("demo")
        )
        block.unlink()
        adding.join(timeout=120)
        assert not adding.is_alive()
        reader.catch_up()
        [(locator, codes)] = list(reader.vectors.version_codes("demo"))
        assert len(codes) == 2 and reader.ledgers.get(locator)["status"] == "live"
    finally:
        reader.close()
    try:
        assert Home(md).rebuild(verify=True)["archive"]["equal"]
    finally:
        md.close()


def test_kept_codes_serve_queries_until_a_write_and_see_the_added_exchange(demo):
    """The project's codes are read once per archive state: a second query reuses them,
    an added session's exchange is found by the next query (through the same owner and
    through a fresh open of the archive)."""
    from memoryd.archive import dense

    home = demo
    with ArchiveOwner(home, load_config(home, SETTINGS)) as owner:
        assert "kitten" not in str(search_archive(owner, "demo", "cat", 5, NOW))
        kept = dense._codes[(str(owner.path), "demo")]
        search_archive(owner, "demo", "dog", 5, NOW)
        assert dense._codes[(str(owner.path), "demo")] is kept  # nothing written: reused
        _add(owner, "cats", [("user", "Our kitten sleeps all day."),
                             ("assistant", "Kittens need a lot of sleep.")])  # fmt: skip
        found = search_archive(owner, "demo", "cat", 5, NOW)
        assert "cats" in [i["path"] for i in found["items"]]
    assert "cats" in [i["path"] for i in _search(home, "cat")["items"]]
