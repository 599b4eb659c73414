"""The store's parts: each a small documented interface over the store's one core (one
handle, one lock), reached through the store's attributes."""

from __future__ import annotations

import pytest

PARTS = (
    "ledgers",
    "segments",
    "lifetimes",
    "expiry",
    "protections",
    "access",
    "postings",
    "vectors",
    "meta",
    "maintenance",
)


@pytest.mark.parametrize("name", PARTS)
def test_each_part_is_a_small_interface_over_the_one_core(store, name) -> None:
    part = getattr(store, name)
    kind = type(part)
    public = [m for m in vars(kind) if not m.startswith("_") and callable(getattr(kind, m))]
    assert 0 < len(public) <= 15, public
    assert kind.__doc__  # the interface says what the part is for
    assert part._core is store  # every part locks and writes through the same core
