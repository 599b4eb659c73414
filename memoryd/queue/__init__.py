"""The durable job queue in the authority: enqueue, claim, lease, complete, retry, dead-letter.

It knows no job kind: a kind is a name and an opaque JSON payload here.
"""

from memoryd.queue.jobs import LEASE_EXPIRED, STATES, ClaimedJob, JobQueue, JobSpec
from memoryd.queue.reads import JobReads

__all__ = ["LEASE_EXPIRED", "STATES", "ClaimedJob", "JobQueue", "JobReads", "JobSpec"]
