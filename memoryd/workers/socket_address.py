"""Where a home's control socket is, and how to reach it: the client's side needs only
this, not the socket's server side (its extension, the authority and apsw)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from memoryd.base.config import CONTROL_SOCKET_FILE

#: Longest socket address ``bind``/``connect`` take (``sun_path`` holds 108 bytes
#: with its terminating NUL; 104 on some systems).
_SUN_PATH_MAX = 103


def socket_path(home: Path) -> Path:
    return Path(home) / CONTROL_SOCKET_FILE


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """``path`` as an AF_UNIX address. A home deep in the file system (a diagnose
    workspace, a test's temporary directory) can make the socket's path longer than
    ``sun_path`` holds; it is then reached through its directory opened as a file
    descriptor (``/proc/self/fd/N/name``: short whatever the depth), closed after."""
    text = str(path)
    if len(os.fsencode(text)) <= _SUN_PATH_MAX:
        yield text
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)
