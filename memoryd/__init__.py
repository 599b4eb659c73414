"""memoryd: a local, crash-safe memory service for coding agents.

The library API lives in :mod:`memoryd.api`; the ``memoryd`` command is a thin
face over it (:mod:`memoryd.cli`).
"""

__version__ = "0.1.0"
