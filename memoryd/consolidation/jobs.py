"""The ``memory.consolidate`` job kind: one live job per project (dedupe key).

In a job worker, a run first tidies staging (files of candidates already
consumed are removed, dead letters move to ``deadletter/``: both idempotent,
driven by committed state), then decides up to ``memory_run_candidates`` due
candidates in staging order: shortlist, and for a non-empty shortlist, a
verdict. It writes no record.

In the supervisor, the apply commits each candidate on its own: a savepoint per
candidate inside the group commit, so a candidate whose apply fails is undone
alone and parked, never taking another with it. The candidate's id is recorded
with its effects in that same savepoint: a staging file whose id is recorded
is never consumed again, whatever crashed after. The apply then logs the run
and enqueues the next run in the same commit when anything is left to do (the
next run also tidies staging for this one), and, when records changed, the
project's ``memory.mirror`` job (:mod:`.mirror`), which the other worker runs
while the next run decides.

A candidate whose apply kills the supervisor (a poison candidate) makes the
run a poison suspect (``supervisor_death_cap``). The apply of a suspect run
keeps ``staging/<project>/.applying`` (no fsync: it only has to outlive the
process) naming the run, its candidates and the one being applied. When the
cap dead-letters the run, :func:`recover` (in the same transaction) dead-letters
that candidate (all the run's candidates when the death came outside any one's
apply) and enqueues the project's next run: the poisoned run stays dead, the
rest of the backlog goes on, and ``memoryd memory retry`` brings a quarantined
candidate back. Without a mark naming the run (``supervisor_death_cap`` 1), or
when every candidate it blames is already decided, nothing is set aside and
nothing enqueued (a rerun could kill again): the dead job waits for ``memoryd
jobs retry``. Kill point ``memory_apply_<candidate
id>`` (:mod:`memoryd.base.killpoints`) kills a supervisor applying that candidate.

A candidate that kills (or fails) the worker deciding it: a retried run keeps
``staging/<project>/.deciding`` naming the job, its attempt and the candidate
being decided, and clears it once all are decided. When the run fails its last
attempt (``max_attempts``), :func:`recover` (the supervisor hands it jobs dead
of attempts too) quarantines the candidate that attempt was deciding and enqueues
the next run, as above; no mark of that attempt blames none. Kill point
``memory_decide_<candidate id>`` kills a worker deciding that candidate.

A ``memory add`` that dies between its staging file and its enqueue (kill point
``memory_add_staged``) leaves candidates no job will decide: :func:`stranded`,
the kind's start hook, enqueues their run when the supervisor next starts.
A run that leaves none of its project's staging files removes the directory,
so that hook looks only at the projects with staged candidates.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import orjson

from memoryd.base import faults, killpoints, logs
from memoryd.base.config import Config
from memoryd.base.durable import write_atomic
from memoryd.consolidation import adjudicate, mirror, staging
from memoryd.consolidation.adjudicate import VerdictError
from memoryd.consolidation.candidates import norm_hash, normalize, record_id, scope_key
from memoryd.consolidation.shortlist import Shortlister, index_terms, stem_set
from memoryd.consolidation.verdicts import FLIP, RATE, StaleTarget
from memoryd.consolidation.verdicts import apply as apply_verdict
from memoryd.ingest import vectors as vectors_job
from memoryd.queue import ClaimedJob, JobSpec
from memoryd.queue.reads import last_error_in, last_state_in
from memoryd.storage import records
from memoryd.storage.corpus import find_project_id
from memoryd.workers.contract import ApplyContext, JobKind, WorkContext

CONSOLIDATE = "memory.consolidate"
DAMAGED_SUFFIX = ".damaged.json"
# marks in the project's staging directory (never staging files)
APPLYING_MARK = ".applying"  # a supervisor applying a suspect run
DECIDING_MARK = ".deciding"  # a worker deciding a retried run
APPLY_FAILED = "applying failed"  # a dead letter's reason when its verdict's apply failed


def job_spec(project: str, pid: int, not_before: float = 0.0) -> JobSpec:
    """The project's consolidation job (at most one live: its dedupe key)."""
    return JobSpec(
        CONSOLIDATE,
        {"project": project, "project_id": pid},
        project=project,
        dedupe_key=f"{CONSOLIDATE}:{pid}",
        not_before=not_before,
    )


# -- in the worker --------------------------------------------------------------------


