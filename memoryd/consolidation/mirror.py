"""The markdown mirror: one human-readable file per record under ``memory/<project>/``.

SQLite is the authority; the mirror is written after the commit that changed a
record. Every record change bumps the record's ``seq`` (per project); the
mirror keeps the last ``seq`` it wrote in ``memory/<project>/.seq``, and
:func:`sync` writes every record changed since.

The writing is a job of its own, ``memory.mirror`` (one live per project), that
a consolidation commit enqueues together with the records it changed: a crash
between that commit and the files is repaired by the queue re-running the job,
and the files are written by the other worker while the next consolidation run
decides (the mirror is off the deciding path). A mirror job that finishes
behind the records (a commit landed while it ran, and that commit's enqueue met
the live job) enqueues the next one. ``memoryd rebuild`` rewrites the mirror
whole; ``rebuild --verify`` compares it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd.base.durable import write_atomic
from memoryd.base.home import DIR_MODE
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.storage import records
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

MIRROR = "memory.mirror"
MIRROR_DIR = "memory"
SEQ_FILE = ".seq"
LOCK_FILE = ".lock"


def mirror_dir(home: Path, project: str) -> Path:
    return Path(home) / MIRROR_DIR / project


def _iso(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def render(rec: dict) -> str:
    """A record as markdown (the same record always renders the same)."""
    lines = [
        f"# {rec['kind']} {rec['id']}",
        "",
        f"- status: {rec['status']}",
        f"- scope: {rec['scope']}",
        f"- count: {rec['count']}",
        f"- triggers: {', '.join(rec['triggers']) or '-'}",
        f"- refs: {', '.join(rec['refs']) or '-'}",
        f"- sources: {', '.join(rec['sources']) or '-'}",
        f"- pointer: {rec['pointer'] or '-'}",
        f"- created: {_iso(rec['created_at'])}",
        f"- last seen: {_iso(rec['last_seen_at'])}",
        "",
        rec["text"],
        "",
    ]
    return "\n".join(lines)


def watermark(folder: Path) -> int:
    """The last record ``seq`` the mirror in ``folder`` holds (0: none)."""
    try:
        return int((folder / SEQ_FILE).read_text())
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def locked(home: Path) -> Iterator[None]:
    """The mirrors' lock (``memory/.lock``): a sync reads the records and writes their
    files under it, and a forget holds it from removing the files to its commit, so
    no sync reads a record before that commit and writes its file back after."""
    root = Path(home) / MIRROR_DIR
    root.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # drops the lock


def sync(home: Path, conn: Any, project: str, pid: int) -> int:
    """Write the records changed since the mirror's watermark. Returns files written."""
    folder = mirror_dir(home, project)
    with locked(home):
        rows = records.mirror_rows(conn, pid, watermark(folder))
        if rows:
            folder.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        for _, rec in rows:  # in place: a torn file is rewritten, the watermark moves after
            (folder / f"{rec['id']}.md").write_text(render(rec), encoding="utf-8")
        if rows:
            write_atomic(folder / SEQ_FILE, str(rows[-1][0]).encode(), durable=False)
    return len(rows)


def _on_disk(folder: Path) -> set[str]:
    with contextlib.suppress(FileNotFoundError):
        return {n for n in os.listdir(folder) if n.endswith(".md")}
    return set()


def rebuild(home: Path, conn: Any, project: str, pid: int) -> int:
    """Rewrite the project's mirror from the authority (stray files removed)."""
    folder = mirror_dir(home, project)
    rows = records.mirror_rows(conn, pid, 0)
    keep = {f"{rec['id']}.md" for _, rec in rows}
    for name in _on_disk(folder) - keep:
        (folder / name).unlink()
    (folder / SEQ_FILE).unlink(missing_ok=True)
    return sync(home, conn, project, pid)


def forget(home: Path, project: str, ids: list[str], seq: int) -> int:
    """Remove the files of records being forgotten and take the watermark back to
    ``seq``, the project's last change among the records kept; the caller holds
    :func:`locked` until the records' delete has committed (no sync in between writes
    a file back). A change numbers itself after the project's last one, so forgetting
    the last change would otherwise number the next at or below the watermark, never
    mirrored. Returns the files removed."""
    folder = mirror_dir(home, project)
    removed = 0
    for rid in ids:
        with contextlib.suppress(FileNotFoundError):
            (folder / f"{rid}.md").unlink()
            removed += 1
    if watermark(folder) > seq:
        write_atomic(folder / SEQ_FILE, str(seq).encode(), durable=False)
    return removed


def verify(home: Path, conn: Any, project: str, pid: int) -> list[str]:
    """Names of mirror files that are missing, stray or not what the authority says."""
    folder = mirror_dir(home, project)
    expected = {f"{rec['id']}.md": render(rec) for _, rec in records.mirror_rows(conn, pid, 0)}
    present = _on_disk(folder)
    bad = sorted((present - set(expected)) | (set(expected) - present))
    for name in sorted(present & set(expected)):
        try:
            if (folder / name).read_text(encoding="utf-8") != expected[name]:
                bad.append(name)
        except (OSError, UnicodeDecodeError):
            bad.append(name)
    return bad


# -- the job --------------------------------------------------------------------------


def job_spec(project: str, pid: int) -> JobSpec:
    """The project's mirror job (at most one live: its dedupe key)."""
    return JobSpec(
        MIRROR, {"project": project, "project_id": pid}, project=project,
        dedupe_key=f"{MIRROR}:{pid}",
    )  # fmt: skip


def run(ctx: WorkContext, p: dict) -> dict:
    """Bring the project's mirror up to the committed records; the ``seq`` it reached."""
    sync(ctx.home, ctx.authority().conn, p["project"], p["project_id"])
    return {"seq": watermark(mirror_dir(ctx.home, p["project"]))}


def apply(actx: ApplyContext, done: list[tuple[ClaimedJob, dict]]) -> None:
    """A mirror that ended behind the records goes on in a next job."""
    for job, out in done:
        p = job.data
        if records.next_seq(actx.tx, p["project_id"]) - 1 > out["seq"]:
            actx.queue.enqueue_in(actx.tx, [job_spec(p["project"], p["project_id"])])


KIND = JobKind(MIRROR, run, apply, doc="write a project's memory records as markdown files")
