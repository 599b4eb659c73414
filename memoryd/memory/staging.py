"""Staging and dead-letter files: one candidate per file, written atomically.

``staging/<project>/<ns>-<id>.json`` holds a validated candidate until a
consolidation run has committed its fate; ``deadletter/<project>/<id>.json``
keeps a candidate that could not be consolidated, with the reason. Both are
written to a temporary name, fsynced, renamed and the directory fsynced, with
mode 0600: a crash leaves either the whole file or none.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from memoryd.home import DIR_MODE, FILE_MODE

STAGING_DIR = "staging"
DEADLETTER_DIR = "deadletter"
TMP_SUFFIX = ".tmp"


def staging_dir(home: Path, project: str) -> Path:
    return Path(home) / STAGING_DIR / project


def deadletter_dir(home: Path, project: str) -> Path:
    return Path(home) / DEADLETTER_DIR / project


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        _fsync_dir(path.parent)


def stage(home: Path, project: str, items: list[tuple[str, dict]]) -> list[Path]:
    """Write one staging file per (candidate id, candidate); names sort in staging order."""
    folder = staging_dir(home, project)
    base = time.time_ns()
    paths = []
    for i, (cid, candidate) in enumerate(items):
        path = folder / f"{base + i:020d}-{cid}.json"
        body = {"id": cid, "project": project, "candidate": candidate, "staged_at": base / 1e9}
        write_atomic(path, orjson.dumps(body))
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Staged:
    path: Path
    id: str | None  # None: the file is not a readable staging file
    project: str | None
    candidate: dict | None


def read(path: Path) -> Staged:
    """A staging file's content; unreadable or damaged files come back with ``id`` None."""
    try:
        body = orjson.loads(path.read_bytes())
        return Staged(path, str(body["id"]), str(body["project"]), dict(body["candidate"]))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return Staged(path, None, None, None)


def staged_files(home: Path, project: str) -> Iterator[Path]:
    """The project's staging files in staging order (temporary files are not yet files)."""
    folder = staging_dir(home, project)
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                yield folder / name


def deadletter(home: Path, project: str, name: str, body: dict) -> Path:
    """Keep a candidate (or a damaged file's bytes) and its reason under deadletter/."""
    path = deadletter_dir(home, project) / name
    if not path.exists():
        write_atomic(path, orjson.dumps(body, option=orjson.OPT_INDENT_2))
    return path


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
