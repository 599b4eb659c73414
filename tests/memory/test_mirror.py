"""The markdown mirror is written by its own job (``memory.mirror``), enqueued in the
commit that changed records; a mirror job that ends behind the records enqueues the
next one."""

from __future__ import annotations

import orjson

from memoryd.consolidation import mirror
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from memoryd.queue import ClaimedJob, JobQueue
from memoryd.workers.contract import ApplyContext
from tests.conftest import query
from tests.memory.conftest import lines

TEXT = "Deploys of the billing service go to the blue cluster in region west"


def _mirror_jobs(home) -> list[tuple]:
    return query(home, "SELECT state FROM jobs WHERE kind = ? ORDER BY id", (mirror.MIRROR,))


def test_a_consolidation_commit_enqueues_the_mirror_job(memoryd, project_home) -> None:
    md = memoryd()
    (out,) = Memory(md).add(lines({"kind": "lesson", "text": TEXT}), "app", wait=True)["outcomes"]
    assert _mirror_jobs(project_home) == [("done",)]
    page = mirror.mirror_dir(project_home, "app") / f"{out['record_id']}.md"
    assert TEXT in page.read_text()
    latest = query(project_home, "SELECT max(seq) FROM memory_records")[0][0]
    assert mirror.watermark(page.parent) == latest


def test_a_mirror_job_behind_the_records_enqueues_the_next(memoryd, project_home) -> None:
    md = memoryd()
    Memory(md).add(lines({"kind": "lesson", "text": TEXT}), "app", wait=True)
    pid = md.db.query("SELECT id FROM projects WHERE name = 'app'")[0][0]
    latest = md.db.query("SELECT max(seq) FROM memory_records")[0][0]
    payload = orjson.dumps({"project": "app", "project_id": pid})
    job = ClaimedJob(0, mirror.MIRROR, payload, "token", 1, "app")

    def finish(reached: int) -> None:
        md.db.write(
            lambda tx: mirror.apply(ApplyContext(tx, JobQueue(md.db), md.config), [(job, reached)])
        )

    finish({"seq": latest})  # caught up: nothing more
    assert _mirror_jobs(project_home) == [("done",)]
    finish({"seq": latest - 1})  # a commit landed while it ran
    assert _mirror_jobs(project_home) == [("done",), ("queued",)]
    md.run(drain=True)
    assert _mirror_jobs(project_home) == [("done",), ("done",)]
    assert Home(md).rebuild(verify=True)["equal"]
