"""The durable job queue: enqueue, dedupe, claim, lease, fencing, backoff, dead-letter, retry."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import apsw
import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.queue import STATES, ClaimedJob, JobQueue, JobReads, JobSpec
from memoryd.storage import open_authority
from memoryd.storage.effects import record_effects
from tests.conftest import WAIT_TIMEOUT, clean_env, wait_for


@pytest.fixture
def db(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(home, {"retry_backoff_base": 0.01, "retry_backoff_max": 0.05})
    with open_authority(home, config) as authority:
        yield authority


class Clock:
    """The queue's injectable clock: tests move time instead of rewriting rows."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def q(db, clock: Clock) -> JobQueue:
    return JobQueue(db, clock=clock)


def row(db, job_id: int) -> dict:
    keys = ("state", "attempts", "max_attempts", "not_before", "lease_token", "last_error")
    values = db.query(f"SELECT {', '.join(keys)} FROM jobs WHERE id = ?", (job_id,))[0]
    return dict(zip(keys, values, strict=True))


def complete_with_effect(db, q: JobQueue, job: ClaimedJob) -> bool:
    """What the supervisor does: apply effects only when the fenced completion is ours."""

    def op(tx: apsw.Connection) -> bool:
        if not q.complete_in(tx, job):
            return False
        record_effects(tx, [job.id], job.kind)
        return True

    return db.write(op)


def effects(db, job_id: int) -> int:
    return db.query("SELECT count(*) FROM job_effects WHERE job_id = ?", (job_id,))[0][0]


# -- enqueue -----------------------------------------------------------------------------


def test_enqueue_stores_kind_payload_and_defaults(db, q: JobQueue) -> None:
    job_id = q.enqueue(JobSpec("sleep", {"seconds": 1.5}, project="p"))
    [job] = JobReads(q.db).list()
    assert job["id"] == job_id
    assert (job["kind"], job["payload"], job["project"]) == ("sleep", {"seconds": 1.5}, "p")
    assert (job["state"], job["attempts"]) == ("queued", 0)
    assert job["max_attempts"] == db.config.max_attempts


def test_enqueue_many_is_one_transaction(db, q: JobQueue) -> None:
    ids = q.enqueue_many([JobSpec("noop", i) for i in range(100)])
    assert len(set(ids)) == 100
    bad = [JobSpec("noop", 1), JobSpec("noop", object())]  # the second cannot be serialised
    with pytest.raises(TypeError):
        q.enqueue_many(bad)
    assert JobReads(q.db).counts()["queued"] == 100, "nothing of the failed batch was kept"


def test_a_settled_payload_keeps_counts_of_its_lists(db, q: JobQueue) -> None:
    q.enqueue(JobSpec("noop", {"run": 7, "files": [["a.py", 10], ["b.py", 20]], "retire": []}))
    [job] = q.claim("test", 1, 60)

    def done(tx: apsw.Connection) -> None:
        assert q.complete_in(tx, job)
        q.settle_payload_in(tx, job, job.data, ["files", "records"])  # a key it lacks: as is

    db.write(done)
    assert JobReads(q.db).list()[0]["payload"] == {"run": 7, "files": 2, "retire": []}


def test_dedupe_key_names_one_live_job(db, q: JobQueue) -> None:
    first = q.enqueue(JobSpec("noop", dedupe_key="k"))
    assert first is not None
    assert q.enqueue(JobSpec("noop", dedupe_key="k")) is None
    assert q.enqueue_many([JobSpec("noop", dedupe_key="k"), JobSpec("noop")])[0] is None
    assert JobReads(q.db).counts()["queued"] == 2
    [job] = q.claim("o", 1, 60)  # claimed is still live
    assert job.id == first
    assert q.enqueue(JobSpec("noop", dedupe_key="k")) is None
    assert q.complete(job)
    again = q.enqueue(JobSpec("noop", dedupe_key="k"))  # done: the key is free again
    assert again not in (None, first)


# -- claim and lease ---------------------------------------------------------------------


