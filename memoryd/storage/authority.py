"""The SQLite authority: one connection, its pragmas, migrations and the write helper.

Every write goes through :meth:`Authority.write`: ``BEGIN IMMEDIATE``, a short
busy timeout, and on SQLITE_BUSY (including SQLITE_BUSY_SNAPSHOT) a rollback
and a retry of the *whole* transaction with jittered exponential backoff.
Nothing is ever retried inside an open transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import apsw
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_random_exponential,
)

from memoryd import killpoints
from memoryd.config import AUTHORITY_FILE, PAGE_SIZE, Config
from memoryd.errors import (
    HomeNotWritable,
    NotAnAuthority,
    SchemaTooNew,
    StoreBusy,
    disk_full,
)
from memoryd.storage.schema import CURRENT_VERSION, MIGRATIONS, migrate_data

T = TypeVar("T")


class Authority:
    """An open authority database. Not shared across processes or threads."""

    def __init__(
        self, path: Path, config: Config, *, readonly: bool = False, immutable: bool = False
    ) -> None:
        self.path = Path(path)
        self.config = config
        self._flags = (
            apsw.SQLITE_OPEN_READONLY
            if readonly or immutable
            else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        )
        # immutable: a WAL database on a read-only file system (no -shm can be made)
        self._name = str(self.path)
        if immutable:
            self._name = f"file:{quote(str(self.path.absolute()))}?immutable=1"
            self._flags |= apsw.SQLITE_OPEN_URI
        try:
            self.conn = apsw.Connection(self._name, flags=self._flags)
        except apsw.CantOpenError as exc:
            raise HomeNotWritable(
                f"cannot open the authority {self.path} ({exc}); the data home must be a "
                "writable directory: choose another with --home or MEMORYD_HOME"
            ) from None
        try:
            self._configure()
            if not (readonly or immutable):
                self._migrate()
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            self.conn.close()
            raise NotAnAuthority(
                f"{self.path} is not a usable memoryd authority ({exc}); it was left "
                "untouched: move it aside or choose another home"
            ) from None
        except BaseException:
            self.conn.close()
            raise

    @contextmanager
    def released(self) -> Iterator[None]:
        """Close the connection for the block and reopen it after (e.g. around a fork:
        a child must never inherit an open SQLite connection it could touch)."""
        self.conn.close()
        try:
            yield
        finally:
            self.conn = apsw.Connection(self._name, flags=self._flags)
            self._configure()

    # -- opening ---------------------------------------------------------------

    def _configure(self) -> None:
        """Per-connection settings only: none of these writes the database."""
        c = self.conn
        c.set_busy_timeout(int(self.config.busy_timeout_ms))
        c.execute("PRAGMA synchronous=FULL")
        c.execute(f"PRAGMA journal_size_limit={int(self.config.journal_size_limit)}")
        # Never memory-map: truncating a WAL a sibling has mapped can fault it.
        c.execute("PRAGMA mmap_size=0")
        c.execute(f"PRAGMA cache_size=-{int(self.config.cache_kib)}")
        c.wal_autocheckpoint(0)  # the supervisor checkpoints at safe boundaries

    def _migrate(self) -> None:
        version = self.user_version()
        if version > CURRENT_VERSION:
            raise SchemaTooNew(
                f"{self.path} has schema {version}, newer than this memoryd "
                f"({CURRENT_VERSION}); upgrade memoryd"
            )
        if version == CURRENT_VERSION:
            return  # the common case: no write of any kind
        if version == 0 and not self._has_tables():
            # Only possible before the first table exists (and before WAL). Small
            # pages waste less around compressed bodies (rows do not share a page
            # well); incremental auto-vacuum lets the pages FTS merges free go back
            # to the file system.
            self.conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        if self.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.write(self._apply_migrations)

    def _apply_migrations(self, tx: apsw.Connection) -> None:
        tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_history "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        current = self.user_version()  # re-read under the write lock
        for version, name, sql in MIGRATIONS:
            if version > current:
                tx.execute(sql)
                migrate_data(version, tx)
                tx.execute(
                    "INSERT INTO schema_history VALUES (?, ?, ?)", (version, name, time.time())
                )
                tx.execute(f"PRAGMA user_version={version}")

    def _has_tables(self) -> bool:
        return bool(self.conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0])

    def user_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # -- transactions ----------------------------------------------------------

    def write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction, retried whole on busy."""
        if not self.conn.get_autocommit():
            raise RuntimeError("Authority.write() called inside an open transaction")
        retrying = Retrying(
            retry=retry_if_exception_type(apsw.BusyError),
            wait=wait_random_exponential(multiplier=0.002, max=0.25),
            stop=stop_after_delay(float(self.config.write_retry_seconds)),
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._write_once(fn)
        except apsw.FullError as exc:
            raise disk_full(exc, str(self.path)) from None
        except RetryError as exc:
            raise StoreBusy(
                f"{self.path} stayed locked by another writer for "
                f"{self.config.write_retry_seconds:g}s; retry, or find the writer "
                "with `memoryd status`"
            ) from exc.last_attempt.exception()
        raise AssertionError("unreachable")

    def _write_once(self, fn: Callable[[apsw.Connection], T]) -> T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            killpoints.reach("before_commit")
            conn.execute("COMMIT")
        except BaseException:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            raise
        killpoints.reach("after_commit")
        return result

    @contextmanager
    def savepoint(self, name: str = "sp") -> Iterator[None]:
        """A nested scope inside :meth:`write`: undone alone if its body raises."""
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        self.conn.execute(f"RELEASE {name}")

    def query(self, sql: str, bindings: tuple = ()) -> list[tuple]:
        """Run a read statement in autocommit mode and return every row."""
        return self.conn.execute(sql, bindings).fetchall()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Authority:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_authority(
    home: Path, config: Config, *, readonly: bool = False, immutable: bool = False
) -> Authority:
    return Authority(Path(home) / AUTHORITY_FILE, config, readonly=readonly, immutable=immutable)
