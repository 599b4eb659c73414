"""The archive through the real CLI: transcripts in, gated search, expiry, pins, leases,
disk-low mode; embedded (no supervisor) and through a running supervisor."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config
from memoryd.base.times import utc_iso
from tests.conftest import archive_lines

DAY = 86400
#: Midnight three days ago: every class's age is still ahead of a transcript of then.
START = (time.time() // DAY - 3) * DAY
#: Past 90 days (conversation) and 14 days (ephemeral) after START.
LATER = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + 200 * DAY))


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def transcript(path: Path, turns: list[tuple[str, str]], day: int = 1) -> Path:
    """Turns of ``day`` (1: START, 2: a day later), ten hours in, a second apart."""
    at = START + (day - 1) * DAY + 10 * 3600
    lines = [
        orjson.dumps({"role": r, "content": c, "timestamp": iso(at + i)})
        for i, (r, c) in enumerate(turns)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    return transcript(
        tmp_path / "chat-port.jsonl",
        [
            ("user", "Which port should the dev server use? 8080 collides with the proxy."),
            ("assistant", "Use port 5173 for the dev server and keep 8080 for the proxy."),
            ("tool", "$ ss -ltnp\nLISTEN 0 128 *:8080 nginx"),
        ],
    )


def add(cli, path: Path, *extra: str, **kw):
    res = cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--json", *extra, **kw
    )
    assert res.code == 0, res.stderr
    return res.json()["locators"]


def test_add_search_and_abstain(cli, chat):
    session, tool = add(cli, chat)
    hit = cli("archive", "search", "which port did we pick for the dev server?",
              "--project", "demo", "--json").json()  # fmt: skip
    assert hit["status"] == "ok" and hit["items"][0]["locator"] == session
    item = hit["items"][0]
    assert item["class"] == "conversation" and item["created_at"] == utc_iso(START + 10 * 3600)
    assert "5173" in item["excerpt"]
    miss = cli("archive", "search", "what database does the billing service use?",
               "--project", "demo", "--json").json()  # fmt: skip
    assert miss == {"status": "abstained", "items": [], "gap": miss["gap"]} and miss["gap"]
    # the tool output is its own ephemeral document linked to the session
    got = cli("archive", "get", tool, "--json").json()
    assert got["status"] == "live" and got["class"] == "ephemeral" and "nginx" in got["content"]
    # adding the same transcript again is the same request: nothing new
    assert add(cli, chat) == [session, tool]


def test_expired_leaves_search_and_get_says_expired(cli, chat, tmp_path):
    session, tool = add(cli, chat)
    run = cli("retention", "run", "--now", LATER, "--allow-future-now", "--force", "--json")
    assert run.code == 0, run.stderr
    for loc in (session, tool):
        got = cli("archive", "get", loc, "--json").json()
        assert got["status"] == "expired" and "content" not in got
    res = cli("archive", "search", "which port for the dev server?", "--project", "demo", "--json")
    assert res.json()["status"] == "abstained"


def test_new_version_supersedes_and_old_locator_never_shows_it(cli, tmp_path):
    first = transcript(tmp_path / "s.jsonl", [("user", "deploy target is staging-eu")])
    (old, *_) = add(cli, first, "--session", "deploy")
    second = transcript(tmp_path / "s.jsonl", [("user", "deploy target is prod-us now")], day=2)
    (new, *_) = add(cli, second, "--session", "deploy")
    assert old != new
    got = cli("archive", "get", old, "--json").json()
    assert got["status"] == "superseded" and "content" not in got
    assert "prod-us" in cli("archive", "get", new, "--json").json()["content"]


def test_pin_protects_and_unpin_releases(cli, chat):
    session, _ = add(cli, chat)
    assert cli("archive", "pin", session).code == 0
    assert cli("retention", "run", "--now", LATER, "--allow-future-now", "--force").code == 0
    assert cli("archive", "get", session, "--json").json()["status"] == "live"
    assert cli("archive", "unpin", session).code == 0
    assert cli("retention", "run", "--now", LATER, "--allow-future-now", "--force").code == 0
    assert cli("archive", "get", session, "--json").json()["status"] == "expired"


def protection(home: Path, locator: str) -> str | None:
    """What protects a version, read embedded (no supervisor runs in these tests)."""
    with ArchiveOwner(home, load_config(home)) as owner:
        return owner.store.protections.protection(locator)


def test_lease_is_all_or_nothing_and_per_client(cli, chat, tmp_path, home):
    session, _ = add(cli, chat)
    other = transcript(tmp_path / "other.jsonl", [("user", "unrelated note")])
    res = cli("archive", "add", str(other), "--project", "elsewhere", "--new-project", "--json")
    foreign = res.json()["locators"][0]
    bad = cli("archive", "lease", "acquire", "--client", "a", "--project", "demo",
              session, foreign, "--json")  # fmt: skip
    assert bad.code == 1
    err = bad.json()
    assert err["error"] == "LEASE_REJECTED" and err["retryable"] is False
    assert protection(home, session) is None, "a rejected request protects nothing"
    ok_a = cli("archive", "lease", "acquire", "--client", "a", "--project", "demo", session)
    ok_b = cli("archive", "lease", "acquire", "--client", "b", "--project", "demo", session)
    assert ok_a.code == 0 and ok_b.code == 0
    assert cli("archive", "lease", "release", "--client", "a").code == 0
    assert protection(home, session) == "lease:b", "releasing a never releases b"
    assert cli("archive", "lease", "release", "--client", "b").code == 0
    assert protection(home, session) is None


def test_malformed_transcript_stores_nothing(cli, tmp_path, home):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "fine", "timestamp": 1}\n{not json\n')
    res = cli("archive", "add", str(bad), "--project", "demo", "--new-project")
    assert res.code == 2 and "bad.jsonl:2" in res.message and "not valid JSON" in res.message
    assert (
        not (home / "archive").exists()
        or cli("archive", "search", "fine", "--project", "demo", "--json").json()["items"] == []
    )


def test_disk_low_rejects_appends_but_search_pins_and_leases_work(cli, chat, tmp_path):
    session, _ = add(cli, chat)
    low = {"MEMORYD_RETENTION_DISK_LOW_BYTES": str(1 << 62)}  # above any free space
    more = transcript(tmp_path / "more.jsonl", [("user", "another session about caching")])
    # only an append that would eat the reserve is refused (here: a reserve above any
    # free space); below the threshold alone, appends are still accepted
    no_room = {**low, "MEMORYD_RETENTION_DISK_RESERVE_BYTES": str(1 << 62)}
    res = cli(
        "archive", "add", str(more), "--project", "demo", "--new-project", "--json", env=no_room
    )
    assert res.code == 1
    assert res.json()["error"] == "DISK_LOW" and res.json()["retryable"] is True
    assert "reserve" in res.json()["message"]
    kept = transcript(tmp_path / "kept.jsonl", [("user", "a session kept while disk is low")])
    assert cli("archive", "add", str(kept), "--project", "demo", "--new-project", env=low).code == 0
    found = cli("archive", "search", "dev server port", "--project", "demo", "--json", env=low)
    assert found.json()["status"] == "ok"
    assert cli("archive", "pin", session, env=low).code == 0
    assert cli("archive", "lease", "acquire", "--client", "c", "--project", "demo", session,
               env=low).code == 0  # fmt: skip
    status = cli("retention", "status", "--json", env=low).json()
    assert status["degraded"]
    # threshold 0 disables the guard and clears the durable flag on the next open
    off = {"MEMORYD_RETENTION_DISK_LOW_BYTES": "0"}
    assert cli("retention", "status", "--json", env=off).json()["degraded"] is None
    assert cli("archive", "add", str(more), "--project", "demo", "--new-project", env=off).code == 0


def test_redone_add_after_purge_stores_nothing_and_says_expired(cli, tmp_path):
    """The same add after expiry + purge gives no live version 2."""
    old = time.time() - 200 * DAY  # past every class's retention
    path = tmp_path / "old.jsonl"
    lines = [{"role": "user", "content": "the staging password rotates weekly", "timestamp": old},
             {"role": "tool", "content": "rotation log line", "timestamp": old}]  # fmt: skip
    first = archive_lines(cli, path, lines).json()
    assert first["created"] == [True, True]
    assert cli("retention", "run", "--force").code == 0
    redo = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert redo.code == 0, redo.stderr
    again = redo.json()
    assert again["locators"] == first["locators"] and again["created"] == [False, False]
    assert again["status"] == ["expired", "expired"]
    for loc in first["locators"]:
        doc = loc.rsplit("@", 1)[0]
        assert cli("archive", "get", f"{doc}@2", "--json").code == 1, "no version 2"
    text = cli("archive", "add", str(path), "--project", "demo", "--new-project").stdout
    assert "already archived" in text and "expired" in text


def test_unknown_project_and_empty_query_are_errors_like_project_search(cli, chat):
    """The same "no project named" error as project search (exit 1)."""
    add(cli, chat)
    res = cli("archive", "search", "which port?", "--project", "nosuch", "--json")
    assert res.code == 1 and res.json()["error"] == "UNKNOWN_PROJECT"
    assert res.json()["message"].startswith("no project named 'nosuch'; known projects: demo ")
    project = cli("search", "which port?", "--project", "nosuch")
    human = cli("archive", "search", "which port?", "--project", "nosuch")
    assert project.code == human.code == 1
    assert "no project named 'nosuch'" in project.message
    assert "no project named 'nosuch'" in human.message
    for query in ("", "   "):
        empty = cli("archive", "search", query, "--project", "demo")
        assert empty.code == 2 and "empty query" in empty.message


def test_human_search_shows_each_hits_locator(cli, chat):
    """The locator is what get, pin and lease take."""
    session, _ = add(cli, chat)
    res = cli("archive", "search", "which port did we pick for the dev server?",
              "--project", "demo")  # fmt: skip
    assert res.code == 0, res.stderr
    assert session in res.stdout and "5173" in res.stdout and "{" not in res.stdout


def test_migrate_refuses_two_steps_at_once(cli, home):
    res = cli("archive", "migrate", "--copy", "--verify", "--json")
    assert res.code == 2 and res.json()["error"] == "BAD_USAGE"
    assert "one migration step at a time" in res.message
    assert not home.exists(), "a refused request creates nothing"


def history(tmp_path: Path) -> Path:
    """A 1990 session (a turn and a tool output): past every class's age."""
    path = tmp_path / "history.jsonl"
    lines = [
        {"role": "user", "content": "the legacy billing cron runs at 03:15 UTC",
         "timestamp": "1990-01-01T00:00:00Z"},
        {"role": "tool", "content": "crontab: 15 3 * * * billing",
         "timestamp": "1990-01-01T00:02:00Z"},
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


WOULD_HAVE = ["1990-04-01T00:00:00.000Z", "1990-01-15T00:02:00.000Z"]  # 90 and 14 days on


def epoch(iso_time: str) -> float:
    return datetime.fromisoformat(iso_time.replace("Z", "+00:00")).timestamp()


def documents(cli) -> int:
    return cli("retention", "status", "--json").json()["counts"]["documents"]


def test_history_past_its_class_age_is_refused_then_imported_and_kept(cli, tmp_path):
    """A 1990 transcript is not stored already expired. Without
    --imported it is refused (nothing stored, each document named with when it would
    have expired); with it, its class age counts from the import, its created_at stays,
    retention keeps it, and a policy change re-derives its deadline from the import."""
    path = history(tmp_path)
    refused = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert refused.code == 2, refused.stdout
    err = refused.json()
    assert err["error"] == "PAST_CLASS_AGE"
    assert [d["would_have_expired_at"] for d in err["documents"]] == WOULD_HAVE
    assert [d["class"] for d in err["documents"]] == ["conversation", "ephemeral"]
    assert "nothing was stored" in refused.message and "--imported" in refused.message
    assert documents(cli) == 0

    before = time.time()
    res = cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--json", "--imported"
    )
    assert res.code == 0, res.stderr
    r = res.json()
    assert r["created"] == [True, True] and r["status"] == ["live", "live"]
    assert r["would_have_expired_at"] == WOULD_HAVE
    for expires, days in zip(r["expires_at"], (90, 14), strict=True):
        assert before + days * DAY <= epoch(expires) <= time.time() + days * DAY
    session, tool = r["locators"]
    text = cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--imported"
    ).stdout
    assert f"{session} (live): imported past its class age" in " ".join(text.split())
    assert "would have expired 1990-04-01T00:00:00.000Z" in " ".join(text.split())

    assert cli("retention", "run", "--force").code == 0
    for loc in (session, tool):
        assert cli("archive", "get", loc, "--json").json()["status"] == "live"
    hit = cli("archive", "search", "when does the legacy billing cron run?", "--project",
              "demo", "--json").json()  # fmt: skip
    assert hit["items"][0]["locator"] == session
    assert hit["items"][0]["created_at"] == "1990-01-01T00:00:00.000Z"

    shorter = {"MEMORYD_RETENTION_CONVERSATION_DAYS": "30"}
    assert cli("retention", "run", "--force", env=shorter).code == 0
    got = cli("archive", "get", session, "--json").json()
    assert got["status"] == "live", "re-derived from the import, not from 1990"
    assert before + 30 * DAY <= epoch(got["expires_at"]) <= time.time() + 30 * DAY


@pytest.mark.slow
def test_history_is_refused_through_a_supervisor_leaving_no_spool_file(
    cli, tmp_path, home, background
):
    """The refusal when the retention worker applies the add from its spool file: the
    file goes (nothing to redo), nothing is stored; --imported goes through."""
    from memoryd.archive import spool

    path = history(tmp_path)
    assert cli("init").code == 0
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)
    refused = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert refused.code == 2 and refused.json()["error"] == "PAST_CLASS_AGE"
    assert not list(spool.spool_dir(home).glob("*.json"))
    imported = cli(
        "archive", "add", str(path), "--project", "demo", "--new-project", "--json", "--imported"
    )
    assert imported.code == 0, imported.stderr
    assert imported.json()["would_have_expired_at"] == WOULD_HAVE
    assert documents(cli) == 2
