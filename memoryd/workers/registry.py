"""The job kinds and periodic jobs of a list of capability modules.

A registry is built from module names (:meth:`Registry.from_modules`), so a
worker process (forked, spawned, or a Ray task) builds the same one from the
names its supervisor passes it; which modules memoryd ships is the composition
root's list (:data:`memoryd.app.CAPABILITIES`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence

from memoryd.base.errors import UnknownJobKind
from memoryd.workers.contract import JobKind, Periodic


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
