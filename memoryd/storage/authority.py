"""The SQLite authority: one connection, its pragmas, migrations and the write helper.

Every write goes through :meth:`Authority.write`: ``BEGIN IMMEDIATE``, a short
busy timeout, and on SQLITE_BUSY (including SQLITE_BUSY_SNAPSHOT) a rollback
and a retry of the *whole* transaction with jittered exponential backoff.
Nothing is ever retried inside an open transaction.

Two journal layouts. A new home starts with a rollback journal (SQLite's default
``DELETE`` mode, ``synchronous=EXTRA``: the journal's unlink, the commit, reaches the
directory on disk): while open it has no ``-wal`` and no 32 KiB ``-shm``, only a
``-journal`` of one transaction's old pages, and a reader holding the database
makes a commit wait (``rollback_busy_timeout_ms``, then SQLITE_BUSY: the whole write
is retried, at last :class:`StoreBusy`): busy backpressure instead of a growing WAL.
Readers arriving behind a waiting commit wait longer than it does
(:mod:`memoryd.storage.patience`).
Once the database reaches ``wal_from_bytes`` a writer switches it to WAL for good
(:meth:`Authority.grow_to_wal`: one committed header write; every other connection
sees the mode on its next transaction). A crash during the switch leaves the home in
one mode or the other, never between: the header write is an ordinary transaction.
"""

from __future__ import annotations

import contextlib
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
from memoryd.storage.patience import Patience, patient
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


def header_layout(path: Path) -> str:
    """``wal`` or ``rollback`` as the database header says (its format bytes 18 and 19
    are 2 in WAL mode), read without opening a connection; ``none`` with no file."""
    try:
        with open(path, "rb") as fh:
            return "wal" if fh.read(20)[18:20] == b"\x02\x02" else "rollback"
    except FileNotFoundError:
        return "none"


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
        self._seen_wal = False
        # immutable: a WAL database on a read-only file system (no -shm can be made)
        self._name = str(self.path)
        if immutable:
            self._name = f"file:{quote(str(self.path.absolute()))}?immutable=1"
            self._flags |= apsw.SQLITE_OPEN_URI
        try:
            if readonly and not immutable:
                self.conn = self._open_reader()
            else:
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
                self._wal_files = self._held_wal_files(wal_identity(self.path))
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            self.conn.close()
            raise NotAnAuthority(
                f"{self.path} is not a usable memoryd authority ({exc}); it was left "
                "untouched: move it aside or choose another home"
            ) from None
        except BaseException:
            self.conn.close()
            raise

    def _open_reader(self) -> apsw.Connection:
        """A read-only connection. A writer killed mid-commit in a small home (a rollback
        journal) leaves a hot journal that a read-only connection cannot roll back
        (SQLITE_READONLY_ROLLBACK): a read-write connection opened for that alone rolls
        it back (its first read does), then the reader opens again."""
        flags = apsw.SQLITE_OPEN_READONLY
        conn = apsw.Connection(self._name, flags=flags)
        try:
            patient(conn, self.config)
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        except apsw.ReadOnlyError as exc:
            conn.close()
            if exc.extendedresult != apsw.SQLITE_READONLY_ROLLBACK:
                raise
        except BaseException:
            conn.close()
            raise
        with contextlib.closing(
            apsw.Connection(self._name, flags=apsw.SQLITE_OPEN_READWRITE)
        ) as rw:
            patient(rw, self.config)
            rw.execute("PRAGMA user_version").fetchone()  # rolls the hot journal back
        return apsw.Connection(self._name, flags=flags)

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
        self.patience: Patience = patient(c, self.config)
        # EXTRA: as FULL, and in rollback mode the directory is synced after the
        # journal's unlink (the commit); the same as FULL in WAL mode.
        c.execute("PRAGMA synchronous=EXTRA")
        c.execute(f"PRAGMA journal_size_limit={self.config.journal_size_limit}")
        # Never memory-map: truncating a WAL a sibling has mapped can fault it.
        c.execute("PRAGMA mmap_size=0")
        c.execute(f"PRAGMA cache_size=-{self.config.cache_kib}")
        # A cell a write frees (a row deleted, or moved by an update) is zeroed in its
        # page, at no extra I/O: no text outlives its row in a free block, so a forget
        # (which zeroes what it frees itself) leaves none of it behind.
        c.execute("PRAGMA secure_delete=FAST")
        c.wal_autocheckpoint(0)  # the supervisor checkpoints at safe boundaries

    def journal_mode(self) -> str:
        """``wal``, or ``delete`` while the home keeps a rollback journal (as this
        connection last saw it: another's switch shows at its next transaction)."""
        return self.conn.execute("PRAGMA journal_mode").fetchone()[0]

    def in_wal(self) -> bool:
        """Whether the authority is in WAL mode (once seen, for good: memoryd never
        switches back)."""
        if not self._seen_wal and self.journal_mode() == "wal":
            self._seen_wal = True
        return self._seen_wal

    def database_bytes(self) -> int:
        (pages,) = self.conn.execute("PRAGMA page_count").fetchone()
        return pages * self.conn.execute("PRAGMA page_size").fetchone()[0]

    def grow_to_wal(self, *, force: bool = False) -> bool:
        """Switch a rollback-journal authority to WAL once it reaches ``wal_from_bytes``
        (``force``: now). Outside any transaction; True when this call switched it. A
        reader or writer elsewhere that keeps the lock past the busy timeout leaves it
        for a later call (False). Never switches back."""
        if not self.conn.get_autocommit():
            raise RuntimeError("grow_to_wal() called inside an open transaction")
        if self.in_wal():
            return False
        bound = self.config.wal_from_bytes  # 0: WAL from the start
        if bound and not force and self.database_bytes() < bound:
            return False
        killpoints.reach("before_wal_switch")
        try:
            with self.patience.only(self.patience.write_lock_s):  # give way to readers
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except apsw.BusyError:
            mode = None
        if mode != "wal":
            return False
        killpoints.reach("after_wal_switch")
        self._seen_wal = True
        self._wal_files = None  # known at the first write in WAL mode
        return True

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
        self.grow_to_wal()  # a new home only when wal_from_bytes is 0
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
            with self.turns.wanting(), self.patience.write():
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
            self._wal_files = self._held_wal_files(now)
        elif now != self._wal_files:
            self.conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            raise WalReplaced(
                f"{self.path}-wal or -shm was deleted or replaced under this process (pid "
                f"{os.getpid()}); it stops writing so that nothing is lost silently: stop "
                "every memoryd process of this home, then start again; never delete those "
                "files while memoryd runs"
            )

    def _held_wal_files(self, now: tuple | None) -> tuple | None:
        """The WAL files' identity once this connection holds them: in WAL mode. A
        connection still in rollback mode (another process switched the home, this one
        has not read since) holds none: the files it sees may be removed by their last
        closer and made anew when it first reads."""
        return now if self.in_wal() else None

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
