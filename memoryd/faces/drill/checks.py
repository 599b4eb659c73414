"""The crash contract, checked after each cycle's recovery against independent evidence:
the drill's oracle (jobs it enqueued, files it wrote, transcripts it archived), the
files on disk, and a rebuild of the index from the stored bodies.
"""

from __future__ import annotations

import orjson

from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.transcripts import doc_id
from memoryd.base.config import load_config
from memoryd.consolidation import staging
from memoryd.faces.drill.core import PROJECT, Drill
from memoryd.faces.drill.scenarios import WRITER_JOBS
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home
from memoryd.search import archive_bm25
from memoryd.storage import open_authority, records
from memoryd.storage.archive import LocatorNotFound
from memoryd.storage.corpus import (
    compact_limit,
    history_since,
    live_chunk_count,
    live_hashes,
    live_source_bytes,
    project_id,
)
from memoryd.storage.fts import row_count as fts_row_count
from memoryd.storage.maintenance import integrity_check
from memoryd.storage.runs import get_run

ARCHIVE_RECHECK = 20  # earlier transcripts re-checked each cycle, at random


def _text(value: object) -> str:
    """Structured details as compact JSON in a violation (never a Python repr)."""
    return orjson.dumps(value, default=str).decode()[:500]


def verify(d: Drill, done_before: dict[int, float]) -> None:
    _jobs(d, done_before)
    _effects(d)
    with open_authority(d.home, load_config(d.home), readonly=True) as db:
        _index(d, db)
        _memory(d, db)
        if integrity_check(db) != ["ok"]:
            d.fail("integrity_check failed")
    _archive(d)
    md = Memoryd(d.home)
    try:
        result = Home(md).rebuild(verify=True)
    finally:
        md.close()
    if not result["equal"]:
        d.fail(f"rebuild --verify differs: {_text(result['mismatches'])}")


def _jobs(d: Drill, done_before: dict[int, float]) -> None:
    """No committed job lost or run again; every job of every cycle ends done."""
    done_after = d.read(lambda q: q.done_since(d.base))
    for job, finished in done_before.items():
        if job not in done_after:
            d.fail(f"job {job} was done before the kill and is not now")
        elif done_after[job] != finished:
            d.fail(f"job {job} was done before the kill and ran again")
    for job, state, error in d.read(lambda q: q.not_done()):
        d.fail(f"job {job} ended {state}: {error}")


def _effects(d: Drill) -> None:
    """One effect row per ``noop``/``sleep`` job the drill enqueued (its own record of
    ids, not the home's), none twice, none for a job of an earlier cycle, each from the
    attempt that completed its job (the lease token the job's result carried); the
    only other effects belong to a killed CLI writer's committed jobs."""
    applied = d.read(lambda q: q.effects_since(d.base_effect))
    expected = {j for j in d.oracle.effect_jobs if j > d.base}
    for job, count in sorted(applied.items()):
        if count > 1:
            d.fail(f"job {job} applied {count} times")
        if job <= d.base:
            d.fail(f"job {job} of an earlier cycle was applied again")
    missing = expected - set(applied)
    if missing:
        d.fail(f"{len(missing)} noop/sleep jobs the drill enqueued have no effect row")
    foreign = [j for j in applied if j > d.base and j not in expected]
    if len(foreign) > WRITER_JOBS:
        d.fail(f"{len(foreign)} effects for jobs the drill did not enqueue")
    others = d.read(lambda q: q.effects_of_other_attempts(d.base_effect))
    if others:
        job, applied_token, done_token = others[0]
        d.fail(
            f"{len(others)} jobs applied the result of another attempt than their last"
            f" claim's, the only one that may complete them (e.g. job {job}: the result of"
            f" lease {applied_token} applied, its last claim {done_token})"
        )


