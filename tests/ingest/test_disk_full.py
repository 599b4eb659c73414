"""A full disk gives a typed DISK_FULL error, never a traceback; the
supervisor ``ingest --wait`` forks reports its own error; nothing committed is lost.

The home lives on a real 2 MiB tmpfs (mounting needs root; skipped otherwise)."""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import query


def _repo_larger_than_the_disk(root: Path) -> Path:
    """About 7 MB of text that compresses poorly (random words)."""
    rng = random.Random(8)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 12)))
             for _ in range(50_000)]  # fmt: skip
    root.mkdir()
    for i in range(60):
        lines = (" ".join(rng.choices(words, k=12)) for _ in range(1200))
        (root / f"notes_{i:02d}.txt").write_text("\n".join(lines))
    return root


def _no_traceback(res) -> None:
    assert "Traceback" not in res.stderr, res.stderr
    assert "disk is full" in res.message, res.stderr


@pytest.mark.slow
def test_disk_full_is_typed_reported_by_the_forked_supervisor_and_recoverable(
    cli, small_fs, tmp_path
):
    home = small_fs / "home"
    repo = _repo_larger_than_the_disk(tmp_path / "repo")
    res = cli("ingest", str(repo), "--wait", "--workers", "1", home=home)
    assert res.code == 1
    _no_traceback(res)  # the forked supervisor's own message, not "its message is above"

    res = cli("run", "--drain", "--workers", "1", "--json", home=home)
    assert res.code == 1
    _no_traceback(res)
    assert '"error": "DISK_FULL"' in res.stdout

    chat = tmp_path / "chat.jsonl"
    chat.write_text(f'{{"role": "user", "content": "hello", "timestamp": {int(time.time())}}}\n')
    res = cli(
        "archive", "add", str(chat), "--project", "repo", "--new-project", "--json", home=home
    )
    # typed either way: RocksDB's "No space left on device" when nothing is left, the
    # disk reserve's refusal before any write when a little is
    assert res.code == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.json()["error"] in ("DISK_FULL", "DISK_LOW"), res.stdout

    subprocess.run(["mount", "-o", "remount,size=256m", str(small_fs)], check=True)
    res = cli("ingest", str(repo), "--wait", "--workers", "1", home=home)
    assert res.code == 0, res.stderr
    assert query(home, "PRAGMA integrity_check") == [("ok",)]
    assert query(home, "SELECT count(*) FROM files WHERE live = 1")[0][0] == 60
    assert os.statvfs(small_fs).f_bavail > 0
