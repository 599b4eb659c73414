"""A supervisor imports every capability and forks its workers from itself: numpy is
loaded by the first use of it (the dense routes, search), never by those imports."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from memoryd.app import default_registry
default_registry()
numpy = sys.modules.get("numpy")
print(numpy is None or type(numpy).__name__ == "_LazyModule")
from memoryd.text.dense import DEFAULT_ENCODER
print(len(DEFAULT_ENCODER.encode(["lazy numpy loads when used"])[0]))
"""


def test_the_capabilities_load_no_numpy_until_it_is_used() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["True", "256"]
