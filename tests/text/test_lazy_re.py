"""Patterns compiled at first use: what ``re.compile`` gives, not paid at import."""

import re
import subprocess
import sys

from memoryd.text.lazy_re import Lazy

MODULES = ("memoryd.text.terms", "memoryd.text.structure", "memoryd.text.evidence")


def test_a_lazy_pattern_answers_as_the_compiled_one():
    source, flags = r"(?P<key>\w+)\s*=\s*(\d+)", re.I
    lazy, compiled = Lazy(source, flags), re.compile(source, flags)
    assert lazy.pattern == source and "compiled" not in vars(lazy)
    text = "A = 1, b=22; c = x"
    assert lazy.search(text).groupdict() == compiled.search(text).groupdict()
    assert lazy.compiled is compiled  # re's cache: the same pattern object
    assert "search" in vars(lazy)  # bound once: no __getattr__ on later calls
    assert lazy.findall(text) == compiled.findall(text)
    assert lazy.sub("#", text) == compiled.sub("#", text)
    assert lazy.groupindex == compiled.groupindex


def test_importing_the_text_modules_compiles_none_of_their_patterns():
    """A process that imports them (every search) compiles only what it uses."""
    code = (
        "import re, sys\n"
        f"for name in {MODULES!r}:\n"
        "    __import__(name)\n"
        "    module = sys.modules[name]\n"
        "    print(name, sum(isinstance(v, re.Pattern) for v in vars(module).values()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.split() == [x for name in MODULES for x in (name, "0")]
