"""`make demo`: ingest the running interpreter's standard library, then search it.

Uses the real CLI, a scratch home under ./.demo-home (reused on a second run,
which then shows the incremental path: nothing changed, no batch work).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

HOME = Path(__file__).resolve().parent.parent / ".demo-home"
STDLIB = sysconfig.get_paths()["stdlib"]
PROJECT = "python-stdlib"
SEARCHES = [
    ("answered", "how does the json decoder report where a document is malformed?"),
    ("in Spanish", "¿cómo se comprime un archivo con gzip?"),
    ("not in the corpus", "which AWS S3 bucket stores the customer invoices?"),
]


def memoryd(*args: str) -> None:
    cmd = [sys.executable, "-m", "memoryd.faces.cli.main", *args, "--home", str(HOME)]
    # quoted as a shell needs it, with the home it uses: each line can be pasted
    print(f"\n$ memoryd {shlex.join([*args, '--home', str(HOME)])}", flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, "COLUMNS": "100"})


def main() -> None:
    memoryd(
        "ingest", STDLIB, "--project", PROJECT, "--wait", "--workers", "2",
        "--exclude", "test/", "--exclude", "tests/", "--exclude", "idle_test/",
    )  # fmt: skip
    memoryd("status")
    for label, query in SEARCHES:
        print(f"\n# {label}")
        memoryd("search", query, "--project", PROJECT, "--limit", "3")


if __name__ == "__main__":
    main()
