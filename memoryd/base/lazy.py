"""Modules loaded on their first use, not when the module naming them is imported.

A supervisor imports every capability at start and its workers are forked from it,
so a module imported there is paid for by every run, before its first job: numpy
(a quarter of a second) is needed only by the dense routes and search, never by an
ingest with the default encoder. ``np = lazy_module("numpy")`` binds a module object
that loads numpy when one of its attributes is first read (annotations are strings
under ``from __future__ import annotations``, so they read none).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as imported already, else a module that imports itself on first use
    (:class:`importlib.util.LazyLoader`; it stands in ``sys.modules`` meanwhile, so
    every importer shares it)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def loaded(name: str) -> bool:
    """Whether module ``name`` has been executed: imported, or a :func:`lazy_module`
    used already (until its first use it is of another type, whose attributes would
    load it)."""
    return type(sys.modules.get(name)) is ModuleType
