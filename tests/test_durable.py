"""Whole-file writers on a full disk: typed DISK_FULL, and nothing left behind.

The home lives on a real small tmpfs (mounting needs root; skipped otherwise)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import orjson
import pytest

from memoryd.base.durable import write_atomic
from memoryd.base.errors import DiskFull
from tests.conftest import run_cli, wait_for

pytestmark = pytest.mark.slow


def fill(folder: Path) -> Path:
    """Take every free byte of the file system holding ``folder``."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def leftovers(home: Path) -> list[str]:
    """Temporary files, and staging or spool files, anywhere in the home."""
    found = []
    for root, _, files in os.walk(home):
        rel = os.path.relpath(root, home)
        for name in files:
            if name.endswith(".tmp") or rel.startswith(("staging", "spool")):
                found.append(f"{rel}/{name}")
    return found


def test_write_atomic_on_a_full_disk_is_disk_full_and_leaves_no_temporary(small_fs) -> None:
    fill(small_fs)
    target = small_fs / "sub" / "file.json"
    with pytest.raises(DiskFull):
        write_atomic(target, b"x" * 200_000)
    assert not target.exists() and not [p for p in small_fs.rglob("*.tmp")]


def test_memory_add_and_a_supervised_archive_add_on_a_full_disk(
    small_fs, background, tmp_path
) -> None:
    home = small_fs / "home"
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("def f():\n    return 1\n")
    assert run_cli("ingest", str(src), "--project", "p", "--wait", home=home).code == 0
    transcript = tmp_path / "chat.jsonl"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    big = [{"role": "user", "content": "word " * 50_000, "timestamp": stamp}] * 4
    transcript.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in big))
    lines = [
        orjson.dumps({"kind": "fact", "text": f"fact {i} " + "word " * 1500}) for i in range(50)
    ]
    cand_file = tmp_path / "c.jsonl"
    cand_file.write_bytes(b"\n".join(lines) + b"\n")
    sup = background("run", "--workers", "1", env={"MEMORYD_HOME": str(home)})
    wait_for(lambda: (home / "memoryd.sock").exists(), what="the control socket")
    filler = fill(small_fs)
    try:
        added = run_cli("memory", "add", str(cand_file), "--project", "p", "--json", home=home)
        assert added.code != 0 and "Traceback" not in added.stderr, added
        assert orjson.loads(added.stdout)["error"] == "DISK_FULL", added
        archived = run_cli("archive", "add", str(transcript), "--project", "p", "--json",
                           "--new-project", home=home)  # fmt: skip
        assert archived.code != 0 and "Traceback" not in archived.stderr, archived
        assert orjson.loads(archived.stdout)["error"] == "DISK_FULL", archived
        assert leftovers(home) == []
    finally:
        filler.unlink()
    # a supervisor that had to write meanwhile stopped saying why (it is the same error)
    assert sup.alive() or "DiskFull" in sup.stderr, sup.stderr