def test_claim_takes_up_to_k_in_priority_order_under_one_token(db, q: JobQueue) -> None:
    low = q.enqueue_many([JobSpec("noop", i) for i in range(5)])
    high = q.enqueue(JobSpec("noop", "urgent", priority=10))
    claimed = q.claim("owner-1", 3, 60)
    assert len(claimed) == 3
    assert {j.id for j in claimed} == {high, low[0], low[1]}
    assert len({j.token for j in claimed}) == 1
    assert all(j.attempts == 1 for j in claimed)
    assert JobReads(q.db).counts() == {"queued": 3, "claimed": 3, "done": 0, "failed": 0, "dead": 0}
    rest = q.claim("owner-2", 10, 60)
    assert {j.id for j in rest} == set(low[2:])
    assert rest[0].token != claimed[0].token
    assert q.claim("owner-3", 10, 60) == []


def test_claim_skips_jobs_backing_off(db, q: JobQueue, clock: Clock) -> None:
    later = q.enqueue(JobSpec("noop", not_before=clock() + 3600))
    now = q.enqueue(JobSpec("noop"))
    assert [j.id for j in q.claim("o", 10, 60)] == [now]
    clock.advance(3601)
    assert [j.id for j in q.claim("o", 10, 60)] == [later]


def test_renew_extends_only_our_lease(db, q: JobQueue) -> None:
    q.enqueue(JobSpec("noop"))
    [job] = q.claim("o", 1, 1.0)
    before = db.query("SELECT lease_expires FROM jobs WHERE id = ?", (job.id,))[0][0]
    db.write(lambda tx: q.renew_in(tx, [job], 3600))
    after = db.query("SELECT lease_expires FROM jobs WHERE id = ?", (job.id,))[0][0]
    assert after > before + 3000
    stale = ClaimedJob(job.id, job.kind, job.payload, "not-the-token", 1, None)
    db.write(lambda tx: q.renew_in(tx, [stale], 7200))
    assert db.query("SELECT lease_expires FROM jobs WHERE id = ?", (job.id,))[0][0] == after


# -- outcomes are fenced by the lease token ---------------------------------------------


def test_complete_is_fenced_by_the_lease_token(db, q: JobQueue) -> None:
    q.enqueue(JobSpec("noop"))
    [job] = q.claim("o", 1, 60)
    forged = ClaimedJob(job.id, job.kind, job.payload, "forged", job.attempts, None)
    assert not complete_with_effect(db, q, forged)
    assert row(db, job.id)["state"] == "claimed"
    assert complete_with_effect(db, q, job)
    assert not complete_with_effect(db, q, job), "a second completion is rejected"
    assert row(db, job.id)["state"] == "done"
    assert effects(db, job.id) == 1


def test_late_result_after_reclaim_is_rejected_in_process(db, q: JobQueue, clock: Clock) -> None:
    q.enqueue(JobSpec("noop"))
    [first] = q.claim("a", 1, 60)
    clock.advance(61)  # the lease runs out
    assert len(db.write(q.reclaim_expired_in)) == 1
    assert row(db, first.id)["state"] == "failed"
    assert row(db, first.id)["last_error"] == "lease expired"
    clock.advance(1)  # past the backoff
    [second] = q.claim("b", 1, 60)
    assert second.id == first.id and second.token != first.token and second.attempts == 2
    assert complete_with_effect(db, q, second)
    assert not complete_with_effect(db, q, first)
    assert db.write(lambda tx: q.fail_in(tx, first, "late failure")) is None
    assert row(db, first.id)["state"] == "done"
    assert effects(db, first.id) == 1


def test_complete_many_accepts_only_jobs_whose_lease_is_still_ours(
    db, q: JobQueue, clock: Clock
) -> None:
    """The supervisor's group completion: one statement per token, same fencing."""
    q.enqueue_many([JobSpec("noop", {"i": i}) for i in range(6)])
    batch = q.claim("a", 1, 1) + q.claim("a", 5, 3600)
    stale = batch[0]
    clock.advance(2)  # only the short lease runs out
    assert len(db.write(q.reclaim_expired_in)) == 1
    clock.advance(1)  # past the backoff
    [again] = q.claim("b", 1, 60)
    assert again.id == stale.id
    forged = ClaimedJob(batch[1].id, "noop", b"null", "forged", 1, None)
    assert db.write(lambda tx: q.complete_many_in(tx, [stale, forged])) == set()
    assert row(db, stale.id)["state"] == "claimed"  # still b's, untouched
    done = db.write(lambda tx: q.complete_many_in(tx, [*batch[1:], again]))
    assert done == {(j.id, j.token) for j in [*batch[1:], again]}
    assert db.write(lambda tx: q.complete_many_in(tx, batch)) == set(), "no second completion"
    assert {row(db, j.id)["state"] for j in batch} == {"done"}


