"""The archive maintenance tick (one at a time; default every minute).

Each tick, in order, with DESIGN.md's bounds (all configuration):

1. remove at most 1,000 lapsed active-context protections;
2. remove at most 1,000 lapsed retrieval leases;
3. remove at most 1,000 access (hint/exposure) records in all: those older than
   the keep days, then those of documents with no live version (a swept cursor),
   and at most 1,000 request records older than the retry horizon
   (``archive_request_keep_seconds``, 30 days);
4. re-derive deadlines after a policy change (bounded, resumable);
5. disk guard: when free space is below the threshold, the emergency pass;
6. at most four retention waves of 256 documents (``force``: until the due
   range is exhausted), each holding the shared migration boundary; once the
   due range is exhausted, the statistics fold, the ledger slimming pass and
   the purge of at most 1,000 states of expired segments no ledger names;
7. the compaction trigger: once 10,000 keys were deleted since the last
   flush, or RocksDB reports 256 MiB of reclaimable SST data, schedule a
   flush (not waited for: RocksDB's background threads write it while the
   next waves run) and report that background compaction was scheduled;
   while the last flush's flush or compaction still runs, the flush waits for
   a later tick (a back-to-back backlog would otherwise rewrite the same
   ranges once per tick, competing with the waves for the CPU). The
   trigger then stays *armed*: later ticks re-read RocksDB properties until
   SST bytes actually dropped below the baseline taken at the flush. Never a
   full compaction: that is :meth:`Maintenance.compact`, for an explicit
   operator request.

Cursors live in the archive, so a tick interrupted by a crash is simply
followed by the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from memoryd.base import killpoints, logs
from memoryd.base.config import RETENTION_THRESHOLD_FLAGS, SETTINGS
from memoryd.base.errors import BoundaryBusy, UsageError
from memoryd.retention.boundary import Boundary, RetentionBlocked
from memoryd.retention.diskguard import DiskGuard
from memoryd.retention.policy import DAY, RetentionPolicy
from memoryd.retention.waves import POLICY_META, reindex, run_wave
from memoryd.storage.archive import ArchiveStore

COMPACTION_META = "retention.compaction"

#: Crash points of this module.
KILL_POINTS = ("retention_after_flush",)


def _default(name: str) -> Any:
    return SETTINGS[name].default


@dataclass(frozen=True)
class TickBounds:
    """The tick's bounds; defaults are the config module's (one source)."""

    max_expired_protections: int = _default("retention_max_expired_protections")
    max_retrieval_leases: int = _default("retention_max_retrieval_leases")
    max_hints: int = _default("retention_max_hints")
    waves_per_tick: int = _default("retention_waves_per_tick")
    wave_documents: int = _default("retention_wave_documents")
    wave_versions: int = _default("retention_wave_versions")
    purge_batch_keys: int = _default("retention_purge_batch_keys")
    compaction_deleted_keys: int = _default("retention_compaction_deleted_keys")
    compaction_reclaimable_bytes: int = _default("retention_compaction_reclaimable_bytes")
    access_bucket_seconds: int = _default("retention_access_bucket_seconds")
    access_keep_days: int = _default("retention_access_keep_days")
    reindex_documents: int = 1000
    slim_ledgers: int = _default("retention_slim_ledgers")
    max_segment_states: int = _default("retention_max_segment_states")
    max_request_records: int = _default("retention_max_request_records")
    request_keep_seconds: float = _default("archive_request_keep_seconds")

    @classmethod
    def from_config(cls, config: Any) -> TickBounds:
        return cls(
            max_expired_protections=config.retention_max_expired_protections,
            max_retrieval_leases=config.retention_max_retrieval_leases,
            max_hints=config.retention_max_hints,
            waves_per_tick=config.retention_waves_per_tick,
            wave_documents=config.retention_wave_documents,
            wave_versions=config.retention_wave_versions,
            purge_batch_keys=config.retention_purge_batch_keys,
            compaction_deleted_keys=config.retention_compaction_deleted_keys,
            compaction_reclaimable_bytes=config.retention_compaction_reclaimable_bytes,
            access_bucket_seconds=config.retention_access_bucket_seconds,
            access_keep_days=config.retention_access_keep_days,
            slim_ledgers=config.retention_slim_ledgers,
            max_segment_states=config.retention_max_segment_states,
            max_request_records=config.retention_max_request_records,
            request_keep_seconds=config.archive_request_keep_seconds,
        )


@dataclass
class TickReport:
    now: float
    skipped: bool = False  # another tick was running
    protections_cleaned: int = 0
    retrieval_leases_cleaned: int = 0
    hints_cleaned: int = 0
    reindexed: int = 0
    waves: int = 0
    expired: int = 0
    purged_versions: int = 0
    keys_deleted: int = 0
    exhausted: bool = False  # no due entry left behind the wave cursor
    df_journal_folded: int = 0  # document-frequency journal records folded into statistics
    ledgers_slimmed: int = 0  # ledgers of expired segments' versions packed
    segment_states_purged: int = 0  # states of expired segments no ledger names any more
    requests_purged: int = 0  # request records past the retry horizon
    refused: str | None = None  # why retention waves did not run
    disk: dict[str, Any] | None = None
    emergency: dict[str, Any] | None = None
    compaction: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Maintenance:
    """The maintenance loop's body for one open primary archive."""

    def __init__(
        self,
        store: ArchiveStore,
        policy: RetentionPolicy,
        boundary: Boundary,
        *,
        bounds: TickBounds | None = None,
        disk_guard: DiskGuard | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.boundary = boundary
        self.bounds = bounds or TickBounds()
        self.disk_guard = disk_guard
        self._running = threading.Lock()

    @classmethod
    def from_config(
        cls,
        store: ArchiveStore,
        config: Any,
        *,
        boundary: Boundary | None = None,
        free_bytes: Any = None,
    ) -> Maintenance:
        """Policy, bounds and an installed disk guard from a :class:`memoryd.base.config.Config`."""
        guard = DiskGuard.from_config(store, config, free_bytes=free_bytes).install()
        return cls(
            store,
            RetentionPolicy.from_config(config),
            boundary or Boundary(store.path),
            bounds=TickBounds.from_config(config),
            disk_guard=guard,
        )

    def tick(self, *, now: float | None = None, force: bool = False) -> TickReport:
        """One bounded, non-overlapping maintenance pass (see the module docstring).

        ``force`` runs waves until the due range is exhausted (it never
        shortens a deadline). A migration in progress does not fail the tick:
        ``refused`` says why no wave ran.
        """
        now = time.time() if now is None else now
        report = TickReport(now=now)
        if not self._running.acquire(blocking=False):
            report.skipped = True
            return report
        started = time.monotonic()
        try:
            b, s = self.bounds, self.store
            report.protections_cleaned = s.protections.cleanup_expired_leases(
                now=now, limit=b.max_expired_protections
            )
            report.retrieval_leases_cleaned = s.protections.cleanup_retrieval_leases(
                now=now, limit=b.max_retrieval_leases
            )
            report.hints_cleaned = s.access.cleanup_access_records(
                before=now - b.access_keep_days * DAY,
                limit=b.max_hints,
                bucket_seconds=b.access_bucket_seconds,
            )
            report.requests_purged = s.lifetimes.purge_request_records(
                before=now - b.request_keep_seconds, now=now, limit=b.max_request_records
            )
            self._reindex(report)
            try:
                if self.disk_guard is not None:
                    report.disk = self.disk_guard.check(now=now)
                    if report.disk is not None:
                        report.emergency = self.disk_guard.emergency(
                            self.policy,
                            self.boundary,
                            now=now,
                            wave_documents=b.wave_documents,
                            purge_batch_keys=b.purge_batch_keys,
                        )
                        report.expired += report.emergency["expired"]
                self._waves(report, force)
            except (RetentionBlocked, BoundaryBusy) as exc:
                report.refused = f"{exc.code}: {exc}"
            report.compaction = self._compaction(now)
        finally:
            report.seconds = round(time.monotonic() - started, 4)
            self._running.release()
        _log_tick(report)
        return report

    @contextlib.contextmanager
    def overridden(self, thresholds: dict[str, int]) -> Iterator[None]:
        """For one pass: tick bounds and disk-guard thresholds from ``thresholds``
        (names of :data:`~memoryd.base.config.RETENTION_THRESHOLD_FLAGS`; the configuration
        stays as it was)."""
        unknown = set(thresholds) - set(RETENTION_THRESHOLD_FLAGS)
        if unknown:
            raise UsageError(f"unknown retention thresholds: {', '.join(sorted(unknown))}")
        bounds, guard = self.bounds, self.disk_guard
        saved = (guard.threshold, guard.reserve) if guard is not None else None
        self.bounds = dataclasses.replace(
            bounds, **{k: int(v) for k, v in thresholds.items() if hasattr(bounds, k)}
        )
        if guard is not None:
            guard.threshold = int(thresholds.get("disk_low_bytes", guard.threshold))
            guard.reserve = int(thresholds.get("disk_reserve_bytes", guard.reserve))
        try:
            yield
        finally:
            self.bounds = bounds
            if guard is not None and saved is not None:
                guard.threshold, guard.reserve = saved

    def _reindex(self, report: TickReport) -> None:
        fingerprint = self.policy.fingerprint()
        stored = self.store.meta.get_meta(POLICY_META)
        if stored is None:
            self.store.meta.set_meta(POLICY_META, fingerprint)  # deadlines were derived by it
            return
        if stored == fingerprint:
            return
        changed, done = reindex(self.store, self.policy, limit=self.bounds.reindex_documents)
        report.reindexed = changed
        if done:
            self.store.meta.set_meta(POLICY_META, fingerprint)

    def _waves(self, report: TickReport, force: bool) -> None:
        b = self.bounds
        n = 0
        while force or n < b.waves_per_tick:
            wave = run_wave(
                self.store,
                self.policy,
                self.boundary,
                now=report.now,
                max_documents=b.wave_documents,
                purge_batch_keys=b.purge_batch_keys,
                max_versions=b.wave_versions,
            )
            n += 1
            report.expired += len(wave.expired)
            report.purged_versions += wave.purged_versions
            report.keys_deleted += wave.keys_deleted
            if wave.exhausted:
                report.exhausted = True
                break
        report.waves = n
        if report.exhausted:  # nothing more due: the statistics and ledgers catch up
            report.df_journal_folded, deleted = self.store.postings.fold_df_journal()
            report.keys_deleted += deleted  # emptied term statistics
            report.ledgers_slimmed = self.store.segments.slim_expired_ledgers(limit=b.slim_ledgers)[
                0
            ]
            report.segment_states_purged = self.store.lifetimes.purge_segment_states(
                limit=b.max_segment_states
            )

    def _compaction(self, now: float) -> dict[str, Any]:
        """The flush-and-watch trigger; its state survives restarts (archive meta)."""
        b, s = self.bounds, self.store
        state = s.meta.get_meta(COMPACTION_META) or {
            "counted_from": 0,  # no flush yet: every delete since creation counts
            "armed": False,
            "baseline_sst_bytes": 0,
            "flushes": 0,
            "reclaimed_bytes": 0,
        }
        stored = dict(state)
        props = s.meta.properties()
        deleted = s.meta.deleted_keys_total() - state["counted_from"]
        reclaimable = max(0, props["sst_bytes"] - props["live_data_bytes"])
        out: dict[str, Any] = {"deleted_since_flush": deleted, "reclaimable_bytes": reclaimable}
        if state["armed"] and props["sst_bytes"] < state["baseline_sst_bytes"]:
            gained = state["baseline_sst_bytes"] - props["sst_bytes"]
            state["reclaimed_bytes"] += gained
            state["armed"] = False
            out["reclaimed_bytes"] = gained
        decision = flush_decision(b, armed=state["armed"], deleted=deleted, props=props)
        if decision == "deferred":
            out["deferred"] = "background compaction running"
        elif decision == "flush":
            s.maintenance.flush(wait=False)  # scheduled: the next waves run while it is written
            killpoints.reach("retention_after_flush")
            after = s.meta.properties()
            state.update(
                counted_from=s.meta.deleted_keys_total(),
                armed=True,
                baseline_sst_bytes=after["sst_bytes"],
                flushes=state["flushes"] + 1,
                flushed_at=now,
            )
            out["flushed"] = True
            out["compaction"] = "scheduled (background)"
        if state != stored:  # an unchanged state costs no synced write per tick
            s.meta.set_meta(COMPACTION_META, state)
        out.update(
            armed=state["armed"],
            sst_bytes=props["sst_bytes"],
            live_data_bytes=props["live_data_bytes"],
            pending_compaction_bytes=props["pending_compaction_bytes"],
            total_reclaimed_bytes=state["reclaimed_bytes"],
            flushes=state["flushes"],
        )
        return out

    def compact(self, *, project: str | None = None, full: bool = True) -> dict[str, Any]:
        """Manual compaction (explicit operator request): flush, compact, report bytes.

        ``full``: the whole database; else only the ranges that hold content
        (payloads, postings, term statistics; ``project``'s postings only), which
        is where expired text lives: afterwards no archive file holds it.
        """
        before = self.store.meta.properties()
        if full:
            self.store.maintenance.flush()
            self.store.maintenance.compact_all()
        else:
            self.store.maintenance.compact_content(project)
        after = self.store.meta.properties()
        state = self.store.meta.get_meta(COMPACTION_META)
        if state is not None and state.get("armed"):
            state["armed"] = False
            state["reclaimed_bytes"] += max(0, state["baseline_sst_bytes"] - after["sst_bytes"])
            self.store.meta.set_meta(COMPACTION_META, state)
        return {
            "sst_bytes_before": before["sst_bytes"],
            "sst_bytes_after": after["sst_bytes"],
            "reclaimed_bytes": before["sst_bytes"] - after["sst_bytes"],
            "scope": "all" if full else "content",
            "project": project,
        }

    def status(self, *, now: float | None = None) -> dict[str, Any]:
        """For ``memoryd retention status``: policy, migration, degraded state, counts,
        due backlog, compaction trigger and RocksDB properties."""
        now = time.time() if now is None else now
        s = self.store
        due = s.expiry.expiry_entries(until=now, limit=10_001)
        return {
            "policy": self.policy.as_dict(),
            "migration": self.boundary.state(),
            "degraded": s.meta.degraded(),
            "counts": s.ledgers.counts(),
            "due_entries": len(due) if len(due) <= 10_000 else ">10000",  # held versions
            "due_segments": len(s.segments.due_segments(now)),  # each expires whole
            "pending_purge": s.ledgers.pending_purge(),
            "df_journal_records": s.postings.df_journal_records(),  # removals not yet folded
            "compaction": s.meta.get_meta(COMPACTION_META),
            "deleted_keys_total": s.meta.deleted_keys_total(),
            "properties": s.meta.properties(),
        }


def flush_decision(b: TickBounds, *, armed: bool, deleted: int, props: dict[str, int]) -> str:
    """The compaction trigger's rule: ``"flush"``, ``"deferred"`` or ``"idle"``.

    ``deleted``: keys deleted since the last flush; ``props``: :meth:`properties`.
    While the last flush's flush or compaction still runs, a flush now would only
    add a file that compaction cannot take and a second rewrite of the same ranges
    (a backlog of back-to-back ticks would rewrite them once per tick, competing
    with the waves for the CPU): the deletes wait for a later tick.
    """
    reclaimable = max(0, props["sst_bytes"] - props["live_data_bytes"])
    trigger = deleted >= b.compaction_deleted_keys or (
        not armed and reclaimable >= b.compaction_reclaimable_bytes
    )
    if not trigger:
        return "idle"
    if armed and (props["running_compactions"] or props["running_flushes"]):
        return "deferred"
    return "flush"


def _log_tick(r: TickReport) -> None:
    """A tick that expired, purged or was refused is news (info); an idle one is not."""
    if r.skipped:
        return
    busy = r.expired or r.purged_versions or r.keys_deleted or r.refused or r.emergency
    message = (
        f"retention tick: {r.waves} waves, {r.expired:,} expired, {r.purged_versions:,} versions"
        f" purged, {r.keys_deleted:,} keys deleted in {r.seconds:.2f}s"
        + (f"; refused: {r.refused}" if r.refused else "")
    )
    logs.event(
        "retention_tick",
        message,
        level=logging.INFO if busy else logging.DEBUG,
        waves=r.waves,
        expired=r.expired,
        purged_versions=r.purged_versions,
        keys_deleted=r.keys_deleted,
        refused=r.refused,
        exhausted=r.exhausted,
    )
