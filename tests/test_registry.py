"""The composition root: one registry of every capability's job kinds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memoryd.app import CAPABILITIES, default_registry
from memoryd.base.errors import UnknownJobKind
from memoryd.workers.contract import JobKind, Periodic
from memoryd.workers.registry import DuplicateName, Registry

#: What the runtime must not load: the capabilities, the composition root, the
#: operations and the faces (the supervisor gets its kinds and extensions passed in).
ABOVE_THE_RUNTIME = (
    "memoryd.ingest",
    "memoryd.search",
    "memoryd.archive",
    "memoryd.retention",
    "memoryd.projects",
    "memoryd.consolidation",
    "memoryd.app",
    "memoryd.operations",
    "memoryd.faces",
)


def test_every_shipped_kind_is_registered_once() -> None:
    reg = default_registry()
    assert {"noop", "ingest.scan", "archive.op", "projects.remove", "memory.consolidate"} <= set(
        reg.kind_names()
    )
    assert reg.pool_kinds("retention") == ["archive.op", "capture.drain"]
    assert [p.name for p in reg.periodic_jobs()] == ["retention.tick", "capture.drain"]
    assert reg.modules == CAPABILITIES


def test_duplicate_names_are_refused() -> None:
    noop = JobKind("x", lambda ctx, p: None)
    with pytest.raises(DuplicateName, match="job kind 'x'"):
        Registry([noop, noop])
    tick = Periodic("t", "retention_tick_seconds", lambda home, cfg: None)
    with pytest.raises(DuplicateName, match="periodic job 't'"):
        Registry([], [tick, tick])
    with pytest.raises(DuplicateName):
        Registry.from_modules([*CAPABILITIES, CAPABILITIES[0]])


def test_unknown_kind_is_a_typed_error() -> None:
    with pytest.raises(UnknownJobKind, match="known kinds"):
        default_registry().job_kind("nope")


def test_the_worker_contract_imports_no_capability() -> None:
    """The cycle is gone: importing the contract loads none of the capabilities."""
    code = (
        "import sys, memoryd.workers.contract; "
        f"print(sorted(m for m in {list(CAPABILITIES)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_supervisor_imports_no_capability_and_no_face() -> None:
    """The supervisor knows no job kind, face or extension by name: importing it (and
    the pools, the worker, the Ray executor) loads nothing above the runtime."""
    code = (
        "import sys, memoryd.workers.supervisor, memoryd.workers.raypool; "
        f"above = {ABOVE_THE_RUNTIME!r}; names = {list(CAPABILITIES)!r}; "
        "print(sorted(m for m in sys.modules if m in names or m.startswith(above)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
