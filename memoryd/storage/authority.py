"""The SQLite authority: one connection, its pragmas, migrations and the write helper.

Every write goes through :meth:`Authority.write`: ``BEGIN IMMEDIATE``, a short
busy timeout, and on SQLITE_BUSY (including SQLITE_BUSY_SNAPSHOT) a rollback
and a retry of the *whole* transaction with jittered exponential backoff.
Nothing is ever retried inside an open transaction.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import apsw

from memoryd.base import killpoints
from memoryd.base.config import AUTHORITY_FILE, PAGE_SIZE, Config
from memoryd.base.errors import (
    HomeNotWritable,
    NotAnAuthority,
    SchemaTooNew,
    StoreBusy,
    WalReplaced,
    disk_full,
)
from memoryd.storage.ddl import schema_text
from memoryd.storage.schema import CURRENT_VERSION, MIGRATIONS, migrate_data
from memoryd.storage.turns import WriteTurns

T = TypeVar("T")
TURN_POLL_SECONDS = 0.002  # how often a writer giving its turn looks for the other's commit
WAL_FILES = ("-wal", "-shm")  # beside the database while any connection is open


def wal_identity(path: Path) -> tuple[tuple[int, int], ...] | None:
    """(device, inode) of the database's WAL and shared-memory files; None while either
    is missing."""
    found = []
    for suffix in WAL_FILES:
        try:
            st = os.stat(f"{path}{suffix}")
        except FileNotFoundError:
            return None
        found.append((st.st_dev, st.st_ino))
    return tuple(found)


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
        self._wal_files: tuple | None = None
        self.turns = WriteTurns(self.path)
        try:
            self._configure()
            if not (readonly or immutable):
                self._migrate()
                self._wal_files = wal_identity(self.path)
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
        self.turns.close()  # a child sharing this open file could drop a turn we hold
        try:
            yield
        finally:
            self.conn = apsw.Connection(self._name, flags=self._flags)
            self._configure()
            self._wal_files = None  # the files of this connection: known at its first write

    # -- opening ---------------------------------------------------------------

    def _configure(self) -> None:
        """Per-connection settings only: none of these writes the database."""
        c = self.conn
        c.set_busy_timeout(self.config.busy_timeout_ms)
        c.execute("PRAGMA synchronous=FULL")
        c.execute(f"PRAGMA journal_size_limit={self.config.journal_size_limit}")
        # Never memory-map: truncating a WAL a sibling has mapped can fault it.
        c.execute("PRAGMA mmap_size=0")
        c.execute(f"PRAGMA cache_size=-{self.config.cache_kib}")
        # A cell a write frees (a row deleted, or moved by an update) is zeroed in its
        # page, at no extra I/O: no text outlives its row in a free block, so a forget
        # (which zeroes what it frees itself) leaves none of it behind.
        c.execute("PRAGMA secure_delete=FAST")
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
                tx.execute(schema_text(sql))
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
        # tenacity (and its concurrent.futures) here: a command that only reads, as
        # `memoryd status` and `search` do, never imports it.
        from tenacity import (
            RetryError,
            Retrying,
            retry_if_exception_type,
            stop_after_delay,
            wait_random_exponential,
        )

        if not self.conn.get_autocommit():
            raise RuntimeError("Authority.write() called inside an open transaction")
        retrying = Retrying(
            retry=retry_if_exception_type(apsw.BusyError),
            wait=wait_random_exponential(multiplier=0.002, max=0.25),
            stop=stop_after_delay(self.config.write_retry_seconds),
        )
        try:
            with self.turns.wanting():
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

    def give_turn(self) -> bool:
        """Between the chunks of a long write: when another connection wants the write
        lock, wait until it committed (``PRAGMA data_version`` moved) or no longer wants
        it, at most ``write_turn_seconds``. True when one was waited for."""
        if not self.turns.others_want():
            return False
        seen = self._data_version()
        deadline = time.monotonic() + self.config.write_turn_seconds
        while time.monotonic() < deadline:
            time.sleep(TURN_POLL_SECONDS)
            if self._data_version() != seen or not self.turns.others_want():
                break
        return True

    def _data_version(self) -> int:
        """Moves whenever another connection commits (SQLite's PRAGMA data_version)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def check_wal(self) -> None:
        """Raise :class:`WalReplaced` when the WAL or shared-memory file at the path is no
        longer the one this connection writes (deleted or replaced under it: a clean-up
        script). Its commits would land in a file nobody reads, and checkpointing that file
        would overwrite what another connection wrote through the new one: the connection
        stops writing and never checkpoints on close."""
        now = wal_identity(self.path)
        if self._wal_files is None:
            self._wal_files = now
        elif now != self._wal_files:
            self.conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            raise WalReplaced(
                f"{self.path}-wal or -shm was deleted or replaced under this process (pid "
                f"{os.getpid()}); it stops writing so that nothing is lost silently: stop "
                "every memoryd process of this home, then start again; never delete those "
                "files while memoryd runs"
            )

    def _write_once(self, fn: Callable[[apsw.Connection], T]) -> T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            killpoints.reach("before_commit")
            self.check_wal()  # the write lock is held: checked last, before the commit
            conn.execute("COMMIT")
        except BaseException:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            raise
        killpoints.reach("after_commit")
        return result

    def savepoint(self, name: str = "sp") -> AbstractContextManager[None]:
        """A nested scope inside :meth:`write`: undone alone if its body raises."""
        return savepoint(self.conn, name)

    def query(self, sql: str, bindings: tuple = ()) -> list[tuple]:
        """Run a read statement in autocommit mode and return every row."""
        return self.conn.execute(sql, bindings).fetchall()

    def close(self) -> None:
        self.conn.close()
        self.turns.close()

    def __enter__(self) -> Authority:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def savepoint(conn: apsw.Connection, name: str = "sp") -> Iterator[None]:
    """A nested scope inside ``conn``'s open transaction: undone alone if its body raises
    (the transaction goes on)."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


def open_authority(
    home: Path, config: Config, *, readonly: bool = False, immutable: bool = False
) -> Authority:
    return Authority(Path(home) / AUTHORITY_FILE, config, readonly=readonly, immutable=immutable)


#: ``PRAGMA secure_delete``'s answers by name (setting it to 2 turns it ON, not FAST).
SECURE_DELETE_NAMES = {0: "OFF", 1: "ON", 2: "FAST"}


@contextmanager
def zeroing_freed(tx: apsw.Connection) -> Iterator[None]:
    """``secure_delete=ON`` for the block (every freed page zeroed, not only freed
    cells), then the connection's own setting back: a later bulk delete on the same
    connection (a pack step) is not made to write each page it frees."""
    (previous,) = tx.execute("PRAGMA secure_delete").fetchone()
    tx.execute("PRAGMA secure_delete=ON")
    try:
        yield
    finally:
        tx.execute(f"PRAGMA secure_delete={SECURE_DELETE_NAMES[previous]}")
