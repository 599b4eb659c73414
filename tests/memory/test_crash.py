"""SIGKILL the supervisor and its workers at random points while 1,000 candidates
consolidate: every staging file ends consumed, no record is made twice, no
conflict is marked twice, no candidate is lost, and `rebuild --verify` is equal."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import psutil
import pytest

from memoryd.consolidation import staging
from memoryd.operations.api import Memoryd
from memoryd.operations.memory import Memory
from memoryd.storage import lazy
from tests.conftest import query, reader, run_cli, wait_for
from tests.memory.conftest import lines

DISTINCT, DUPLICATES, COLLISIONS = 600, 300, 100
SYLLABLES = ["ka", "lo", "mi", "ne", "su", "to", "ra", "vi", "de", "po", "gu", "fe", "zi", "ba"]
KILLS = 12  # kill cycles, each once the supervisor is committing candidates


def vocabulary(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct made-up words of three syllables (no stopword among them)."""
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(3)))
    return sorted(words)


def workload(seed: int) -> tuple[list[dict], int]:
    """Distinct facts, exact or case-changed repeats of earlier ones, and facts that
    share all but one word (not the first) with an earlier fact (shortlisted, not
    duplicates: the default adjudicator keeps each beside its earlier one, both in
    conflict). Returns (candidates, distinct texts)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng, 2000)
    texts = [" ".join(rng.sample(vocab, 8)) for _ in range(DISTINCT)]
    out: list[dict] = [{"kind": "fact", "text": t} for t in texts]
    for i in range(DUPLICATES):
        t = rng.choice(texts)
        out.insert(rng.randrange(out.index({"kind": "fact", "text": t}) + 1, len(out) + 1),
                   {"kind": "fact", "text": t.upper() if i % 2 else t})  # fmt: skip
    for t in rng.sample(texts, COLLISIONS):
        words = t.split()
        words[rng.randrange(1, 8)] = "".join(rng.choice(SYLLABLES) for _ in range(4))
        out.append({"kind": "fact", "text": " ".join(words)})
    return out, DISTINCT


def children(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def consumed(home: Path) -> int:
    """Candidates taken from staging (0 before the first run: its write makes the table)."""
    with reader(home) as conn:
        if not lazy.present(conn, lazy.MEMORY):
            return 0
        sql = "SELECT count(*) FROM memory_candidates WHERE state != 'parked'"
        return conn.execute(sql).fetchone()[0]


@pytest.mark.slow
def test_random_sigkills_while_1000_candidates_consolidate(project_home, background) -> None:
    rng = random.Random(20261201)
    cands, distinct = workload(7)
    md = Memoryd(project_home)
    ids = Memory(md).add(lines(*cands), "app")["candidates"]
    md.close()
    assert len(ids) == len(cands) == 1000
    # many small commits; and the kills are this test's, not a poison job's: three kill
    # points in a row can land while one job is applied, which the supervisor's death cap
    # (tests/workers/test_faults.py) would rightly dead-letter, stranding the rest
    env = {
        "MEMORYD_MEMORY_RUN_CANDIDATES": "4",
        "MEMORYD_WORKERS": "2",
        "MEMORYD_SUPERVISOR_DEATH_CAP": str(10 * KILLS),
    }
    kills = {"supervisor": 0, "worker": 0, "kill_point": 0}
    for _ in range(KILLS):
        point = rng.choice([None, None, "before_commit", "after_commit"])
        extra = {"MEMORYD_KILL_AT": f"{point}:{rng.randint(2, 12)}"} if point else {}
        before = consumed(project_home)
        if before == len(ids):
            break
        sup = background("run", env={**env, **extra})
        # at a random point of progress once this supervisor is committing candidates
        # (counted in candidates, not seconds: a fast machine decides 1,000 in a second)
        goal = before + rng.randint(1, 40)
        wait_for(lambda g=goal, s=sup: consumed(project_home) >= g or not s.alive(), interval=0.005)
        if not sup.alive():
            kills["kill_point"] += sup.wait() == -signal.SIGKILL
            continue
        workers = children(sup.pid)
        if workers and rng.random() < 0.5:
            os.kill(rng.choice(workers), signal.SIGKILL)
            kills["worker"] += 1
            time.sleep(rng.uniform(0.02, 0.1))
        sup.proc.kill()
        sup.wait()
        kills["supervisor"] += 1
        wait_for(lambda pid=sup.pid: not any(psutil.pid_exists(c) for c in children(pid)))
    print(f"kills {kills}, decided before the final run: {consumed(project_home)}")
    final = run_cli("run", "--drain", home=project_home, env=env)
    assert final.code == 0, final.stderr

    states = dict(query(project_home, "SELECT id, state FROM memory_candidates"))
    assert set(states) == set(ids), "every candidate decided, none lost, no stranger"
    assert set(states.values()) == {"consumed"}
    outcomes = dict(
        query(project_home, "SELECT outcome, count(*) FROM memory_candidates GROUP BY 1")
    )
    assert outcomes == {"added": DISTINCT, "duplicate": DUPLICATES, "conflict": COLLISIONS}
    assert not list(staging.staged_files(project_home, "app")), "staging drained"
    # no record twice: one record per text, counts add up to consumed candidates
    assert query(project_home, "SELECT count(*), sum(count) FROM memory_records") == [
        (distinct + COLLISIONS, DISTINCT + DUPLICATES + COLLISIONS)
    ]
    marks = query(project_home, "SELECT count(*) FROM memory_history WHERE action = 'conflict'")
    assert marks == [(2 * COLLISIONS,)], "each conflict marked on both records, once"
    twice = query(
        project_home, "SELECT norm_hash FROM memory_records GROUP BY norm_hash HAVING count(*) > 1"
    )
    assert twice == []
    verify = run_cli("rebuild", "--verify", "--json", home=project_home)
    assert verify.code == 0 and verify.json()["equal"], verify.stdout
    assert kills["supervisor"] + kills["kill_point"] >= KILLS // 2, kills  # kills landed
