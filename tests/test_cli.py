"""The ``memoryd`` command as a user meets it: bad input, homes, configuration, help.

Must show 7: bad input gets a clear message and exit code 1 or 2, and corrupts
nothing. Every case runs the real command in a subprocess and compares the
store before and after.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from memoryd.base.config import BLAS_THREAD_ENV, SETTINGS, load_config
from memoryd.base.errors import ConfigError
from memoryd.faces.cli.main import main
from memoryd.operations.home import Home
from memoryd.queue import JobQueue
from memoryd.storage import open_authority
from memoryd.storage.effects import record_effects
from tests.conftest import (
    MEMORYD,
    Result,
    assert_each_done_once,
    clean_env,
    query,
    queue_counts,
    run_cli,
    status,
    wait_for,
)
from tests.test_docs import command_at, command_paths


def snapshot(home: Path) -> tuple:
    """What a bad command must leave alone: every job row and every effect row."""
    jobs = query(home, "SELECT id, kind, payload, state, attempts FROM jobs ORDER BY id")
    effects = query(home, "SELECT job_id, kind FROM job_effects ORDER BY id")
    return queue_counts(home), jobs, effects


def healthy(home: Path) -> bool:
    return query(home, "PRAGMA integrity_check") == [("ok",)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory) -> tuple[Path, tuple]:
    """A home with some history: 3 jobs done (with their effects), 4 queued; made once
    (each test gets a copy: :func:`seeded`)."""
    home = tmp_path_factory.mktemp("seeded") / "home"

    def cli(*args: str) -> Result:
        return run_cli(*args, home=home)

    assert cli("jobs", "add", "noop", "--count", "3").code == 0
    with open_authority(home, load_config(home)) as db:  # complete them as the supervisor would
        q = JobQueue(db)
        done = q.claim("seed", 3, 60)

        def finish(tx) -> None:
            assert all(q.complete_in(tx, job) for job in done)
            record_effects(tx, [job.id for job in done], "noop")

        db.write(finish)
    assert cli("jobs", "add", "noop", "--count", "4", "--payload", '{"n": 1}').code == 0
    before = snapshot(home)
    assert before[0] == {"queued": 4, "claimed": 0, "done": 3, "failed": 0, "dead": 0}
    return home, before


@pytest.fixture
def seeded(home: Path, seeded_template: tuple[Path, tuple]) -> tuple:
    """A copy of the seeded home as the test's home: its :func:`snapshot`."""
    template, before = seeded_template
    shutil.copytree(template, home)
    assert snapshot(home) == before
    return before


# -- Must show 7: bad input ---------------------------------------------------------------


def test_unknown_job_kind_is_bad_usage_and_changes_nothing(cli, home: Path, seeded) -> None:
    res = cli("jobs", "add", "bogus", "--count", "3")
    assert res.code == 2
    assert "unknown job kind 'bogus'" in res.message
    assert "noop" in res.message, "the message lists the known kinds"
    assert "ingest.scan" not in res.message, "only the kinds a user may add"
    assert "Traceback" not in res.stderr

    res = cli("jobs", "add", "bogus", "--json")
    assert res.code == 2
    assert res.json()["error"] == "UNKNOWN_JOB_KIND"
    assert res.stderr == "", "under --json the error is said once, on stdout"
    assert snapshot(home) == seeded
    assert healthy(home)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["noop", "--payload", '{"seconds": '], "not valid JSON"),
        (["noop", "--payload", "{'single': 'quotes'}"], "not valid JSON"),
        (["sleep", "--payload", '{"seconds": "soon"}'], "sleep needs a payload"),
        (["sleep", "--payload", '{"seconds": -1}'], "sleep needs a payload"),
        (["sleep"], "sleep needs a payload"),
        (["noop", "--count", "0"], "--count"),
        (["noop", "--count", "2", "--dedupe-key", "k"], "dedupe key"),
    ],
)
def test_malformed_payload_is_bad_usage_and_changes_nothing(
    cli, home: Path, seeded, args: list[str], expected: str
) -> None:
    res = cli("jobs", "add", *args)
    assert res.code == 2, res
    assert expected in res.message
    assert "Traceback" not in res.stderr
    assert snapshot(home) == seeded
    assert healthy(home)


