"""With a real supervisor, archive content rides as a
spool file, never in a job row, and a caller takes its result, so after expiry and
purge the transcript's text is nowhere in the authority (file and WAL) nor in the
home outside ``archive/``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest

from memoryd.archive import ops, spool
from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config
from tests.conftest import files_holding

pytestmark = pytest.mark.slow

SECRET = "zanzibar-quokka-7731 is the staging database password"
TOOL_SECRET = "quokka tool output 99182"


def write_transcript(path: Path, said: str, tool: str) -> Path:
    """A user turn and a tool output from an hour ago."""
    stamp = time.time() - 3600
    lines = [{"role": "user", "content": said, "timestamp": stamp},
             {"role": "tool", "content": tool, "timestamp": stamp}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def test_archive_content_never_stays_in_the_authority(cli, home, tmp_path, background):
    path = write_transcript(tmp_path / "chat.jsonl", SECRET, TOOL_SECRET)
    assert cli("init").code == 0
    sup = background("run", "--workers", "1", env={"MEMORYD_RETENTION_TICK_SECONDS": "3600"})
    sup.wait_running(1)

    add = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert add.code == 0, add.stderr
    session, tool = add.json()["locators"]
    jobs = cli("jobs", "list", "--json").json()
    (add_job,) = [j for j in jobs if j["payload"].get("op") == "add"]
    assert set(add_job["payload"]["args"]) == {"spool", "sha256", "requests"}
    assert not list(spool.spool_dir(home).glob("*.json")), "the worker deleted its spool file"

    got = cli("archive", "get", session, "--json")
    assert got.code == 0 and SECRET in got.json()["content"]
    hit = cli("archive", "search", "staging database password", "--project", "demo", "--json")
    assert hit.code == 0 and hit.json()["items"][0]["locator"] == session

    later = "2027-06-01T00:00:00Z"
    run = cli("retention", "run", "--now", later, "--allow-future-now", "--force", "--json")
    assert run.code == 0, run.stderr
    assert cli("archive", "get", session, "--json").json()["status"] == "expired"
    assert cli("archive", "get", tool, "--json").json()["status"] == "expired"
    sup.terminate()
    ck = cli("checkpoint-wal", "--json")
    assert ck.code == 0, ck.stderr

    for needle in (b"zanzibar-quokka-7731", b"99182"):
        assert files_holding(home, needle, skip="archive") == [], needle


def test_a_redone_spooled_add_answers_from_its_request_records(home, tmp_path):
    """The worker died after the durable append, after deleting the spool file: the
    redo finds no file and answers from the request records, storing nothing."""
    config = load_config(home)
    args = {"project": "demo", "class": None, "session": "s1", "created_at": time.time(),
            "content": "user: redo me", "turns": 1, "tools": []}  # fmt: skip
    home.mkdir()
    ref = {**spool.put(home, args), "requests": ops.request_ids(args)}
    assert (spool.spool_dir(home) / ref["spool"]).stat().st_mode & 0o777 == 0o600
    with ArchiveOwner(home, config) as owner:
        first = ops.run_op(owner, "add", ref)
        redo = ops.run_op(owner, "add", ref)
        assert first["result"]["created"] == [True]
        assert redo["result"] == {**first["result"], "created": [False]}
        assert owner.store.ledgers.counts()["documents"] == 1
        never = {**spool.put(home, {**args, "session": "s2"}), "requests": ["r-never"]}
        (spool.spool_dir(home) / never["spool"]).unlink()
        assert ops.run_op(owner, "add", never)["error"] == "ARCHIVE_SPOOL_MISSING"


def test_the_tick_removes_orphaned_spool_files(cli, home):
    assert cli("init").code == 0
    orphan = spool.spool_dir(home) / spool.put(home, {"x": 1})["spool"]
    fresh = spool.spool_dir(home) / spool.put(home, {"x": 2})["spool"]
    old = time.time() - 2 * 86400
    os.utime(orphan, (old, old))
    res = cli("retention", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json()["spool_orphans_removed"] == 1
    assert not orphan.exists() and fresh.exists()


@pytest.mark.parametrize("point", ["archive_add_applied", "archive_add_unspooled"])
def test_a_retention_worker_killed_around_the_spool_redoes_the_add_once(
    cli, home, tmp_path, background, point
):
    """SIGKILL after the durable append (spool file still there) and after its removal
    (answer not committed): the redone job stores nothing new and answers the same."""
    path = write_transcript(tmp_path / "kill.jsonl", "the otter cache is warmed", "otter ok")
    assert cli("init").code == 0
    once = tmp_path / "killed"
    env = {"MEMORYD_KILL_AT": point, "MEMORYD_KILL_ONCE": str(once),
           "MEMORYD_RETENTION_TICK_SECONDS": "3600"}  # fmt: skip
    sup = background("run", "--workers", "1", env=env)
    sup.wait_running(1)
    res = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json")
    assert res.code == 0, res.stderr
    assert once.exists(), f"the retention worker never reached {point}"
    answer = res.json()
    assert answer["status"] == ["live", "live"]
    (job,) = [j for j in cli("jobs", "list", "--json").json() if j["payload"].get("op") == "add"]
    assert job["state"] == "done" and job["attempts"] == 2
    assert not list(spool.spool_dir(home).glob("*")), "the redo removed the spool file"
    sup.terminate()
    with ArchiveOwner(home, load_config(home)) as owner:
        for loc in answer["locators"]:
            doc = loc.rsplit("@", 1)[0]
            assert [v.status for v in owner.store.ledgers.versions(doc)] == ["live"]
