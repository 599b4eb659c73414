"""Search over project memory with an explicit abstention (DESIGN.md, "Search and abstention").

The library call is :func:`search`; ``memoryd search`` is its CLI face.
"""

from memoryd.search.dense import DEFAULT_ENCODER, Encoder, HashingEncoder
from memoryd.search.engine import search

__all__ = ["DEFAULT_ENCODER", "Encoder", "HashingEncoder", "search"]