def new_record(pid: int, cid: str, candidate: dict, verdict: dict, shortlist: list[dict]) -> dict:
    """The host-owned record a candidate creates (for a merge: text and triggers joined
    with the targets'; the apply joins refs, sources and counts from the rows)."""
    texts, triggers = [candidate["text"]], list(candidate["triggers"])
    if verdict["verdict"] == "merge":
        hits = {h["id"]: h for h in shortlist}
        olds = [hits[t] for t in verdict["targets"]]
        texts = [*(h["text"] for h in olds), candidate["text"]]
        triggers = list(dict.fromkeys([*(t for h in olds for t in h["triggers"]), *triggers]))
        texts = list({normalize(t): t for t in reversed(texts)}.values())[::-1]
    text = "\n\n".join(texts)
    return {
        "id": record_id(cid),
        "project_id": pid,
        "scope": candidate["scope"],
        "scope_key": scope_key(candidate["scope"]),
        "kind": candidate["kind"],
        "status": "active",
        "text": text,
        "norm_hash": norm_hash(text),
        "nterms": len(stem_set(text)),
        "terms": index_terms(text, triggers),
        "triggers": triggers,
        "refs": list(candidate["refs"]),
        "sources": [candidate["source"]] if candidate.get("source") else [],
    }


def decide(
    sl: Shortlister, judge: adjudicate.Adjudicator, staged: staging.Staged, attempts: int, cap: int
) -> dict:
    """One candidate's decision: a verdict with the record it makes, or park/deadletter."""
    cand = staged.candidate
    base = {"cid": staged.id, "candidate": cand, "attempts": attempts, "targets": []}
    shortlist = sl.shortlist(cand)
    try:
        verdict = {"verdict": "add", "targets": []}
        if shortlist:
            verdict = adjudicate.check(judge(cand, shortlist), shortlist)
    except VerdictError as exc:
        tries = attempts + 1
        return {
            **base,
            "verdict": "deadletter" if tries >= cap else "park",
            "reason": str(exc),
            "attempts": tries,
        }
    decision = {**base, **verdict}
    if verdict["verdict"] == "duplicate":
        decision["paraphrase"] = _paraphrase(cand, verdict["targets"][0], shortlist)
    else:
        decision["record"] = new_record(sl.pid, staged.id, cand, verdict, shortlist)
        sl.overlay.add(decision["record"])
        if verdict["verdict"] in FLIP:  # a conflict's target stays active beside it
            sl.overlay.retire(verdict["targets"])
    return decision


def _paraphrase(candidate: dict, target: str, shortlist: list[dict]) -> str | None:
    """The duplicate candidate's text when it is not its target's (normalized): what
    the target's history keeps of it."""
    said = next(h["text"] for h in shortlist if h["id"] == target)
    return candidate["text"] if normalize(candidate["text"]) != normalize(said) else None


def _deadletter_file(home: Path, project: str, s: staging.Staged, state: dict) -> None:
    body = {"id": s.id, "project": project, "candidate": s.candidate, "reason": state["reason"]}
    staging.deadletter(home, project, f"{s.id}.json", {**body, "attempts": state["attempts"]})


def _discard(home: Path, project: str, path: Path) -> None:
    """A damaged staging file (not one memoryd wrote whole): kept under deadletter/."""
    try:
        content = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return
    body = {"file": path.name, "reason": "damaged staging file", "content": content}
    staging.deadletter(home, project, path.stem + DAMAGED_SUFFIX, body)
    staging.remove(path)


@dataclass
class Tidy:
    """What a walk of the staging directory found."""

    due: list[tuple[staging.Staged, int]] = field(default_factory=list)  # with attempts
    pending: int = 0  # due, left for the next run
    next_due: float | None = None  # the earliest parked candidate's next try
    seen: list[str] = field(default_factory=list)  # file names
    discarded: int = 0

    def park(self, due_at: float) -> None:
        self.next_due = min(self.next_due or due_at, due_at)


