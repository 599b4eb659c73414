"""``memory forget ID`` deletes a record, the records it replaced, its
history and every byte of its text from every file of the home (authority, WAL, full-text
index, staging, mirror), embedded and beside a running supervisor."""

from __future__ import annotations

from pathlib import Path

from memoryd.consolidation import staging
from memoryd.consolidation.mirror import mirror_dir
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from memoryd.storage import records
from tests.conftest import (
    MARKER_TAIL,
    holding,
    marker,
    query,
    reader,
    wait_for,
    wal_reader,
)
from tests.memory.conftest import cli, lines


def remember(home: Path, text: str, *, wait: bool = True, **extra: str) -> dict:
    args = ["memory", "add", "-", "--project", "app", "--json", *(["--wait"] if wait else [])]
    res = cli(home, *args, data=lines({"kind": "fact", "text": text, **extra}))
    assert res.code == 0, res.stderr
    return res.json()


def text_rows(home: Path, word: str) -> int:
    """Rows of the authority holding ``word`` anywhere a record's text or terms go."""
    like = f"%{word[-MARKER_TAIL:]}%"
    return query(
        home,
        "SELECT (SELECT count(*) FROM memory_records WHERE text LIKE ?1)"
        " + (SELECT count(*) FROM memory_terms WHERE term LIKE ?1)"
        " + (SELECT count(*) FROM memory_history WHERE detail LIKE ?1)"
        " + (SELECT count(*) FROM memory_candidates WHERE CAST(candidate AS TEXT) LIKE ?1)",
        (like,),
    )[0][0]


def test_forget_leaves_no_byte_of_the_record_in_any_file_of_the_home(project_home) -> None:
    secret, kept = marker("vault"), marker("kept")
    (added,) = remember(project_home, f"The staging vault code is {secret}", source="s1")[
        "outcomes"
    ]
    rid = added["record_id"]
    # seen again from another source: the row is rewritten (its old copy freed in a page)
    (again,) = remember(project_home, f"The staging vault code is {secret}", source="s2")[
        "outcomes"
    ]
    assert (again["outcome"], again["record_id"]) == ("duplicate", rid)
    (other,) = remember(project_home, f"The release train leaves on {kept}")["outcomes"]
    found = holding(project_home, secret)
    assert str(mirror_dir(project_home, "app") / f"{rid}.md") in found, "precondition"
    assert str(project_home / "authority.db") in found, "precondition: the scan sees the db"

    res = cli(project_home, "memory", "forget", rid, "--json")
    assert res.code == 0, res.stderr
    out = res.json()
    assert (out["forgotten"], out["project"], out["checkpointed"]) == ([rid], "app", True)

    assert holding(project_home, secret) == []
    assert text_rows(project_home, secret) == 0
    history = "SELECT count(*) FROM memory_history WHERE record_id = ?"
    assert query(project_home, history, (rid,)) == [(0,)]
    assert [r["id"] for r in cli(project_home, "memory", "list", "--json").json()] == [
        other["record_id"]
    ]
    shown = cli(project_home, "memory", "show", rid, "--json")
    assert shown.code == 1 and shown.json()["error"] == "NO_SUCH_RECORD"
    hits = cli(project_home, "search", secret, "--project", "app", "--json").json()
    assert rid not in str(hits)
    hits = cli(project_home, "search", kept, "--project", "app", "--json").json()
    assert other["record_id"] in str(hits), "the other record is still found"
    verify = cli(project_home, "rebuild", "--verify", "--json").json()
    assert verify["equal"], verify["mismatches"]
    again = cli(project_home, "memory", "forget", rid, "--json")
    assert again.code == 1 and again.json()["error"] == "NO_SUCH_RECORD"


