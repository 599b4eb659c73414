"""The composition root: every capability's job kinds in one registry.

A capability module lists what it offers: ``KINDS`` (job kinds) and, when it
has any, ``PERIODIC`` (jobs a running supervisor enqueues on a period). No
module below this one imports a capability: the worker contract
(:mod:`memoryd.workers.contract`) only defines the shapes. The registry is
built here from :data:`CAPABILITIES`, refuses two kinds (or periodic jobs)
of one name, and is handed to the API and the supervisor, which hands the
capability list to its worker processes.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Sequence

from memoryd.errors import UnknownJobKind
from memoryd.workers.contract import JobKind, Periodic

CAPABILITIES: tuple[str, ...] = (
    "memoryd.workers.builtin",
    "memoryd.ingest.jobs",
    "memoryd.archive.jobs",
    "memoryd.projects",
    "memoryd.memory.jobs",
    "memoryd.workers.vectors",
)


class DuplicateName(ValueError):
    """Two capabilities offer a job kind (or a periodic job) of the same name."""


def _by_name(items: Iterable, what: str) -> dict:
    out: dict = {}
    for item in items:
        if item.name in out:
            raise DuplicateName(f"two capabilities register the {what} {item.name!r}")
        out[item.name] = item
    return out


class Registry:
    """The job kinds and periodic jobs of a list of capability modules."""

    def __init__(
        self, kinds: Iterable[JobKind], periodic: Iterable[Periodic] = (), modules=()
    ) -> None:
        self.kinds: dict[str, JobKind] = _by_name(kinds, "job kind")
        self.periodic: dict[str, Periodic] = _by_name(periodic, "periodic job")
        self.modules: tuple[str, ...] = tuple(modules)  # what a worker process imports

    @classmethod
    def from_modules(cls, modules: Sequence[str]) -> Registry:
        loaded = [importlib.import_module(name) for name in modules]
        return cls(
            (k for m in loaded for k in m.KINDS),
            (p for m in loaded for p in getattr(m, "PERIODIC", ())),
            modules,
        )

    def job_kind(self, name: str) -> JobKind:
        try:
            return self.kinds[name]
        except KeyError:
            raise UnknownJobKind(
                f"unknown job kind {name!r}; known kinds: {', '.join(sorted(self.kinds))}"
            ) from None

    def pool_kinds(self, pool: str) -> list[str]:
        """Names of the kinds a pool of workers runs."""
        return sorted(k.name for k in self.kinds.values() if k.pool == pool)

    def kind_names(self) -> list[str]:
        return sorted(self.kinds)

    def periodic_jobs(self) -> list[Periodic]:
        return list(self.periodic.values())


@functools.cache
def default_registry() -> Registry:
    """The registry of every capability memoryd ships."""
    return Registry.from_modules(CAPABILITIES)
