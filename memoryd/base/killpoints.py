"""Named kill points for crash drills: ``MEMORYD_KILL_AT=NAME[:N]`` SIGKILLs this
process the Nth time (default: the first) it reaches ``NAME``.

Names: ``before_commit`` (the group commit's work is done, COMMIT not yet
issued), ``after_commit`` (committed, nothing else done yet),
``after_checkpoint`` (a TRUNCATE checkpoint just succeeded); the archive and
retention layers add their own (``RETENTION_NAMES``), and the archive migration
its ``migration_mid_copy`` and ``migration_mid_switch``
(``memoryd.retention.boundary.KILL_POINTS``). ``memoryd drill`` reaches them all.
``memory_apply_<candidate id>`` kills a supervisor applying that memory candidate
(a poison candidate: ``tests/memory/test_poison.py``), ``memory_decide_<candidate id>``
a worker deciding it (``tests/memory/test_exhausted.py``); ``memory_add_staged`` kills a
``memory add`` between its staging file and its run's enqueue (the supervisor's start
sweep enqueues that run: ``tests/memory/test_stranded.py``).

With ``MEMORYD_KILL_ONCE=PATH`` only the first process to reach the point
dies (it creates PATH): a respawned worker inherits the environment and must
not die again at the same place.
"""

from __future__ import annotations

import os
import signal

ENV = "MEMORYD_KILL_AT"
ONCE_ENV = "MEMORYD_KILL_ONCE"
NAMES = ("before_commit", "after_commit", "after_checkpoint")
RETENTION_NAMES = (
    "wave_after_check",
    "segment_before_batch",
    "segment_after_batch",
    "wave_before_batch",
    "wave_after_batch",
    "wave_before_purge",
    "archive_purge_chunk",
    "archive_purge_final",
    "retention_after_flush",
)
_hits: dict[str, int] = {}


def armed() -> bool:
    """Whether a kill point is set: a hot loop asks once, then reaches its points."""
    return bool(os.environ.get(ENV))


def reach(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] < int(nth or 1):
        return
    once = os.environ.get(ONCE_ENV)
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return  # another process already died here
    os.kill(os.getpid(), signal.SIGKILL)