def test_forget_takes_the_records_it_replaced_and_staged_lines(memoryd, judge, project_home):
    """A record's history is the records it superseded: forgetting it forgets them; a
    staging file still holding its candidate (not yet tidied) loses that line."""
    old_word, new_word = marker("port"), marker("port")
    md = memoryd(memory_adjudicator=judge({"moved": {"verdict": "supersedes"}}))
    add = Memory(md).add(lines({"kind": "fact", "text": f"The staging redis port is {old_word}"}),
                        "app", wait=True)  # fmt: skip
    old = add["outcomes"][0]["record_id"]
    text = f"The staging redis port moved and is {new_word}"
    (out,) = Memory(md).add(lines({"kind": "fact", "text": text}), "app", wait=True)["outcomes"]
    assert out["outcome"] == "superseded"
    new = out["record_id"]
    # a copy of the consumed candidate's staging line, as a crash before its tidy leaves it
    cid = new.removeprefix("m-")
    staging.stage(project_home, "app", [(cid, {"kind": "fact", "text": text})])
    assert holding(project_home, old_word) and holding(project_home, new_word)

    forgot = Memory(md).forget(new)
    assert forgot["forgotten"] == [old, new] and forgot["staging_files"] == 1
    assert holding(project_home, old_word) == [] and holding(project_home, new_word) == []
    assert text_rows(project_home, old_word) == text_rows(project_home, new_word) == 0
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(0,)]
    (state,) = query(project_home, "SELECT state, outcome, record_id FROM memory_candidates"
                     " WHERE id = ?", (cid,))  # fmt: skip
    assert state == ("consumed", "forgotten", None), "never decided again"
    md.run(drain=True)
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(0,)]


def test_forget_beside_a_running_supervisor(project_home, background) -> None:
    """The delete goes straight to the authority like ``memory retry`` (SQLite serializes
    it with the supervisor's commits); after a checkpoint nothing is left, and the
    supervisor's next runs and mirror jobs do not bring anything back."""
    secret = marker("token")
    background("run", "--workers", "2", home=project_home)
    staged = remember(project_home, f"The deploy token lives in {secret}", wait=False)
    cid = staged["candidates"][0]

    def decided() -> str | None:
        with reader(project_home) as conn:  # no memory table before the first decision
            state = records.candidate_states(conn, [cid]).get(cid)
        return state["record_id"] if state else None

    rid = wait_for(decided, what="the candidate consolidated")
    page = mirror_dir(project_home, "app") / f"{rid}.md"
    wait_for(page.exists, what="the mirror written")
    res = cli(project_home, "memory", "forget", rid, "--json")
    assert res.code == 0, res.stderr
    assert res.json()["forgotten"] == [rid]
    later = remember(project_home, f"Unrelated note {marker('later')}", wait=True)
    assert later["outcomes"][0]["outcome"] == "added"
    wait_for(
        lambda: cli(project_home, "checkpoint-wal", "--json").json()["ok"], what="a checkpoint"
    )
    assert holding(project_home, secret) == []
    assert not page.exists()


def test_a_record_added_after_forgetting_the_newest_is_mirrored(memoryd, project_home) -> None:
    """Changes are numbered after the project's last one: forgetting the newest record
    takes the mirror's watermark back, so the next record's file is still written."""
    md = memoryd()

    def add(text: str) -> str:
        out = Memory(md).add(lines({"kind": "fact", "text": text}), "app", wait=True)
        return out["outcomes"][0]["record_id"]

    add(f"Lunch orders close at {marker('noon')}")
    newest = add(f"Backups rotate weekly under {marker('vault')}")
    Memory(md).forget(newest)
    after = add(f"Pagers escalate after {marker('ten')}")
    assert (mirror_dir(project_home, "app") / f"{after}.md").exists()
    verify = Home(md).rebuild(verify=True)
    assert verify["equal"], verify["mismatches"]


def test_a_reader_holding_the_wal_is_named_and_a_checkpoint_finishes(project_home) -> None:
    """The WAL keeps the deleted pages while a reader pins it: the answer says so, and
    the next checkpoint leaves no copy."""
    secret = marker("pinned")
    (added,) = remember(project_home, f"The pinned note holds {secret}")["outcomes"]
    with wal_reader(project_home):
        res = cli(project_home, "memory", "forget", added["record_id"])
        assert res.code == 0, res.stderr
        assert "the WAL still holds old pages (a reader holds a snapshot)" in res.stdout
        assert holding(project_home, secret), "the database file is not checkpointed yet"
    assert cli(project_home, "checkpoint-wal").code == 0
    assert holding(project_home, secret) == []