@dataclass
class StagingMemo:
    """What a worker keeps of staging between runs (a run re-walks staging, but a
    staging file never changes once renamed into place, and a consumed candidate
    stays consumed): files parsed, and ids known consumed. Only what staging still
    holds is kept."""

    files: dict[Path, list[staging.Staged]] = field(default_factory=dict)
    consumed: set[str] = field(default_factory=set)

    def read(self, path: Path) -> list[staging.Staged] | None:
        if path not in self.files and (entries := staging.read(path)) is not None:
            self.files[path] = entries
        return self.files.get(path)

    def states(self, conn: Any, ids: list[str]) -> dict[str, dict]:
        """Committed states of ``ids`` (consumed ones known from earlier runs unread)."""
        found = records.candidate_states(conn, [i for i in ids if i not in self.consumed])
        self.consumed.update(i for i, st in found.items() if st["state"] == "consumed")
        return {**dict.fromkeys(self.consumed.intersection(ids), CONSUMED), **found}

    def keep_only(self, paths: list[Path]) -> None:
        self.files = {p: self.files[p] for p in paths if p in self.files}
        self.consumed.intersection_update(s.id for e in self.files.values() for s in e)


CONSUMED = {"state": "consumed"}


def tidy(home: Path, conn: Any, project: str, now: float, want: int, memo: StagingMemo) -> Tidy:
    """Walk the project's staging files: finish what committed state says (dead letters
    to deadletter/, a file whose candidates are all decided removed), and collect up to
    ``want`` due candidates."""
    found = Tidy()
    files = [(p, memo.read(p)) for p in staging.staged_files(home, project)]
    found.seen = [p.name for p, _ in files]
    ids = [s.id for _, entries in files for s in entries or ()]
    states = memo.states(conn, ids)
    left = 0
    for path, entries in files:
        if entries is None:
            _discard(home, project, path)
            found.discarded += 1
        elif any(s.project != project for s in entries):
            left += 1  # another project's file: left for its owner
        elif _walk(home, project, entries, states, now, want, found):
            staging.remove(path)  # every candidate in it is consumed or dead-lettered
        else:
            left += 1
    memo.keep_only([p for p, _ in files])
    if not left:  # nothing staged: the start sweep (stranded) need not look here
        staging.prune(staging.staging_dir(home, project), (APPLYING_MARK, DECIDING_MARK))
    return found


def _walk(home: Path, project: str, entries: list, states: dict, now, want, found: Tidy) -> bool:
    """Sort one file's candidates; True when all of them are terminal."""
    terminal, later = True, False
    for s in entries:
        state = states.get(s.id)
        if state and state["state"] == "consumed":
            continue
        if state and state["state"] == "deadletter":
            _deadletter_file(home, project, s, state)
            continue
        terminal = False
        if state and state["due_at"] > now:
            found.park(state["due_at"])
            later = True
        elif len(found.due) < want:
            found.due.append((s, state["attempts"] if state else 0))
        else:
            found.pending += 1
            later = True
    # test-only (memoryd.base.faults): a file whose last candidates this run decides counts
    # as done, and is removed before their decisions commit
    return terminal or (not later and faults.active("staging_removed_early"))


def run(ctx: WorkContext, p: dict) -> dict:
    home, cfg, project, pid = ctx.home, ctx.config, p["project"], p["project_id"]
    conn = ctx.authority().conn
    memo = ctx.resource(f"{CONSOLIDATE}:staging:{project}", StagingMemo)
    mark = _deciding_mark(ctx, home)
    found = tidy(home, conn, project, time.time(), cfg.memory_run_candidates, memo)
    sl = Shortlister(conn, pid, cfg.memory_shortlist_size, cfg.memory_shortlist_min_overlap)
    judge = adjudicate.from_config(cfg)
    deadline = time.monotonic() + cfg.memory_run_seconds
    decisions = []
    armed = killpoints.armed()
    for staged, attempts in found.due:
        if decisions and time.monotonic() > deadline:
            break
        if mark:
            mark.write(staged.id)
        if armed:
            killpoints.reach(f"memory_decide_{staged.id}")
        decisions.append(decide(sl, judge, staged, attempts, cfg.memory_max_attempts))
    if mark:
        mark.clear()  # all decided: a failure from here on is none's in particular
    return {
        "decisions": decisions,
        "more": bool(found.pending) or len(decisions) < len(found.due),
        "next_due": found.next_due,
        "seen": found.seen,
        "discarded": found.discarded,
    }


