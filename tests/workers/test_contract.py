"""The job contract's apply context: a job's effects undone alone inside a group commit."""

from __future__ import annotations

from pathlib import Path

from memoryd.base.config import load_config
from memoryd.queue import JobQueue, JobSpec
from memoryd.storage import open_authority
from memoryd.storage.effects import effect_counts, record_effects
from memoryd.workers.contract import ApplyContext


def test_a_job_failing_in_its_savepoint_leaves_the_other_jobs_effects_in_the_commit(
    home: Path,
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(home)
    with open_authority(home, config) as db:
        queue = JobQueue(db)
        ids = queue.enqueue_many([JobSpec("noop")] * 3)
        failed = []

        def group_commit(tx) -> None:
            actx = ApplyContext(tx, queue, config)
            for job_id in ids:
                try:
                    with actx.savepoint():
                        record_effects(tx, [job_id, job_id], "noop")
                        if job_id == ids[1]:
                            raise ValueError("this job's apply fails half way")
                except ValueError:
                    failed.append(job_id)

        db.write(group_commit)
        assert failed == [ids[1]]
        assert effect_counts(db) == {"effects": 4, "jobs_with_effects": 2}
        kept = {r[0] for r in db.query("SELECT job_id FROM job_effects")}
        assert kept == {ids[0], ids[2]}, "the failing job's own effects are all undone"
