"""Named kill points for crash drills: ``MEMORYD_KILL_AT=NAME[:N]`` SIGKILLs this
process the Nth time (default: the first) it reaches ``NAME``.

Names: ``before_commit`` (the group commit's work is done, COMMIT not yet
issued), ``after_commit`` (committed, nothing else done yet),
``after_checkpoint`` (a TRUNCATE checkpoint just succeeded).
"""

from __future__ import annotations

import os
import signal

ENV = "MEMORYD_KILL_AT"
NAMES = ("before_commit", "after_commit", "after_checkpoint")
_hits: dict[str, int] = {}


def reach(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
