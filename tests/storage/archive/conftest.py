"""Fixtures of the archive package tests: the store of tests/storage/test_archive.py."""

from tests.storage.test_archive import store  # noqa: F401 (the fixture)
