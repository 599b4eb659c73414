"""What a cycle does to its processes. Each scenario runs the cycle's work, breaks
something on purpose, and returns the jobs a reader saw done before the break
(they must stay done, with the same finish time); the drill then recovers with a
draining supervisor and checks.

Kill and fault counts go to ``Drill.kills`` under the scenario's own names;
``not_reached`` and ``finished_before_kill`` count cycles whose break did not land.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import orjson

from memoryd.app import default_registry
from memoryd.base.errors import StoreBusy
from memoryd.base.killpoints import ENV as KILL_ENV
from memoryd.base.killpoints import NAMES as KILL_POINTS
from memoryd.base.killpoints import ONCE_ENV, RETENTION_NAMES
from memoryd.faces.drill.core import POLL, PROJECT, RUN_TIMEOUT, Drill, DrillAborted
from memoryd.faces.drill.procs import signal_pid
from memoryd.operations.api import Memoryd
from memoryd.operations.memory import Memory
from memoryd.queue import ClaimedJob, JobQueue, JobReads, JobSpec
from memoryd.retention.boundary import KILL_POINTS as MIGRATION_POINTS
from memoryd.workers.builtin import attempt_result
from memoryd.workers.contract import ApplyContext

STALE_LEASE = 1.0  # seconds: the stale scenario's supervisor lease
STALE_SLEEPS = 2  # long sleep jobs, claimed first, so a worker holds one when it is stopped
STALE_SLEEP_SECONDS = 2.0
SECOND_ATTEMPT_SECONDS = 30.0  # the second claimer's patience (a retry backoff is ~1 s)
SECOND_CLAIMER = "drill-second-claimer"
LONG_LEASE = 2.0  # seconds: the long_jobs scenario's lease (renewed every quarter)
LONG_SLEEPS = 2  # sleep jobs longer than that lease, claimed first
LONG_SLEEP_SECONDS = 3.0
HOLD_LEASE = 60.0  # seconds: the second claimer's hold on re-claimed noops (never runs out)
SHUTDOWN_GRACE = 1.0  # seconds: the SIGTERM scenario's grace period
TICK_SECONDS = 0.2  # the tick scenario's retention tick period
CHECKPOINT_BYTES = 64 * 1024  # the checkpoint kill's WAL bound
CHECKPOINTS = 6  # the checkpoint kill lands on one of the first this many
WRITER_JOBS = 20_000  # a CLI bulk write killed mid-write
WRITER_MARK = "drill-writer"

Done = dict[int, float]


@dataclass(frozen=True)
class Scenario:
    run: Callable[[Drill], Done]
    extra: Callable[[], list[JobSpec]] = list  # jobs enqueued before the cycle's work


def _done(d: Drill) -> Done:
    return d.read(lambda q: q.done_since(d.base))


def _finished_early(d: Drill, sup) -> Done:
    d.kills["finished_before_kill"] += 1
    d.expect_clean_exit(sup, "a run that finished before its break")
    return _done(d)


def _kill_supervisor(d: Drill, sup, label: str) -> None:
    d.sigkill(sup.pid)
    d.await_exit(sup, "supervisor")
    sup.close()
    d.kills[label] += 1


def _workers(d: Drill, sup) -> list[int]:
    return [w["pid"] for w in d.supervisor_state(sup).get("workers", [])]


# -- the supervisor killed ---------------------------------------------------------


def kill_point(d: Drill) -> Done:
    """SIGKILL the supervisor at a named point; commit points are drawn over the whole
    run (its expected number of commits, learned from runs that finished)."""
    point = d.pick(KILL_POINTS)
    once = d.home / f"killed-{d.cycle_no}"
    env = {ONCE_ENV: str(once)}
    if point.endswith("commit"):
        nth = d.rng.randint(1, d.turns)
    else:  # a small WAL bound: checkpoints all through the run, not only at its end
        nth = d.rng.randint(1, CHECKPOINTS)
        env["MEMORYD_WAL_CHECKPOINT_BYTES"] = str(CHECKPOINT_BYTES)
    sup = d.supervisor(env={**env, KILL_ENV: f"{point}:{nth}"})
    code = d.await_exit(sup, f"supervisor with kill point {point}:{nth}")
    if once.exists():
        d.kills[point] += 1
    else:
        d.kills["not_reached"] += 1
        if code != 0:
            d.fail(f"the supervisor exited {code} without reaching {point}: {sup.output()}")
    sup.close()
    return _done(d)


def random_supervisor(d: Drill) -> Done:
    """SIGKILL the supervisor at a random moment after some of the cycle's jobs are done."""
    sup = d.supervisor()
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    done = _done(d)
    _kill_supervisor(d, sup, "random_supervisor")
    return done


