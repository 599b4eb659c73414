"""Patterns compiled at their first use, not at import.

A module-level ``re.compile`` costs every process that imports the module, whether or
not it ever uses the pattern: the text modules' patterns were 7 ms of each ``memoryd
search``'s start, most of them for file formats only ingest reads. :class:`Lazy`
stands for a pattern with its methods; the first use compiles it and keeps the
compiled pattern's bound methods as its own, so later calls cost what a compiled
pattern's do (no ``__getattr__`` after the first).
"""

import re

#: The methods kept on the instance once compiled (any other attribute is looked up
#: on the compiled pattern each time).
METHODS = ("match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split")


class Lazy:
    """``re.compile(pattern, flags)`` on first use; ``pattern`` is the source, as a
    compiled pattern's is, without compiling."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.source_flags = flags

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # copy, pickle and the like: not a pattern's
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.source_flags)
        for method in METHODS:
            setattr(self, method, getattr(compiled, method))
        self.compiled = compiled
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"Lazy({self.pattern!r}, {self.source_flags})"
