"""Retention of the evidence archive: policy, waves, maintenance, boundary, disk guard.

Everything here works through :class:`memoryd.storage.archive.ArchiveStore`
methods; no module of this package builds a key.
"""

from memoryd.retention.policy import RetentionPolicy

__all__ = ["RetentionPolicy"]
