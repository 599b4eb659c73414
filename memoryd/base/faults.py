"""Test-only fault switch: ``MEMORYD_FAULT=NAME[,NAME...]`` breaks one guarantee on purpose.

The crash drill is trusted only because it fails when a guarantee is broken
(DESIGN.md, "Crash and rebuild contract"). Each name below disables one
guarantee at one place in the code; ``tests/test_drill_faults.py`` proves the
drill reports a violation for each. Like :mod:`memoryd.base.killpoints`, this
module is the only reader of its environment variable.

Names:

- ``unfenced_completion``: a completion ignores the lease token and state, so a
  late result for a reclaimed (and re-claimed) job is applied as well.
- ``double_effect``: a ``noop``/``sleep`` job's effect row is written twice.
- ``lost_completion``: a job's effects commit but its completion does not, so
  the job stays claimed and runs (and applies) again.
- ``complete_ignores_token``: a completion is fenced by the job's state but not
  by its lease token, so a late result completes a re-claimed job in place of
  its new attempt.
- ``staging_removed_early``: a consolidation run removes a staging file when it
  decides the file's last candidates, before the supervisor commits those
  decisions: a crash in between loses them.
- ``reclaim_live_leases``: the reclaim of expired leases ignores their expiry and
  takes every claim, those its supervisor renews included.
"""

from __future__ import annotations

import os

ENV = "MEMORYD_FAULT"
NAMES = (
    "unfenced_completion",
    "double_effect",
    "lost_completion",
    "complete_ignores_token",
    "staging_removed_early",
    "reclaim_live_leases",
)


def active(name: str) -> bool:
    """Whether the fault ``name`` is switched on for this process."""
    spec = os.environ.get(ENV)
    return bool(spec) and name in spec.split(",")
