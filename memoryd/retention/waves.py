"""A retention wave: retire due versions, then delete their canonical records.

One wave, under the shared migration boundary from its state check through
its last delete:

1. finish purging versions a previous (possibly crashed) wave tombstoned;
2. scan at most ``max_documents`` due expiry entries (time order, from the
   wave cursor; the scan stops at the first future bucket);
3. in one WriteBatch, synced once (:meth:`ArchiveStore.retire_due`): each
   entry re-checked against the *current* policy (a class whose age grew, or
   went to 0 days, is re-indexed instead of expired), its generation, pin and
   leases; each due version tombstoned (it leaves search at once) and, within
   the purge budget, its postings and payload deleted; the wave cursor;
4. purge the versions that did not fit the budget in bounded batches;
   ledgers keep their metadata, so their locators answer ``expired``.

Every step is idempotent: SIGKILL at any point and run the wave again. Kill
points, in order: ``wave_after_check``, ``wave_before_batch``,
``wave_after_batch`` (the cursor commits with the batch), one
``wave_after_tombstone`` per expired version, ``wave_before_purge``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from memoryd import killpoints
from memoryd.retention.boundary import Boundary
from memoryd.retention.policy import RetentionPolicy
from memoryd.storage.archive import ArchiveStore, ExpiryEntry, LocatorNotFound, VersionInfo

WAVE_CURSOR = "retention.wave"

#: Crash points of this module (``MEMORYD_KILL_AT=NAME[:N]``), in wave order.
KILL_POINTS = (
    "wave_after_check",
    "wave_before_batch",
    "wave_after_batch",
    "wave_after_tombstone",
    "wave_before_purge",
)


@dataclass
class WaveReport:
    """What one wave did. ``outcomes`` counts ``expired``, ``stale``, ``not_due``,
    ``pinned``, ``leased`` and ``reindexed`` entries."""

    scanned: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    expired: list[str] = field(default_factory=list)  # locators tombstoned by this wave
    purged_versions: int = 0
    keys_deleted: int = 0
    exhausted: bool = False  # the due range was scanned to its end (cursor reset)

    def as_dict(self) -> dict:
        return asdict(self)


def run_wave(
    store: ArchiveStore,
    policy: RetentionPolicy,
    boundary: Boundary,
    *,
    now: float | None = None,
    max_documents: int = 256,
    purge_batch_keys: int = 4096,
) -> WaveReport:
    """Run one bounded wave; see the module docstring.

    Raises :class:`~memoryd.retention.boundary.RetentionBlocked` while a
    migration is in progress and :class:`~memoryd.retention.boundary.BoundaryBusy`
    while a migration step holds the exclusive side; nothing is changed then.
    """
    now = time.time() if now is None else now
    report = WaveReport()
    outcomes: Counter[str] = Counter()
    with boundary.retention_wave():
        _purge_all(store, report, purge_batch_keys)  # leftovers of an interrupted wave
        cursor = store.get_cursor(WAVE_CURSOR)
        entries = store.expiry_entries(until=now, after=cursor, limit=max_documents)
        report.scanned = len(entries)
        killpoints.reach("wave_after_check")
        report.exhausted = len(entries) < max_documents
        due = store.retire_due(
            entries,
            now=now,
            deadline_of=policy.expires_at,
            cursor_name=WAVE_CURSOR,
            cursor_value=None if report.exhausted else entries[-1].key,
            purge_keys=purge_batch_keys,
        )
        report.purged_versions += due.purged_versions
        report.keys_deleted += due.keys_deleted
        report.expired += due.followed  # derived versions that expired with their source
        if due.followed:
            outcomes["followed_source"] += len(due.followed)
        for entry, outcome in zip(entries, due.outcomes, strict=True):
            outcomes[outcome] += 1
            if outcome == "expired":
                report.expired.append(entry.locator)
                killpoints.reach("wave_after_tombstone")
        killpoints.reach("wave_before_purge")
        _purge_all(store, report, purge_batch_keys)
    report.outcomes = dict(outcomes)
    return report


def preview(
    store: ArchiveStore, policy: RetentionPolicy, *, now: float, limit: int = 100_000
) -> dict:
    """What waves at ``now`` would expire, by class and project; changes nothing.

    The same checks as a wave (generation, deadline under the current policy,
    pin, leases) without the tombstone; at most ``limit`` due entries are read.
    """
    due: Counter[tuple[str, str]] = Counter()
    protected: Counter[str] = Counter()
    entries = store.expiry_entries(until=now, limit=limit)
    for entry in entries:
        try:
            info = store.version_info(entry.locator)
        except LocatorNotFound:
            continue
        if not _due(info, entry, policy, now):
            continue
        guard = store.protection(entry.locator, now=now)
        if guard:
            protected[guard.split(":", 1)[0]] += 1
        else:
            due[(info.cls, info.project)] += 1
    rows = [{"class": c, "project": p, "versions": n} for (c, p), n in sorted(due.items())]
    return {"would_expire": rows, "protected": dict(protected), "truncated": len(entries) >= limit}


def _due(info: VersionInfo, entry: ExpiryEntry, policy: RetentionPolicy, now: float) -> bool:
    """As a wave decides: its stored deadline passed and the current policy agrees."""
    if info.status != "live" or info.generation != entry.generation:
        return False
    if info.expires_at is None or info.expires_at > now:
        return False
    deadline = info.expires_at if info.override else policy.expires_at(info.cls, info.created_at)
    return deadline is not None and deadline <= now


def _purge_all(store: ArchiveStore, report: WaveReport, batch_keys: int) -> None:
    versions, keys = purge_all(store, batch_keys)
    report.purged_versions += versions
    report.keys_deleted += keys


def purge_all(store: ArchiveStore, batch_keys: int) -> tuple[int, int]:
    """Purge every tombstoned version in bounded batches: (versions, keys deleted)."""
    versions = keys = 0
    while True:
        purge = store.purge_pending(max_keys=batch_keys)
        versions += purge.versions
        keys += purge.keys_deleted
        if not purge.remaining:
            return versions, keys


def reindex(
    store: ArchiveStore,
    policy: RetentionPolicy,
    *,
    limit: int = 1000,
    cursor_name: str = "retention.reindex",
) -> tuple[int, bool]:
    """Re-derive policy deadlines of live, non-overridden versions after a policy change.

    Bounded: looks at ``limit`` documents from a cursor. Returns
    ``(changed, done)``; ``done`` when the whole archive was visited.
    """
    after = store.get_cursor(cursor_name)
    docs = store.documents(after=after.decode() if after else None, limit=limit)
    changed = 0
    for info in docs:
        if info.status != "live" or info.override:
            continue
        deadline = policy.expires_at(info.cls, info.created_at)
        if deadline != info.expires_at:
            gen = store.set_expiry(
                info.locator, deadline, override=False, expected_generation=info.generation
            )
            changed += gen is not None
    done = len(docs) < limit
    store.set_cursor(cursor_name, None if done else docs[-1].doc_id.encode())
    return changed, done
