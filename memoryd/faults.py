"""Test-only fault switch: ``MEMORYD_FAULT=NAME[,NAME...]`` breaks one guarantee on purpose.

The crash drill is trusted only because it fails when a guarantee is broken
(DESIGN.md, "Crash and rebuild contract"). Each name below disables one
guarantee at one place in the code; ``tests/test_drill_faults.py`` proves the
drill reports a violation for each. Like :mod:`memoryd.killpoints`, this
module is the only reader of its environment variable.

Names:

- ``unfenced_completion``: a completion ignores the lease token and state, so a
  late result for a reclaimed (and re-claimed) job is applied as well.
- ``double_effect``: a ``noop``/``sleep`` job's effect row is written twice.
- ``lost_completion``: a job's effects commit but its completion does not, so
  the job stays claimed and runs (and applies) again.
"""

from __future__ import annotations

import os

ENV = "MEMORYD_FAULT"
NAMES = ("unfenced_completion", "double_effect", "lost_completion")


def active(name: str) -> bool:
    """Whether the fault ``name`` is switched on for this process."""
    spec = os.environ.get(ENV)
    return bool(spec) and name in spec.split(",")