def worker(d: Drill) -> Done:
    """SIGKILL one job worker mid-work: the supervisor must replace it, fail its jobs
    with the attempt charged, and drain to exit 0."""
    sup = d.supervisor()
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    workers = _workers(d, sup)
    if not workers:
        return _finished_early(d, sup)
    victim = d.rng.choice(workers)
    done = _done(d)
    d.sigkill(victim)
    d.kills["worker"] += 1
    d.expect_clean_exit(sup, f"after its worker {victim} was SIGKILLed")
    return done


def both(d: Drill) -> Done:
    """SIGKILL a worker, then the supervisor a moment later."""
    sup = d.supervisor()
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    done = _done(d)
    for pid in _workers(d, sup)[:1]:
        d.sigkill(pid)
    time.sleep(d.rng.uniform(0.0, 0.3))
    _kill_supervisor(d, sup, "worker_and_supervisor")
    return done


def sigterm(d: Drill) -> Done:
    """SIGTERM mid-work; half the time SIGKILL during the grace period, else the
    shutdown must finish cleanly (exit 0, in-flight work finished or released)."""
    sup = d.supervisor(env={"MEMORYD_SHUTDOWN_GRACE_SECONDS": str(SHUTDOWN_GRACE)})
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    done = _done(d)
    sup.proc.send_signal(signal.SIGTERM)
    if d.rng.random() < 0.5:
        time.sleep(d.rng.uniform(0.0, SHUTDOWN_GRACE))
        _kill_supervisor(d, sup, "sigterm_then_sigkill")
        return done
    d.kills["sigterm"] += 1
    d.expect_clean_exit(sup, "on SIGTERM")
    return done


# -- the retention worker killed ---------------------------------------------------


def retention(d: Drill) -> Done:
    """Kill the retention worker (at one of the archive's points, or at random) while
    its supervisor keeps going: it must respawn it and redo the archive job."""
    point = d.pick([None, *RETENTION_NAMES])
    once = d.home / f"killed-{d.cycle_no}"
    env = {KILL_ENV: f"{point}:1", ONCE_ENV: str(once)} if point else {}
    sup = d.supervisor(env=env)
    if point is None:
        time.sleep(d.rng.uniform(0.1, 0.7))
        pid = d.supervisor_state(sup).get("retention_worker")
        if pid and sup.poll() is None:
            d.sigkill(pid)
            d.kills["random_retention"] += 1
        else:
            d.kills["finished_before_kill"] += 1
    done = _done(d)
    d.expect_clean_exit(sup, "after its retention worker was killed")
    if point:
        d.kills[point if once.exists() else "not_reached"] += 1
    return done


def tick(d: Drill) -> Done:
    """A non-draining supervisor with a fast periodic retention tick: SIGKILL its
    retention worker or itself while ticks run. After a worker kill it must go on and
    stop cleanly on SIGTERM."""
    sup = d.supervisor(drain=False, env={"MEMORYD_RETENTION_TICK_SECONDS": str(TICK_SECONDS)})
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    time.sleep(d.rng.uniform(TICK_SECONDS, 5 * TICK_SECONDS))  # ticks are running by now
    done = _done(d)
    if d.rng.random() < 0.5:
        _kill_supervisor(d, sup, "tick_supervisor")
        return done
    victim = d.supervisor_state(sup).get("retention_worker")
    d.sigkill(victim)
    d.kills["tick_retention" if victim else "not_reached"] += 1
    time.sleep(d.rng.uniform(0.0, 5 * TICK_SECONDS))
    sup.proc.send_signal(signal.SIGTERM)
    d.expect_clean_exit(sup, "on SIGTERM after its retention worker was killed mid-tick")
    return done