@pytest.mark.parametrize("kind", ["ingest.scan", "ingest.batch", "ingest.finalize", "archive.op"])
def test_internal_job_kinds_are_refused_at_enqueue(cli, home: Path, seeded, kind: str) -> None:
    """`jobs add ingest.scan` used to be accepted and die in a worker with a TypeError."""
    res = cli("jobs", "add", kind)
    assert res.code == 2, res
    assert f"job kind {kind!r} is internal" in res.message
    assert "fail, noop, sleep" in res.message
    res = cli("jobs", "add", kind, "--payload", "{}", "--json")
    assert (res.code, res.json()["error"]) == (2, "INTERNAL_JOB_KIND")
    assert snapshot(home) == seeded


def test_jobs_add_help_lists_only_user_kinds(cli) -> None:
    res = cli("jobs", "add", "--help")
    assert "Kinds: fail, noop, sleep" in " ".join(res.stdout.split())
    assert "ingest." not in res.stdout and "archive.op" not in res.stdout


def test_malformed_payload_json_error(cli, home: Path, seeded) -> None:
    res = cli("jobs", "add", "noop", "--payload", "[1, 2", "--json")
    assert res.code == 2
    assert res.json()["error"] == "BAD_PAYLOAD"
    assert snapshot(home) == seeded


@pytest.mark.parametrize(
    "args",
    [["jobs", "list", "--state", "bogus"], ["jobs", "retry"], ["run", "--workers", "0"]],
)
def test_other_bad_usage_exits_2_and_changes_nothing(cli, home: Path, seeded, args) -> None:
    res = cli(*args)
    assert res.code == 2, res
    assert "Traceback" not in res.stderr
    assert snapshot(home) == seeded


@pytest.mark.slow
def test_second_supervisor_is_refused_and_the_first_keeps_working(
    cli, home: Path, seeded, background
) -> None:
    first = background("run", "--workers", "1")
    first.wait_running(workers=1)
    wait_for(lambda: queue_counts(home)["done"] == 7, what="the first supervisor to drain")
    before = snapshot(home)

    for extra in ([], ["--drain"], ["--workers", "3", "--drain"]):
        res = cli("run", *extra)
        assert res.code == 1, res
        assert "already running" in res.message
        assert f"pid {first.pid}" in res.message, "the message names the running supervisor"
    res = cli("run", "--drain", "--json")
    assert res.code == 1
    assert res.json()["error"] == "SUPERVISOR_RUNNING"
    assert str(first.pid) in res.json()["message"]

    assert first.alive()
    assert snapshot(home) == before
    assert status(home)["supervisor"]["pid"] == first.pid

    # The first supervisor still owns the home and still works.
    assert cli("jobs", "add", "noop", "--count", "20").code == 0
    wait_for(lambda: queue_counts(home)["done"] == 27, what="the first supervisor to run new jobs")
    assert first.terminate() == 0
    assert_each_done_once(home, 27)
    assert healthy(home)


UNWRITABLE_COMMANDS = [
    ["init"],
    ["jobs", "add", "noop"],
    ["run", "--drain"],
]  # reads (status, jobs list) on a home that does not exist: see tests/test_home.py


