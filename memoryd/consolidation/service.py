"""What the ``memory`` commands do, over an open authority and a home.

``memoryd.operations.api.Memoryd`` calls these; they never start a supervisor themselves.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from memoryd.base import killpoints, logs
from memoryd.base.config import Config
from memoryd.base.errors import MalformedCandidate, NoSuchRecord, UsageError
from memoryd.consolidation import STATUSES, anchors, mirror, staging
from memoryd.consolidation.candidates import KINDS, candidate_id, norm_hash, parse_lines
from memoryd.consolidation.jobs import APPLY_FAILED, job_spec
from memoryd.queue import JobQueue
from memoryd.storage import Authority, records
from memoryd.storage.corpus import project_id, project_names
from memoryd.storage.maintenance import checkpoint_truncate

SWEEP_STATUSES = ("flagged", "archived")
LAST_RUNS = 10


def add(db: Authority, home: Path, config: Config, data: bytes, project: str) -> dict:
    """Validate every line, stage the valid candidates, enqueue the project's run."""
    pid = project_id(db, project)  # an unknown project: UNKNOWN_PROJECT, nothing staged
    valid, dropped = parse_lines(data, project, config.memory_max_text_bytes)
    if not valid:
        first = f"line {dropped[0].line}: {dropped[0].reason}" if dropped else "no candidate lines"
        raise MalformedCandidate(
            f"nothing to stage ({len(dropped)} malformed line(s); {first}); one JSON object "
            'per line, like {"kind": "lesson", "text": "..."}',
            [d.as_dict() for d in dropped],
        )
    nonce = secrets.token_hex(8)
    items = [(candidate_id(project, c, f"{nonce}:{i}"), c) for i, c in enumerate(valid)]
    path = staging.stage(home, project, items)
    killpoints.reach("memory_add_staged")  # a death here: the next start enqueues the run
    try:
        job = JobQueue(db).enqueue(job_spec(project, pid))
    except BaseException:  # alive to say so (a full disk): the add leaves nothing staged
        staging.remove(path)
        raise
    return {
        "project": project,
        "staged": len(items),
        "candidates": [cid for cid, _ in items],
        "dropped": [d.as_dict() for d in dropped],
        "job": job,
    }


def outcomes(db: Authority, ids: list[str]) -> list[dict] | None:
    """Each candidate's fate, or None while any is still undecided or parked."""
    states = records.candidate_states(db.conn, ids)
    if any(states.get(i, {}).get("state") in (None, "parked") for i in ids):
        return None
    keys = ("id", "state", "outcome", "record_id", "reason")
    return [{k: states[i][k] for k in keys} for i in ids]


def _pid(db: Authority, project: str | None) -> int | None:
    return project_id(db, project) if project else None


def list_records(
    db: Authority, project: str, status: str | None, kind: str | None, limit: int
) -> list[dict]:
    if status and status not in STATUSES:
        raise UsageError(f"unknown status {status!r}; one of {', '.join(STATUSES)}")
    if kind and kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    found = records.list_records(db.conn, project_id(db, project), status, kind, limit)
    marks = records.conflicts(db.conn, [r["id"] for r in found])
    return [{**r, "conflicts_with": marks.get(r["id"], [])} for r in found]


def resolve(db: Authority, ident: str) -> str:
    """A record id from what a user holds: a record id (``m-...``), or the candidate id
    ``memory add`` printed (the record that candidate became, or reinforced)."""
    if ident.startswith("m-"):
        return ident
    state = records.candidate_states(db.conn, [ident]).get(ident)
    if state is None:
        return ident  # neither: the lookup says so
    if state.get("record_id"):
        return state["record_id"]
    raise NoSuchRecord(
        f"candidate {ident} is {state['state']}, not a record (yet): see "
        "`memoryd memory status` and `memoryd memory deadletter`"
    )


def show(db: Authority, record_id: str) -> dict:
    record_id = resolve(db, record_id)
    rec = records.get_record(db.conn, record_id)
    if rec is None:
        raise NoSuchRecord(f"no memory record {record_id!r}; see `memoryd memory list`")
    marks = records.conflicts(db.conn, [record_id]).get(record_id, [])
    cited = anchors.marks(db.conn, [record_id]).get(record_id, [])
    history = records.history(db.conn, record_id)
    return {**rec, "conflicts_with": marks, "cited": cited, "history": history}


def _staged(home: Path, project: str | None, names: list[str]) -> int:
    """Staging files (one per add) not yet fully decided."""
    return sum(
        sum(1 for _ in staging.staged_files(home, name))
        for name in ([project] if project else names)
    )


