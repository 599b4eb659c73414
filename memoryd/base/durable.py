"""Whole-file writes in the home: a temporary name, then a rename (0600).

A crash leaves the whole new file or the old one, never a part. With
``durable``, the file, its directory and the parent of each directory made for
it are fsynced (a directory's entry is durable only then). Whatever fails on the
way (a full disk above all) removes the temporary file: a failed write leaves
nothing behind, and a full disk is :class:`~memoryd.base.errors.DiskFull`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memoryd.base.errors import typed_disk_full
from memoryd.base.home import DIR_MODE, FILE_MODE

CREATE_TRIES = 5  # a directory removed under a write is made again this often


def temp_name(path: Path) -> Path:
    """The hidden temporary name of ``path`` for this process (two processes writing
    the same file never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents (0700); returns those made, innermost first."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        with contextlib.suppress(FileExistsError):
            made.mkdir(mode=DIR_MODE)
    return missing


def _create(tmp: Path) -> tuple[int, list[Path]]:
    """Create ``tmp`` (0600) and its directory; returns the descriptor and the
    directories made. A directory may be removed between the mkdir and the open (a
    consolidation run prunes its emptied project directory): then again."""
    for _ in range(CREATE_TRIES):
        made = _make_dirs(tmp.parent)
        with contextlib.suppress(FileNotFoundError):
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), made
    raise FileNotFoundError(f"{tmp.parent} was removed {CREATE_TRIES} times while written to")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` whole (see the module docstring)."""
    tmp = temp_name(path)
    with typed_disk_full(str(path)):
        fd, made = _create(tmp)
        try:
            try:
                _write_all(fd, data)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        if durable:
            for folder in [path.parent, *(d.parent for d in made)]:
                fsync_dir(folder)
