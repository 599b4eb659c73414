"""``memoryd doctor``: what is wrong with a home, and what to do about each finding.

Every check reads; none changes the home, and a home that does not exist is
reported, not created. ``--deep`` also reads every byte of the stores: SQLite's
``integrity_check`` of the authority (b-trees, and each FTS5 index's own integrity
check) and every key and value of the archive with its blocks' checksums.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from memoryd.base import hooklog, hookspool
from memoryd.base.config import (
    ARCHIVE_DIR,
    AUTHORITY_FILE,
    SUPERVISOR_LOCK_FILE,
    SUPERVISOR_STATE_FILE,
    Config,
)
from memoryd.base.errors import MemorydError, corruption, is_corruption
from memoryd.base.locks import running_supervisor
from memoryd.base.times import iso_time
from memoryd.queue import JobReads
from memoryd.retention import clockguard
from memoryd.retention.boundary import Boundary
from memoryd.storage import open_authority
from memoryd.storage.authority import WAL_FILES
from memoryd.storage.corpus import project_names
from memoryd.storage.maintenance import integrity_check, wal_bytes, wal_reader_pids


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # "ok", "warn" (worth knowing) or "action" (something needs doing)
    message: str
    action: str | None = None


def diagnose(home: Path, config: Config, *, deep: bool = False) -> list[dict]:
    """Every finding for ``home``, in the order a user should read them; ``deep`` adds
    the full reads of both stores."""
    findings = list(_findings(home, config))
    if deep and (home / AUTHORITY_FILE).is_file():
        findings += _authority_integrity(home, config)
    if deep and (home / ARCHIVE_DIR).exists():
        findings += _archive_integrity(home)
    return [asdict(f) for f in findings]


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
    if pid is not None and (replaced := _replaced_wal(home / AUTHORITY_FILE, pid)):
        yield Finding(
            "wal",
            "action",
            f"the supervisor (pid {pid}) writes {replaced}, which is no longer the file at "
            "its path (deleted or replaced while it ran): its commits since are lost",
            "stop it (`memoryd stop`, or kill it if it does not stop), then start again; "
            "never delete authority.db-wal or -shm while memoryd runs",
        )
    if has_authority:
        yield from _authority(home, config, pid)
    yield from _archive(home)
    yield from _retention_clock(home)
    yield from _hooks(home, config)
    yield from _disk(home, config)


#: Hook failures older than this are history, not findings.
HOOK_FAILURE_WINDOW_SECONDS = 86400.0


def _hooks(home: Path, config: Config) -> Iterator[Finding]:
    """The agents' hooks: their spool's size against its bound, and what failed in
    the last day (a full spool, a recall that timed out, bad input)."""
    try:
        size = hookspool.spool_size(hookspool.spool_dir(str(home)))
    except FileNotFoundError:
        size = 0
    count, bound = hooklog.waiting_events(str(home)), config.hook_spool_max_bytes
    if size and size >= bound * 0.9:
        yield Finding(
            "hooks",
            "action",
            f"the hook spool holds {size} bytes of {bound} (hook_spool_max_bytes, "
            f"{count} events): past it hooks drop events",
            "start the supervisor (`memoryd run`, or `memoryd service install`) so it archives "
            "them, or raise hook_spool_max_bytes",
        )
    recent = [f for f in hookspool.read_failures(str(home))
              if f.get("at", 0) > time.time() - HOOK_FAILURE_WINDOW_SECONDS]  # fmt: skip
    if recent:
        codes = Counter(f.get("code") for f in recent)
        last = recent[-1]
        yield Finding(
            "hooks",
            "action" if "SPOOL_FULL" in codes else "warn",
            f"{len(recent)} hook failure(s) in the last day ("
            + ", ".join(f"{c} {n}" for c, n in codes.most_common())
            + f"); the last, at {iso_time(last.get('at'))} ({last.get('event')}): "
            f"{last.get('message')}",
            f"see {home / hookspool.HOOKS_DIR / hookspool.FAILURES_FILE}",
        )
    elif count or (home / hookspool.HOOKS_DIR).exists():
        yield Finding("hooks", "ok", f"{count} event(s) waiting in the spool ({size} bytes)")


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


def _replaced_wal(db_path: Path, pid: int) -> str | None:
    """The name of a WAL or shared-memory file that process ``pid`` holds open but that
    is no longer the file at its path; None when its files are the ones there (or its
    descriptors cannot be read)."""
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        fds = list(fd_dir.iterdir())
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(fd).removesuffix(" (deleted)")
            if target not in (f"{db_path}{suffix}" for suffix in WAL_FILES):
                continue
            held = fd.stat()
            try:
                there = os.stat(target)
            except FileNotFoundError:
                return Path(target).name
            if (held.st_dev, held.st_ino) != (there.st_dev, there.st_ino):
                return Path(target).name
    return None


def _authority(home: Path, config: Config, pid: int | None) -> Iterator[Finding]:
    try:
        db = open_authority(home, config)
    except MemorydError as exc:
        yield Finding("authority", "action", str(exc), "see the message; the file is left as is")
        return
    with db:
        counts = JobReads(db).counts()
        waiting = counts["queued"] + counts["failed"]
        if counts["claimed"] and pid is None:
            yield Finding(
                "queue",
                "action",
                f"{counts['claimed']:,} job(s) claimed by a supervisor that is no longer "
                "running (killed?): nothing will finish them until a supervisor starts",
                "start one: `memoryd run --drain` (or `memoryd run`); it requeues those "
                "claims at its start",
            )
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
    if size < config.wal_pause_bytes:
        return Finding("wal", "ok", f"WAL {size:,} bytes")
    who = f"read transactions of pid(s) {', '.join(map(str, readers))}" if readers else "nobody"
    return Finding(
        "wal",
        "action",
        f"WAL is {size:,} bytes (claims pause at {config.wal_pause_bytes:,}); pinned by {who}",
        "end those readers (or their long transactions), then `memoryd checkpoint-wal`",
    )


def _retention_clock(home: Path) -> Iterator[Finding]:
    clock = clockguard.state(home)
    if refused := clock.get("refused"):
        yield Finding(
            "retention clock",
            "action",
            f"retention passes refused since {iso_time(refused['since'])}: the wall clock "
            f"stepped {refused['step_seconds']:+,.0f} s against the time elapsed since boot",
            "check the system time; if it is right, `memoryd retention run --confirm-clock`",
        )
    elif behind := clock.get("behind"):
        yield Finding(
            "retention clock",
            "warn",
            f"the wall clock is {behind:,.0f} s behind the retention clock",
            "nothing expires by it until time catches up; check the system time",
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
    low = config.retention_disk_low_bytes
    if low and free < low:
        yield Finding(
            "disk",
            "action",
            f"{free:,} bytes free under {home}, below retention_disk_low_bytes ({low:,})",
            "free disk space (archival writes stop near the reserve)",
        )
    else:
        yield Finding("disk", "ok", f"{free:,} bytes free")


# -- deep: every byte of the stores ----------------------------------------------------

_FTS_TABLE = re.compile(r'table "(fts_(\d+)|memory_fts)"')
REBUILD = "rebuild it from the stored rows: `memoryd rebuild` (then `memoryd doctor --deep`)"
RESTORE_AUTHORITY = (
    "restore authority.db from a backup: the damage is in stored rows, which `memoryd "
    "rebuild` cannot make again (it rebuilds the indexes derived from them)"
)
RESTORE_ARCHIVE = (
    "restore the archive directory from a backup (RocksDB cannot make a damaged or lost "
    "file again); until then reads that reach it answer CORRUPT"
)


def _authority_integrity(home: Path, config: Config) -> list[Finding]:
    """SQLite's ``integrity_check`` on a read-only connection (it blocks no writer): the
    b-trees, and each FTS5 table's own integrity check. A damaged full-text index is
    derived (rebuild it); any other damage is in stored rows (restore)."""
    try:
        with open_authority(home, config, readonly=True) as db:
            lines = integrity_check(db)
            names = project_names(db)
    except Exception as exc:
        if not is_corruption(exc):
            raise
        return [
            Finding("authority integrity", "action", str(corruption(exc, "")), RESTORE_AUTHORITY)
        ]
    if lines == ["ok"]:
        return [Finding("authority integrity", "ok", "integrity_check ok (full-text indexes too)")]
    return [_authority_finding(line, names) for line in lines]


def _authority_finding(line: str, names: dict[int, str]) -> Finding:
    table = _FTS_TABLE.search(line)
    if table is None:
        return Finding("authority integrity", "action", f"authority.db: {line}", RESTORE_AUTHORITY)
    pid = table.group(2)
    what = (
        "the memory records' full-text index"
        if pid is None
        else f"the full-text index of project {names.get(int(pid), table.group(1))}"
    )
    return Finding("authority integrity", "action", f"{what} is damaged: {line}", REBUILD)


def _archive_integrity(home: Path) -> list[Finding]:
    """Every key and value of the archive read through a read-only instance (the
    supervisor may hold it read-write) with checksums checked; a lost file (an SST, the
    CURRENT or MANIFEST) shows at the open."""
    from memoryd.storage.archive import ArchiveStore

    try:
        with ArchiveStore.open_read_only(home / ARCHIVE_DIR) as store:
            read = store.verify_checksums()
    except MemorydError as exc:
        return [Finding("archive integrity", "action", str(exc), RESTORE_ARCHIVE)]
    return [Finding("archive integrity", "ok", f"{read:,} keys read, every checksum ok")]
