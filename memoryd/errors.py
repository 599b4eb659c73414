"""Typed errors a user can meet. Each says what to do and carries an exit code.

Exit codes follow DESIGN.md: 1 for a reported failure, 2 for bad usage.
"""

from __future__ import annotations

import errno
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


class StoreBusy(MemorydError):
    """The authority stayed locked by another writer past every retry."""

    code = "STORE_BUSY"
    retryable = True


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
    """The configured ``encoder`` cannot be loaded or did not answer (issue 15)."""

    code = "ENCODER_UNAVAILABLE"


class EncoderChanged(MemorydError):
    """Stored vectors were made by another encoder than the configured one: mixing
    them would compare unrelated spaces, so ingest and search refuse until a rebuild."""

    code = "ENCODER_CHANGED"


class ArchiveOpError(MemorydError):
    """An archive operation's error, carried back from the archive's owner."""

    def __init__(self, answer: dict) -> None:
        super().__init__(answer["message"])
        self.code = answer["error"]
        self.retryable = answer["retryable"]
        self.exit_code = answer["exit_code"]
        self.details = answer.get("details")
