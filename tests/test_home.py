"""The data home is private whatever the caller's umask."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import MEMORYD, clean_env, run_cli

TRANSCRIPT = b'{"role": "user", "content": "hello private world", "timestamp": 1718000000}\n'


def _loose(home: Path) -> list[str]:
    """Every path in the home that grants anything to group or others."""
    found = [] if not os.stat(home).st_mode & 0o077 else [str(home)]
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found.append(f"{path.relative_to(home)} {stat.filemode(mode)}")
    return found


def _under_umask_022(home: Path, *args: str) -> None:
    cmd = "umask 022 && exec " + shlex.join([*MEMORYD, *args])
    proc = subprocess.run(
        ["sh", "-c", cmd], env=clean_env(home), capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_home_and_everything_in_it_private_under_umask_022(home, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "code.py").write_text("def private_code():\n    return 42\n")
    chat = tmp_path / "chat.jsonl"
    chat.write_bytes(TRANSCRIPT)
    _under_umask_022(home, "ingest", str(repo), "--wait", "--workers", "1")
    _under_umask_022(
        home, "archive", "add", str(chat), "--project", "repo", "--new-project", "--imported"
    )
    _under_umask_022(home, "jobs", "add", "noop", "--count", "3")
    _under_umask_022(home, "run", "--drain", "--workers", "2")  # supervisor, retention worker
    assert (home / "archive").is_dir() and any((home / "archive").iterdir())
    assert (home / "authority.db").exists()
    assert _loose(home) == []


def test_an_existing_world_readable_home_is_made_private(home):
    assert run_cli("init", home=home).code == 0
    os.chmod(home, 0o755)
    os.chmod(home / "authority.db", 0o644)
    (home / "stray.txt").write_text("x")
    os.chmod(home / "stray.txt", 0o644)
    assert run_cli("jobs", "add", "noop", home=home).code == 0
    assert _loose(home) == []


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("search", "anything", "--project", "p"),
        ("jobs", "list"),
        ("archive", "search", "anything", "--project", "p"),
    ],
)
def test_a_read_on_a_missing_home_says_so_and_creates_nothing(tmp_path, args):
    typo = tmp_path / "homme"
    res = run_cli(*args, home=typo)
    assert res.code == 1
    assert f"no memoryd home at {typo} (create it with `memoryd init`)" in res.message
    assert not typo.exists()
    res = run_cli(*args, "--json", home=typo)
    assert res.code == 1 and res.json()["error"] == "HOME_MISSING"
    assert not typo.exists()


@pytest.fixture
def read_only_mount(tmp_path: Path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)]
    if subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_a_read_only_home_can_be_inspected(read_only_mount, tmp_path):
    home = read_only_mount / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ledger.py").write_text("def reconcile_quarterly_ledger():\n    return 0\n")
    assert run_cli("ingest", str(repo), "--wait", "--workers", "1", home=home).code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_mount)], check=True)
    res = run_cli("status", "--json", home=home)
    assert res.code == 0, res.stderr
    assert res.json()["projects"][0]["files"] == 1
    res = run_cli("search", "reconcile quarterly ledger", "--project", "repo", "--json", home=home)
    assert res.code == 0, res.stderr
    assert res.json()["items"][0]["path"] == "ledger.py"
    assert run_cli("jobs", "list", home=home).code == 0


def test_a_home_that_holds_only_an_archive_is_a_home(home, tmp_path):
    chat = tmp_path / "chat.jsonl"
    chat.write_bytes(TRANSCRIPT)
    assert (
        run_cli(
            "archive", "add", str(chat), "--project", "p", "--new-project", "--imported", home=home
        ).code
        == 0
    )
    assert not (home / "authority.db").exists()  # an embedded archive command
    res = run_cli("archive", "search", "hello private world", "--project", "p", home=home)
    assert res.code == 0, res.stderr
    assert run_cli("status", home=home).code == 0
