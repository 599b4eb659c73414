"""Regular expressions compiled once per interpreter and kept on disk, for a process
that should not import :mod:`re`.

A hook process runs on every tool call of an agent, and ``re``'s import (``enum``,
``functools``, ``collections``) plus the compilation of the redaction rules cost it
more CPU than the rest of its work. The engine under ``re`` (the ``_sre`` module)
is built into the interpreter; what ``re`` adds is the compiler from a pattern to
``_sre``'s code. So the code is compiled by ``re`` once, checked (a pattern built
from it must equal ``re.compile``'s: ``Pattern.__eq__`` compares the code), and
kept with the interpreter's version and the sources it came from; a process that
finds both unchanged builds its patterns from it without ``re``. Anything else (no
file, another interpreter, other sources, a file that cannot be read or written)
compiles with ``re`` as usual: the cache only ever saves time. (It is written where
bytecode is not, ``PYTHONDONTWRITEBYTECODE``: it is memoryd's own file.)
"""

import _sre
import marshal
import os
import sys

TYPE_CHECKING = False  # typing's import is one more a hook would pay for
if TYPE_CHECKING:
    from collections.abc import Callable
    from re import Pattern

#: A cache's errors that mean "compile with re": unreadable, truncated, or refused by
#: ``_sre`` (whose code check rejects what this interpreter did not make).
UNUSABLE = (OSError, EOFError, ValueError, TypeError, RuntimeError)


def load(spec: object, build: "Callable[[], list[tuple[str, int]]]", cache: str) -> "list[Pattern]":
    """The patterns ``build()`` gives as (pattern, flags) pairs, ``spec`` being what
    they are built from (marshal-able: compared with the cache's): from ``cache``
    when it holds this interpreter's compilation of ``spec``, else compiled here and
    kept in ``cache`` for the next process."""
    key = (sys.version, _sre.MAGIC, spec)
    try:
        with open(cache, "rb") as f:
            found, args = marshal.loads(f.read())
        if found == key:
            return [_sre.compile(*a) for a in args]
    except UNUSABLE:
        pass
    return _compile_and_keep(key, build(), cache)


def _compile_and_keep(key: tuple, sources: list[tuple[str, int]], cache: str) -> "list[Pattern]":
    import re

    patterns = [re.compile(p, f) for p, f in sources]
    try:
        args = [_sre_args(p, f) for p, f in sources]
    except (AttributeError, ImportError, TypeError):
        return patterns  # re's compiler is not the one this module knows
    if [_sre.compile(*a) for a in args] == patterns:
        _write(cache, marshal.dumps((key, args)))
    return patterns


def _sre_args(pattern: str, flags: int) -> tuple:
    """What ``re._compiler.compile`` hands ``_sre.compile`` for ``pattern``."""
    from re import _compiler, _parser

    parsed = _parser.parse(pattern, flags)
    code = [int(op) for op in _compiler._code(parsed, flags)]  # named constants: ints
    groupindex = parsed.state.groupdict
    indexgroup = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    return (pattern, int(flags | parsed.state.flags), code, parsed.state.groups - 1,
            dict(groupindex), tuple(indexgroup))  # fmt: skip


def _write(path: str, data: bytes) -> None:
    """``data`` as ``path``, whole or not at all (a cache: no fsync, a failure ignored)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        import contextlib  # here: a miss's import, not every process's

        with contextlib.suppress(OSError):
            os.unlink(tmp)
