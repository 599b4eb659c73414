"""Typed errors a user can meet. Each says what to do and carries an exit code.

Exit codes follow DESIGN.md: 1 for a reported failure, 2 for bad usage.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager


class MemorydError(Exception):
    """Base of every error memoryd reports to a user."""

    exit_code = 1
    code = "ERROR"
    retryable = False


class UsageError(MemorydError):
    """The request itself is wrong (bad arguments, bad payload, unknown kind)."""

    exit_code = 2
    code = "BAD_USAGE"


class UnknownJobKind(UsageError):
    code = "UNKNOWN_JOB_KIND"


class InternalJobKind(UsageError):
    """A kind only memoryd itself enqueues (ingest.*, archive.op, ...), with its own payload."""

    code = "INTERNAL_JOB_KIND"


class BadPayload(UsageError):
    code = "BAD_PAYLOAD"


class NoSuchJob(MemorydError):
    code = "NO_SUCH_JOB"


class ProjectBusy(MemorydError):
    """The project has work queued or running; changing it now would race that work."""

    code = "PROJECT_BUSY"
    retryable = True


class ProjectExists(UsageError):
    code = "PROJECT_EXISTS"


class HomeNotReadable(MemorydError):
    code = "HOME_NOT_READABLE"


class HomeNotWritable(MemorydError):
    code = "HOME_NOT_WRITABLE"


class HomeMissing(MemorydError):
    """A read named a home that does not exist (a typo'd path looks like lost data)."""

    code = "HOME_MISSING"


class IngestPending(MemorydError):
    """A search of a project whose first ingest has not finished: an abstention would
    look like absent evidence."""

    code = "INGEST_PENDING"


class IngestInterrupted(MemorydError):
    """Ctrl-C during ``ingest --wait``: exit 130, as a shell reports SIGINT."""

    code = "INTERRUPTED"
    exit_code = 130


class SupervisorRunning(MemorydError):
    code = "SUPERVISOR_RUNNING"
    LEAD = "a supervisor is already running on"  # how its message starts (drain.py reads it)

    def __init__(self, home: object, pid: int | None) -> None:
        super().__init__(f"{self.LEAD} {home} (pid {pid}); stop it first or use `memoryd status`")


class StoreBusy(MemorydError):
    """The authority stayed locked by another writer past every retry."""

    code = "STORE_BUSY"
    retryable = True


class QueuePaused(MemorydError):
    """A ``--wait`` saw the supervisor's claims stay paused past its bound: a reader
    pins the WAL (``reader_pids``). Retryable: the work stays queued and resumes once
    the reader lets go."""

    code = "QUEUE_PAUSED"
    retryable = True

    def __init__(self, message: str, reader_pids: list[int]) -> None:
        super().__init__(message)
        self.reader_pids = reader_pids
        self.details = {"reader_pids": reader_pids}


class SupervisorStopping(StoreBusy):
    """The supervisor is shutting down (a drain whose queue ran out): ask again, and the
    request runs embedded or at the next supervisor."""

    code = "SUPERVISOR_STOPPING"


class WorkerCrashLoop(MemorydError):
    """Job workers keep dying right after they start: the supervisor stops."""

    code = "WORKER_CRASH_LOOP"


class SchemaTooNew(MemorydError):
    code = "SCHEMA_TOO_NEW"


class SchemaUnmigratable(MemorydError):
    """The authority's rows break a rule a migration relies on; nothing was changed."""

    code = "SCHEMA_UNMIGRATABLE"


class ForeignProject(MemorydError):
    """A request names a project that the target (a repository, an archived
    version) does not belong to."""

    code = "FOREIGN_PROJECT"


class NotAnAuthority(MemorydError):
    """The home's authority.db exists but is not a memoryd database; left untouched."""

    code = "NOT_AN_AUTHORITY"


class ConfigError(UsageError):
    code = "BAD_CONFIG"


class SpoolCorrupt(MemorydError):
    """An archive add's spool file is not what its job names (damaged or foreign)."""

    code = "ARCHIVE_SPOOL_CORRUPT"


class SpoolMissing(MemorydError):
    """An archive add's spool file is gone and its versions were never stored."""

    code = "ARCHIVE_SPOOL_MISSING"


class FutureNow(UsageError):
    """A retention ``now`` past the wall clock: it would expire what has not lapsed."""

    code = "NOW_IN_FUTURE"


class WalReplaced(MemorydError):
    """The WAL or shared-memory file this connection uses is no longer the one at its
    path (deleted or replaced under a running process)."""

    code = "WAL_REPLACED"


class PortBusy(UsageError):
    """The port asked for is taken by another listener."""

    code = "PORT_BUSY"


class DiskFull(MemorydError):
    """The file system holding the home ran out of space (SQLite or RocksDB said so)."""

    code = "DISK_FULL"
    retryable = True


# strerror(ENOSPC), also in RocksDB's IOError text; SQLite's SQLITE_FULL message
NO_SPACE_MESSAGES = ("No space left on device", "database or disk is full")


def is_disk_full(exc: BaseException | str) -> bool:
    """SQLite's SQLITE_FULL, ENOSPC, or an error text (a dead job's) saying so."""
    if isinstance(exc, BaseException) and (
        type(exc).__name__ == "FullError" or getattr(exc, "errno", None) == errno.ENOSPC
    ):
        return True
    return any(m in str(exc) for m in NO_SPACE_MESSAGES)


def disk_full(exc: BaseException | str, where: str) -> DiskFull:
    """The typed error for ``exc`` (see :func:`is_disk_full`) met while writing ``where``."""
    return DiskFull(
        f"{where}: the disk is full ({exc}); nothing committed was lost: free some space "
        "(or move the home with --home), then run the command again"
    )


@contextmanager
def typed_disk_full(where: str) -> Iterator[None]:
    """Any error of the block that means "disk full" leaves it as :class:`DiskFull`
    (code ``DISK_FULL``), never as a raw ``apsw.FullError`` or RocksDB IOError."""
    try:
        yield
    except DiskFull:
        raise
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(exc, where) from None
        raise


class MalformedCandidate(UsageError):
    """A memory candidate line that cannot be staged (its line number and reason say why)."""

    code = "MALFORMED_CANDIDATE"

    def __init__(self, message: str, dropped: list[dict]) -> None:
        super().__init__(message)
        self.details = {"dropped": dropped}


class NoSuchRecord(MemorydError):
    code = "NO_SUCH_RECORD"


class PeerRefused(MemorydError):
    """A control-socket peer running as another user."""

    code = "PEER_REFUSED"


# ---- the evidence archive (memoryd.storage.archive) and its migration boundary


class BadLocator(UsageError):
    code = "BAD_LOCATOR"


class BadArchiveInput(UsageError):
    code = "BAD_ARCHIVE_INPUT"


class PastClassAge(UsageError):
    """An archive add whose documents are older than their class's age: stored, they
    would be expired at once. Imported history is added with ``imported``."""

    code = "PAST_CLASS_AGE"


class ArchiveError(MemorydError):
    """Base of archive errors."""

    code = "ARCHIVE_ERROR"


class ArchiveBusy(ArchiveError):
    """Another process holds the archive read-write; retryable (it lets go eventually)."""

    code = "ARCHIVE_BUSY"
    retryable = True
    in_this_process = False  # held by another open store of this very process


class ArchiveReadOnly(ArchiveError):
    """A write was attempted through a secondary (read-only) instance."""

    code = "ARCHIVE_READ_ONLY"


class LocatorNotFound(ArchiveError):
    code = "NOT_FOUND"


class NotLive(ArchiveError):
    """The target version is superseded or expired."""

    code = "NOT_LIVE"


class LeaseRejected(ArchiveError):
    """An active-context lease request was rejected whole; ``rejected`` says why per locator."""

    code = "LEASE_REJECTED"

    def __init__(self, message: str, rejected: dict[str, str]) -> None:
        super().__init__(message)
        self.rejected = rejected


class LeaseNotFound(ArchiveError):
    code = "LEASE_NOT_FOUND"


class LeaseExpired(ArchiveError):
    """The client's lease expired (its protections are gone); acquire again."""

    code = "LEASE_EXPIRED"


class DiskLow(ArchiveError):
    """Free disk space is too low to accept this archival write; retry later."""

    code = "DISK_LOW"
    retryable = True


class BoundaryBusy(ArchiveError):
    """The other side of the migration boundary is held (by ``holder_pid``)."""

    code = "BOUNDARY_BUSY"
    retryable = True

    def __init__(self, message: str, holder_pid: int | None = None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class RetentionBlocked(ArchiveError):
    """A retention wave was refused because an archive migration is in progress."""

    code = "RETENTION_BLOCKED"
    retryable = True

    def __init__(self, message: str, state: str) -> None:
        super().__init__(message)
        self.state = state


class MigrationError(ArchiveError):
    code = "MIGRATION_ERROR"


class EncoderUnavailable(MemorydError):
    """The configured ``encoder`` (the dense route's) cannot be loaded or did not answer."""

    code = "ENCODER_UNAVAILABLE"


class EncoderChanged(MemorydError):
    """Stored vectors were made by another encoder than the configured one: mixing
    them would compare unrelated spaces, so ingest and search refuse until a rebuild."""

    code = "ENCODER_CHANGED"


class Corrupt(MemorydError):
    """A store's bytes failed a check: SQLite or RocksDB found corruption. The message
    names the file and says what to do."""

    code = "CORRUPT"


# what SQLite and RocksDB say of damaged bytes (a file RocksDB lost included)
CORRUPTION_MESSAGES = (
    "Corruption:",
    "database disk image is malformed",
    "fts5: corruption",
)
# typed errors that only wrap another's text: corruption inside them is typed again
_GENERIC_CODES = ("ERROR", "ARCHIVE_ERROR")
_STORE_FILE = re.compile(r"(/[^\s:]*?(?:\.sst|\.log|\.blob|MANIFEST-\d+|CURRENT|\.db))\b")


def is_corruption(exc: BaseException | str) -> bool:
    """SQLite's SQLITE_CORRUPT (apsw.CorruptError), or an error text saying so (an
    untyped error's, or a generic typed one's)."""
    if isinstance(exc, MemorydError) and exc.code not in _GENERIC_CODES:
        return False  # typed already (CORRUPT included)
    if isinstance(exc, BaseException) and type(exc).__name__ == "CorruptError":
        return True
    return any(m in str(exc) for m in CORRUPTION_MESSAGES)


def corruption(exc: BaseException | str, where: str) -> Corrupt:
    """The typed error for ``exc`` (see :func:`is_corruption`) met reading ``where``:
    the damaged file named (RocksDB names it; else ``where``), and what to do."""
    named = _STORE_FILE.search(str(exc))
    path = named.group(1) if named else where
    return Corrupt(
        f"{path} is damaged ({exc}); `memoryd doctor --deep` lists every damaged part "
        "and what to do: `memoryd rebuild` rebuilds the derived indexes, a backup "
        "restores stored text"
    )


@contextmanager
def typed_corruption(where: str) -> Iterator[None]:
    """Any error of the block that means "corrupt" leaves it as :class:`Corrupt` (code
    ``CORRUPT``), never as a raw ``apsw.CorruptError`` or RocksDB ``Corruption:``."""
    try:
        yield
    except Exception as exc:
        if is_corruption(exc):
            raise corruption(exc, where) from None
        raise


def error_answer(exc: MemorydError) -> dict:
    """``exc`` as a request's answer (an archive operation's, the control socket's);
    :class:`ArchiveOpError` raises it again on the other side."""
    return {
        "ok": False,
        "error": exc.code,
        "message": str(exc),
        "retryable": exc.retryable,
        "exit_code": exc.exit_code,
        "details": getattr(exc, "details", None),
    }


class ArchiveOpError(MemorydError):
    """An archive operation's error, carried back from the archive's owner."""

    def __init__(self, answer: dict) -> None:
        super().__init__(answer["message"])
        self.code = answer["error"]
        self.retryable = answer["retryable"]
        self.exit_code = answer["exit_code"]
        self.details = answer.get("details")
