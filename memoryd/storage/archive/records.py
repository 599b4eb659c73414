"""The archive's value types and the checks every input passes (no storage here)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from memoryd.base.errors import BadArchiveInput, BadLocator
from memoryd.storage.archive.keys import CLASS_CODE, CLASSES

STATUSES = ("live", "superseded", "expired")

#: The last second an archived time may name (9999-12-31T23:59:59Z); the first is the epoch.
MAX_EPOCH_SECONDS = 253_402_300_799.0

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_PROJECT_RE = re.compile(r"^[^\x00/@]{1,200}$")


def check_epoch(name: str, ts: object) -> float:
    """``ts`` as epoch seconds between 1970 and the year 9999; else :class:`BadArchiveInput`."""
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        raise BadArchiveInput(f"{name} must be epoch seconds, got {ts!r}")
    if not 0 <= ts <= MAX_EPOCH_SECONDS:
        raise BadArchiveInput(
            f"{name} {ts!r} is not a time between 1970 and the year 9999 (epoch seconds)"
        )
    return float(ts)


def make_locator(doc_id: str, version: int) -> str:
    return f"{doc_id}@{version}"


def parse_locator(locator: str) -> tuple[str, int]:
    """``"doc@3"`` -> ``("doc", 3)``; raises :class:`BadLocator`."""
    if not isinstance(locator, str):
        raise BadLocator(f"a locator is a string 'DOC@VERSION', got {locator!r}")
    doc, sep, ver = locator.rpartition("@")
    if not sep or not _ID_RE.match(doc) or not ver.isdigit() or not 0 < int(ver) < 2**32:
        raise BadLocator(f"{locator!r} is not a locator 'DOC@VERSION' (for example 'a1b2@1')")
    return doc, int(ver)


def check_id(kind: str, value: str) -> bytes:
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise BadArchiveInput(
            f"{kind} {value!r} must be 1-128 characters of letters, digits and . _ : - "
            "(starting with a letter or digit)"
        )
    return value.encode()


def check_project(project: str) -> bytes:
    if not isinstance(project, str) or not _PROJECT_RE.match(project):
        raise BadArchiveInput(f"project {project!r} must be 1-200 characters without NUL, / or @")
    return project.encode()


def check_class(cls: str) -> int:
    try:
        return CLASS_CODE[cls]
    except KeyError:
        raise BadArchiveInput(f"class {cls!r} is not one of {', '.join(CLASSES)}") from None


def ms(ts: float) -> int:
    return max(0, int(math.floor(ts * 1000)))


def deadline_after(deadline: float | None, since_ms: int) -> bool:
    """Is a version's deadline (None: it has none) after ``since_ms``?"""
    return deadline is None or ms(deadline) > since_ms


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class VersionInfo:
    """One version's ledger entry (no content)."""

    doc_id: str
    version: int
    project: str
    cls: str
    session: str | None
    status: str
    created_at: float
    expires_at: float | None
    generation: int
    override: bool
    length: int
    size: int
    sha256: str
    purged: bool
    retired_at: float | None
    current_version: int
    pinned: bool
    forgotten: bool = False  # retired by ``forget`` (the user's request), not by age
    aged_from: float | None = None  # imported: its class age counts from then

    @property
    def locator(self) -> str:
        return make_locator(self.doc_id, self.version)

    @property
    def age_start(self) -> float:
        """When its class age starts: the import of history, else its creation."""
        return self.created_at if self.aged_from is None else self.aged_from


@dataclass(frozen=True)
class AppendResult:
    locator: str
    doc_id: str
    version: int
    created: bool  # False when the request id was already applied
    superseded: str | None  # the locator this version superseded, if one was live


@dataclass(frozen=True)
class NewVersion:
    """One item of :meth:`~.ledgers.Ledgers.append_many`; see :meth:`~.ledgers.Ledgers.append`."""

    project: str
    cls: str
    content: str
    created_at: float
    expires_at: float | None
    doc_id: str | None = None
    session: str | None = None
    meta: dict[str, Any] | None = None
    request_id: str | None = None
    sources: tuple[str, ...] = ()  # derived only: the locators it was derived from
    aged_from: float | None = None  # imported history: its class age counts from then


@dataclass(frozen=True)
class ExpiryEntry:
    """One expiry index entry; ``key`` is an opaque cursor position."""

    key: bytes
    bucket_start: float
    cls: str
    doc_id: str
    version: int
    generation: int

    @property
    def locator(self) -> str:
        return make_locator(self.doc_id, self.version)


@dataclass(frozen=True)
class PurgeReport:
    versions: int = 0  # versions whose canonical records are now gone
    keys_deleted: int = 0
    remaining: bool = False  # more pending purge work than the budget allowed


@dataclass
class DueReport:
    """What :meth:`~.expiry.Expiry.retire_due` did: one outcome per entry, in order."""

    outcomes: list[str] = field(default_factory=list)
    purged_versions: int = 0  # retired and purged in the same batch
    keys_deleted: int = 0
    followed: list[str] = field(default_factory=list)  # derived versions expired with a source


@dataclass(frozen=True)
class LeaseGrant:
    client: str
    epoch: int
    expires_at: float
    locators: tuple[str, ...]  # the versions this request added (all of them)
    sessions: tuple[str, ...] = ()  # the sessions whose current versions it protects
    unprotected: tuple[str, ...] = ()  # their current versions already past a deadline


@dataclass(frozen=True)
class Hit:
    locator: str
    doc_id: str
    version: int
    project: str
    cls: str
    session: str | None
    created_at: float
    score: float
    matched: dict[str, int]
    length: int


@dataclass(frozen=True)
class CorpusStats:
    versions: int
    length: int

    @property
    def avg_length(self) -> float:
        return self.length / self.versions if self.versions else 0.0
