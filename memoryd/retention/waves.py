"""A retention wave: expire due segments whole, retire due held versions one by one.

One wave, under the shared migration boundary from its state check through
its last delete:

1. finish purging versions a previous (possibly crashed) wave tombstoned;
2. **segments** (:meth:`~memoryd.storage.archive.segments.Segments.expire_segments`):
   up to 64 due expiry segments (their bucket has ended), at most ``max_versions`` versions (a
   segment larger than that goes ``max_versions`` versions a wave, one by one,
   and whole once the rest fits), in one synced WriteBatch: protected
   versions copied out to the held segment, statistics folded, each segment
   marked expired and its key range deleted; the retention clock moves to
   ``now`` (from then on every unprotected version past its deadline reads
   ``expired``, whether or not its segment has gone yet). Skipped while a
   policy change is being re-indexed (a segment's deadlines are the old
   policy's): ``outcomes["deferred_reindex"]``;
3. **held versions** (the per-version index: versions kept past their deadline
   by a protection, or given a deadline that has passed): at most
   ``max_documents`` due entries from the wave cursor, in one WriteBatch
   synced once (:meth:`~memoryd.storage.archive.expiry.Expiry.retire_due`): each
   re-checked against the
   *current* policy, its generation, pin and leases; tombstoned and, within
   the purge budget, purged in the same batch; the wave cursor;
4. purge what did not fit the budget in bounded batches; ledgers keep their
   metadata, so their locators answer ``expired``.

Every step is idempotent: SIGKILL at any point and run the wave again. Kill
points, in order: ``wave_after_check``, ``segment_before_batch``,
``segment_after_batch`` (the segments' states are the cursor),
``wave_before_batch``, ``wave_after_batch`` (the cursor commits with the
batch), ``wave_before_purge``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from memoryd.base import killpoints
from memoryd.base.config import SETTINGS
from memoryd.retention.boundary import Boundary
from memoryd.retention.policy import RetentionPolicy
from memoryd.storage.archive import ArchiveStore, ExpiryEntry, LocatorNotFound
from memoryd.storage.archive.segments import SEGMENTS_PER_BATCH

WAVE_CURSOR = "retention.wave"
#: Most versions one wave's segment step expires (the setting's default).
WAVE_VERSIONS: int = SETTINGS["retention_wave_versions"].default

#: Crash points of this module (``MEMORYD_KILL_AT=NAME[:N]``), in wave order.
KILL_POINTS = (
    "wave_after_check",
    "wave_before_batch",
    "wave_after_batch",
    "wave_before_purge",
)

#: Archive meta naming the policy every stored deadline was derived by (maintenance
#: writes it once a re-index after a policy change has visited the whole archive).
POLICY_META = "retention.policy_fingerprint"


@dataclass
class WaveReport:
    """What one wave did. ``outcomes`` counts ``expired``, ``stale``, ``not_due``,
    ``pinned``, ``leased`` and ``reindexed`` entries."""

    scanned: int = 0
    segments: int = 0  # due segments expired whole
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
    max_segments: int = SEGMENTS_PER_BATCH,
    max_versions: int = WAVE_VERSIONS,
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
        cursor = store.meta.get_cursor(WAVE_CURSOR)
        entries = store.expiry.expiry_entries(until=now, after=cursor, limit=max_documents)
        report.scanned = len(entries)
        killpoints.reach("wave_after_check")
        segments_done = _segments(
            store, policy, report, outcomes, now, purge_batch_keys, (max_segments, max_versions)
        )
        entries_done = len(entries) < max_documents
        report.exhausted = entries_done and segments_done
        due = store.expiry.retire_due(
            entries,
            now=now,
            deadline_of=policy.expires_at,
            cursor_name=WAVE_CURSOR,
            cursor_value=None if entries_done else entries[-1].key,
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
        killpoints.reach("wave_before_purge")
        _purge_all(store, report, purge_batch_keys)
    report.outcomes = dict(outcomes)
    return report


def _segments(
    store: ArchiveStore,
    policy: RetentionPolicy,
    report: WaveReport,
    outcomes: Counter[str],
    now: float,
    purge_keys: int,
    bounds: tuple[int, int],
) -> bool:
    """Step 2: one batch of due segments into ``report``; True when none is left.
    While the stored deadlines are another policy's (a re-index is under way), due
    segments wait: the clock does not move either, so nothing expires by it."""
    stored = store.meta.get_meta(POLICY_META)
    if stored is not None and stored != policy.fingerprint():
        waiting = len(store.segments.due_segments(now))
        if waiting:
            outcomes["deferred_reindex"] += waiting
        return True
    max_segments, max_versions = bounds
    done = store.segments.expire_segments(
        now=now, purge_keys=purge_keys, max_segments=max_segments, max_versions=max_versions
    )
    report.segments = done.segments
    report.expired += done.expired + done.followed
    report.keys_deleted += done.keys_deleted
    report.purged_versions += len(done.expired)  # by their segments' range deletes
    if done.expired:
        outcomes["expired"] += len(done.expired)
    if done.held:
        outcomes["held"] += len(done.held)
    if done.followed:
        outcomes["followed_source"] += len(done.followed)
    return not done.remaining


def preview(
    store: ArchiveStore, policy: RetentionPolicy, *, now: float, limit: int = 100_000
) -> dict:
    """What waves at ``now`` would expire, by class and project; changes nothing.

    The versions of due segments and the due held versions, with a wave's checks
    (held ones: generation and deadline under the current policy too; all: pin,
    leases); at most ``limit`` of each are read.
    """
    due: Counter[tuple[str, str]] = Counter()
    protected: Counter[str] = Counter()
    entries = store.expiry.expiry_entries(until=now, limit=limit)
    whole = store.segments.due_locators(now, limit=limit)
    for locator in whole + [e.locator for e in entries if _due(store, e, policy, now)]:
        info = store.ledgers.version_info(locator)
        guard = store.protections.protection(locator, now=now)
        if guard:
            protected[guard.split(":", 1)[0]] += 1
        else:
            due[(info.cls, info.project)] += 1
    rows = [{"class": c, "project": p, "versions": n} for (c, p), n in sorted(due.items())]
    truncated = len(entries) >= limit or len(whole) >= limit
    return {"would_expire": rows, "protected": dict(protected), "truncated": truncated}


def _due(store: ArchiveStore, entry: ExpiryEntry, policy: RetentionPolicy, now: float) -> bool:
    """As a wave decides: its stored deadline passed and the current policy agrees."""
    try:
        info = store.ledgers.version_info(entry.locator)
    except LocatorNotFound:
        return False
    if info.status == "superseded" or info.purged or info.generation != entry.generation:
        return False
    if info.expires_at is None or info.expires_at > now:
        return False
    deadline = info.expires_at if info.override else policy.expires_at(info.cls, info.age_start)
    return deadline is not None and deadline <= now


def _purge_all(store: ArchiveStore, report: WaveReport, batch_keys: int) -> None:
    versions, keys = purge_all(store, batch_keys)
    report.purged_versions += versions
    report.keys_deleted += keys


def purge_all(store: ArchiveStore, batch_keys: int) -> tuple[int, int]:
    """Purge every tombstoned version in bounded batches: (versions, keys deleted)."""
    versions = keys = 0
    while True:
        purge = store.ledgers.purge_pending(max_keys=batch_keys)
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
    after = store.meta.get_cursor(cursor_name)
    docs = store.ledgers.documents(after=after.decode() if after else None, limit=limit)
    changed = 0
    for info in docs:
        if info.status != "live" or info.override:
            continue
        deadline = policy.expires_at(info.cls, info.age_start)
        if deadline != info.expires_at:
            gen = store.expiry.set_expiry(
                info.locator, deadline, override=False, expected_generation=info.generation
            )
            changed += gen is not None
    done = len(docs) < limit
    store.meta.set_cursor(cursor_name, None if done else docs[-1].doc_id.encode())
    return changed, done
