"""A small project's whole home against its source: every byte of the data home.

The project is the standard library's ``json`` package (its five ``.py`` files,
48 KB), copied to a temporary tree and ingested by the user's command,
``memoryd ingest TREE --wait --json``, while a thread sums the size of every
file under the home (the authority, its ``-wal`` and ``-shm``, anything else)
every 5 ms: the **peak**. Then, in this process, three readings of the whole
home over the source:

* **open**: a connection open after a truncating checkpoint (the ``-shm`` is
  there, the WAL empty);
* **closed**: that connection closed (the last one out removes ``-wal`` and
  ``-shm``);
* **empty authority**: a home that never ingested, for the fixed cost.

``--whole`` ingests ``--root`` in place, every file the default rules take, and
measures against the bytes the run ingested (issue 34 item 3 reads the standard
library's peak this way: ``--root /usr/lib/python3.11 --whole``).

    PYTHONPATH=$PWD .venv/bin/python ops/bench/bench_small.py [--json] [--root DIR] [--whole]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.home import Home  # noqa: E402

TARGET_CLOSED = 1.0
TARGET_PEAK = 1.5
SAMPLE_SECONDS = 0.005


def file_sizes(path: Path) -> dict[str, int]:
    """Every regular file's size under ``path`` (files may vanish while it looks)."""
    sizes = {}
    for p in path.rglob("*"):
        try:
            if p.is_file():
                sizes[str(p.relative_to(path))] = p.stat().st_size
        except FileNotFoundError:
            continue
    return sizes


def tree_bytes(path: Path) -> int:
    return sum(file_sizes(path).values())


class HomeSampler:
    """The largest whole-home size seen while it runs, sampled from a thread."""

    def __init__(self, home: Path) -> None:
        self.home, self.peak, self.samples = home, 0, 0
        self.at_peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            sizes = file_sizes(self.home)
            if sum(sizes.values()) > self.peak:
                self.peak, self.at_peak = sum(sizes.values()), sizes
            self.samples += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def small_tree(dest: Path, root: Path) -> int:
    """Copy the project's ``.py`` files to ``dest``; their total bytes."""
    dest.mkdir(parents=True)
    for src in sorted(root.glob("*.py")):
        shutil.copyfile(src, dest / src.name)
    return tree_bytes(dest)


def measure(root: Path, whole: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-small-") as tmp:
        tree, home, empty = Path(tmp, "tree"), Path(tmp, "home"), Path(tmp, "empty")
        tree = root if whole else tree
        source = 0 if whole else small_tree(tree, root)
        home.mkdir()
        cmd = [sys.executable, "-m", "memoryd.faces.cli.main", "ingest", str(tree), "--home",
               str(home), "--wait", "--json"]  # fmt: skip
        sampler = HomeSampler(home)
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - t0
        sampler.stop()
        summary = json.loads(out.splitlines()[-1])
        source = source or summary["bytes_ingested"]
        md = Memoryd(home)
        Home(md).checkpoint_wal()
        opened = tree_bytes(home)
        files = file_sizes(home)
        md.close()
        closed = tree_bytes(home)
        md = Memoryd(empty)
        md.db  # noqa: B018 (opening it makes the authority)
        md.close()
        fixed = tree_bytes(empty)
    return {
        "source_bytes": source,
        "files_ingested": summary["files_ingested"],
        "ingest_wall_seconds": round(wall, 2),
        "ingest_cpu_seconds": summary["cpu_seconds"],
        "home_closed_bytes": closed,
        "home_open_bytes": opened,
        "home_peak_bytes": sampler.peak,
        "peak_samples": sampler.samples,
        "empty_home_bytes": fixed,
        "closed_over_source": round(closed / source, 3),
        "open_over_source": round(opened / source, 3),
        "peak_over_source": round(sampler.peak / source, 3),
        "closed_less_empty_over_source": round((closed - fixed) / source, 3),
        "files_open": files,
        "files_at_peak": sampler.at_peak,
        "targets": {"closed": TARGET_CLOSED, "peak": TARGET_PEAK},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"], "json"))
    ap.add_argument("--whole", action="store_true", help="ingest ROOT in place, every file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = measure(args.root, args.whole)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