@pytest.mark.parametrize("args", UNWRITABLE_COMMANDS, ids=lambda a: " ".join(a))
def test_home_under_a_regular_file_is_not_writable(cli, tmp_path: Path, args) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("precious\n")
    bad_home = blocker / "home"
    for how in ("flag", "env"):
        if how == "flag":
            res = cli(*args, "--home", str(bad_home), home=tmp_path / "unused")
        else:
            res = cli(*args, home=bad_home)
        assert res.code == 1, res
        assert "not writable" in res.message and str(bad_home) in res.message
        assert "Traceback" not in res.stderr
    res = cli(*args, "--json", home=bad_home)
    assert res.code == 1
    assert res.json()["error"] == "HOME_NOT_WRITABLE"
    assert blocker.read_text() == "precious\n"
    assert not (tmp_path / "unused").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("args", UNWRITABLE_COMMANDS, ids=lambda a: " ".join(a))
def test_home_under_proc_is_not_writable(cli, args) -> None:
    # Root ignores permission bits, so use a file system that refuses everyone.
    bad_home = Path("/proc") / f"memoryd-test-{uuid.uuid4().hex}"
    res = cli(*args, home=bad_home)
    assert res.code == 1, res
    assert "not writable" in res.message
    assert "Traceback" not in res.stderr
    assert not bad_home.exists()


