"""memoryd: a local, crash-safe memory service for coding agents.

The library API lives in :mod:`memoryd.operations.api`; the ``memoryd`` command is a thin
face over it (:mod:`memoryd.faces.cli.main`).
"""

__version__ = "0.1.0"