# -- a CLI writer killed -----------------------------------------------------------


def writer(d: Drill) -> Done:
    """SIGKILL ``memoryd jobs add noop --count N`` mid-write beside a running supervisor:
    what it committed is whole jobs, each applied once (checked with the effects)."""
    sup = d.supervisor()
    payload = orjson.dumps({WRITER_MARK: d.cycle_no}).decode()
    cli = d.start("jobs", "add", "noop", "--count", str(WRITER_JOBS), "--payload", payload)
    time.sleep(d.rng.uniform(0.05, 0.6))
    d.sigkill(cli.pid)
    code = cli.proc.wait(timeout=RUN_TIMEOUT)
    cli.close()
    d.kills["writer" if code == -signal.SIGKILL else "finished_before_kill"] += 1
    done = _done(d)
    d.expect_clean_exit(sup, "beside a killed CLI writer")
    return done


# -- an archive migration killed ----------------------------------------------------

NEXT_STEP = {"copying": "--copy", "blocked": "--copy", "awaiting_verification": "--verify"}


def migration(d: Drill) -> Done:
    """After the cycle's work, an archive format migration (``archive migrate --copy``,
    then ``--verify``, which switches directories) is SIGKILLed mid-copy or mid-switch
    (at a kill point or at random); re-running the steps must finish it, and the
    archive checks then run on the migrated store."""
    d.expect_clean_exit(d.supervisor(), "before the migration")
    done = _done(d)
    point = d.pick([None, *MIGRATION_POINTS])
    once = d.home / f"killed-{d.cycle_no}"
    env = {KILL_ENV: f"{point}:1", ONCE_ENV: str(once)} if point else {}
    steps = {"migration_mid_copy": "--copy", "migration_mid_switch": "--verify"}
    step = steps.get(point) or d.rng.choice(["--copy", "--verify"])
    if step == "--verify":
        _migrate(d, "--copy")
    cli = d.start("archive", "migrate", step, env=env)
    if point is None:
        time.sleep(d.rng.uniform(0.3, 0.8))  # the command's start-up is about 0.4 s
        d.sigkill(cli.pid)
    code = cli.proc.wait(timeout=RUN_TIMEOUT)
    if point:
        d.kills[point if once.exists() else "not_reached"] += 1
    else:
        d.kills["random_migration" if code == -signal.SIGKILL else "not_reached"] += 1
    cli.close()
    _finish_migration(d)
    return done


def _migrate(d: Drill, *step: str) -> dict:
    """Run one step; a refused step (``MIGRATION_ERROR``, exit 1) is an answer, not a
    crash: the status read before it does not finish an interrupted switch (the step
    itself does), so ``--verify`` may find the migration already verified."""
    cli = d.start("archive", "migrate", *step, "--json")
    code = cli.proc.wait(timeout=RUN_TIMEOUT)
    out = cli.output()
    cli.close()
    try:
        answer = orjson.loads(out[out.find("{") : out.rfind("}") + 1])
    except orjson.JSONDecodeError:
        answer = {}
    if code != 0 and answer.get("error") != "MIGRATION_ERROR":
        raise DrillAborted(f"archive migrate {' '.join(step)} exited {code}: {out}")
    return answer


def _finish_migration(d: Drill) -> None:
    """Re-run the steps a crash left undone until the migration is committed."""
    state = None
    for _ in range(6):
        state = _migrate(d)["state"]
        if state == "committed":
            return
        _migrate(d, NEXT_STEP.get(state, "--commit"))
    raise DrillAborted(f"the archive migration did not reach committed (it is {state})")


# -- a stale result -----------------------------------------------------------------


def _long_sleeps() -> list[JobSpec]:
    return [JobSpec("sleep", {"seconds": STALE_SLEEP_SECONDS}, priority=1)] * STALE_SLEEPS