def test_home_that_is_a_regular_file_is_bad_usage(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("precious\n")
    for args in (["status", "--home", str(blocker)], ["jobs", "add", "noop"]):
        res = cli(*args, home=blocker)
        assert res.code == 2, res
        assert "is a file" in res.message
    assert blocker.read_text() == "precious\n"


def test_home_whose_authority_cannot_be_opened(cli, home: Path) -> None:
    (home / "authority.db").mkdir(parents=True)
    for args in (["status"], ["jobs", "add", "noop"], ["run", "--drain"]):
        res = cli(*args)
        assert res.code == 1, res
        assert "authority" in res.message and "Traceback" not in res.stderr
    assert list((home / "authority.db").iterdir()) == []


def test_a_file_that_is_not_a_database_is_left_untouched(cli, home: Path) -> None:
    home.mkdir()
    junk = home / "authority.db"
    junk.write_bytes(b"not a database, but somebody's data\n" * 100)
    digest = sha256(junk)
    for args in (["status"], ["jobs", "add", "noop"], ["run", "--drain"], ["init"]):
        res = cli(*args)
        assert res.code == 1, res
        assert "not a usable memoryd authority" in res.message
        assert "Traceback" not in res.stderr
    assert sha256(junk) == digest


# -- homes: --home and MEMORYD_HOME --------------------------------------------------------


@pytest.mark.slow
def test_home_from_env_and_from_flag(cli, tmp_path: Path) -> None:
    env_home, flag_home = tmp_path / "from-env", tmp_path / "from-flag"
    assert cli("jobs", "add", "noop", "--count", "2", home=env_home).code == 0
    # The flag wins over MEMORYD_HOME.
    res = cli("jobs", "add", "noop", "--count", "3", "--home", str(flag_home), home=env_home)
    assert res.code == 0, res.stderr
    assert queue_counts(env_home)["queued"] == 2
    assert queue_counts(flag_home)["queued"] == 3

    st = cli("status", "--json", home=env_home).json()
    assert (st["home"], st["queue"]["queued"]) == (str(env_home), 2)
    st = cli("status", "--json", "--home", str(flag_home), home=env_home).json()
    assert (st["home"], st["queue"]["queued"]) == (str(flag_home), 3)
    # --home before the subcommand works too.
    st = cli("--home", str(flag_home), "status", "--json", home=None).json()
    assert st["home"] == str(flag_home)

    res = cli("run", "--drain", "--home", str(flag_home), home=env_home)
    assert res.code == 0, res.stderr
    assert queue_counts(flag_home)["done"] == 3
    assert queue_counts(env_home)["queued"] == 2


def test_init_is_idempotent(cli, home: Path) -> None:
    first = cli("init", "--json")
    assert first.code == 0, first.stderr
    info = first.json()
    assert info["home"] == str(home) and info["schema"] >= 1
    db = home / "authority.db"
    digest = sha256(db)
    again = cli("init", "--json")
    assert again.code == 0 and again.json() == info
    assert sha256(db) == digest


# -- configuration: where each value came from --------------------------------------------


def test_config_shows_every_setting_and_its_source(cli, home: Path) -> None:
    res = cli("config", "--json")
    assert res.code == 0, res.stderr
    report = res.json()
    assert (report["home"], report["config_file"], report["problems"]) == (str(home), None, [])
    settings = report["settings"]
    assert set(settings) == set(SETTINGS)
    for name, setting in SETTINGS.items():
        assert settings[name] == {
            "value": setting.default,
            "source": "default",
            "help": setting.help,
        }

    home.mkdir(exist_ok=True)
    toml = home / "memoryd.toml"
    toml.write_text("workers = 3\nlease_seconds = 30.0\n")
    report = cli("config", "--json").json()
    assert report["config_file"] == str(toml)
    settings = report["settings"]
    assert settings["workers"]["value"] == 3 and settings["workers"]["source"] == str(toml)
    assert settings["lease_seconds"]["value"] == 30.0
    assert settings["max_attempts"]["source"] == "default"

    settings = cli("config", "--json", env={"MEMORYD_WORKERS": "5"}).json()["settings"]
    assert (settings["workers"]["value"], settings["workers"]["source"]) == (5, "MEMORYD_WORKERS")
    assert settings["lease_seconds"]["source"] == str(toml)

    res = cli("config")
    assert res.code == 0 and "workers" in res.stdout and "memoryd.toml" in res.stdout


def test_config_human_output_is_whole_at_80_columns_and_piped(cli, home: Path) -> None:
    """Names, sources and paths are never cut; sizes read as 64 MiB; home and file are named."""
    home.mkdir()
    (home / "memoryd.toml").write_text("retention_compaction_reclaimable_bytes = 268435456\n")
    res = cli("config", env={"COLUMNS": "80"})
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["home:", str(home)]
    assert lines[1].split() == ["config", "file:", str(home / "memoryd.toml")]
    for name in SETTINGS:
        assert any(line.split()[:1] == [name] for line in lines), name
    by_name = {line.split()[0]: line for line in lines if line and not line[0].isspace()}
    assert "64 MiB" in by_name["journal_size_limit"]
    assert "2 GiB" in by_name["retention_disk_low_bytes"]
    assert "256 MiB" in by_name["retention_compaction_reclaimable_bytes"]
    assert str(home / "memoryd.toml") in by_name["retention_compaction_reclaimable_bytes"]
    assert "…" not in res.stdout


def test_flags_are_the_strongest_source(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memoryd config`` has no setting flags, so the flag layer is shown through the library."""
    from memoryd.operations.api import Memoryd

    home.mkdir()
    (home / "memoryd.toml").write_text("workers = 3\n")
    monkeypatch.setenv("MEMORYD_WORKERS", "5")
    report = Home(Memoryd(home, overrides={"workers": 7})).config_report()["settings"]
    assert (report["workers"]["value"], report["workers"]["source"]) == (7, "flag")


@pytest.mark.parametrize("where", ["env", "toml"])
def test_bad_setting_is_bad_usage(cli, home: Path, where: str) -> None:
    env = {}
    if where == "env":
        env["MEMORYD_WORKERS"] = "lots"
    else:
        home.mkdir()
        (home / "memoryd.toml").write_text('workers = "lots"\n')
    res = cli("config", env=env)
    assert res.code == 2, res
    assert "workers must be int" in res.message
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    ("setting", "raw", "why"),
    [
        ("workers", "-3", "workers must be at least 1"),
        ("workers", "65", "workers must be at most 64"),
        ("max_attempts", "0", "max_attempts must be at least 1"),
        ("lease_seconds", "-1", "lease_seconds must be above 0"),
        ("lease_seconds", "0", "lease_seconds must be above 0"),
        ("poll_seconds", "0", "poll_seconds must be above 0"),
        ("max_file_bytes", "-5", "max_file_bytes must be above 0"),
        ("retention_conversation_days", "-1", "retention_conversation_days must be at least 0"),
    ],
)
@pytest.mark.parametrize("where", ["env", "toml"])
def test_out_of_range_setting_is_refused(home: Path, monkeypatch, where, setting, raw, why) -> None:
    """Each range, from either source: the configuration every command loads refuses it
    (how a command reports that refusal is the real CLI's test below, one setting)."""
    if where == "env":
        monkeypatch.setenv(f"MEMORYD_{setting.upper()}", raw)
    else:
        home.mkdir()
        (home / "memoryd.toml").write_text(f"{setting} = {raw}\n")
    with pytest.raises(ConfigError, match=why):
        load_config(home)
    assert [why in p for p in load_config(home, strict=False).problems] == [True]


@pytest.mark.parametrize("where", ["env", "toml"])
def test_an_out_of_range_setting_stops_every_command(cli, home: Path, where) -> None:
    env, why = {}, "workers must be at least 1"
    if where == "env":
        env["MEMORYD_WORKERS"] = "-3"
    else:
        home.mkdir()
        (home / "memoryd.toml").write_text("workers = -3\n")
    for args in (["jobs", "list"], ["status"], ["config"]):
        res = cli(*args, env=env)
        assert res.code == 2, (args, res)
        assert why in res.message
        assert "Traceback" not in res.stderr
    res = cli("jobs", "list", "--json", env=env)
    assert res.json()["error"] == "BAD_CONFIG"


def test_every_setting_default_is_in_its_own_range() -> None:
    for name, setting in SETTINGS.items():
        assert setting.check(setting.default) is None, name


def test_a_flag_mends_a_bad_environment_value(cli, home: Path) -> None:
    """MEMORYD_WORKERS=-3 is an error, unless --workers overrides it."""
    bad = {"MEMORYD_WORKERS": "-3"}
    assert cli("jobs", "add", "noop", "--count", "2").code == 0
    res = cli("run", "--drain", env=bad)
    assert res.code == 2 and "workers must be at least 1" in res.message
    res = cli("run", "--drain", "--workers", "1", "--json", env=bad)
    assert res.code == 0, res.stderr
    assert res.json()["done"] == 2


def test_unknown_key_suggests_the_nearest_and_config_still_reports(cli, home: Path) -> None:
    home.mkdir()
    toml = home / "memoryd.toml"
    toml.write_text("wrokers = 3\nlease_seconds = 30.0\nmax_attempts = 0\n")
    res = cli("status")
    assert res.code == 2
    assert "unknown setting 'wrokers'; did you mean workers?" in res.message

    res = cli("config")
    assert res.code == 2, res
    assert "lease_seconds" in res.stdout and "workers" in res.stdout, "the report is printed"
    assert "did you mean workers?" in res.message
    assert "max_attempts must be at least 1" in res.message, "every problem is listed"

    report = cli("config", "--json").json()
    assert report["settings"]["lease_seconds"] == {
        "value": 30.0, "source": str(toml), "help": SETTINGS["lease_seconds"].help
    }  # fmt: skip
    assert report["settings"]["max_attempts"]["source"] == "default", "a bad value is not used"
    assert len(report["problems"]) == 2

    toml.write_text("zzzz = 1\n")
    assert "see `memoryd config`" in cli("status").message


# -- every leaf command takes --home and --json --------------------------------------------


OWN_HOME = {("diagnose",)}  # makes a home in its --workspace; never reads or writes yours
#: Parses its own arguments (before click loads); its output is the agent's hook protocol.
AGENT_PROTOCOL = {("hook",)}


def test_every_leaf_command_takes_home_and_json(cli) -> None:
    """Each leaf's options, and its help shows them: rendered in this process (click's
    own parse of ``memoryd PATH --help``); the real process prints every one of these
    helps in ``test_docs.py``'s :func:`test_every_help_has_an_example`."""
    for path in command_paths():
        cmd = command_at(path)
        if isinstance(cmd, click.Group):
            continue
        if path in AGENT_PROTOCOL:  # answered before click loads: the real process
            assert "--home" in cli(*path, "--help").stdout, path
            continue
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        wanted = {"--json"} if path in OWN_HOME else {"--home", "--json"}
        assert wanted <= opts, path
        res = CliRunner().invoke(main, [*path, "--help"], prog_name="memoryd")
        assert res.exit_code == 0, (path, res.output)
        assert all(o in res.output for o in wanted), path


def test_version(cli) -> None:
    res = cli("--version", home=None)
    assert res.code == 0 and "version" in res.stdout


# -- operator errors: retry, unreadable homes, usage errors under --json ---------------------


def test_retry_of_unknown_or_live_job_is_reported(cli, home: Path, seeded) -> None:
    res = cli("jobs", "retry", "999")
    assert res.code == 1, res
    assert "job 999 not requeued: no such job" in res.message
    res = cli("jobs", "retry", "1", "5", "--json")  # 1 is done, 5 is queued
    assert res.code == 1
    assert res.json() == {
        "requeued": [],
        "refused": [
            {"id": 1, "reason": "it is done, not dead"},
            {"id": 5, "reason": "it is queued, not dead"},
        ],
    }
    assert snapshot(home) == seeded
    res = cli("jobs", "retry", "--all-dead", "--json")
    assert (res.code, res.json()) == (0, {"requeued": [], "refused": []})


def _run_without_dac_override(args: list[str], home: Path) -> Result:
    """The CLI as a user the permission bits apply to (root without CAP_DAC_OVERRIDE)."""
    prefix = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    proc = subprocess.run(
        [*prefix, *MEMORYD, *args],
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv")
@pytest.mark.parametrize("args", [["status"], ["jobs", "list"], ["init"], ["config"]])
def test_home_under_an_untraversable_directory(tmp_path: Path, args: list[str]) -> None:
    locked = tmp_path / "locked"
    (locked / "home").mkdir(parents=True)
    locked.chmod(0)
    try:
        res = _run_without_dac_override(args, locked / "home")
        assert res.code == 1, res
        assert "Permission denied" in res.message and "--home" in res.message
        assert "Traceback" not in res.stderr
        res = _run_without_dac_override([*args, "--json"], locked / "home")
        assert res.json()["error"] == "HOME_NOT_READABLE"
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize(
    "args",
    [
        ["jobs", "list", "--state", "bogus"],
        ["jobs", "retry"],
        ["run", "--workers", "0"],
        ["jobs", "show", "notanumber"],
        ["status", "--no-such-option"],
    ],
)
def test_usage_errors_are_json_under_json(cli, home: Path, args: list[str]) -> None:
    res = cli(*args, "--json")
    assert res.code == 2, res
    body = res.json()
    assert body["error"] == "BAD_USAGE" and body["message"] and body["retryable"] is False
    assert "Traceback" not in res.stderr
    plain = cli(*args)
    assert plain.code == 2 and plain.stdout == "" and "Usage:" in plain.stderr


# -- jobs show, list filters, errors never cut silently -----------------------------------


def _dead_job(cli, message: str, **kw: str) -> int:
    extra = [a for k, v in kw.items() for a in (f"--{k}", v)]
    res = cli(
        "jobs", "add", "fail", "--payload", orjson.dumps({"message": message}).decode(),
        "--max-attempts", "1", "--json", *extra,
    )  # fmt: skip
    assert res.code == 0, res.stderr
    return res.json()["ids"][0]


def test_jobs_show_and_list_filters(cli, home: Path) -> None:
    long_error = "the disk said no: " + "x" * 150 + " END"
    job_id = _dead_job(cli, long_error, project="alpha")
    assert cli("jobs", "add", "noop", "--count", "2", "--project", "beta").code == 0
    res = cli("run", "--drain", "--workers", "1")
    assert res.code == 0, res.stderr

    shown = cli("jobs", "show", str(job_id), "--json")
    assert shown.code == 0, shown.stderr
    job = shown.json()
    assert (job["id"], job["kind"], job["state"], job["project"]) == (
        job_id,
        "fail",
        "dead",
        "alpha",
    )
    assert job["last_error"].endswith(long_error)
    assert (job["attempts"], job["max_attempts"]) == (1, 1)
    assert job["payload"] == {"message": long_error}
    for key in ("created_at", "updated_at", "finished_at"):
        assert job[key].endswith("Z") and job[key][:4].isdigit(), key
    human = cli("jobs", "show", str(job_id))
    assert human.code == 0 and "END" in human.stdout and "alpha" in human.stdout
    assert f"{job_id} (fail) dead" in human.stdout

    res = cli("jobs", "show", "4242", "--json")
    assert (res.code, res.json()["error"]) == (1, "NO_SUCH_JOB")

    by_kind = cli("jobs", "list", "--kind", "noop", "--json").json()
    assert [j["kind"] for j in by_kind] == ["noop", "noop"]
    assert [j["project"] for j in cli("jobs", "list", "--project", "alpha", "--json").json()] == [
        "alpha"
    ]
    assert cli("jobs", "list", "--project", "beta", "--kind", "fail", "--json").json() == []

    table = cli("jobs", "dead", env={"COLUMNS": "200"}).stdout
    assert "the disk said no" in table and "END" not in table
    assert "…" in table, "a cut error is marked"
    assert "memoryd jobs show ID" in table


def test_job_times_are_iso_8601_utc(cli, home: Path) -> None:
    assert cli("jobs", "add", "noop").code == 0
    (job,) = cli("jobs", "list", "--json").json()
    assert job["created_at"].endswith("Z") and "T" in job["created_at"]
    assert job["not_before"] is None and job["finished_at"] is None
    assert job["created_at"] == cli("jobs", "show", str(job["id"]), "--json").json()["created_at"]


# -- memoryd stop ------------------------------------------------------------------------


@pytest.mark.slow
def test_stop_signals_the_supervisor_and_waits(cli, home: Path, background) -> None:
    assert cli("jobs", "add", "noop", "--count", "5").code == 0
    sup = background("run", "--workers", "1")
    sup.wait_running(workers=1)
    res = cli("stop", "--json")
    assert res.code == 0, res.stderr
    body = res.json()
    assert (body["pid"], body["stopped"]) == (sup.pid, True)
    assert not sup.alive(), "stop returns only once the supervisor has exited"
    assert sup.wait() == 0, "SIGTERM is a clean shutdown"
    assert status(home)["supervisor"] is None
    res = cli("stop")
    assert res.code == 0 and "no supervisor was running" in res.stdout


# -- human output is prose or tables, never Python reprs --------------------------------------

PY_REPR = re.compile(r"\{'|\['|': |\(\d+, |<[a-z_.]+ object at")


@pytest.mark.slow
def test_no_human_output_holds_a_python_repr(cli, home: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "app.py").write_text("def handshake_timeout():\n    return 30\n")
    assert cli("ingest", str(src), "--project", "demo", "--wait").code == 0
    assert (
        cli("jobs", "add", "fail", "--payload", '{"message": "x"}', "--max-attempts", "1").code == 0
    )
    commands = [
        ["init"],
        ["run", "--drain", "--workers", "1"],
        ["status"],
        ["search", "handshake timeout", "--project", "demo"],
        ["jobs", "add", "noop"],
        ["jobs", "list"],
        ["jobs", "list", "--kind", "fail"],
        ["jobs", "dead"],
        ["jobs", "show", "1"],
        ["jobs", "retry", "1"],
        ["config"],
        ["projects"],
        ["projects", "rename", "demo", "demo2"],
        ["doctor"],
        ["checkpoint-wal"],
        ["rebuild", "--verify"],
        ["rebuild"],
        ["projects", "remove", "demo2"],
        ["stop"],
    ]
    for args in commands:
        res = cli(*args)
        assert "Traceback" not in res.stderr, args
        found = PY_REPR.search(res.stdout + res.stderr)
        assert found is None, (args, found, res.stdout)


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_bad_usage_on_every_face(cli, home: Path, query: str) -> None:
    """One behaviour (the MCP tools call the same library): a blank query is refused."""
    assert cli("init").code == 0
    for args in (["search", query, "--all"], ["recall", query, "--project", "p"],
                 ["archive", "search", query, "--project", "p"]):  # fmt: skip
        res = cli(*args, "--json")
        assert res.code == 2 and res.json()["error"] == "BAD_USAGE", (args, res)
        assert "empty query" in res.json()["message"]


def test_an_empty_listing_says_none_under_a_title_naming_its_filter(cli, home: Path) -> None:
    assert cli("init").code == 0
    assert cli("jobs", "dead").stdout.strip() == "dead jobs: none"
    listed = cli("jobs", "list", "--kind", "nosuch", "--state", "dead").stdout.strip()
    assert listed == "jobs (state dead, kind nosuch): none"


def test_status_says_how_long_done_jobs_are_kept_in_words(cli, home: Path) -> None:
    assert cli("init").code == 0
    assert "done jobs kept: 0 (purged after 7 days)" in cli("status").stdout


def test_a_command_starts_without_the_supervisors_side() -> None:
    """Every CLI command pays its imports: the CLI loads neither the control socket's
    request side, the supervisor, the archive store, numpy, the authority and the queue
    (apsw) nor subprocess until a command needs them (tests/test_cli_start.py)."""
    heavy = ["memoryd.operations.runtime", "memoryd.workers.supervisor", "rocksdict", "numpy",
             "apsw", "memoryd.storage", "memoryd.queue", "memoryd.workers.contract",
             "zstandard", "subprocess"]  # fmt: skip
    code = (
        "import sys, memoryd.faces.cli.main; "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_rebuild_says_which_part_it_is_at(cli, home: Path) -> None:
    """A long rebuild is not silent: each part is named on stderr as it starts (never
    under --json, whose stdout is the answer)."""
    assert cli("init").code == 0
    for args, doing in ((["rebuild", "--verify"], "verifying"), (["rebuild"], "rebuilding")):
        res = cli(*args)
        assert res.code == 0, res.stderr
        assert f"{doing} the authority" in res.stderr and f"{doing} the memory" in res.stderr
        quiet = cli(*args, "--json")
        assert quiet.code == 0 and quiet.stderr == "", quiet.stderr


#: The CLI, reporting at exit how many threads its process holds.
THREADS_AT_EXIT = (
    "import atexit, os; atexit.register(lambda: os.write(2, b'threads=%d' % "
    "len(os.listdir('/proc/self/task')))); from memoryd.faces.cli.main import main; main()"
)


def test_a_search_or_recall_gives_blas_no_threads_to_spin(cli, home: Path, tmp_path: Path):
    """OpenBLAS's idle threads spin after each product until a process exits: a
    one-shot command holds as many threads as with the user's own
    ``OPENBLAS_NUM_THREADS=1`` (one fewer than by default on two cores or more)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "app.py").write_text("def handshake_timeout():\n    return 30\n")
    assert cli("ingest", str(src), "--project", "demo", "--wait").code == 0

    def threads(args: list[str], extra: dict) -> int:
        argv = [sys.executable, "-c", THREADS_AT_EXIT, *args]
        env = clean_env(home, extra)
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=True)
        return int(re.search(rb"threads=(\d+)", proc.stderr)[1])

    for command in ("search", "recall"):
        args = [command, "handshake timeout", "--project", "demo"]
        assert threads(args, {}) == threads(args, dict.fromkeys(BLAS_THREAD_ENV, "1"))
