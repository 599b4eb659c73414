"""The data home's privacy: it holds ingested code and conversations.

Every process memoryd starts creates files private to its user, whatever the
caller's umask: :func:`private_umask` sets the process umask to ``0o077`` when a
home is opened (workers, the retention worker and forked or spawned supervisors
inherit it), and :func:`make_private` tightens a home created before (0700
directories, 0600 files).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


def private_umask() -> None:
    """New files and directories of this process (and its children) are owner-only."""
    os.umask(PRIVATE_UMASK)


def _tighten(path: Path, mode: int) -> None:
    """chmod ``path`` to ``mode`` if it grants anything to group or others."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & PRIVATE_UMASK:
            os.chmod(path, mode)


def make_private(home: Path) -> None:
    """Owner-only modes on the home and everything in it (a home written by an older
    memoryd, or by a process that did not go through :func:`private_umask`)."""
    _tighten(home, DIR_MODE)
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames:
            _tighten(Path(dirpath, name), DIR_MODE)
        for name in filenames:
            _tighten(Path(dirpath, name), FILE_MODE)
