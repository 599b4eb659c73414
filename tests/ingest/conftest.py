"""Fixtures for ingestion: a copy of the running interpreter's standard library."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# As in the README's demo: the standard library without its tests and site-packages.
STDLIB_EXCLUDES = ("test/", "tests/", "idle_test/")


def _ignore(directory: str, names: list[str]) -> set[str]:
    skip = {"site-packages", "__pycache__", "test", "tests", "idle_test"}
    return {n for n in names if n in skip}


@pytest.fixture(scope="session")
def stdlib_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the stdlib sources, so tests may edit and delete files."""
    dest = tmp_path_factory.mktemp("stdlib") / "python-stdlib"
    shutil.copytree(STDLIB, dest, ignore=_ignore, symlinks=True)
    return dest
