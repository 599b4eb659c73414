"""Shared search fixtures: a store factory and the standard-library index (built once)."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.storage import open_authority
from memoryd.storage.corpus import ensure_project, put_files

_SKIP_DIRS = {"test", "tests", "site-packages", "idlelib", "__pycache__", "dist-packages"}


class FakeStats:
    """Term statistics as the gate reads them (:class:`memoryd.search.pipeline.Stats`):
    the chunk count, each stem's document frequency (a number: every stem's) and the
    mean chunk length in tokens (0.0: unknown, no "said together" windows)."""

    def __init__(self, chunks: int, df: dict[str, int] | int, avg_len: float = 0.0):
        self.chunks, self._df, self.avg_len = chunks, df, avg_len

    def df(self, stem: str) -> int:
        return self._df if isinstance(self._df, int) else self._df.get(stem, 0)


def make_store(home: Path, project: str, files: dict[str, str]):
    db = open_authority(home, load_config(home))
    pid = db.write(lambda tx: ensure_project(tx, project, None))
    rows = [prepare_file(path, text.encode("utf-8")) for path, text in files.items()]
    db.write(lambda tx: put_files(tx, pid, rows))
    return db


def stdlib_files() -> list[tuple[str, Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = Path(dirpath) / name
                out.append((full.relative_to(root).as_posix(), full))
    return out


@pytest.fixture(scope="session")
def stdlib_db(tmp_path_factory):
    """The interpreter's standard library (no tests, no site-packages) as project 'stdlib'."""
    home = tmp_path_factory.mktemp("stdlib-home")
    db = open_authority(home, load_config(home))
    pid = db.write(lambda tx: ensure_project(tx, "stdlib", None))
    rows = [prepare_file(rel, full.read_bytes()) for rel, full in stdlib_files()]
    for i in range(0, len(rows), 200):
        batch = rows[i : i + 200]
        db.write(lambda tx, batch=batch: put_files(tx, pid, batch))
    yield db
    db.close()


@pytest.fixture()
def store():
    """make_store(home, project, {path: text}) -> an open authority."""
    return make_store
