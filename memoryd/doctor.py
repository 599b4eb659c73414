"""``memoryd doctor``: what is wrong with a home, and what to do about each finding.

Every check reads; none changes the home, and a home that does not exist is
reported, not created.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from memoryd.config import (
    ARCHIVE_DIR,
    AUTHORITY_FILE,
    SUPERVISOR_LOCK_FILE,
    SUPERVISOR_STATE_FILE,
    Config,
)
from memoryd.errors import MemorydError
from memoryd.locks import running_supervisor
from memoryd.queue import JobQueue
from memoryd.retention.boundary import Boundary
from memoryd.storage import open_authority
from memoryd.storage.maintenance import wal_bytes, wal_reader_pids


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # "ok", "warn" (worth knowing) or "action" (something needs doing)
    message: str
    action: str | None = None


def diagnose(home: Path, config: Config) -> list[dict]:
    """Every finding for ``home``, in the order a user should read them."""
    return [asdict(f) for f in _findings(home, config)]


def _findings(home: Path, config: Config) -> Iterator[Finding]:
    for problem in config.problems:
        yield Finding("config", "action", problem, "fix it in memoryd.toml or the environment")
    if not home.exists():
        yield Finding(
            "home",
            "action",
            f"no memoryd home at {home}",
            "create it with `memoryd init`, or name the right one with --home / MEMORYD_HOME",
        )
        return
    has_authority = (home / AUTHORITY_FILE).is_file()
    if not has_authority and not (home / ARCHIVE_DIR).exists():
        yield Finding(
            "home",
            "action",
            f"{home} exists but holds no {AUTHORITY_FILE} (a stray or mistyped home?)",
            "check --home / MEMORYD_HOME, or run `memoryd init` to make it a home",
        )
        return
    yield Finding("home", "ok", str(home))
    pid = running_supervisor(home)
    yield from _supervisor(home, pid)
    if has_authority:
        yield from _authority(home, config, pid)
    yield from _archive(home)
    yield from _disk(home, config)


def _supervisor(home: Path, pid: int | None) -> Iterator[Finding]:
    if pid is not None:
        yield Finding("supervisor", "ok", f"supervisor running, pid {pid}")
    elif (home / SUPERVISOR_STATE_FILE).exists():
        yield Finding(
            "supervisor",
            "warn",
            f"stale {SUPERVISOR_STATE_FILE}: a supervisor died without cleaning up "
            f"(no process holds {SUPERVISOR_LOCK_FILE})",
            "harmless: the next `memoryd run` replaces it and requeues that supervisor's claims",
        )
    else:
        yield Finding("supervisor", "ok", "no supervisor running")


def _authority(home: Path, config: Config, pid: int | None) -> Iterator[Finding]:
    try:
        db = open_authority(home, config)
    except MemorydError as exc:
        yield Finding("authority", "action", str(exc), "see the message; the file is left as is")
        return
    with db:
        counts = JobQueue(db).counts()
        waiting = counts["queued"] + counts["failed"]
        if waiting and pid is None:
            yield Finding(
                "queue",
                "action",
                f"{waiting:,} job(s) queued with no supervisor running",
                "run them: `memoryd run --drain` (or keep `memoryd run` going)",
            )
        else:
            yield Finding("queue", "ok", ", ".join(f"{k} {v:,}" for k, v in counts.items()))
        if counts["dead"]:
            yield Finding(
                "dead jobs",
                "action",
                f"{counts['dead']:,} dead job(s)",
                "read why: `memoryd jobs dead`; requeue: `memoryd jobs retry --all-dead`",
            )
        yield _wal(wal_bytes(db), wal_reader_pids(db), config)


def _wal(size: int, readers: list[int], config: Config) -> Finding:
    if size < int(config.wal_pause_bytes):
        return Finding("wal", "ok", f"WAL {size:,} bytes")
    who = f"read transactions of pid(s) {', '.join(map(str, readers))}" if readers else "nobody"
    return Finding(
        "wal",
        "action",
        f"WAL is {size:,} bytes (claims pause at {int(config.wal_pause_bytes):,}); pinned by {who}",
        "end those readers (or their long transactions), then `memoryd checkpoint-wal`",
    )


def _archive(home: Path) -> Iterator[Finding]:
    if not (home / ARCHIVE_DIR).exists():
        return
    state = Boundary(home / ARCHIVE_DIR).state().get("state")
    if state == "committed":
        yield Finding("archive migration", "ok", "no archive migration in progress")
        return
    yield Finding(
        "archive migration",
        "action",
        f"an archive migration is {state}: retention waits until it is committed",
        "finish it (`memoryd archive migrate --verify`, then `--commit`) or `--rollback`",
    )


def _disk(home: Path, config: Config) -> Iterator[Finding]:
    free = shutil.disk_usage(home).free
    low = int(config.retention_disk_low_bytes)
    if low and free < low:
        yield Finding(
            "disk",
            "action",
            f"{free:,} bytes free under {home}, below retention_disk_low_bytes ({low:,})",
            "free disk space (archival writes stop near the reserve)",
        )
    else:
        yield Finding("disk", "ok", f"{free:,} bytes free")
