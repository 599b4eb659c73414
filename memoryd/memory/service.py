"""What the ``memory`` commands do, over an open authority and a home.

``memoryd.api.Memoryd`` calls these; they never start a supervisor themselves.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from memoryd import killpoints
from memoryd.config import Config
from memoryd.errors import MalformedCandidate, NoSuchRecord, UsageError
from memoryd.memory import STATUSES, mirror, staging
from memoryd.memory.candidates import KINDS, candidate_id, parse_lines
from memoryd.memory.jobs import job_spec
from memoryd.queue import JobQueue
from memoryd.storage import Authority, records
from memoryd.storage.corpus import project_id

SWEEP_STATUSES = ("flagged", "archived")
LAST_RUNS = 10


def add(db: Authority, home: Path, config: Config, data: bytes, project: str) -> dict:
    """Validate every line, stage the valid candidates, enqueue the project's run."""
    pid = project_id(db, project)  # an unknown project: UNKNOWN_PROJECT, nothing staged
    valid, dropped = parse_lines(data, project, int(config.memory_max_text_bytes))
    if not valid:
        first = f"line {dropped[0].line}: {dropped[0].reason}" if dropped else "no candidate lines"
        raise MalformedCandidate(
            f"nothing to stage ({len(dropped)} malformed line(s); {first}); one JSON object "
            'per line, like {"kind": "lesson", "text": "..."}',
            [d.as_dict() for d in dropped],
        )
    nonce = secrets.token_hex(8)
    items = [(candidate_id(project, c, f"{nonce}:{i}"), c) for i, c in enumerate(valid)]
    staging.stage(home, project, items)
    killpoints.reach("memory_add_staged")  # a death here: the next start enqueues the run
    job = JobQueue(db).enqueue(job_spec(project, pid))
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
    return records.list_records(db.conn, project_id(db, project), status, kind, limit)


def show(db: Authority, record_id: str) -> dict:
    rec = records.get_record(db.conn, record_id)
    if rec is None:
        raise NoSuchRecord(f"no memory record {record_id!r}; see `memoryd memory list`")
    return {**rec, "history": records.history(db.conn, record_id)}


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
    names = [r[0] for r in db.query("SELECT name FROM projects ORDER BY name")]
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


def deadletters(db: Authority, project: str | None) -> list[dict]:
    return records.pending_candidates(db.conn, _pid(db, project), "deadletter")


def _existing_staging(home: Path, project: str, cid: str) -> bool:
    return any(
        s.id == cid for p in staging.staged_files(home, project) for s in staging.read(p) or ()
    )


def retry(db: Authority, home: Path, ids: list[str], *, every: bool, project: str | None) -> dict:
    """Re-stage dead-lettered candidates (same ids, attempts reset) and enqueue runs.

    The staging file is written first, then the state flips and the run is
    enqueued in one commit, then the dead-letter file goes: a crash between
    leaves a file the next run dead-letters again (nothing is lost)."""
    letters = {d["id"]: d for d in deadletters(db, project)}
    wanted = list(letters) if every else list(dict.fromkeys(ids))
    refused = [{"id": i, "reason": "not a dead letter"} for i in wanted if i not in letters]
    chosen = [letters[i] for i in wanted if i in letters and letters[i]["candidate"]]
    for d in chosen:
        if not _existing_staging(home, d["project"], d["id"]):
            staging.stage(home, d["project"], [(d["id"], d["candidate"])])

    def flip(tx) -> list[tuple]:
        moved = records.requeue_candidates_in(tx, [d["id"] for d in chosen], time.time())
        queue = JobQueue(db)
        for pid in sorted({p for _, p in moved}):
            name = tx.execute("SELECT name FROM projects WHERE id = ?", (pid,)).fetchone()[0]
            queue.enqueue_in(tx, [job_spec(name, pid)])
        return moved

    moved = db.write(flip)
    for d in chosen:
        staging.remove(staging.deadletter_dir(home, d["project"]) / f"{d['id']}.json")
    return {"restaged": [m[0] for m in moved], "refused": refused}


def sweep(
    db: Authority, home: Path, project: str, *, older_than_days: float, dry_run: bool
) -> dict:
    """Flag active records whose path refs name no live file of the project; archive
    active records not seen for ``older_than_days`` (0: none). Only statuses change."""
    pid = project_id(db, project)
    now = time.time()
    cutoff = now - older_than_days * 86400 if older_than_days > 0 else None
    changes = records.sweep_candidates(db.conn, pid, cutoff)
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
    return db.query("SELECT id, name FROM projects ORDER BY id")
