"""Through the real CLI: ``retention run --now`` never moves past the
clock without ``--allow-future-now``, ``--dry-run`` changes nothing, the help's example
is safe, and the pass is reported in prose."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import orjson

from tests.conftest import archive_lines

DAY = 86400


def archive(cli, tmp_path: Path, name: str, text: str, days_old: float, *extra: str) -> list:
    """A turn and a tool output ``days_old`` days old, aged from then (past its class
    age it is stored already due: ``--allow-expired``)."""
    path = tmp_path / f"{name}.jsonl"
    stamp = time.time() - days_old * DAY
    lines = [{"role": "user", "content": text, "timestamp": stamp},
             {"role": "tool", "content": f"tool {text}", "timestamp": stamp}]  # fmt: skip
    res = archive_lines(cli, path, lines, *extra)
    assert res.code == 0, res.stderr
    return res.json()["locators"]


def status_of(cli, locator: str) -> str:
    return cli("archive", "get", locator, "--json").json()["status"]


def test_future_now_is_refused_without_the_scary_flag(cli, tmp_path):
    session, tool = archive(cli, tmp_path, "live", "yesterday's decision", 1)
    lease = cli("archive", "lease", "acquire", "--client", "agent", "--project", "demo", session)
    assert lease.code == 0, lease.stderr
    res = cli("retention", "run", "--now", "2099-03-01T00:00:00Z", "--force", "--json")
    assert res.code == 2 and res.json()["error"] == "NOW_IN_FUTURE"
    assert "--allow-future-now" in res.message
    assert status_of(cli, session) == "live" and status_of(cli, tool) == "live"
    preview = cli("retention", "run", "--now", "2099-03-01T00:00:00Z", "--dry-run", "--json")
    assert preview.code == 0, preview.stderr
    # a dry run may look ahead (nothing changes): by then the lease has lapsed too
    assert preview.json()["would_expire"] == [
        {"class": "conversation", "project": "demo", "versions": 1},
        {"class": "ephemeral", "project": "demo", "versions": 1},
    ]
    assert status_of(cli, session) == "live" and status_of(cli, tool) == "live"
    past = cli("retention", "run", "--now", "2020-01-01T00:00:00Z", "--json")
    assert past.code == 0, past.stderr
    forced = cli("retention", "run", "--now", "2099-03-01T00:00:00Z", "--allow-future-now",
                 "--force", "--json")  # fmt: skip
    assert forced.code == 0 and status_of(cli, tool) == "expired"


def test_the_help_example_keeps_live_data(cli, tmp_path):
    session, tool = archive(cli, tmp_path, "live", "the deploy goes through canary first", 1)
    help_text = cli("retention", "run", "--help").stdout
    example = re.search(r"Example:\s*\n\s*(memoryd .+)", help_text).group(1)
    for part in example.split("&&"):
        argv = shlex.split(part)
        assert argv[0] == "memoryd"
        res = cli(*argv[1:])
        assert res.code == 0, (part, res.stderr)
    assert status_of(cli, session) == "live" and status_of(cli, tool) == "live"


def test_dry_run_names_what_would_expire_by_class_and_project_and_changes_nothing(cli, tmp_path):
    old_session, old_tool = archive(cli, tmp_path, "old", "an old chat", 200)
    pinned, _ = archive(cli, tmp_path, "kept", "a pinned old chat", 200)
    assert cli("archive", "pin", pinned).code == 0
    archive(cli, tmp_path, "new", "a fresh chat", 1)
    res = cli("retention", "run", "--dry-run", "--json")
    assert res.code == 0, res.stderr
    r = res.json()
    assert r["dry_run"] is True
    assert r["would_expire"] == [
        {"class": "conversation", "project": "demo", "versions": 1},
        {"class": "ephemeral", "project": "demo", "versions": 2},
    ]
    # a pinned document's entry is withdrawn: it is not even due
    assert status_of(cli, old_session) == "live" and status_of(cli, old_tool) == "live"
    text = cli("retention", "run", "--dry-run")
    assert text.code == 0 and "conversation" in text.stdout and "would expire" in text.stdout
    assert "{" not in text.stdout


def test_a_pass_and_the_status_are_prose_not_python_reprs(cli, tmp_path):
    old_session, _ = archive(cli, tmp_path, "old", "an old chat", 200)
    run = cli("retention", "run")
    assert run.code == 0, run.stderr
    assert "2 versions expired" in run.stdout and "{" not in run.stdout
    st = cli("retention", "status")
    assert st.code == 0, st.stderr
    assert "{" not in st.stdout and "documents" in st.stdout
    assert status_of(cli, old_session) == "expired"


def test_threshold_flags_set_this_pass_only(cli, tmp_path):
    archive(cli, tmp_path, "old", "an old session to expire", 200)
    res = cli("retention", "run", "--force", "--compaction-deleted-keys", "1", "--json")
    assert res.code == 0, res.stderr
    assert res.json()["compaction"].get("flushed") is True  # a few deletes are enough now
    archive(cli, tmp_path, "older", "another old session to expire", 300)
    res = cli("retention", "run", "--force", "--json")
    assert res.code == 0 and res.json()["expired"] == 2
    assert not res.json()["compaction"].get("flushed")  # back to the configured 10,000
    low = cli("retention", "run", "--disk-low-bytes", str(1 << 62), "--json")
    assert low.code == 0 and low.json()["disk"]["threshold_bytes"] == 1 << 62
    assert cli("retention", "run", "--wave-documents", "0").code == 2


def test_a_pass_says_what_it_purged_and_an_unchanged_add_past_the_horizon_stays_one_version(
    cli, tmp_path
):
    """The human report names the purges the JSON has (request records, expired
    segments' states); past the request records' horizon, re-adding an unchanged
    transcript answers its live version instead of making a second one."""
    path = tmp_path / "kept.jsonl"
    stamp = time.time() - DAY
    path.write_bytes(orjson.dumps({"role": "user", "content": "keep it", "timestamp": stamp}))
    first = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json").json()
    archive(cli, tmp_path, "old", "an old chat", 200)
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 31 * DAY))
    run = cli("retention", "run", "--now", later, "--allow-future-now", "--force")
    assert run.code == 0, run.stderr
    # both transcripts' requests (the old one's tool output too); its two classes' segments
    assert "3 request records" in run.stdout and "2 expired segment states" in run.stdout
    again = cli("archive", "add", str(path), "--project", "demo", "--new-project", "--json").json()
    assert again["locators"] == first["locators"] and again["created"] == [False]
    assert again["status"] == ["live"]
    doc = first["locators"][0].rsplit("@", 1)[0]
    assert cli("archive", "get", f"{doc}@2", "--json").code == 1, "no version 2"
