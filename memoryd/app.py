"""The composition root: every capability's job kinds in one registry.

A capability module lists what it offers: ``KINDS`` (job kinds) and, when it
has any, ``PERIODIC`` (jobs a running supervisor enqueues on a period). No
module below this one imports a capability: the worker contract
(:mod:`memoryd.workers.contract`) only defines the shapes, and the registry
(:mod:`memoryd.workers.registry`) imports the modules it is given by name. The
registry of :data:`CAPABILITIES` is built here and handed to the API, which
hands it to the supervisors it starts; a supervisor hands the module list to its
worker processes (forked, or Ray tasks), which build their own registry from it.
"""

from __future__ import annotations

import functools

from memoryd.workers.registry import Registry

CAPABILITIES: tuple[str, ...] = (
    "memoryd.workers.builtin",
    "memoryd.ingest.jobs",
    "memoryd.archive.jobs",
    "memoryd.projects.manage",
    "memoryd.consolidation.jobs",
    "memoryd.ingest.vectors",
    "memoryd.capture.jobs",
)


@functools.cache
def default_registry() -> Registry:
    """The registry of every capability memoryd ships."""
    return Registry.from_modules(CAPABILITIES)