def stale(d: Drill, *, everything: bool = False) -> Done:
    """A result that reaches the supervisor after its lease was reclaimed must be
    rejected (fencing).

    The supervisor (short lease) claims long ``sleep`` jobs first; once one is claimed,
    its workers and then the supervisor are SIGSTOPped past the lease. A second
    claimer reclaims the sleep jobs' expired leases (with ``everything``, every
    expired lease, as ``reclaim_expired_in`` does) and completes them (another attempt
    commits). SIGCONT: the workers finish, and their late results reach the
    supervisor under the old lease token. A supervisor alone never produces this:
    it renews the leases of all it holds, and its lock keeps a second one out, so the
    second claimer is the drill itself, through ``JobQueue``'s methods and the kind's
    own apply, as a supervisor that lost its lock would.
    """
    sup = d.supervisor(env={"MEMORYD_LEASE_SECONDS": str(STALE_LEASE)})
    held = _wait_claimed(d, sup, "sleep")
    if not held:
        return _finished_early(d, sup)
    tree = sup.tree()
    for pid in reversed(tree):  # workers first: the supervisor must not see them finish
        signal_pid(pid, signal.SIGSTOP)
    try:
        second, holding = _second_attempt(d, tree, held, everything)
    finally:
        for pid in tree:
            signal_pid(pid, signal.SIGCONT)
    if holding:
        _complete_held(d, sup, holding)
    label = "stale_result_all" if everything else "stale_result"
    d.kills[label if set(second) & set(held) else "not_reached"] += 1
    done = _done(d)
    d.expect_clean_exit(sup, "after a late result")
    return done


def stale_all(d: Drill) -> Done:
    """:func:`stale` where the second claimer reclaims every expired lease: the
    resumed supervisor then claims its own reclaimed work again while the old
    attempts are still in flight, so a late result may meet its job's new attempt
    in one group commit. The second claimer also claims the reclaimed ``noop`` jobs
    again and holds them until the resumed supervisor has delivered their late
    results: a completion that does not check the lease token applies a late result
    in place of the new attempt's, and the effect row names the attempt it came from."""
    return stale(d, everything=True)


def _wait_claimed(d: Drill, sup, kind: str) -> list[int]:
    deadline = time.monotonic() + RUN_TIMEOUT
    while sup.poll() is None and time.monotonic() < deadline:
        d.guard(sup, "supervisor")
        held = [job.id for job, _ in d.read(lambda q: q.claimed((kind,)))]
        if held:
            return held
        time.sleep(0.01)
    return []


def _second_attempt(
    d: Drill, tree: list[int], held: list[int], everything: bool
) -> tuple[list[int], list[ClaimedJob]]:
    """Once every lease the stopped supervisor holds has run out, reclaim and complete
    its sleep jobs (see :func:`_reclaim_and_complete`). A supervisor stopped inside a
    transaction holds the write lock: then let it (not its workers, whose sleeps have run
    out while they were stopped) run a moment and stop it again."""
    deadline = time.monotonic() + SECOND_ATTEMPT_SECONDS
    while time.monotonic() < deadline:
        _wait_expired(d)
        try:
            with d.queue(retry_backoff_base=0.0, write_retry_seconds=0.5) as q:
                sleeps = (
                    None if everything else [job for job, _ in JobReads(q.db).claimed(("sleep",))]
                )
                return q.db.write(
                    partial(_reclaim_and_complete, q=q, sleeps=sleeps, held=set(held))
                )
        except _NoSleepCompleted:
            if not {job for job, state, _ in d.read(lambda q: q.not_done())} & set(held):
                return [], []  # they finished after all: nothing to reach
            time.sleep(POLL)
        except StoreBusy:  # the supervisor alone: a resumed worker would finish its sleep
            signal_pid(tree[0], signal.SIGCONT)
            time.sleep(0.02)
            signal_pid(tree[0], signal.SIGSTOP)
    raise DrillAborted(
        "no second attempt: the stopped supervisor kept the write lock, or no sleep job "
        f"became claimable within {SECOND_ATTEMPT_SECONDS:.0f} s"
    )


class _NoSleepCompleted(Exception):
    """The second claimer found none of the stopped supervisor's sleep jobs to complete:
    the supervisor, let run a moment while it held the write lock, failed its own expired
    claims (they back off) or claimed them again. The transaction rolls back; it tries
    again once the backoff or the fresh lease ran out."""


