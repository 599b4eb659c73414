"""Memory records: stage candidates for consolidation, follow them to their outcome,
and list, show, retry, forget and sweep records (:mod:`memoryd.consolidation.service`)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.base.config import FOLLOW_POLL_SECONDS, MEMORY_SETTLE_SECONDS
from memoryd.base.errors import MemorydError, SupervisorRunning, typed_disk_full
from memoryd.base.locks import running_supervisor
from memoryd.base.times import iso_time
from memoryd.operations.projects import Projects

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd

RECORD_TIMES = ("created_at", "updated_at", "last_seen_at")


def _record_view(rec: dict) -> dict:
    """A memory record as the API shows it: times as ISO strings, no internal ids."""
    out = {k: iso_time(v) if k in RECORD_TIMES else v for k, v in rec.items()}
    out.pop("project_id", None)
    return out


@dataclass(frozen=True)
class Memory:
    """The memory records of ``md``'s home."""

    md: Memoryd

    def add(
        self, data: bytes, project: str, *, wait: bool = False, consolidate: bool = False
    ) -> dict:
        """Validate candidate lines, stage the valid ones, enqueue the project's
        consolidation; with ``wait``, see every staged candidate to its outcome. Without
        it, ``supervisor`` names the one that will consolidate them (None: nothing runs);
        with ``consolidate`` one is started when none runs (:meth:`Memoryd.consolidate`)."""
        from memoryd.consolidation import service as memory_service

        md = self.md
        md.ensure_home()
        with typed_disk_full(str(md.home)):
            added = memory_service.add(md.db, md.home, md.config, data, project)
        if wait:
            return {**added, "outcomes": self._wait(added["candidates"])}
        if consolidate:
            return {**added, **md.consolidate()}
        return {**added, "supervisor": running_supervisor(md.home), "started": False}

    def settle(
        self, ids: list[str], *, timeout: float = MEMORY_SETTLE_SECONDS, through_pause: bool = False
    ) -> dict:
        """Wait up to ``timeout`` for staged candidates no run has seen yet, keeping a
        supervisor at them (:meth:`Memoryd.consolidate`); not while its claims are paused
        (a reader pins the WAL: they wait for it, not for this timeout) unless
        ``through_pause`` (``forget`` by text needs the record, and waits for it).
        ``{"open": [id], "pending": ...}``: the ids still worth following (unseen or
        parked), and what search cannot see yet and why
        (:func:`memoryd.consolidation.settle.pending`; None: every one is decided into a
        record)."""
        from memoryd.consolidation import settle

        md = self.md
        deadline = time.monotonic() + timeout
        while True:
            found = settle.states(md.reader.conn, ids)
            if not settle.unseen_ids(found, ids) or time.monotonic() >= deadline:
                break
            if md.consolidate()["supervisor"] is None:
                break  # nothing will decide them: say why rather than wait
            if not through_pause and (md.consolidator() or {}).get("claims_paused"):
                break  # nor will a paused supervisor until its WAL's reader lets go: say so
            time.sleep(FOLLOW_POLL_SECONDS)
        return {
            "open": settle.open_ids(found, ids),
            "pending": settle.pending(found, ids, md.consolidator(), md.drain.failure),
        }

    def _wait(self, ids: list[str]) -> list[dict]:
        """Follow a running supervisor, or drain one here, until every id is decided
        (:class:`~memoryd.base.errors.QueuePaused` once its claims stayed paused
        ``wait_paused_seconds``)."""
        from memoryd.consolidation import service as memory_service
        from memoryd.workers.walguard import PauseWatch

        md = self.md
        bound = md.config.wait_paused_seconds
        watch = PauseWatch(md.home, bound)
        drained = False
        while (done := memory_service.outcomes(md.db, ids)) is None:
            if running_supervisor(md.home) is not None:
                watch.check()
                time.sleep(FOLLOW_POLL_SECONDS)
            elif drained:
                raise MemorydError(
                    "consolidation stopped before every candidate was decided; "
                    "see `memoryd memory status` and `memoryd jobs dead`"
                )
            else:
                with contextlib.suppress(SupervisorRunning):  # another one took the home
                    md.run(drain=True, paused_bound=bound)
                    drained = True
        return done

    def listing(
        self, project: str | None, *, status: str | None = None, kind: str | None = None,
        limit: int = 100,
    ) -> list[dict]:  # fmt: skip
        from memoryd.consolidation import service as memory_service

        name = Projects(self.md).default(project)
        found = memory_service.list_records(self.md.reader, name, status, kind, limit)
        return [_record_view(r) for r in found]

    def show(self, record_id: str) -> dict:
        from memoryd.consolidation import service as memory_service

        rec = memory_service.show(self.md.reader, record_id)
        history = [{**h, "at": iso_time(h["at"])} for h in rec["history"]]
        return {**_record_view(rec), "history": history}

    def status(self, project: str | None = None) -> dict:
        from memoryd.consolidation import service as memory_service

        out = memory_service.status(self.md.reader, self.md.home, project)
        runs = [{**r, "at": iso_time(r["at"])} for r in out["last_runs"]]
        return {**out, "last_runs": runs}

    def deadletters(self, project: str | None = None) -> list[dict]:
        from memoryd.consolidation import service as memory_service

        return [
            {**d, "due_at": iso_time(d["due_at"]), "updated_at": iso_time(d["updated_at"])}
            for d in memory_service.deadletters(
                self.md.reader, project, self.md.config.memory_adjudicator
            )
        ]

    def retry(self, ids: list[str], *, every: bool = False, project: str | None = None) -> dict:
        from memoryd.consolidation import service as memory_service

        return memory_service.retry(self.md.db, self.md.home, ids, every=every, project=project)

    def forget(self, record_id: str) -> dict:
        """Delete a memory record (and the records it replaced) with every byte of its
        text in the home. A write like ``memory retry``: straight to the authority (SQLite
        serializes it with a running supervisor's commits, which re-decide a candidate
        whose target is gone)."""
        from memoryd.consolidation import service as memory_service

        self.md.require_home()
        return memory_service.forget(self.md.db, self.md.home, record_id)

    def forget_text(self, text: str, project: str | None = None) -> dict:
        """Forget the active record(s) of a project whose text is ``text`` (compared as
        duplicates are: case, punctuation and spacing aside): what an agent that saved a
        fact knows of it. Several records, several answers; none, NO_SUCH_RECORD."""
        from memoryd.consolidation import service as memory_service

        self.md.require_home()
        name = Projects(self.md).default(project)
        ids = memory_service.with_text(self.md.db, name, text)
        return {"project": name, "forgotten": [self.forget(i) for i in ids]}

    def sweep(
        self,
        project: str | None,
        *,
        older_than_days: float = 0.0,
        dry_run: bool = False,
        archive_stale: bool = False,
    ) -> dict:
        from memoryd.consolidation import service as memory_service

        name = Projects(self.md).default(project)
        return memory_service.sweep(
            self.md.db,
            self.md.home,
            name,
            older_than_days=older_than_days,
            dry_run=dry_run,
            archive_stale=archive_stale,
        )
