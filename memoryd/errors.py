"""Typed errors a user can meet. Each says what to do and carries an exit code.

Exit codes follow DESIGN.md: 1 for a reported failure, 2 for bad usage.
"""

from __future__ import annotations


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


class SupervisorRunning(MemorydError):
    code = "SUPERVISOR_RUNNING"


class StoreBusy(MemorydError):
    """The authority stayed locked by another writer past every retry."""

    code = "STORE_BUSY"
    retryable = True


class SchemaTooNew(MemorydError):
    code = "SCHEMA_TOO_NEW"


class ForeignProject(MemorydError):
    """A request names a project that the target (a repository, an archived
    version) does not belong to."""

    code = "FOREIGN_PROJECT"


class NotAnAuthority(MemorydError):
    """The home's authority.db exists but is not a memoryd database; left untouched."""

    code = "NOT_AN_AUTHORITY"


class ConfigError(UsageError):
    code = "BAD_CONFIG"
