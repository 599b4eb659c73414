"""``bench_memory.py --splits``: a comma list of the pair splits to run, so a held-out
split is left out by naming the others (its generator is then never imported)."""

from __future__ import annotations

import argparse
import sys

import pytest

from tests.memory.conftest import bench_module


@pytest.fixture(scope="module")
def bench():
    yield from bench_module("bench_memory")


def test_splits_are_read_in_order_without_repeats(bench):
    assert bench._splits("fresh, dev,fresh") == ("fresh", "dev")


@pytest.mark.parametrize("value", ["", "dev,nonesuch"])
def test_an_unknown_or_empty_split_list_is_refused(bench, value):
    with pytest.raises(argparse.ArgumentTypeError):
        bench._splits(value)


def test_a_split_left_out_is_never_imported(bench):
    bench.split_pairs("alt", 1)
    assert "memory_pairs_alt" in sys.modules
    assert "memory_pairs_fourth" not in sys.modules