def status(db: Authority, home: Path, project: str | None) -> dict:
    """Backlog (staged, parked, dead letters), records by status, the last runs and the
    rates over the runs the log keeps."""
    pid = _pid(db, project)
    names = sorted(project_names(db).values())
    counts = records.totals(db.conn, pid)
    runs = records.last_runs(db.conn, pid, LAST_RUNS)
    summed = {r: 0 for r in records.RATES}
    for run in records.last_runs(db.conn, pid, int(1e9)):
        for r in records.RATES:
            summed[r] += run[r]
    decided = sum(summed[r] for r in ("added", "duplicate", "superseded", "merged"))
    seen = decided + summed["deadlettered"] + summed["discarded"]
    return {
        "project": project,
        "backlog": {
            "staged_files": _staged(home, project, names),
            "parked": counts["candidates"].get("parked", 0),
            "deadletter": counts["candidates"].get("deadletter", 0),
        },
        "records": {s: counts["records"].get(s, 0) for s in STATUSES},
        "consumed": counts["candidates"].get("consumed", 0),
        "totals": summed,
        "duplicate_rate": round(summed["duplicate"] / decided, 4) if decided else None,
        "discard_rate": round(summed["discarded"] / seen, 4) if seen else None,
        "last_runs": runs,
    }


def deadletters(db: Authority, project: str | None, adjudicator: str) -> list[dict]:
    """Dead-lettered candidates, each with ``action``: what to do about it."""
    found = records.pending_candidates(db.conn, _pid(db, project), "deadletter")
    return [{**d, "action": next_step(d, adjudicator)} for d in found]


def next_step(letter: dict, adjudicator: str) -> str:
    """What brings a dead letter back: the cause to fix first (from its reason and the
    configured ``memory_adjudicator``), then the exact retry command."""
    reason, retry = letter["reason"] or "", f"`memoryd memory retry {letter['id']}`"
    if reason.startswith(APPLY_FAILED):
        return f"applying its verdict failed (see the reason); {retry} tries it again"
    if "supervisor" in reason or "max_attempts" in reason:
        return f"inspect the candidate (it stopped memoryd's own process); then {retry}"
    if adjudicator.strip():
        return (
            f"the adjudicator command ({adjudicator.strip()!r}, config memory_adjudicator) gave"
            f' no usable verdict: fix it, or set memory_adjudicator = "" for the built-in'
            f" one; then {retry}"
        )
    return f"the built-in adjudicator decides it now: {retry}"


def _existing_staging(home: Path, project: str, cid: str) -> bool:
    return any(
        s.id == cid for p in staging.staged_files(home, project) for s in staging.read(p) or ()
    )


def retry(db: Authority, home: Path, ids: list[str], *, every: bool, project: str | None) -> dict:
    """Re-stage dead-lettered candidates (same ids, attempts reset) and enqueue runs.

    The staging file is written first, then the state flips and the run is
    enqueued in one commit, then the dead-letter file goes: a crash between
    leaves a file the next run dead-letters again (nothing is lost)."""
    letters = {
        d["id"]: d for d in records.pending_candidates(db.conn, _pid(db, project), "deadletter")
    }
    wanted = list(letters) if every else list(dict.fromkeys(ids))
    refused = [{"id": i, "reason": "not a dead letter"} for i in wanted if i not in letters]
    chosen = [letters[i] for i in wanted if i in letters and letters[i]["candidate"]]
    for d in chosen:
        if not _existing_staging(home, d["project"], d["id"]):
            staging.stage(home, d["project"], [(d["id"], d["candidate"])])

    def flip(tx) -> list[tuple]:
        moved = records.requeue_candidates_in(tx, [d["id"] for d in chosen], time.time())
        queue, names = JobQueue(db), project_names(tx)
        for pid in sorted({p for _, p in moved}):
            queue.enqueue_in(tx, [job_spec(names[pid], pid)])
        return moved

    moved = db.write(flip)
    for d in chosen:
        staging.remove(staging.deadletter_dir(home, d["project"]) / f"{d['id']}.json")
    return {"restaged": [m[0] for m in moved], "refused": refused}


def sweep(
    db: Authority,
    home: Path,
    project: str,
    *,
    older_than_days: float,
    dry_run: bool,
    archive_stale: bool = False,
) -> dict:
    """Mark every anchored ref of the project's active records (``refs``: how many are
    verified, and each moved, changed and stale one); flag (``archive_stale``: archive)
    the records citing code that is gone (a stale anchor, or a path ref to no live
    file); archive active records not seen for ``older_than_days`` (0: none). Only
    statuses change."""
    pid = project_id(db, project)
    now = time.time()
    cutoff = now - older_than_days * 86400 if older_than_days > 0 else None
    cited = anchors.project_marks(db.conn, pid)
    anchored = {rid: {m["ref"] for m in marks} for rid, marks in cited.items()}
    changes = _stale_changes(cited, "archived" if archive_stale else "flagged")
    changes += [
        c
        for c in records.sweep_candidates(db.conn, pid, cutoff, anchored, _path_of)
        if c[0] not in {s[0] for s in changes}
    ]
    if not dry_run and changes:

        def write(tx) -> None:
            for rid, status, reason in changes:
                if records.statuses(tx, [rid]).get(rid) == "active":
                    records.set_status_in(tx, rid, status, None, now)
                    records.add_history_in(tx, rid, status, None, reason, now)

        db.write(write)
        mirror.sync(home, db.conn, project, pid)
    return {
        "project": project,
        "dry_run": dry_run,
        "flagged": [c[0] for c in changes if c[1] == "flagged"],
        "archived": [c[0] for c in changes if c[1] == "archived"],
        "refs": _ref_report(cited),
    }


