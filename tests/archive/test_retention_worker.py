"""With real processes: the retention worker is SIGKILLed
mid-wave and right after a flush while its supervisor runs; the supervisor
respawns it, the interrupted pass is redone idempotently, no live version is
lost and no expired one becomes visible."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import load_config
from memoryd.operations.api import Memoryd
from memoryd.operations.archive import Archive
from tests.conftest import status, wait_for

pytestmark = pytest.mark.slow
DAY = 86400


def archive_sessions(home: Path, count: int, *, days_old: int, tag: str) -> list[str]:
    """Archive ``count`` one-turn transcripts created ``days_old`` days ago (through the
    library, as ``archive add`` does: embedded, or over a running supervisor's socket)."""
    stamp = time.time() - days_old * DAY
    locators = []
    md = Memoryd(home)
    try:
        for i in range(count):
            line = {"role": "user", "content": f"note {tag} number {i} marker{tag}{i}",
                    "timestamp": stamp}  # fmt: skip
            added = Archive(md).add(
                orjson.dumps(line) + b"\n",
                project="p",
                source=f"{tag}{i}",
                allow_expired=True,
                new_project=True,
            )
            locators.append(added["locators"][0])
    finally:
        md.close()
    return locators


@pytest.mark.parametrize(
    "point, env",
    [
        ("segment_before_batch", {}),
        ("segment_after_batch", {}),
        ("wave_before_purge", {}),
        ("retention_after_flush", {"MEMORYD_RETENTION_COMPACTION_DELETED_KEYS": "10"}),
    ],
)
def test_retention_worker_killed_mid_wave_resumes_idempotently(
    cli, home, tmp_path, background, point, env
):
    old = archive_sessions(home, 12, days_old=200, tag="old")
    recent = archive_sessions(home, 6, days_old=1, tag="new")
    once = tmp_path / "killed"
    run_env = {**env, "MEMORYD_KILL_AT": f"{point}:1", "MEMORYD_KILL_ONCE": str(once),
               "MEMORYD_RETENTION_TICK_SECONDS": "3600"}  # fmt: skip
    sup = background("run", "--workers", "1", env=run_env)
    sup.wait_running(1)

    res = cli("retention", "run", "--force", "--json", env=run_env)
    assert res.code == 0, res.stderr
    assert once.exists(), f"the retention worker never reached {point}"
    state = status(home)["supervisor"]
    assert state["retention_worker"], "the supervisor respawned its retention worker"

    # The pass the worker died in (the startup tick or the forced run) was redone.
    def runs_done() -> list[dict] | None:
        jobs = cli("jobs", "list", "--json").json()
        runs = [j for j in jobs if j["payload"].get("op") == "retention_run"]
        return runs if runs and all(j["state"] == "done" for j in runs) else None

    runs = wait_for(runs_done, what="every retention pass done (a killed one backs off)")
    redone = [
        j for j in runs if j["attempts"] >= 2 and "killed by SIGKILL" in (j["last_error"] or "")
    ]
    assert redone, runs

    # Every old version expired, every recent one live, through the supervisor path.
    md = Memoryd(home)  # over the supervisor's socket, as `archive get` is
    try:
        assert [md.archive("get", {"locator": loc})["status"] for loc in old] == ["expired"] * 12
        assert [md.archive("get", {"locator": loc})["status"] for loc in recent] == ["live"] * 6
    finally:
        md.close()
    for i in (0, 5, 11):
        gone = cli("archive", "search", f"markerold{i}", "--project", "p", "--json").json()
        assert gone["status"] == "abstained" and gone["items"] == []
    kept = cli("archive", "search", "markernew3", "--project", "p", "--json").json()
    assert [item["locator"] for item in kept["items"]] == [recent[3]]
    sup.terminate()

    # Reopened embedded after the supervisor stopped: postings match payloads,
    # and a second forced pass changes nothing.
    with ArchiveOwner(home, load_config(home)) as owner:
        assert owner.store.postings.verify_postings()["ok"]
        before = owner.store.ledgers.counts()
    again = cli("retention", "run", "--force", "--json")
    assert again.code == 0, again.stderr
    with ArchiveOwner(home, load_config(home)) as owner:
        assert owner.store.ledgers.counts() == before


def test_supervisor_routes_archive_work_to_one_retention_worker(cli, home, tmp_path, background):
    archive_sessions(home, 2, days_old=1, tag="a")
    sup = background("run", "--workers", "2")
    sup.wait_running(2)
    worker = wait_for(lambda: status(home)["supervisor"]["retention_worker"], what="retention")
    # while the supervisor runs, the archive is its retention worker's alone
    archive_sessions(home, 2, days_old=1, tag="b")
    for tag in ("a1", "b0"):
        found = cli("archive", "search", f"marker{tag}", "--project", "p", "--json").json()
        assert found["status"] == "ok" and len(found["items"]) == 1
    assert status(home)["supervisor"]["retention_worker"] == worker
    sup.terminate()
