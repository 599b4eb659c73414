"""Archive content handed to the retention worker as a file, never inside a job.

With a supervisor running, ``archive add`` writes the transcript's arguments to
``$HOME/spool/<sha256>.json`` (0600, in a 0700 directory) and enqueues only a
reference: the file name, its hash and the request ids of the versions it will
create. The job row in ``authority.db`` therefore never holds archive content,
so nothing of a transcript outlives its expiry there. The retention worker
reads the file, appends (a synced RocksDB write), then deletes it; a redo after
that answers from the request records. Files nobody took (the caller died
between writing and enqueueing, the job was dead-lettered) are orphans that the
maintenance tick deletes after ``archive_spool_keep_seconds``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

import orjson

from memoryd.base.config import SPOOL_DIR
from memoryd.base.durable import write_atomic
from memoryd.base.errors import SpoolCorrupt

#: Most orphaned spool files one tick deletes.
MAX_ORPHANS_PER_TICK = 1000


def spool_dir(home: Path) -> Path:
    return Path(home) / SPOOL_DIR


def put(home: Path, args: dict) -> dict:
    """Write ``args`` durably to the spool; returns the reference a job carries."""
    data = orjson.dumps(args)
    digest = hashlib.sha256(data).hexdigest()
    name = f"{digest}.json"
    write_atomic(spool_dir(home) / name, data)
    return {"spool": name, "sha256": digest}


def load(home: Path, ref: dict) -> dict | None:
    """The arguments a reference names, or None when the file is gone (already applied)."""
    name = ref["spool"]
    if Path(name).name != name or not name.endswith(".json"):
        raise SpoolCorrupt(f"spool reference {name!r} is not a spool file name")
    try:
        data = (spool_dir(home) / name).read_bytes()
    except FileNotFoundError:
        return None
    if hashlib.sha256(data).hexdigest() != ref["sha256"]:
        raise SpoolCorrupt(
            f"spool file {name} does not match its hash (damaged); add the transcript again"
        )
    return orjson.loads(data)


def remove(home: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (spool_dir(home) / name).unlink()


def purge_orphans(home: Path, keep_seconds: float, *, now: float | None = None) -> int:
    """Delete spool files older than ``keep_seconds`` (wall clock), a bounded number."""
    folder = spool_dir(home)
    if not folder.is_dir():
        return 0
    cutoff = (time.time() if now is None else now) - keep_seconds
    removed = 0
    for entry in os.scandir(folder):
        if removed >= MAX_ORPHANS_PER_TICK:
            break
        with contextlib.suppress(FileNotFoundError):
            if entry.is_file() and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
    return removed
