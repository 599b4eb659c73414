"""Files a running scan has discovered, for ``ingest --wait`` to show before the scan
commits. The scan runs in a worker, which never writes the authority: it replaces a
small file in the home instead (``progress/scan-RUN``, written whole then renamed),
and the scan's apply removes it."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from memoryd.base.config import PROGRESS_DIR


def progress_path(home: Path, run: int) -> Path:
    return Path(home) / PROGRESS_DIR / f"scan-{int(run)}"


class ScanProgress:
    """``on_eligible`` for :func:`memoryd.ingest.scan.scan`: records the count at
    most every ``period`` seconds."""

    def __init__(self, home: Path, run: int, period: float) -> None:
        self.path = progress_path(home, run)
        self.period = period
        self.next_at = time.monotonic() + period

    def __call__(self, count: int) -> None:
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + self.period
        self.path.parent.mkdir(exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(str(count))
        os.replace(tmp, self.path)


def discovered(home: Path, run: int) -> int:
    """Files the run's scan has found so far (0 before its first report)."""
    try:
        return int(progress_path(home, run).read_text() or 0)
    except (OSError, ValueError):
        return 0


def clear(home: Path, run: int) -> None:
    with contextlib.suppress(OSError):
        progress_path(home, run).unlink()