def _deciding_mark(ctx: WorkContext, home: Path) -> _Mark | None:
    """A retried run's mark (its last attempt failed: maybe a candidate's doing), none
    left yet: a refunded try under the same attempt number (its supervisor died) must
    not blame its candidate for this one's failure."""
    job = ctx.job
    if not job or job.attempts < 2:
        return None
    mark = _Mark(home, job, DECIDING_MARK, attempt=job.attempts)
    mark.clear()
    return mark


# -- in the supervisor ----------------------------------------------------------------


def _settle(
    actx: ApplyContext, pid: int, d: dict, now: float
) -> tuple[str, str | None, str | None]:
    """Apply one decision in its own savepoint. Returns (outcome, record id, reason)."""
    tx, cid = actx.tx, d["cid"]
    prior = records.candidate_states(tx, [cid]).get(cid)
    if prior and prior["state"] != "parked":
        return "already", prior["record_id"], None  # decided before: never twice
    keep = {"candidate": d["candidate"], "attempts": d["attempts"], "reason": d.get("reason")}
    if d["verdict"] == "deadletter":
        records.set_candidate_in(tx, pid, cid, "deadletter", now, **keep)
        return "deadlettered", None, d["reason"]
    if d["verdict"] == "park":
        due = now + actx.queue.backoff(d["attempts"])
        records.set_candidate_in(tx, pid, cid, "parked", now, due_at=due, **keep)
        return "parked", None, d["reason"]
    try:
        with actx.savepoint("memory_candidate"):
            outcome, rid = apply_verdict(tx, d, now)
            records.set_candidate_in(tx, pid, cid, "consumed", now, outcome=outcome, record_id=rid)
            return outcome, rid, None
    except StaleTarget as exc:  # not the candidate's fault: decided again next run, uncharged
        records.set_candidate_in(tx, pid, cid, "parked", now, **{**keep, "reason": str(exc)})
        return "parked", None, str(exc)
    except Exception as exc:  # this candidate's alone: undone, parked or dead-lettered
        tries = d["attempts"] + 1
        state = "deadletter" if tries >= actx.config.memory_max_attempts else "parked"
        reason = f"{APPLY_FAILED}: {type(exc).__name__}: {exc}"
        due = now + actx.queue.backoff(tries)
        fields = {**keep, "attempts": tries, "reason": reason, "due_at": due}
        records.set_candidate_in(tx, pid, cid, state, now, **fields)
        return ("deadlettered" if state == "deadletter" else "parked"), None, reason


def _unseen(home: Path, project: str, seen: list[str]) -> bool:
    """Whether staging holds a file the run did not see (staged while it ran: that
    add's enqueue met this live job's dedupe key and was dropped)."""
    known = set(seen)
    with contextlib.suppress(FileNotFoundError):
        return any(
            n.endswith(staging.SUFFIX) and n not in known
            for n in os.listdir(staging.staging_dir(home, project))
        )
    return False


def _follow_up(actx: ApplyContext, job: ClaimedJob, out: dict, home: Path) -> None:
    p = job.data
    parked = records.next_due(actx.tx, p["project_id"])
    if out["decisions"] or out["more"] or _unseen(home, p["project"], out["seen"]):
        when = 0.0
    elif parked is not None:
        when = parked
    else:
        return
    actx.queue.enqueue_in(actx.tx, [job_spec(p["project"], p["project_id"], when)])


def _home(tx: apsw.Connection) -> Path:
    """The home, from the authority's path (an apply gets no home of its own)."""
    return Path(tx.db_filename("main")).parent


def apply(actx: ApplyContext, done: list[tuple[ClaimedJob, Any]]) -> None:
    home = _home(actx.tx)
    cfg: Config = actx.config
    for job, out in done:
        pid, now = job.data["project_id"], time.time()
        rates: Counter = Counter(discarded=out["discarded"])
        outcomes = []
        mark = (
            applying_mark(home, job, out["decisions"]) if job.deaths and out["decisions"] else None
        )
        armed = killpoints.armed()
        for d in out["decisions"]:
            if mark:
                mark.write(d["cid"])
            if armed:
                killpoints.reach(f"memory_apply_{d['cid']}")
            outcome, rid, reason = _settle(actx, pid, d, now)
            rates[RATE.get(outcome, outcome)] += 1
            outcomes.append((d["cid"], outcome, rid, reason))
        if mark:
            mark.write(None)  # past the candidates: a death now is none's in particular
        if any(rid for _, outcome, rid, _ in outcomes if outcome != "already"):
            actx.queue.enqueue_in(actx.tx, [mirror.job_spec(job.data["project"], pid)])
            codes = vectors_job.records_follow_up(actx.tx, cfg, pid, job.data["project"])
            actx.queue.enqueue_in(actx.tx, codes)  # record codes, off this critical path
        if outcomes or rates["discarded"]:  # a tidy-up run alone is not logged
            run_id = records.log_run_in(actx.tx, pid, job.id, now, rates)
            records.log_outcomes_in(actx.tx, run_id, outcomes, now)
            keep = cfg.memory_keep_runs, cfg.memory_keep_outcomes
            records.trim_log_in(actx.tx, *keep)
        _follow_up(actx, job, out, home)


