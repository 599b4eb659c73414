"""Search over project memory with an explicit abstention (DESIGN.md, "Search and abstention").

The library call is :func:`search`; ``memoryd search`` is its CLI face. The names below
are resolved on first use, so importing one light module of this package (the terms, the
gate) does not load the engine and numpy with it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_ENCODER": "memoryd.text.dense",
    "Encoder": "memoryd.text.dense",
    "HashingEncoder": "memoryd.text.dense",
    "search": "memoryd.search.engine",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
