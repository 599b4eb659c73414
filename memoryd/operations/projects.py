"""Projects: ingest a repository into one, list, rename and remove them, and which
project a request means."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.base.config import ARCHIVE_DIR, AUTHORITY_FILE, FOLLOW_POLL_SECONDS
from memoryd.base.errors import MemorydError, SupervisorRunning, UsageError
from memoryd.base.locks import running_supervisor
from memoryd.base.times import iso_time

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd

# The stores' modules are imported in the methods that read them: a request a running
# supervisor answers (a routed status or search) opens no store and imports none.


@dataclass(frozen=True)
class Projects:
    """The projects of ``md``'s home."""

    md: Memoryd

    def ingest(
        self,
        path: str | Path,
        project: str | None = None,
        *,
        excludes: list[str] | tuple[str, ...] | None = None,
        include_hidden: bool | None = None,
        include_secrets: bool | None = None,
        wait: bool = False,
        workers: int | None = None,
        on_progress: Callable[[dict], None] | None = None,
        started: float | None = None,
    ) -> dict:
        """Enqueue an ingest of the repository at ``path``; with ``wait``, see it through
        (the summary's time runs from ``started``, default now: the command's start).
        Hidden files and credential files are skipped unless included explicitly. The
        choices of files (``excludes``, ``include_*``; None: not given) are stored with
        the project: one not given is the stored one (else the default), one given
        replaces it, and the answer says which (``options``, ``options_replaced``)."""
        from memoryd.ingest import runner as ingest_runner
        from memoryd.storage import vectors

        md = self.md
        root = ingest_runner.resolve_root(path)
        vectors.check(md.db, md.config)  # an encoder change needs a rebuild first
        given = {"excludes": excludes, "include_hidden": include_hidden,
                 "include_secrets": include_secrets}  # fmt: skip
        began = ingest_runner.start(md.db, root, project, given)
        name, options = began["project"], began["options"]
        chosen = {k: began[k] for k in ("options", "options_replaced", "options_stored")}
        if not wait:
            sup = running_supervisor(md.home)
            return {"project": name, "run": began["run"], "queued": True,
                    "joined": began["joined"], "supervisor": sup, **chosen}  # fmt: skip
        state = ingest_runner.follow(
            md.db,
            md.home,
            began["run"],
            name,
            workers=workers or md.config.workers,
            drain="memoryd.operations.ingest_drain",
            on_progress=on_progress,
            started=started,
            options=options,
        )
        return {**ingest_runner.summary(state, name, md.config.max_file_bytes), **chosen}

    def default(self, project: str | None) -> str:
        """The named project; else the only one; else the one named like the cwd."""
        if project:
            return project
        from memoryd.storage.corpus import project_stats

        names = [p["project"] for p in project_stats(self.md.reader)]
        if len(names) == 1:
            return names[0]
        if Path.cwd().name in names:
            return Path.cwd().name
        raise UsageError(
            "name a project with --project, or search them all with --all; known projects: "
            f"{', '.join(names) or 'none'}"
        )

    def ingested(self) -> list[str]:
        """The projects of the authority (none before the first ingest)."""
        from memoryd.storage.corpus import project_stats

        if not (self.md.home / AUTHORITY_FILE).exists():
            return []
        return [p["project"] for p in project_stats(self.md.reader)]

    def require(self, name: str) -> None:
        """Refuse a project name neither ingested nor archived into (UNKNOWN_PROJECT)."""
        ingested = self.ingested()
        if name in ingested:
            return
        has_archive = (self.md.home / ARCHIVE_DIR).exists()
        archived = self.md.archive("projects", {})["projects"] if has_archive else []
        if name not in archived:
            from memoryd.storage.corpus import UnknownProject, unknown_project_message

            known = sorted({*ingested, *archived})
            raise UnknownProject(unknown_project_message(name, known))

    def listing(self) -> list[dict]:
        """Every project: root, live files, chunks, source bytes, created and last ingest."""
        from memoryd.storage.projects import live_listing  # not the job kinds' manage

        return [
            {
                **p,
                "created_at": iso_time(p["created_at"]),
                "last_ingest_at": iso_time(p["last_ingest_at"]),
            }
            for p in live_listing(self.md.reader)
        ]

    def show(self, name: str) -> dict:
        """One project: root, files, chunks, the choices of files a plain re-run reuses,
        and its latest ingest run with every file it skipped and why."""
        from memoryd.projects import manage as projects_mod

        shown = projects_mod.show(self.md.reader, name)
        if run := shown["last_run"]:
            times = ("started_at", "scanned_at", "finished_at")
            keep = ("id", *times, "files_done", "bytes_done", "unchanged", "retired",
                    "skipped", "skipped_files")  # fmt: skip
            shown["last_run"] = {k: iso_time(run[k]) if k in times else run[k] for k in keep}
        return {
            **shown,
            "created_at": iso_time(shown["created_at"]),
            "last_ingest_at": iso_time(shown["last_ingest_at"]),
        }

    def rename(self, old: str, new: str) -> dict:
        from memoryd.projects import manage as projects_mod

        renamed = projects_mod.rename(self.md.db, old, new)
        projects_mod.move_memory_dirs(self.md.home, old, new)
        return renamed

    def remove(self, name: str, *, wait: bool = False) -> dict:
        """Queue the bounded removal of a project; with ``wait``, see it through.

        Waiting follows a running supervisor, or runs a draining one here (which
        also runs whatever else is queued).
        """
        from memoryd.projects import manage as projects_mod

        md = self.md
        started = projects_mod.remove(md.db, name)
        projects_mod.drop_memory_dirs(md.home, name)
        if not wait:
            return {**started, "removed": False}
        drained = False
        while projects_mod.removal_pending(md.db, started["job"]):
            if running_supervisor(md.home) is not None:
                time.sleep(FOLLOW_POLL_SECONDS)
            elif drained:
                raise MemorydError(
                    f"removal of project {name!r} stopped before the end; "
                    "see `memoryd jobs dead`, then `memoryd jobs retry --all-dead`"
                )
            else:
                with contextlib.suppress(SupervisorRunning):  # another one took the home
                    md.run(drain=True)
                    drained = True
        return {**started, "removed": True}
