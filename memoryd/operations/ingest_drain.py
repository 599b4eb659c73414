"""The draining supervisor ``ingest --wait`` starts when none runs: forked (the child
imports this module by name) or ``python -m memoryd.operations.ingest_drain HOME N``."""

from __future__ import annotations

import sys
import traceback

from memoryd.base.errors import MemorydError
from memoryd.base.home import private_umask
from memoryd.operations.api import Memoryd


def drain(home: str, workers: int) -> int:
    """What ``memoryd run --drain --home HOME --workers N`` does, without the CLI. Every
    error goes to stderr (a forked child leaves through ``os._exit``, which would print
    nothing), a full disk as DISK_FULL."""
    try:
        Memoryd(home, {"workers": workers}).run(workers=workers, drain=True)
    except MemorydError as exc:
        print(f"memoryd: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    private_umask()
    raise SystemExit(drain(sys.argv[1], int(sys.argv[2])))