def test_a_stale_result_and_the_new_attempt_in_one_turn_accept_only_the_new(
    db, q: JobQueue, clock: Clock
) -> None:
    """Both results of one job reach the same group commit: the returned pairs name
    only the current lease's token, so the stale result is never applied."""
    q.enqueue(JobSpec("noop"))
    [stale] = q.claim("a", 1, 1)
    clock.advance(2)
    assert len(db.write(q.reclaim_expired_in)) == 1
    clock.advance(1)
    [again] = q.claim("b", 1, 60)
    for order in ([stale, again], [again, stale]):
        done = db.write(lambda tx, jobs=order: q.complete_many_in(tx, jobs))
        if done:
            assert done == {(again.id, again.token)}
    assert row(db, again.id)["state"] == "done"


# -- failure, backoff, dead-letter, retry -----------------------------------------------


def test_fail_backs_off_then_dead_letters_after_max_attempts(db, q: JobQueue, clock: Clock) -> None:
    job_id = q.enqueue(JobSpec("fail", max_attempts=3))
    for attempt in (1, 2):
        [job] = q.claim("o", 1, 60)
        assert job.attempts == attempt
        now = clock()
        assert q.fail(job, f"boom {attempt}") == "failed"
        r = row(db, job_id)
        assert (r["state"], r["last_error"], r["lease_token"]) == (
            "failed",
            f"boom {attempt}",
            None,
        )
        assert r["not_before"] > now, "a failed attempt waits before the next one"
        assert q.claim("o", 1, 60) == [], "not before its backoff"
        clock.advance(1)
    [job] = q.claim("o", 1, 60)
    assert q.fail(job, "boom 3") == "dead"
    r = row(db, job_id)
    assert (r["state"], r["attempts"], r["last_error"]) == ("dead", 3, "boom 3")
    assert not q.has_pending()
    [dead] = JobReads(q.db).list("dead")
    assert dead["id"] == job_id and dead["finished_at"] is not None


