"""The home as a whole: its status and settings, the WAL checkpoint, rebuilding what
is derived, and stopping its supervisor."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryd.base.config import FOLLOW_POLL_SECONDS, SETTINGS, STOP_MARGIN_SECONDS
from memoryd.base.errors import MemorydError, StoreBusy, typed_corruption
from memoryd.base.locks import running_supervisor
from memoryd.operations.projects import Projects

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd


def _waiting(queue: dict[str, int]) -> int:
    """Jobs that wait for a supervisor to run them (queued, or failed and to be retried)."""
    return queue["queued"] + queue["failed"]


def _exited(pid: int) -> bool:
    """Whether ``pid`` is gone (a zombie waiting for its parent counts as gone)."""
    import psutil  # here: `memoryd status` without a supervisor never imports it

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _rebuild_part(
    failed: list[dict],
    started: Callable[[str], None],
    name: str,
    where: str,
    fn: Callable,
    *args: Any,
) -> Any:
    """``fn(*args)``, or None with its typed error added to ``failed`` (a damaged store
    is :class:`~memoryd.base.errors.Corrupt`, naming the file, else ``where``)."""
    started(name)
    try:
        with typed_corruption(where):
            return fn(*args)
    except MemorydError as exc:
        failed.append({"part": name, "error": exc.code, "message": str(exc)})
        return None


@dataclass(frozen=True)
class Home:
    """``md``'s home as a whole."""

    md: Memoryd

    def status(self, *, full: bool = True) -> dict:
        """The queue, the supervisor, the authority and the projects. ``full=False``
        leaves out (as None) what a glance does without and a large home pays for: the
        effects' counts (a scan of every effect) and the WAL's reader pids (``/proc/locks``,
        10-20 ms to read on some kernels). A running supervisor's answer is always full."""
        md = self.md
        if (routed := md.routed("status")) is not None:
            return routed
        # here, after routing: a running supervisor's answer needs no store of this process
        from memoryd.queue import JobReads
        from memoryd.storage.effects import effect_counts
        from memoryd.storage.maintenance import wal_bytes, wal_reader_pids

        db = md.reader
        sup = md.supervisor()
        counts = JobReads(md.db).counts()
        return {
            "home": str(md.home),
            "schema": db.user_version(),
            "queue": counts,
            "done_jobs": {"kept": counts["done"], "keep_seconds": md.config.jobs_keep_seconds},
            "waiting_without_supervisor": 0 if sup else _waiting(counts),
            "effects": effect_counts(db) if full else None,
            "wal_bytes": wal_bytes(db),
            "wal_reader_pids": wal_reader_pids(db) if full else None,
            "claims_paused": bool(sup and sup.get("claims_paused")),
            "pause_reason": (sup or {}).get("pause_reason"),
            "supervisor": sup,
            "projects": Projects(md).listing(),  # the same shape as `memoryd projects`
        }

    def config_report(self) -> dict:
        """The effective settings, where each came from, and what was wrong on the way."""
        config = self.md.config
        file = config.file
        return {
            "home": str(self.md.home),
            "config_file": str(file) if file else None,
            "problems": list(config.problems),
            "settings": {
                name: {
                    "value": getattr(config, name),
                    "source": config.sources[name],
                    "help": SETTINGS[name].help,
                }
                for name in SETTINGS
            },
        }

    def checkpoint_wal(self) -> dict:
        """The manual WAL boundary: checkpoint and truncate now, or say who blocked it."""
        from memoryd.storage.maintenance import checkpoint_truncate

        result = checkpoint_truncate(self.md.db)
        return {
            "ok": result.ok,
            "wal_bytes_before": result.wal_bytes_before,
            "wal_bytes_after": result.wal_bytes_after,
            "blocked_by": result.blocked_by,
            "reader_pids": result.reader_pids,
        }

    def rebuild(
        self, *, verify: bool = False, on_part: Callable[[str], None] | None = None
    ) -> dict:
        """Drop and rebuild every derived table; with ``verify``, prove it would match.
        Memory records' index and markdown mirror are derived too. Each part goes on
        when another fails (a damaged archive stops no authority rebuild): what could
        not be done is listed in ``not_rebuilt`` (``not_verified``), each with its typed
        error. ``on_part(name)`` is called as each part starts (a face's progress)."""
        from memoryd.archive.owner import archive_path
        from memoryd.consolidation import service as memory_service
        from memoryd.storage import rebuild as rebuild_mod

        md = self.md
        archived = archive_path(md.home).exists()  # its codes are derived too
        failed: list[dict] = []
        part = functools.partial(_rebuild_part, failed, on_part or (lambda name: None))
        sql, archive = str(md.db.path), str(archive_path(md.home))
        if verify:
            out = part("authority", sql, rebuild_mod.verify, md.db) or {
                "equal": False, "mismatches": [], "pending": {},
            }  # fmt: skip
            mem = part("memory", sql, memory_service.verify, md.db, md.home)
            arch = {"equal": True}  # a part that failed is listed once, as failed
            if archived:
                arch = part("archive", archive, md.archive, "vectors_verify", {}) or arch
            mismatches = out["mismatches"] + (mem or {"mismatches": []})["mismatches"]
            mismatches += [] if arch["equal"] else ["archive/vectors"]
            mismatches += [f"{f['part']} ({f['error']})" for f in failed]
            return {
                **out, "equal": not mismatches, "mismatches": mismatches, "memory": mem,
                "archive": arch, "not_verified": failed,
            }  # fmt: skip
        return {
            "rebuilt": part("authority", sql, rebuild_mod.rebuild, md.db) or {},
            "memory": part("memory", sql, memory_service.rebuild, md.db, md.home),
            "archive": (
                part("archive", archive, md.archive, "vectors_rebuild", {})
                if archived
                else {"versions": 0}
            ),
            "not_rebuilt": failed,
        }

    def stop(self, *, timeout: float | None = None) -> dict:
        """SIGTERM the running supervisor and wait until it has let go of the home."""
        home = self.md.home
        pid = running_supervisor(home)
        if pid is None:
            return {"pid": None, "stopped": False}
        limit = self.md.config.shutdown_grace_seconds + STOP_MARGIN_SECONDS
        deadline = time.monotonic() + (timeout or limit)
        start = time.monotonic()
        import signal  # here: not on every command's start

        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        while running_supervisor(home) == pid or not _exited(pid):
            if time.monotonic() > deadline:
                raise StoreBusy(
                    f"supervisor pid {pid} is still running {timeout or limit:g}s after SIGTERM; "
                    f"it may be finishing work: wait, or `kill -KILL {pid}` (its claims requeue)"
                )
            time.sleep(FOLLOW_POLL_SECONDS)
        return {"pid": pid, "stopped": True, "seconds": round(time.monotonic() - start, 2)}