# -- poison candidates ------------------------------------------------------------------


class _Mark:
    """A poison suspect's mark in its project's staging directory: the job, and the
    candidate being handled (no fsync: it only has to outlive the process)."""

    def __init__(self, home: Path, job: ClaimedJob, name: str, **head: Any) -> None:
        self.path = staging.staging_dir(home, job.data["project"]) / name
        self.head = {"job": job.id, **head}

    def write(self, at: str | None) -> None:
        write_atomic(self.path, orjson.dumps({**self.head, "at": at}), durable=False)

    def clear(self) -> None:
        staging.remove(self.path)


def applying_mark(home: Path, job: ClaimedJob, decisions: list[dict]) -> _Mark:
    """The apply of a run that a supervisor died applying: its candidates too."""
    cids = [d["cid"] for d in decisions]
    return _Mark(home, job, APPLYING_MARK, deaths=job.deaths, cids=cids)


def _read_mark(home: Path, job: ClaimedJob, name: str) -> dict:
    """The job's mark of that name ({} when it names another job, or none is left)."""
    try:
        mark = orjson.loads((staging.staging_dir(home, job.data["project"]) / name).read_bytes())
    except (OSError, ValueError):
        return {}
    return mark if isinstance(mark, dict) and mark.get("job") == job.id else {}


def suspects(home: Path, job: ClaimedJob, death_cap: int) -> list[str]:
    """The candidates a dead-lettered run's marks blame. A run that killed its
    supervisors (``death_cap`` deaths): the one being applied at the last death, else
    (a death past the candidates) all of the run's; none without a mark of that run's
    last apply (its count of deaths is one less). A run out of attempts: the one its
    last attempt was deciding; none when that attempt left no mark (it failed before
    any candidate, or after them all)."""
    if job.deaths >= death_cap:
        mark = _read_mark(home, job, APPLYING_MARK)
        if mark.get("deaths") != job.deaths - 1:
            return []
        return [mark["at"]] if mark.get("at") else list(mark.get("cids") or ())
    mark = _read_mark(home, job, DECIDING_MARK)
    return [mark["at"]] if mark.get("attempt") == job.attempts and mark.get("at") else []


def _staged(home: Path, project: str, cids: set[str]) -> dict[str, dict]:
    """The staged content of ``cids`` (a walk of the project's staging files)."""
    found: dict[str, dict] = {}
    for path in staging.staged_files(home, project):
        for s in staging.read(path) or ():
            if s.id in cids and s.project == project:
                found[s.id] = s.candidate
        if len(found) == len(cids):
            break
    return found


def quarantine_in(tx: apsw.Connection, home: Path, p: dict, cids: list[str], reason: str) -> list:
    """Dead-letter the still undecided ``cids`` of project ``p`` (the next run moves them
    to deadletter/ with ``reason``) and log it as a run; returns the ids dead-lettered."""
    now, pid = time.time(), p["project_id"]
    states = records.candidate_states(tx, cids)
    open_ = {c for c in cids if states.get(c, {}).get("state", "parked") == "parked"}
    content = _staged(home, p["project"], open_)
    done = [c for c in cids if c in content]
    for cid in done:
        kept = {"candidate": content[cid], "attempts": states.get(cid, {}).get("attempts", 0)}
        records.set_candidate_in(tx, pid, cid, "deadletter", now, reason=reason, **kept)
    if done:
        run_id = records.log_run_in(tx, pid, None, now, {"deadlettered": len(done)})
        records.log_outcomes_in(tx, run_id, [(c, "deadlettered", None, reason) for c in done], now)
    return done