def test_a_job_backing_off_is_not_claimable_before_its_time(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(home, {"retry_backoff_base": 3600.0, "retry_backoff_max": 7200.0})
    with open_authority(home, config) as db:
        q = JobQueue(db)
        job_id = q.enqueue(JobSpec("fail"))
        [job] = q.claim("o", 1, 60)
        assert q.fail(job, "boom") == "failed"
        assert row(db, job_id)["not_before"] >= time.time() + 1800
        assert q.claim("o", 1, 60) == []
        assert q.has_pending(), "a job backing off is still pending"


def test_backoff_grows_exponentially_with_jitter_and_a_cap(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(home, {"retry_backoff_base": 1.0, "retry_backoff_max": 10.0})
    with open_authority(home, config) as db:
        q = JobQueue(db)
        for attempts, nominal in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (30, 10.0)]:
            delays = [q.backoff(attempts) for _ in range(200)]
            assert all(0.5 * nominal <= d <= nominal for d in delays)
            assert len(set(delays)) > 1, "jittered"


def test_expired_lease_counts_an_attempt_and_can_dead_letter(db, q: JobQueue, clock: Clock) -> None:
    job_id = q.enqueue(JobSpec("noop", max_attempts=2))
    for expected in ("failed", "dead"):
        clock.advance(1)  # past any backoff
        [_job] = q.claim("gone", 1, 60)
        clock.advance(61)  # the lease runs out
        assert len(db.write(q.reclaim_expired_in)) == 1
        assert row(db, job_id)["state"] == expected
    assert row(db, job_id)["last_error"] == "lease expired"


def test_a_live_lease_is_not_reclaimed(db, q: JobQueue) -> None:
    q.enqueue(JobSpec("noop"))
    q.claim("alive", 1, 3600)
    assert len(db.write(q.reclaim_expired_in)) == 0
    assert JobReads(q.db).counts()["claimed"] == 1


def test_reclaim_of_dead_owners_refunds_the_attempt(db, q: JobQueue) -> None:
    q.enqueue_many([JobSpec("noop")] * 3)
    mine = q.claim("dead-owner", 2, 3600)
    other = q.claim("live-owner", 1, 3600)
    assert db.write(lambda tx: q.reclaim_owners_in(tx, ["dead-owner"])) == 2
    assert JobReads(q.db).counts()["queued"] == 2 and JobReads(q.db).counts()["claimed"] == 1
    assert all(row(db, j.id)["attempts"] == 0 for j in mine)
    assert not complete_with_effect(db, q, mine[0]), "the dead owner's token is void"
    assert q.claim_owners() == ["live-owner"]
    assert complete_with_effect(db, q, other[0])


def test_release_gives_claims_back_without_charging(db, q: JobQueue) -> None:
    q.enqueue(JobSpec("noop"))
    [job] = q.claim("o", 1, 60)
    db.write(lambda tx: q.release_in(tx, [job]))
    assert row(db, job.id)["state"] == "queued"
    assert row(db, job.id)["attempts"] == 0
    assert not q.complete(job)


def test_retry_requeues_only_dead_jobs_with_fresh_attempts(db, q: JobQueue) -> None:
    dead_ids = q.enqueue_many([JobSpec("fail", max_attempts=1)] * 2)
    live = q.enqueue(JobSpec("noop", priority=-1))
    for job in q.claim("o", 2, 60):
        assert q.fail(job, "boom") == "dead"
    assert q.retry([live, 999_999]) == []
    assert q.retry([dead_ids[0]]) == [dead_ids[0]]
    r = row(db, dead_ids[0])
    assert (r["state"], r["attempts"], r["not_before"]) == ("queued", 0, 0)
    assert q.retry(all_dead=True) == [dead_ids[1]]
    assert JobReads(q.db).counts() == {"queued": 3, "claimed": 0, "done": 0, "failed": 0, "dead": 0}


def test_retry_of_a_dead_job_whose_dedupe_key_is_live_again(db, q: JobQueue) -> None:
    dead_id = q.enqueue(JobSpec("fail", max_attempts=1, dedupe_key="k"))
    [job] = q.claim("o", 1, 60)
    assert q.fail(job, "boom") == "dead"
    live = q.enqueue(JobSpec("noop", dedupe_key="k"))
    assert live is not None
    assert q.retry([dead_id]) == [], "the key already names a live job: nothing to requeue"
    assert q.retry(all_dead=True) == []
    assert row(db, dead_id)["state"] == "dead"
    assert JobReads(q.db).counts()["queued"] == 1


def test_retry_all_dead_revives_one_job_per_dedupe_key(db, q: JobQueue) -> None:
    for _ in range(2):  # two dead jobs under one key: the first died before the second came
        q.enqueue(JobSpec("fail", max_attempts=1, dedupe_key="k"))
        [job] = q.claim("o", 1, 60)
        assert q.fail(job, "boom") == "dead"
    assert len(q.retry(all_dead=True)) == 1
    assert JobReads(q.db).counts() == {"queued": 1, "claimed": 0, "done": 0, "failed": 0, "dead": 1}


def test_counts_has_every_state_and_list_filters(db, q: JobQueue) -> None:
    assert JobReads(q.db).counts() == dict.fromkeys(STATES, 0)
    assert not q.has_pending()
    q.enqueue_many([JobSpec("noop", i) for i in range(4)])
    [a, b] = q.claim("o", 2, 60)
    q.complete(a)
    assert JobReads(q.db).counts() == {"queued": 2, "claimed": 1, "done": 1, "failed": 0, "dead": 0}
    assert q.has_pending()
    assert [j["id"] for j in JobReads(q.db).list("done")] == [a.id]
    assert [j["id"] for j in JobReads(q.db).list("claimed")] == [b.id]
    assert [j["id"] for j in JobReads(q.db).list()] == sorted(
        (j["id"] for j in JobReads(q.db).list()), reverse=True
    )
    assert len(JobReads(q.db).list(limit=3)) == 3


# -- Must show 4: a late result from another process is rejected ------------------------

PROCESS_A = """
import os, sys, time, orjson
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.queue import JobQueue
from memoryd.storage import open_authority
from memoryd.storage.effects import record_effects

home, signals = Path(sys.argv[1]), Path(sys.argv[2])
db = open_authority(home, load_config(home))
q = JobQueue(db)
[job] = q.claim("process-A", 1, 0.2)  # a very short lease
(signals / "a-claimed.json").write_bytes(
    orjson.dumps({"pid": os.getpid(), "id": job.id, "token": job.token})
)
deadline = time.monotonic() + 300
while not (signals / "go").exists():  # 'run' far past the lease
    assert time.monotonic() < deadline, "never told to go on"
    time.sleep(0.02)

def finish(tx):
    if not q.complete_in(tx, job):
        return False
    record_effects(tx, [job.id], job.kind)
    return True

accepted = db.write(finish)
late_fail = db.write(lambda tx: q.fail_in(tx, job, "late failure from A"))
(signals / "a-result.json").write_bytes(
    orjson.dumps({"accepted": accepted, "late_fail": late_fail})
)
"""

PROCESS_B = """
import os, sys, time, orjson
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.queue import JobQueue
from memoryd.storage import open_authority
from memoryd.storage.effects import record_effects

home = Path(sys.argv[1])
db = open_authority(home, load_config(home))  # MEMORYD_RETRY_BACKOFF_BASE is small
q = JobQueue(db)
reclaimed = 0
deadline = time.monotonic() + 300
while True:
    assert time.monotonic() < deadline, "never reclaimed and claimed the job"
    reclaimed += len(db.write(q.reclaim_expired_in))
    claimed = q.claim("process-B", 1, 600)
    if claimed:
        break
    time.sleep(0.02)
[job] = claimed

def finish(tx):
    if not q.complete_in(tx, job):
        return False
    record_effects(tx, [job.id], job.kind)
    return True

sys.stdout.write(orjson.dumps({
    "pid": os.getpid(), "id": job.id, "token": job.token, "attempts": job.attempts,
    "reclaimed": reclaimed, "accepted": db.write(finish),
}).decode())
"""


@pytest.mark.slow
def test_late_result_from_another_process_is_rejected(home: Path, tmp_path: Path) -> None:
    home.mkdir()
    config = load_config(home)
    with open_authority(home, config) as db:
        [job_id] = JobQueue(db).enqueue_many([JobSpec("noop", "once")])
    signals = tmp_path / "signals"
    signals.mkdir()
    env = clean_env(None)
    a = subprocess.Popen([sys.executable, "-c", PROCESS_A, str(home), str(signals)], env=env)
    try:
        claimed = wait_for(
            lambda: (signals / "a-claimed.json").exists() or a.poll() is not None,
            what="process A to claim",
        )
        assert claimed and a.poll() is None, "process A died before claiming"
        a_claim = orjson.loads((signals / "a-claimed.json").read_bytes())
        assert a_claim["id"] == job_id

        # B is a separate process: it waits for A's lease to expire, reclaims, claims, completes.
        b = subprocess.run(
            [sys.executable, "-c", PROCESS_B, str(home)],
            env={**env, "MEMORYD_RETRY_BACKOFF_BASE": "0.01"},
            capture_output=True,
            text=True,
            timeout=WAIT_TIMEOUT * 3,
        )
        assert b.returncode == 0, b.stderr
        b_result = orjson.loads(b.stdout)
        assert b_result["id"] == job_id
        assert b_result["token"] != a_claim["token"]
        assert b_result["pid"] != a_claim["pid"]
        assert b_result["reclaimed"] == 1
        assert b_result["attempts"] == 2, "the expired attempt was counted"
        assert b_result["accepted"] is True

        (signals / "go").touch()  # now A's result arrives, late
        assert a.wait(timeout=WAIT_TIMEOUT) == 0
        a_result = orjson.loads((signals / "a-result.json").read_bytes())
        assert a_result == {"accepted": False, "late_fail": None}
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()

    with open_authority(home, config) as db:
        assert db.query("SELECT state, attempts FROM jobs WHERE id = ?", (job_id,)) == [("done", 2)]
        assert effects(db, job_id) == 1, "applied exactly once"
        assert db.query("SELECT count(*) FROM job_effects")[0][0] == 1


# -- deferral, purge and poison counting -------------------------------------------------


def test_defer_requeues_without_charging_and_keeps_the_typed_reason(
    db, q: JobQueue, clock: Clock
) -> None:
    job_id = q.enqueue(JobSpec("noop", max_attempts=1))
    for _ in range(3):  # with one attempt allowed, a charged deferral would dead-letter it
        [job] = q.claim("o", 1, 60)
        assert db.write(lambda tx, job=job: q.defer_in(tx, job, "ARCHIVE_BUSY: held by pid 7"))
        r = row(db, job_id)
        assert (r["state"], r["attempts"]) == ("queued", 0)
        assert r["last_error"] == "ARCHIVE_BUSY: held by pid 7"
        assert r["not_before"] > clock(), "a deferred job waits a backoff"
        assert q.claim("o", 1, 60) == []
        clock.advance(1)
    forged = ClaimedJob(job_id, "noop", b"null", "forged", 1, None)
    assert not db.write(lambda tx: q.defer_in(tx, forged, "late")), "fenced like the rest"


def test_purge_deletes_only_old_done_jobs_in_bounded_steps(db, q: JobQueue, clock: Clock) -> None:
    ids = q.enqueue_many([JobSpec("noop")] * 10)
    jobs = q.claim("o", 7, 60)
    db.write(lambda tx: q.complete_many_in(tx, jobs[:6]))  # 6 done, 1 claimed, 3 queued
    keep = 3600.0
    assert db.write(lambda tx: q.purge_done_in(tx, keep, 0, 4)) == (0, ids[3]), "too young"
    clock.advance(keep + 1)
    first = db.write(lambda tx: q.purge_done_in(tx, keep, 0, 4))
    assert first == (4, ids[3]), "one step looks at 4 rows and goes on after the 4th"
    second = db.write(lambda tx: q.purge_done_in(tx, keep, first[1], 4))
    assert second == (2, ids[7])
    third = db.write(lambda tx: q.purge_done_in(tx, keep, second[1], 4))
    assert third == (0, 0), "the sweep reached the end: the next one starts over"
    assert JobReads(q.db).counts() == {"queued": 3, "claimed": 1, "done": 0, "failed": 0, "dead": 0}


def test_a_job_that_keeps_killing_its_supervisor_is_dead_lettered(db, q: JobQueue) -> None:
    """Only the jobs the dead supervisor was applying count a death; past the cap, dead."""
    poison, bystander, held = q.enqueue_many([JobSpec("noop")] * 3)
    for death in range(1, q.death_cap + 1):
        owner = f"dead-{death}"
        claimed = q.claim(owner, 3, 3600)
        assert {j.id for j in claimed} == {poison, bystander, held}
        assert claimed[0].deaths == death - 1, "a claim carries the count (suspects go alone)"
        applying = [poison] if death > 1 else [poison, bystander]
        if death < q.death_cap:
            db.write(lambda tx, o=owner, a=applying: q.reclaim_owners_in(tx, [o], a))
            assert row(db, poison)["state"] == "queued"
    dead = db.write(lambda tx: q.dead_letter_poison_in(tx, [owner], [poison]))
    assert [(j.id, j.deaths) for j in dead] == [(poison, 3)], "what its kind may recover"
    assert db.write(lambda tx: q.reclaim_owners_in(tx, [owner])) == 2, "the rest requeued"
    r = row(db, poison)
    assert r["state"] == "dead"
    assert f"3 times (supervisor_death_cap={q.death_cap})" in r["last_error"]
    assert row(db, bystander)["state"] == row(db, held)["state"] == "queued"
    deaths = dict(db.query("SELECT id, supervisor_deaths FROM jobs"))
    assert deaths == {poison: 3, bystander: 1, held: 0}


def test_taking_a_result_leaves_the_connections_secure_delete_as_it_was(db, q: JobQueue) -> None:
    """The result is cleared with every freed page zeroed; the connection's own FAST is
    back after it (left ON, every later bulk delete would write each page it frees)."""
    q.enqueue(JobSpec("noop", {}))
    [job] = q.claim("test", 1, 60)
    db.write(lambda tx: q.set_result_in(tx, job, {"text": "the answer"}))
    assert db.query("PRAGMA secure_delete") == [(2,)]
    assert q.take_result(job.id) == {"text": "the answer"}
    assert db.query("PRAGMA secure_delete") == [(2,)]
    assert q.take_result(job.id) is None, "taken once"
