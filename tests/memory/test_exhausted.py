"""A candidate that kills the worker deciding it (not the supervisor): a retried run marks
the candidate it is deciding, so when the run fails its last attempt (``max_attempts``)
that candidate is quarantined and the project's next run consolidates the rest; the dead
run stays dead. A failure no candidate explains is left to ``memoryd jobs retry``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.consolidation import jobs, staging
from memoryd.operations.memory import Memory
from memoryd.queue import ClaimedJob
from memoryd.workers.contract import ApplyContext, WorkContext
from tests.conftest import FAST_RETRY, query, run_cli
from tests.memory.test_poison import TEXTS, consolidations, lessons, states


@pytest.mark.slow
def test_a_candidate_that_kills_its_worker_is_quarantined(memoryd, project_home) -> None:
    # a job's attempts are set as it is enqueued; 3 quick worker deaths stay below the
    # pool's crash-loop guard (retries come back at once here)
    ids = Memory(memoryd(max_attempts=3)).add(lessons(*TEXTS), "app")["candidates"]
    poison = ids[2]
    env = {"MEMORYD_KILL_AT": f"memory_decide_{poison}", "MEMORYD_WORKERS": "1", **FAST_RETRY}
    assert run_cli("run", "--drain", home=project_home, env=env).code == 0, "no supervisor died"
    (first, state, _), *later = consolidations(project_home)
    [(attempts, error)] = query(
        project_home, "SELECT attempts, last_error FROM jobs WHERE id = ?", (first,)
    )
    assert (state, attempts) == ("dead", 3), "the run that kept dying stays dead"
    assert "killed by SIGKILL" in error
    assert later and {s for _, s, _ in later} == {"done"}, "the next run was enqueued and ran"
    assert states(project_home) == {i: "deadletter" if i == poison else "consumed" for i in ids}
    body = orjson.loads(
        (staging.deadletter_dir(project_home, "app") / f"{poison}.json").read_bytes()
    )
    assert body["candidate"]["text"] == TEXTS[2]
    assert f"the last of job {first}'s 3 attempts (max_attempts): {error}" in body["reason"]
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(4,)]


def exhaust(md, marked_attempt: int | None, at: str | None) -> ClaimedJob:
    """Claim the project's run for its last attempt, leave the run's mark as given, and
    fail it (its worker died) as the supervisor does, running the kind's recovery."""
    q = md.queue
    (job,) = q.claim("sup:1", 1, 60)
    md.db.write(lambda tx: tx.execute("UPDATE jobs SET max_attempts = attempts"))
    if marked_attempt is not None:
        jobs._Mark(md.home, job, jobs.DECIDING_MARK, attempt=marked_attempt).write(at)

    def fail(tx) -> None:
        assert q.fail_in(tx, job, "worker pid 1 died (signal 9)") == "dead"
        jobs.recover(ApplyContext(tx, q, md.config), [job])

    md.db.write(fail)
    return job


def test_the_last_attempts_mark_blames_its_candidate(memoryd, project_home) -> None:
    md = memoryd()
    ids = Memory(md).add(lessons(*TEXTS[:3]), "app")["candidates"]
    job = exhaust(md, 1, ids[1])
    assert states(project_home) == {ids[1]: "deadletter"}
    assert [r[1] for r in consolidations(project_home)] == ["dead", "queued"]
    (letter,) = Memory(md).deadletters("app")
    assert letter["reason"].startswith(f"deciding it ended the last of job {job.id}'s 1 attempts")
    assert "worker pid 1 died (signal 9)" in letter["reason"]


@pytest.mark.parametrize("case", ["no mark", "an earlier attempt's mark", "all decided"])
def test_no_blame_no_rerun(memoryd, project_home, case) -> None:
    """A last attempt that marked no candidate (it failed before deciding any, or after
    deciding them all: the run clears its mark) sets none aside and enqueues nothing."""
    md = memoryd()
    ids = Memory(md).add(lessons(*TEXTS[:2]), "app")["candidates"]
    if case == "all decided":
        decided_a_retry(md, project_home)
    exhaust(md, 0 if case == "an earlier attempt's mark" else None, ids[0])
    assert states(project_home) == {}
    assert [r[1] for r in consolidations(project_home)] == ["dead"]


def decided_a_retry(md, home: Path) -> None:
    """A retried run that decides every candidate leaves no mark behind."""
    (job,) = md.queue.claim("sup:0", 1, 60)
    assert len(run_as(md, job._replace(attempts=2))["decisions"]) == 2
    assert not mark_path(home).exists()
    md.db.write(lambda tx: md.queue.release_in(tx, [job]))  # back, uncharged, for the test


def test_a_retry_clears_the_mark_of_a_refunded_try(memoryd, project_home) -> None:
    """A try whose supervisor died is refunded: the next one has its attempt number,
    and failing before any candidate (here: an adjudicator command that does not parse)
    it must not leave the candidate the other marked to blame."""
    md = memoryd(memory_adjudicator='"unclosed')
    ids = Memory(md).add(lessons(TEXTS[0]), "app")["candidates"]
    (job,) = md.queue.claim("sup:0", 1, 60)
    retry = job._replace(attempts=2)
    jobs._Mark(md.home, retry, jobs.DECIDING_MARK, attempt=2).write(ids[0])
    with pytest.raises(ValueError):
        run_as(md, retry)
    assert not mark_path(project_home).exists()


def mark_path(home: Path) -> Path:
    return staging.staging_dir(home, "app") / jobs.DECIDING_MARK


def run_as(md, job: ClaimedJob) -> dict:
    """The kind's run in this process, as a worker runs ``job``."""
    ctx = WorkContext(md.home, md.config, 0, job=job)
    try:
        return jobs.run(ctx, job.data)
    finally:
        ctx.close()
