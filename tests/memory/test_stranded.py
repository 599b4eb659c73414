"""A ``memory add`` that dies between its staging file and its enqueue strands nothing:
the supervisor's start enqueues one run for each project whose staging holds undecided
candidates and no consolidation job, once however often it starts."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from memoryd.consolidation import jobs, staging
from memoryd.consolidation.candidates import candidate_id, parse_lines
from memoryd.storage import records
from tests.conftest import query, run_cli
from tests.memory.conftest import lines

TEXTS = [
    "Release builds are signed with the hardware token",
    "Tabs indent the makefiles because make requires them",
]


def consolidations(home: Path) -> list[tuple]:
    return query(home, "SELECT id, state FROM jobs WHERE kind = ? ORDER BY id", (jobs.CONSOLIDATE,))


@pytest.mark.slow
def test_an_add_killed_before_its_enqueue_is_consolidated_at_the_next_start(project_home, tmp_path):
    source = tmp_path / "candidates.jsonl"
    source.write_bytes(lines(*({"kind": "lesson", "text": t} for t in TEXTS)))
    env = {"MEMORYD_KILL_AT": "memory_add_staged"}
    died = run_cli("memory", "add", str(source), "--project", "app", home=project_home, env=env)
    assert died.code == -signal.SIGKILL, died
    assert list(staging.staged_files(project_home, "app")), "the staging file was written"
    assert consolidations(project_home) == [], "and no run enqueued"

    assert run_cli("run", "--drain", home=project_home, env={"MEMORYD_WORKERS": "1"}).code == 0
    texts = query(project_home, "SELECT text FROM memory_records ORDER BY text")
    assert texts == sorted((t,) for t in TEXTS), "the next start consolidated them"
    assert not staging.staging_dir(project_home, "app").exists(), "staging drained"
    ran = consolidations(project_home)
    assert {s for _, s in ran} == {"done"}

    assert run_cli("run", "--drain", home=project_home).code == 0
    assert consolidations(project_home) == ran, "nothing stranded: no run enqueued"


def stage(home: Path, project: str, *texts: str) -> list[str]:
    """What a `memory add` writes before it enqueues (its death leaves just this)."""
    valid, _ = parse_lines(lines(*({"kind": "lesson", "text": t} for t in texts)), project, 4096)
    items = [(candidate_id(project, c, "test"), c) for c in valid]
    staging.stage(home, project, items)
    return [cid for cid, _ in items]


def test_one_run_per_stranded_project_however_often_it_starts(memoryd, project_home) -> None:
    md = memoryd()
    stage(project_home, "app", *TEXTS)
    stage(project_home, "unknown", TEXTS[0])  # no such project: nothing to run
    (spec,) = jobs.stranded(project_home, md.config, md.db.conn)
    assert spec == jobs.job_spec("app", spec.payload["project_id"])
    md.queue.enqueue_many([spec])
    assert jobs.stranded(project_home, md.config, md.db.conn) == [], "its run is live"


@pytest.mark.parametrize("case", ["decided", "last run dead"])
def test_no_run_where_none_is_owed(memoryd, project_home, case) -> None:
    """Candidates all decided need none; a project whose last run is dead is left to
    `memoryd jobs retry` (a new run could die the same way)."""
    md = memoryd()
    ids = stage(project_home, "app", *TEXTS)
    [(pid,)] = query(project_home, "SELECT id FROM projects WHERE name = 'app'")
    if case == "decided":
        for cid in ids:
            md.db.write(lambda tx, c=cid: records.set_candidate_in(tx, pid, c, "consumed", 0.0))
    else:
        md.queue.enqueue_many([jobs.job_spec("app", pid)])
        md.db.write(lambda tx: tx.execute("UPDATE jobs SET state = 'dead'"))
    assert jobs.stranded(project_home, md.config, md.db.conn) == []


def test_a_parked_candidate_without_a_run_gets_one(memoryd, project_home) -> None:
    md = memoryd()
    ids = stage(project_home, "app", TEXTS[0])
    [(pid,)] = query(project_home, "SELECT id FROM projects WHERE name = 'app'")
    md.db.write(lambda tx: records.set_candidate_in(tx, pid, ids[0], "parked", 0.0, due_at=1.0))
    assert [s.project for s in jobs.stranded(project_home, md.config, md.db.conn)] == ["app"]


def test_a_run_that_empties_staging_removes_the_directory(memoryd, project_home) -> None:
    """A start looks only at the projects with staged candidates: a run leaving no
    staging file of its project removes the directory (and a stale apply mark in it),
    and an add into a removed directory makes it again."""
    md = memoryd()
    folder = staging.staging_dir(project_home, "app")
    ids = stage(project_home, "app", *TEXTS)
    (folder / jobs.APPLYING_MARK).write_bytes(b"{}")
    [(pid,)] = query(project_home, "SELECT id FROM projects WHERE name = 'app'")

    def tidy() -> jobs.Tidy:
        return jobs.tidy(project_home, md.db.conn, "app", 0.0, 10, jobs.StagingMemo())

    md.db.write(lambda tx: records.set_candidate_in(tx, pid, ids[0], "consumed", 0.0))
    assert [s.id for s, _ in tidy().due] == ids[1:]
    assert folder.is_dir(), "a file with an undecided candidate keeps it"
    md.db.write(lambda tx: records.set_candidate_in(tx, pid, ids[1], "consumed", 0.0))
    assert tidy().due == []
    assert not folder.exists()
    assert jobs.stranded(project_home, md.config, md.db.conn) == []
    stage(project_home, "app", TEXTS[0])
    assert len(list(staging.staged_files(project_home, "app"))) == 1
