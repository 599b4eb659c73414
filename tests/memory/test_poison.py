"""A candidate whose apply kills the supervisor: once ``supervisor_death_cap`` dead-letters
its run, that candidate is quarantined (dead-lettered, retryable) and the project's next
run consolidates the rest on its own; the poisoned run stays dead and is never rerun."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest

from memoryd.consolidation import jobs, staging
from memoryd.operations.memory import Memory
from memoryd.queue import ClaimedJob
from memoryd.storage import records
from memoryd.workers.contract import ApplyContext
from tests.conftest import query, reader, run_cli
from tests.memory.conftest import lines

TEXTS = [
    "Release builds are signed with the hardware token",
    "Tabs indent the makefiles because make requires them",
    "The staging cluster resets its database every night",
    "Migrations run before the web workers start",
    "Feature flags live in the settings service",
]


def lessons(*texts: str) -> bytes:
    return lines(*({"kind": "lesson", "text": t} for t in texts))


def states(home: Path) -> dict[str, str]:
    with reader(home) as conn:  # no memory table yet while nothing was decided
        return records.every_candidate_state(conn)


def consolidations(home: Path) -> list[tuple]:
    return query(
        home,
        "SELECT id, state, supervisor_deaths FROM jobs WHERE kind = ? ORDER BY id",
        (jobs.CONSOLIDATE,),
    )


@pytest.mark.slow
def test_a_poison_candidate_is_quarantined_and_the_rest_consolidate(memoryd, project_home):
    ids = Memory(memoryd()).add(lessons(*TEXTS), "app")["candidates"]
    poison = ids[2]
    env = {"MEMORYD_KILL_AT": f"memory_apply_{poison}", "MEMORYD_WORKERS": "1"}
    exits = []
    for _ in range(5):
        res = run_cli("run", "--drain", home=project_home, env=env)
        exits.append(res.code)
        if res.code == 0:
            break
    assert exits == [-signal.SIGKILL] * 3 + [0], exits
    (first, state, deaths), *later = consolidations(project_home)
    assert (state, deaths) == ("dead", 3), "the poisoned run stays dead"
    assert later and {s for _, s, _ in later} == {"done"}, "the next run was enqueued and ran"
    assert states(project_home) == {i: "deadletter" if i == poison else "consumed" for i in ids}
    letter = staging.deadletter_dir(project_home, "app") / f"{poison}.json"
    body = orjson.loads(letter.read_bytes())
    assert body["candidate"]["text"] == TEXTS[2]
    assert f"killed the supervisor 3 times (job {first}" in body["reason"]
    assert not list(staging.staged_files(project_home, "app")), "staging drained"
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(4,)]


def kill_while_applying(md, marked_deaths: int | None, at: str | None) -> list[ClaimedJob]:
    """Claim the project's run as a supervisor that then died applying it for the cap's
    last time (its mark, when ``marked_deaths`` is given, left as that apply wrote it);
    dead-letter it as the next start does and run the kind's recovery."""
    q, cap = md.queue, md.config.supervisor_death_cap
    (job,) = q.claim("dead:1", 1, 60)
    run = [{"cid": c} for c in md_ids(md)]
    if marked_deaths is not None:
        jobs.applying_mark(md.home, job._replace(deaths=marked_deaths), run).write(at)
    md.db.write(lambda tx: tx.execute("UPDATE jobs SET supervisor_deaths = ?", (cap - 1,)))

    def start(tx) -> list[ClaimedJob]:
        dead = q.dead_letter_poison_in(tx, ["dead:1"], [job.id])
        jobs.recover(ApplyContext(tx, q, md.config), dead)
        return dead

    return md.db.write(start)


def md_ids(md) -> list[str]:
    return [s.id for p in staging.staged_files(md.home, "app") for s in staging.read(p)]


def test_a_death_past_the_candidates_quarantines_the_whole_run(memoryd, project_home) -> None:
    md = memoryd()
    ids = Memory(md).add(lessons(*TEXTS[:3]), "app")["candidates"]
    (dead,) = kill_while_applying(md, md.config.supervisor_death_cap - 1, None)
    assert dead.deaths == md.config.supervisor_death_cap
    assert states(project_home) == dict.fromkeys(ids, "deadletter")
    assert [r[1:] for r in consolidations(project_home)] == [("dead", 3), ("queued", 0)]
    runs = query(project_home, "SELECT deadlettered FROM memory_runs")
    assert runs == [(3,)], "the quarantine is in the run log (memory status)"
    Memory(md).add(lessons(TEXTS[3]), "app", wait=True)  # the next run moves them aside
    assert len(list(staging.deadletter_dir(project_home, "app").iterdir())) == 3
    assert Memory(md).deadletters("app")[0]["reason"].startswith("the apply of its run (3)")


@pytest.mark.parametrize("case", ["no mark", "an older death's mark", "a decided candidate"])
def test_no_blame_no_rerun(memoryd, project_home, case) -> None:
    """Without a mark of the run's last apply, or when the candidate it blames is already
    decided, nothing is set aside and no run enqueued (a rerun could kill again); the
    job waits for `memoryd jobs retry`."""
    md = memoryd()
    ids = Memory(md).add(lessons(*TEXTS[:2]), "app")["candidates"]
    last = md.config.supervisor_death_cap - 1
    marked = {"no mark": None, "an older death's mark": last - 1}.get(case, last)
    if case == "a decided candidate":
        [(pid,)] = query(project_home, "SELECT id FROM projects WHERE name = 'app'")
        md.db.write(lambda tx: records.set_candidate_in(tx, pid, ids[0], "consumed", 0.0))
    kill_while_applying(md, marked, ids[0])
    decided = {ids[0]: "consumed"} if case == "a decided candidate" else {}
    assert states(project_home) == decided
    assert [s for _, s, _ in consolidations(project_home)] == ["dead"]
