"""The migration boundary and archive format migrations.

The boundary is an inter-process reader-writer lock on a file beside the
archive (POSIX record locks: the OS drops a dead holder's side). A retention
wave holds it **shared** from its migration-state check through its last
delete; migration verification (and commit/rollback) hold it **exclusive**.

A migration re-encodes every payload into a new store directory and moves
through persisted states (``<archive>.migration.json``, written atomically)::

    copying -> awaiting_verification -> verified (rollback-eligible) -> committed
                         \\-> blocked (verification failed; copy again or roll back)

No state file means ``committed`` (no migration in progress). Retention waves
are refused in every state but ``committed``.

Migrations are offline with respect to the archive: each step opens the
archive read-write itself, so the retention worker must have closed it
(otherwise :class:`~memoryd.storage.archive.ArchiveBusy`). Writes that reach the
old archive between copying and verification are carried over: verification
first re-syncs the copy under the exclusive boundary, then compares every
record.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from memoryd.base import killpoints
from memoryd.base.errors import MigrationError, RetentionBlocked
from memoryd.storage.archive import ArchiveStore, BadArchiveInput, migrate
from memoryd.storage.archive.boundary import BoundaryLock
from memoryd.storage.archive.codec import PAYLOAD_FORMATS
from memoryd.storage.archive.migrate import compare as _compare
from memoryd.storage.archive.migrate import sync as _sync

STATES = ("copying", "awaiting_verification", "blocked", "verified", "committed")

#: Crash points of this module (``MEMORYD_KILL_AT``).
KILL_POINTS = (*migrate.KILL_POINTS, "migration_mid_switch")


def _write_json_atomic(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(orjson.dumps(value, option=orjson.OPT_INDENT_2))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class Boundary(BoundaryLock):
    """The boundary lock and migration state of the archive at ``archive_path``."""

    def __init__(self, archive_path: Path | str) -> None:
        super().__init__(archive_path)
        base = self.archive_path.parent / self.archive_path.name
        self.state_path = Path(f"{base}.migration.json")

    # ---- state

    def state(self) -> dict[str, Any]:
        """``{"state": one of STATES, ...details}``; ``committed`` when no migration runs."""
        try:
            return orjson.loads(self.state_path.read_bytes())
        except FileNotFoundError:
            return {"state": "committed"}

    def _set_state(self, value: dict[str, Any] | None) -> None:
        if value is None or value.get("state") == "committed":
            with contextlib.suppress(FileNotFoundError):
                self.state_path.unlink()
            return
        value = {**value, "updated_at": time.time()}
        _write_json_atomic(self.state_path, value)

    @contextlib.contextmanager
    def retention_wave(self) -> Iterator[dict[str, Any]]:
        """Hold the shared side for a whole wave; refuse unless the state is committed.

        Raises :class:`BoundaryBusy` (a migration step holds the exclusive
        side) or :class:`RetentionBlocked` (a migration is in progress).
        """
        lock = self.acquire(shared=True)
        try:
            state = self.state()
            if state["state"] != "committed":
                raise RetentionBlocked(
                    f"retention waves are refused while an archive migration is "
                    f"{state['state']}; finish it (verify and commit) or roll it back",
                    state["state"],
                )
            yield state
        finally:
            lock.release()


class Migration:
    """A payload re-encoding migration of the archive at ``archive_path``.

    Steps (each persisted; each may be re-run after a crash):
    :meth:`copy` -> :meth:`verify` -> :meth:`commit`, or :meth:`rollback` from
    any state. :meth:`recover` finishes a directory switch a crash interrupted.
    """

    def __init__(self, archive_path: Path | str) -> None:
        self.boundary = Boundary(archive_path)
        self.path = self.boundary.archive_path
        self.next_path = Path(f"{self.path}.next")
        self.prev_path = Path(f"{self.path}.prev")
        self.old_path = Path(f"{self.path}.old")

    def state(self) -> dict[str, Any]:
        return self.boundary.state()

    # ---- steps

    def copy(self, target_format: int = 2) -> dict[str, Any]:
        """Copy the archive into ``<archive>.next`` re-encoding payloads to ``target_format``.

        Allowed when no migration runs or a previous copy was interrupted or
        blocked (it starts over). Returns the new state (awaiting_verification).
        """
        if target_format not in PAYLOAD_FORMATS:
            raise BadArchiveInput(f"target format must be one of {PAYLOAD_FORMATS}")
        self.recover()
        state = self.state()
        if state["state"] not in ("committed", "copying", "blocked"):
            raise MigrationError(
                f"a migration is {state['state']}: verify and commit it, or roll it back, "
                "before copying again"
            )
        with self.boundary.exclusive():
            self.boundary._set_state(
                {"state": "copying", "target_format": target_format, "started_at": time.time()}
            )
            with ArchiveStore.open_primary(self.path) as src:
                source_format = src.payload_format
                if self.next_path.exists():
                    shutil.rmtree(self.next_path)
                with ArchiveStore.open_primary(self.next_path, payload_format=target_format) as dst:
                    copied = _sync(src, dst, target_format, full=True)
            state = {
                "state": "awaiting_verification",
                "source_format": source_format,
                "target_format": target_format,
                "copied_keys": copied,
                "started_at": self.state().get("started_at"),
            }
            self.boundary._set_state(state)
            return state

    def verify(self) -> dict[str, Any]:
        """Under the exclusive boundary: carry over later writes, compare every record,
        then switch the directories (the old archive stays as ``<archive>.prev``).

        State becomes ``verified`` (rollback-eligible) or ``blocked`` (with
        ``reason``). Raises :class:`BoundaryBusy` while a retention wave runs.
        """
        self.recover()
        state = self.state()
        if state["state"] not in ("awaiting_verification", "blocked"):
            raise MigrationError(f"nothing to verify: the migration is {state['state']}")
        if not self.next_path.exists():
            raise MigrationError("the copy is missing: run the copy step again")
        with self.boundary.exclusive():
            fmt = state["target_format"]
            with (
                ArchiveStore.open_primary(self.path) as src,
                ArchiveStore.open_primary(self.next_path) as dst,
            ):
                carried = _sync(src, dst, fmt, full=False)
                problems = _compare(src, dst, fmt)
                postings = dst.postings.verify_postings()
            if problems or not postings["ok"]:
                reason = problems[:5] or [f"postings differ: {postings}"]
                blocked = {**state, "state": "blocked", "reason": reason}
                self.boundary._set_state(blocked)
                return blocked
            self._switch(state, carried)
            return self.state()

    def _switch(self, state: dict[str, Any], carried: int) -> None:
        switching = {**state, "state": "awaiting_verification", "switching": "verify"}
        self.boundary._set_state(switching)
        os.replace(self.path, self.prev_path)
        killpoints.reach("migration_mid_switch")
        os.replace(self.next_path, self.path)
        self.boundary._set_state(
            {
                "state": "verified",
                "source_format": state["source_format"],
                "target_format": state["target_format"],
                "carried_keys": carried,
                "verified_at": time.time(),
            }
        )

    def commit(self) -> dict[str, Any]:
        """Make a verified migration final: drop the rollback copy."""
        self.recover()
        state = self.state()
        if state["state"] != "verified":
            raise MigrationError(
                f"only a verified migration can be committed (it is {state['state']})"
            )
        with self.boundary.exclusive():
            shutil.rmtree(self.prev_path, ignore_errors=True)
            self.boundary._set_state(None)
        return self.state()

    def rollback(self) -> dict[str, Any]:
        """Abandon the migration.

        Before verification: drop the copy. After verification: re-encode the
        current archive (including writes made since) back to the source
        format, compare, and switch back, so nothing written since is lost.
        """
        self.recover()
        state = self.state()
        with self.boundary.exclusive():
            if state["state"] in ("copying", "awaiting_verification", "blocked"):
                shutil.rmtree(self.next_path, ignore_errors=True)
                self.boundary._set_state(None)
                return self.state()
            if state["state"] != "verified":
                raise MigrationError("no migration to roll back")
            fmt = state["source_format"]
            shutil.rmtree(self.next_path, ignore_errors=True)
            with (
                ArchiveStore.open_primary(self.path) as src,
                ArchiveStore.open_primary(self.next_path, payload_format=fmt) as dst,
            ):
                _sync(src, dst, fmt, full=True)
                problems = _compare(src, dst, fmt)
            if problems:
                raise MigrationError(f"rollback copy differs: {problems[:5]}")
            self.boundary._set_state({**state, "switching": "rollback"})
            os.replace(self.path, self.old_path)
            killpoints.reach("migration_mid_switch")
            os.replace(self.next_path, self.path)
            shutil.rmtree(self.old_path, ignore_errors=True)
            shutil.rmtree(self.prev_path, ignore_errors=True)
            self.boundary._set_state(None)
            return self.state()

    def recover(self) -> dict[str, Any]:
        """Finish a directory switch that a crash interrupted (idempotent)."""
        state = self.state()
        switching = state.get("switching")
        if not switching:
            return state
        if switching == "verify":
            if not self.path.exists() and self.next_path.exists():
                os.replace(self.next_path, self.path)
            if self.path.exists() and self.prev_path.exists():
                self.boundary._set_state(
                    {
                        "state": "verified",
                        "source_format": state["source_format"],
                        "target_format": state["target_format"],
                        "verified_at": time.time(),
                    }
                )
            else:  # the first rename never happened
                self.boundary._set_state({k: v for k, v in state.items() if k != "switching"})
        elif switching == "rollback":
            if not self.path.exists() and self.next_path.exists():
                os.replace(self.next_path, self.path)
            if self.path.exists() and self.old_path.exists():
                shutil.rmtree(self.old_path, ignore_errors=True)
                shutil.rmtree(self.prev_path, ignore_errors=True)
                self.boundary._set_state(None)
            else:
                self.boundary._set_state({k: v for k, v in state.items() if k != "switching"})
        return self.state()