def _blame(actx: ApplyContext, home: Path, job: ClaimedJob) -> tuple[list[str], str, str]:
    """(the candidates the job's marks blame, their dead letters' reason, what it did)."""
    cap = actx.config.supervisor_death_cap
    blamed = suspects(home, job, cap)
    if job.deaths >= cap:
        which = "its apply" if len(blamed) == 1 else f"the apply of its run ({len(blamed)})"
        did = f"killed its supervisor {job.deaths} times"
        reason = (
            f"{which} killed the supervisor {job.deaths} times (job {job.id}, supervisor_death_cap)"
        )
    else:
        error = last_error_in(actx.tx, job.id)
        did = f"failed all its {job.attempts} attempts"
        reason = (
            f"deciding it ended the last of job {job.id}'s {job.attempts} attempts"
            f" (max_attempts): {'no error kept' if error is None else error}"
        )
    return blamed, f"{reason}; inspect it, then `memoryd memory retry`", did


def recover(actx: ApplyContext, jobs: list[ClaimedJob]) -> None:
    """Runs dead-lettered for killing their supervisor, or out of attempts: quarantine
    the candidates their marks blame, and enqueue the project's next run (see the
    module's docstring). Only a recovery that set a candidate aside enqueues: each one
    shortens the backlog, so they are bounded by it, and a run whose death no
    undecided candidate explains is never rerun on its own."""
    home = _home(actx.tx)
    for job in jobs:
        p = job.data
        blamed, reason, did = _blame(actx, home, job)
        done = quarantine_in(actx.tx, home, p, blamed, reason) if blamed else []
        if done:
            actx.queue.enqueue_in(actx.tx, [job_spec(p["project"], p["project_id"])])
        what = (
            f"{len(done)} candidate(s) dead-lettered, the next run enqueued"
            if done
            else "no undecided candidate is known to blame; inspect it, then `memoryd jobs retry`"
        )
        logs.event(
            "memory_poison_quarantined" if done else "memory_poison_unknown",
            f"consolidation job {job.id} ({p['project']}) {did}: {what}",
            level=logging.WARNING,
            job_id=job.id,
            project=p["project"],
            candidates=done,
        )


# -- at the supervisor's start: runs a crash left unenqueued ---------------------------


def stranded(home: Path, config: Config, conn: apsw.Connection) -> list[JobSpec]:
    """A run for each project whose staging holds undecided candidates and that has no
    consolidation job to decide them (a ``memory add`` that died between its staging
    file and its enqueue). Its dedupe key keeps it the project's one live run, so
    restarts enqueue it once. A project whose last run is dead is left to ``memoryd
    jobs retry`` (a new run could die the same way). Only the projects staging holds a
    directory of are looked at, and a run that leaves none of its project's staging
    files removes the directory (:func:`tidy`): a start looks at the projects with staged
    candidates, not at all of them."""
    specs = []
    for project in _staging_projects(home):
        pid = find_project_id(conn, project)
        if pid is not None and _runless(conn, project) and _undecided(conn, home, project):
            specs.append(job_spec(project, pid))
    if specs:
        logs.event(
            "memory_stranded",
            f"staged memory candidates of {len(specs)} project(s) had no consolidation run"
            " (an add died before enqueuing it): runs enqueued",
            projects=[s.project for s in specs],
        )
    return specs


def _staging_projects(home: Path) -> list[str]:
    """Projects whose staging directory holds a staging file."""
    root = home / staging.STAGING_DIR
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    return [n for n in names if next(staging.staged_files(home, n), None)]


def _runless(conn: apsw.Connection, project: str) -> bool:
    """Whether the project's last consolidation job is done (or purged, or none)."""
    return last_state_in(conn, project, CONSOLIDATE) in (None, "done")


def _undecided(conn: apsw.Connection, home: Path, project: str) -> bool:
    """Whether the project's staging files hold a candidate not decided for good (or a
    damaged file, which a run sets aside)."""
    ids = []
    for path in staging.staged_files(home, project):
        entries = staging.read(path)
        if entries is None:
            return True
        ids += [s.id for s in entries if s.project == project]
    states = records.candidate_states(conn, ids)
    return any(states.get(i, {}).get("state", "parked") == "parked" for i in ids)


KINDS = [
    JobKind(
        CONSOLIDATE,
        run,
        apply,
        doc="consolidate a project's staged memory candidates",
        poisoned=recover,
        at_start=stranded,
    ),
    mirror.KIND,
]
