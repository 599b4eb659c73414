"""The job queue as a user sees it: add jobs of a user kind, list, show, retry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from memoryd.base.errors import BadPayload, InternalJobKind, NoSuchJob, UnknownJobKind
from memoryd.base.times import iso_time
from memoryd.queue import STATES, JobReads, JobSpec
from memoryd.workers.contract import USER_KINDS

if TYPE_CHECKING:
    from memoryd.operations.api import Memoryd

JOB_TIMES = ("not_before", "created_at", "updated_at", "finished_at", "lease_expires")


def job_view(job: dict) -> dict:
    """A queue row as the API shows it: times as ISO strings."""
    return {k: iso_time(v) if k in JOB_TIMES else v for k, v in job.items()}


def parse_payload(text: str | None) -> Any:
    """Parse a payload given as JSON text; a clear error says what was wrong."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadPayload(f"payload is not valid JSON ({exc}): {text[:80]!r}") from None


@dataclass(frozen=True)
class Jobs:
    """The jobs of ``md``'s home."""

    md: Memoryd

    def add(
        self,
        kind: str,
        *,
        count: int = 1,
        payload: Any = None,
        project: str | None = None,
        priority: int = 0,
        max_attempts: int | None = None,
        dedupe_key: str | None = None,
    ) -> list[int | None]:
        """Enqueue ``count`` jobs of a user kind (:data:`USER_KINDS`), committed in chunks of
        ``enqueue_chunk_rows``: a bulk add never holds the write lock long, lets a waiting
        writer (the supervisor) in between chunks and keeps the WAL under its pause bound
        (a crash keeps the chunks already committed).

        The other kinds are enqueued by the capability that owns them, with the
        payload it builds: a hand-made one would only fail later, in a worker.
        """
        if kind not in self.md.registry.kinds:
            raise UnknownJobKind(
                f"unknown job kind {kind!r}; `memoryd jobs add` takes "
                f"{', '.join(sorted(USER_KINDS))}"
            )
        spec = self.md.registry.job_kind(kind)
        if kind not in USER_KINDS:
            raise InternalJobKind(
                f"job kind {kind!r} is internal (memoryd enqueues it itself); "
                f"`memoryd jobs add` takes {', '.join(sorted(USER_KINDS))}"
            )
        if spec.validate:
            spec.validate(payload)
        if count < 1:
            raise BadPayload("--count must be at least 1")
        if dedupe_key and count > 1:
            raise BadPayload("a dedupe key names one job; use --count 1")
        job = JobSpec(kind, payload, project, priority, max_attempts, dedupe_key)
        return self.md.queue.enqueue_bulk(job, count)

    def listing(
        self,
        state: str | None = None,
        limit: int = 100,
        *,
        kind: str | None = None,
        project: str | None = None,
    ) -> list[dict]:
        """Jobs newest first, filtered by state, kind and project (times in ISO 8601 UTC)."""
        if state and state not in STATES:
            raise BadPayload(f"unknown state {state!r}; one of {', '.join(STATES)}")
        jobs = JobReads(self.md.reader).list(state, limit, kind=kind, project=project)
        return [job_view(j) for j in jobs]

    def show(self, job_id: int) -> dict:
        """One job: payload, full last error, attempts, lease and times."""
        found = JobReads(self.md.db).get(job_id)
        if found is None:
            raise NoSuchJob(f"no job {job_id}; see `memoryd jobs list`")
        return job_view(found)

    def retry(self, ids: list[int] | None = None, *, all_dead: bool = False) -> dict:
        """Requeue dead jobs; ``refused`` says why each other named job was not requeued."""
        requeued = self.md.queue.retry(ids or [], all_dead=all_dead)
        refused = []
        for job_id in dict.fromkeys(ids or []):
            if job_id in requeued:
                continue
            job = JobReads(self.md.db).get(job_id)
            if job is None:
                reason = "no such job"
            elif job["state"] != "dead":
                reason = f"it is {job['state']}, not dead"
            else:
                reason = "a live job with its dedupe key already exists"
            refused.append({"id": job_id, "reason": reason})
        return {"requeued": requeued, "refused": refused}

    @staticmethod
    def kinds() -> list[str]:
        """The kinds a user may enqueue."""
        return sorted(USER_KINDS)