def _path_of(ref: str) -> str | None:
    cited = anchors.parse_ref(ref)
    return cited.path if cited else None


def _stale_changes(cited: dict[str, list[dict]], status: str) -> list[tuple[str, str, str]]:
    """(record id, ``status``, reason) of each record with a stale anchored ref."""
    out = []
    for rid, marks in cited.items():
        if stale := [m["ref"] for m in marks if m["mark"] == "stale"]:
            out.append((rid, status, f"cited code gone: {', '.join(stale)[:200]}"))
    return out


def _ref_report(cited: dict[str, list[dict]]) -> dict:
    """How many anchored refs are verified, and each of the others with its record."""
    out: dict = {"verified": 0, "moved": [], "changed": [], "stale": []}
    for rid, marks in cited.items():
        for m in marks:
            if m["mark"] == "verified":
                out["verified"] += 1
            else:
                out[m["mark"]].append({"id": rid, **m})
    return out


def with_text(db: Authority, project: str, text: str) -> list[str]:
    """Ids of the project's active records whose normalized text is ``text``'s."""
    found = records.with_text(db.conn, project_id(db, project), norm_hash(text))
    if not found:
        raise NoSuchRecord(
            f"no active memory record of {project!r} reads {text[:80]!r}; "
            "see `memoryd memory list` for ids"
        )
    return found


def forget(db: Authority, home: Path, record_id: str) -> dict:
    """Delete a record and the records it replaced, with every byte of their text in
    the home: their candidates' staging lines, their mirror files, then their rows,
    index entries and vectors (:func:`records.forget_in`) in one commit, then a WAL
    checkpoint (the WAL holds the old pages until then). A crash before the commit
    leaves the record to forget again (its mirror file may be gone already: `memoryd
    rebuild` writes it back); its candidates stay consumed, never decided twice."""
    record_id = resolve(db, record_id)
    rec = records.get_record(db.conn, record_id)
    if rec is None:
        raise NoSuchRecord(f"no memory record {record_id!r}; see `memoryd memory list`")
    pid = rec["project_id"]
    project = project_names(db)[pid]
    ids = records.forget_chain(db.conn, record_id)
    staged = staging.drop(home, project, set(records.record_candidates(db.conn, ids)))
    with mirror.locked(home):
        mirrored = mirror.forget(home, project, ids, records.last_seq(db.conn, pid, ids))
        deleted = db.write(lambda tx: records.forget_in(tx, ids))
    wal = checkpoint_truncate(db)
    logs.event("memory_forgotten", f"forgot {deleted} memory record(s) of {project}", ids=ids)
    return {
        "project": project,
        "forgotten": ids,
        "staging_files": staged,
        "mirror_files": mirrored,
        "checkpointed": wal.ok,
        "checkpoint_blocked_by": wal.blocked_by,
    }


def rebuild(db: Authority, home: Path) -> dict:
    """Refill the records' full-text index and rewrite every project's mirror."""
    indexed = db.write(records.rebuild_fts_in)
    mirrored = {name: mirror.rebuild(home, db.conn, name, pid) for pid, name in _projects(db)}
    return {"fts_records": indexed, "mirror_files": mirrored}


def verify(db: Authority, home: Path) -> dict:
    """The records' index against an independent rebuild; each mirror against the rows."""
    live = records.fts_digest(db.conn)
    rebuilt = records.scratch_fts_digest(db.conn)
    problems = [] if live == rebuilt else ["memory/fts"]
    if bad_terms := records.terms_mismatches(db.conn):
        problems.append(f"memory/terms ({bad_terms} term row(s) differ from memory/fts)")
    for pid, name in _projects(db):
        bad = mirror.verify(home, db.conn, name, pid)
        problems += [f"{name}/memory-mirror ({len(bad)} file(s), e.g. {bad[0]})"] if bad else []
    return {"equal": not problems, "mismatches": problems, "fts_live": live, "fts_rebuilt": rebuilt}


def _projects(db: Authority) -> list[tuple[int, str]]:
    return sorted(project_names(db).items())