def _wait_expired(d: Drill) -> None:
    deadline = time.monotonic() + 10 * STALE_LEASE + 10
    while time.monotonic() < deadline:
        leases = [expires for _, expires in d.read(lambda q: q.claimed())]
        if not leases or max(leases) < time.time():
            return
        time.sleep(0.05)


def _reclaim_and_complete(
    tx, q: JobQueue, sleeps: list[ClaimedJob] | None, held: set[int]
) -> tuple[list[int], list[ClaimedJob]]:
    """Reclaim (``sleeps`` only, else every expired lease), then claim, complete and
    apply the sleep jobs as a supervisor's group commit would. With every lease
    reclaimed, claim the reclaimed noop jobs again (the lowest ids among the ready
    noops: the supervisor claims in id order) and hold them. Returns the sleep jobs
    completed and the claims held."""
    reclaimed = q.reclaim_expired_in(tx) if sleeps is None else []
    for job in sleeps or ():
        q.fail_in(tx, job, "lease expired")
    jobs = q.claim_in(tx, SECOND_CLAIMER, 10_000, 60.0, kinds=("sleep",))
    done = q.complete_many_in(tx, jobs)
    accepted = [(j, attempt_result(j)) for j in jobs if (j.id, j.token) in done]
    if not held & {j.id for j, _ in accepted}:
        raise _NoSleepCompleted
    _apply(tx, q, "sleep", accepted)
    noops = sum(1 for job, _ in reclaimed if job.kind == "noop")
    holding = q.claim_in(tx, SECOND_CLAIMER, noops, HOLD_LEASE, kinds=("noop",))
    return [j.id for j, _ in accepted], holding


def _apply(tx, q: JobQueue, kind: str, accepted: list[tuple[ClaimedJob, object]]) -> None:
    default_registry().job_kind(kind).apply(ApplyContext(tx, q, q.db.config), accepted)


def _complete_held(d: Drill, sup, holding: list[ClaimedJob]) -> None:
    """Complete and apply the held claims once every other job is done: the resumed
    supervisor has then delivered their old attempts' late results (a worker returns
    its batches in order, and its buffer dispatches in claim order)."""
    ids = {job.id for job in holding}
    deadline = time.monotonic() + RUN_TIMEOUT
    while sup.poll() is None and time.monotonic() < deadline:
        d.guard(sup, "supervisor")
        pending = {job for job, state, _ in d.read(lambda q: q.not_done()) if state != "dead"}
        if pending <= ids:
            break
        time.sleep(POLL)

    def complete(tx, q: JobQueue) -> None:
        done = q.complete_many_in(tx, holding)
        accepted = [(j, attempt_result(j)) for j in holding if (j.id, j.token) in done]
        if accepted:
            _apply(tx, q, "noop", accepted)

    with d.queue(retry_backoff_base=0.0) as q:
        q.db.write(partial(complete, q=q))


# -- memory consolidation killed --------------------------------------------------

MEMORY_CANDIDATES = 120  # per cycle: distinct lessons, then repeats of some of them
MEMORY_REPEATS = 40
MEMORY_RUN_CANDIDATES = "10"  # small runs: many commits for the kill to land between


def _memory_candidates(d: Drill) -> list[dict]:
    """Lessons of made-up words (never shortlisted together), then exact or
    upper-cased repeats of some of them (duplicates)."""
    words = [f"zq{d.rng.randrange(16**6):06x}" for _ in range(8 * MEMORY_CANDIDATES)]
    texts = [" ".join(words[i : i + 8]) for i in range(0, len(words), 8)]
    texts = texts[: MEMORY_CANDIDATES - MEMORY_REPEATS]
    repeats = [
        t.upper() if d.rng.random() < 0.5 else t for t in d.rng.choices(texts, k=MEMORY_REPEATS)
    ]
    return [{"kind": "lesson", "text": t} for t in texts + repeats]


def _stage_memory(d: Drill) -> list[str]:
    """One ``memory add`` of the cycle's candidates (one staging file); their ids, in
    staging order."""
    md = Memoryd(d.home)
    try:
        data = b"".join(orjson.dumps(c) + b"\n" for c in _memory_candidates(d))
        ids = Memory(md).add(data, PROJECT)["candidates"]
    finally:
        md.close()
    d.oracle.memory.update(ids)
    return ids


