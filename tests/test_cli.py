"""The ``memoryd`` command as a user meets it: bad input, homes, configuration, help.

Must show 7: bad input gets a clear message and exit code 1 or 2, and corrupts
nothing. Every case runs the real command in a subprocess and compares the
store before and after.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import click
import pytest

from memoryd.config import SETTINGS, load_config
from memoryd.queue import JobQueue
from memoryd.storage import open_authority
from memoryd.storage.effects import record_effects
from tests.conftest import assert_each_done_once, query, queue_counts, status, wait_for


def snapshot(home: Path) -> tuple:
    """What a bad command must leave alone: every job row and every effect row."""
    jobs = query(home, "SELECT id, kind, payload, state, attempts FROM jobs ORDER BY id")
    effects = query(home, "SELECT job_id, kind FROM job_effects ORDER BY id")
    return queue_counts(home), jobs, effects


def healthy(home: Path) -> bool:
    return query(home, "PRAGMA integrity_check") == [("ok",)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def seeded(cli, home: Path) -> tuple:
    """A home with some history: 3 jobs done (with their effects), 4 queued."""
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
    return before


# -- Must show 7: bad input ---------------------------------------------------------------


def test_unknown_job_kind_is_bad_usage_and_changes_nothing(cli, home: Path, seeded) -> None:
    res = cli("jobs", "add", "bogus", "--count", "3")
    assert res.code == 2
    assert "unknown job kind 'bogus'" in res.message
    assert "noop" in res.message, "the message lists the known kinds"
    assert "Traceback" not in res.stderr

    res = cli("jobs", "add", "bogus", "--json")
    assert res.code == 2
    assert res.json()["error"] == "UNKNOWN_JOB_KIND"
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
    assert set(report) == set(SETTINGS)
    for name, setting in SETTINGS.items():
        assert report[name] == {"value": setting.default, "source": "default"}

    home.mkdir(exist_ok=True)
    toml = home / "memoryd.toml"
    toml.write_text("workers = 3\nlease_seconds = 30.0\n")
    report = cli("config", "--json").json()
    assert report["workers"] == {"value": 3, "source": str(toml)}
    assert report["lease_seconds"] == {"value": 30.0, "source": str(toml)}
    assert report["max_attempts"]["source"] == "default"

    report = cli("config", "--json", env={"MEMORYD_WORKERS": "5"}).json()
    assert report["workers"] == {"value": 5, "source": "MEMORYD_WORKERS"}, "env beats the file"
    assert report["lease_seconds"]["source"] == str(toml)

    res = cli("config")
    assert res.code == 0 and "workers" in res.stdout and "memoryd.toml" in res.stdout


def test_flags_are_the_strongest_source(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memoryd config`` has no setting flags, so the flag layer is shown through the library."""
    from memoryd.api import Memoryd

    home.mkdir()
    (home / "memoryd.toml").write_text("workers = 3\n")
    monkeypatch.setenv("MEMORYD_WORKERS", "5")
    report = {r["name"]: r for r in Memoryd(home, overrides={"workers": 7}).config_report()}
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


# -- help: every command has an example ---------------------------------------------------


def _command_paths() -> list[tuple[str, ...]]:
    from memoryd.cli import main

    paths: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        paths.append(path)
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))

    walk(main, ())
    return paths


def _help_param(path: tuple[str, ...]):
    return pytest.param(path, id=" ".join(path) or "memoryd")


@pytest.mark.parametrize("path", [_help_param(p) for p in _command_paths()])
def test_every_help_has_an_example(cli, path: tuple[str, ...]) -> None:
    res = cli(*path, "--help")
    assert res.code == 0, res.stderr
    assert "Example" in res.stdout


def test_every_leaf_command_takes_home_and_json(cli) -> None:
    from memoryd.cli import main

    for path in _command_paths():
        cmd: click.Command = main
        for name in path:
            cmd = cmd.commands[name]  # type: ignore[attr-defined]
        if isinstance(cmd, click.Group):
            continue
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert {"--home", "--json"} <= opts, path
        res = cli(*path, "--help")
        assert "--home" in res.stdout and "--json" in res.stdout, path


def test_version(cli) -> None:
    res = cli("--version", home=None)
    assert res.code == 0 and "version" in res.stdout