def _index(d: Drill, db) -> None:
    """The index equals the files on disk; the cycle's ingest run counted the drill's
    edits, and history has one row per changed file."""
    pid = project_id(db, PROJECT)
    _layout(d, db, pid)
    before, after = d.oracle.files_before, d.oracle.files_after
    indexed = live_hashes(db, pid)
    if indexed != after:
        d.fail(f"index differs from the repository: {len(indexed)} vs {len(after)} files")
    changed = {p: h for p, h in after.items() if before.get(p) != h}
    deleted = {p: h for p, h in before.items() if p not in after}
    run = get_run(db, d.oracle.run)
    counted = (run["files_total"], run["files_done"], run["retired"], run["unchanged"])
    if counted != (len(changed), len(changed), len(deleted), len(after) - len(changed)):
        d.fail(
            f"ingest run {d.oracle.run} counted files, done, retired, unchanged ="
            f" {', '.join(map(str, counted))};"
            f" the drill changed {len(changed)}, deleted {len(deleted)}, kept"
            f" {len(after) - len(changed)}"
        )
    if run["finished_at"] is None:
        d.fail(f"ingest run {d.oracle.run} never finished")
    rows = history_since(db, pid, d.base)
    puts = sorted((ref, h) for kind, ref, h in rows if kind == "file.put")
    retires = sorted(ref for kind, ref, _ in rows if kind == "file.retire")
    if puts != sorted(changed.items()) or retires != sorted(deleted):
        d.fail(
            f"history has {len(puts)} puts and {len(retires)} retires; the drill changed"
            f" {len(changed)} files and deleted {len(deleted)}"
        )


def _layout(d: Drill, db, pid: int) -> None:
    """A compact project holds at most its limit of live source (the commit that would
    take it past stores the index and makes it indexed, for good); an indexed one has
    every live chunk in its stored index (``rebuild --verify`` then checks the rows)."""
    limit = compact_limit(db, pid)
    d.layouts["compact" if limit else "indexed"] += 1
    source = live_source_bytes(db, pid)
    if limit and source > limit:
        d.fail(f"project is compact with {source} bytes of live source, past its limit {limit}")
    if not limit and fts_row_count(db, pid) != live_chunk_count(db, pid):
        d.fail(
            f"the stored index holds {fts_row_count(db, pid)} rows for"
            f" {live_chunk_count(db, pid)} live chunks"
        )


def _archive(d: Drill) -> None:
    """After one more complete forced pass (a killed add may have been redone after the
    cycle's pass): recent transcripts live in one version and found, old ones expired
    and never returned. A second version is a redone add. Reads take no leases."""
    sessions = d.oracle.sessions
    with ArchiveOwner(d.home, load_config(d.home)) as owner:
        owner.maintenance.tick(force=True)
        earlier = sessions[:-2]
        sample = d.rng.sample(earlier, k=min(ARCHIVE_RECHECK, len(earlier)))
        for session, kind, token in [*sessions[-2:], *sample]:
            try:
                versions = owner.store.ledgers.versions(doc_id("s", PROJECT, session))
            except LocatorNotFound:
                d.fail(f"{kind} transcript {session} has no version left in the archive")
                continue
            statuses = {v.status for v in versions}
            hits = archive_bm25.search(owner.store.postings, PROJECT, [token], limit=10)
            returned = any(hit.session == session for hit in hits)
            seen = f"{'/'.join(sorted(statuses))}, {'found' if returned else 'not found'}"
            if len(versions) != 1:
                d.fail(f"transcript {session} has {len(versions)} versions ({seen})")
            if kind == "recent" and (statuses != {"live"} or not returned):
                d.fail(f"recent transcript {session} is {seen}; want live, found")
            if kind == "old" and (statuses != {"expired"} or returned):
                d.fail(f"old transcript {session} is {seen}; want expired, not found")
        postings = owner.store.postings.verify_postings()
        if not postings["ok"]:
            d.fail(f"archive postings differ from payloads: {_text(postings)}")


def _memory(d: Drill, db) -> None:
    """Every memory candidate the drill staged is decided (none lost), staging is
    drained, no normalized text has two active records (none made twice), and the
    records' counts add up to the consumed candidates."""
    if not d.oracle.memory:
        return
    states = records.every_candidate_state(db.conn)
    lost = d.oracle.memory - {c for c, s in states.items() if s in ("consumed", "deadletter")}
    if lost:
        d.fail(f"{len(lost)} memory candidates were never decided (e.g. {sorted(lost)[:3]})")
    if left := list(staging.staged_files(d.home, PROJECT)):
        d.fail(f"{len(left)} staging files left after recovery (e.g. {left[0].name})")
    twice = records.active_twins(db.conn)
    if twice:
        d.fail(f"{len(twice)} memory texts have more than one active record")
    counted = records.sightings(db.conn)
    consumed = records.consumed_sightings(db.conn)
    if counted != consumed:
        d.fail(f"memory records count {counted} sightings; {consumed} candidates were consumed")