def memory(d: Drill) -> Done:
    """Stage candidates, then SIGKILL the supervisor (at a random moment or a commit
    point) or a worker while they consolidate: no candidate lost, no record twice."""
    _stage_memory(d)
    env = {"MEMORYD_MEMORY_RUN_CANDIDATES": MEMORY_RUN_CANDIDATES}
    how = d.pick(["supervisor", "worker", "before_commit", "after_commit"])
    if how.endswith("commit"):
        once = d.home / f"killed-{d.cycle_no}"
        nth = d.rng.randint(1, d.turns)
        sup = d.supervisor(env={**env, ONCE_ENV: str(once), KILL_ENV: f"{how}:{nth}"})
        d.await_exit(sup, f"supervisor with kill point {how}:{nth}")
        d.kills[f"memory_{how}" if once.exists() else "not_reached"] += 1
        sup.close()
        return _done(d)
    sup = d.supervisor(env=env)
    if not d.wait_work_started(sup):
        return _finished_early(d, sup)
    done = _done(d)
    if how == "worker" and (workers := _workers(d, sup)):
        d.sigkill(d.rng.choice(workers))
        d.kills["memory_worker"] += 1
        d.expect_clean_exit(sup, "after its worker was SIGKILLed mid-consolidation")
        return done
    _kill_supervisor(d, sup, "memory_supervisor")
    return done


def memory_last_run(d: Drill) -> Done:
    """Stage candidates, then SIGKILL the supervisor while it applies the run that
    decides the staging file's last candidate (kill point ``memory_apply_<id>``):
    the worker has decided the file's last run, the supervisor has not committed it.
    The file must outlive that commit: the next run decides those candidates again,
    none is lost."""
    last = _stage_memory(d)[-1]
    once = d.home / f"killed-{d.cycle_no}"
    env = {
        "MEMORYD_MEMORY_RUN_CANDIDATES": MEMORY_RUN_CANDIDATES,
        ONCE_ENV: str(once),
        KILL_ENV: f"memory_apply_{last}",
    }
    sup = d.supervisor(env=env)
    d.await_exit(sup, "supervisor killed applying a staging file's last run")
    d.kills["memory_last_run" if once.exists() else "not_reached"] += 1
    sup.close()
    return _done(d)


# -- jobs longer than their lease ---------------------------------------------------


def _longer_than_lease() -> list[JobSpec]:
    return [JobSpec("sleep", {"seconds": LONG_SLEEP_SECONDS}, priority=1)] * LONG_SLEEPS


def long_jobs(d: Drill) -> Done:
    """A supervisor with a short lease runs jobs longer than it (and the cycle's other
    work queued behind them) with nothing killed: its renewals keep every lease it
    holds alive through several reclaim passes, so no job is reclaimed and each one
    is done in one attempt."""
    sup = d.supervisor(env={"MEMORYD_LEASE_SECONDS": str(LONG_LEASE)})
    d.expect_clean_exit(sup, "with jobs longer than its lease")
    d.kills["long_jobs"] += 1
    retried = d.read(lambda q: q.retried_since(d.base))
    if retried:
        some = ", ".join(f"job {job} ({kind}): {n} attempts" for job, kind, n, _ in retried[:3])
        d.fail(
            f"{len(retried)} jobs took more than one attempt with nothing killed (e.g. {some});"
            f" a live lease was reclaimed (last error: {retried[0][3]})"
        )
    return _done(d)


SCENARIOS: dict[str, Scenario] = {
    "kill_point": Scenario(kill_point),
    "random_supervisor": Scenario(random_supervisor),
    "worker": Scenario(worker),
    "both": Scenario(both),
    "sigterm": Scenario(sigterm),
    "retention": Scenario(retention),
    "tick": Scenario(tick),
    "writer": Scenario(writer),
    "stale": Scenario(stale, _long_sleeps),
    "stale_all": Scenario(stale_all, _long_sleeps),
    "migration": Scenario(migration),
    "memory": Scenario(memory),
    "memory_last_run": Scenario(memory_last_run),
    "long_jobs": Scenario(long_jobs, _longer_than_lease),
}
