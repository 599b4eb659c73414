"""Where an ingest's time goes, and the compression curve.

For each ``--root`` tree: raw single-transaction FTS5 of the same files
(``bench_ingest.raw_insert``, stored content), then for each ``--levels`` value
the user's command ``memoryd ingest ROOT --wait --json`` on a fresh home with
``MEMORYD_BODY_PACK_LEVEL`` set, in its own process; ``--base CHECKOUT`` adds a run
of another checkout's code (its default level) in the same sequence. During each
run every 0.1 s: the CPU of the command, its forked supervisor and the workers
(psutil, per process) and the WAL's size. A run's CPU is split at the commit that
made it searchable: what comes after is the pack pass (the index merge, the
vectors). Reported beside it: the whole home over the source after a TRUNCATE
checkpoint, the largest WAL, and the wall time (on a shared machine the CPU is the
figure to compare).

    .venv/bin/python ops/bench/bench_ingest_curve.py --root /usr/include \\
        --root /usr/lib/python3.11 --levels 3,6,9,12,19 [--base CHECKOUT] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw
import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import raw_insert  # noqa: E402

from memoryd.base.config import MiB  # noqa: E402
from memoryd.ingest.scan import scan  # noqa: E402

SAMPLE_SECONDS = 0.1


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


class Sampler:
    """CPU seconds per process of an ingest command's tree, by role, over time."""

    def __init__(self, pid: int, wal: Path) -> None:
        self.cli, self.wal = psutil.Process(pid), wal
        self.last: dict[int, tuple[str, float]] = {}  # pid -> (role, CPU seconds)
        self.timeline: list[tuple[float, dict[int, float]]] = []
        self.wal_peak = 0

    def sample(self) -> None:
        with_roles = [(self.cli, "command")]
        try:
            for sup in self.cli.children():
                with_roles += [(sup, "supervisor")]
                with_roles += [(w, "workers") for w in sup.children(recursive=True)]
        except psutil.Error:
            pass
        for proc, role in with_roles:
            try:
                self.last[proc.pid] = (role, _cpu(proc))
            except psutil.Error:
                continue
        self.timeline.append((time.time(), {p: c for p, (_, c) in self.last.items()}))
        with contextlib.suppress(FileNotFoundError):  # before the first write
            self.wal_peak = max(self.wal_peak, self.wal.stat().st_size)

    def by_role(self, until: float | None = None) -> dict[str, float]:
        """CPU by role up to ``until`` (epoch seconds; None: the end)."""
        seen = self.timeline[-1][1] if self.timeline else {}
        if until is not None:
            seen = next((d for t, d in reversed(self.timeline) if t <= until), {})
        roles = {"command": 0.0, "supervisor": 0.0, "workers": 0.0}
        for pid, cpu in seen.items():
            roles[self.last[pid][0]] += cpu
        return roles


def ingest_run(root: Path, code: Path, level: int | None) -> dict:
    """One ``memoryd ingest ROOT --wait --json`` of ``code`` on a fresh home."""
    home = Path(tempfile.mkdtemp(prefix="memoryd-curve-"))
    env = {**os.environ, "MEMORYD_HOME": str(home), "PYTHONPATH": str(code)}
    if level is not None:
        env["MEMORYD_BODY_PACK_LEVEL"] = str(level)
    cmd = [sys.executable, "-m", "memoryd.faces.cli.main", "ingest", str(root), "--wait", "--json"]
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, cwd=code, stdout=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid, home / "authority.db-wal")
    while proc.poll() is None:
        sampler.sample()
        time.sleep(SAMPLE_SECONDS)
    wall = time.time() - t0
    proc.communicate()
    db = apsw.Connection(str(home / "authority.db"))
    searchable, nbytes = db.execute("SELECT finished_at, bytes_done FROM ingest_runs").fetchone()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    home_bytes = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    shutil.rmtree(home, ignore_errors=True)
    total, before = sampler.by_role(), sampler.by_role(searchable)
    cpu = sum(total.values())
    after = cpu - sum(before.values())
    return {
        "code": str(code),
        "level": level,
        "wall_seconds": round(wall, 2),
        "searchable_seconds": round(searchable - t0, 2),
        "cpu_seconds": round(cpu, 2),
        "cpu_by_role": {k: round(v, 2) for k, v in total.items()},
        "cpu_after_searchable": round(after, 2),
        "after_share": round(after / cpu, 3) if cpu else 0.0,
        "wal_peak_mib": round(sampler.wal_peak / MiB, 1),
        "store_ratio": round(home_bytes / nbytes, 3),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def tree_curve(root: Path, levels: list[int], base: Path | None) -> dict:
    files = [(e.path, e.size) for e in scan(root, max_bytes=2 * MiB, excludes=[]).eligible]
    raw = raw_insert(root, files, contentless=False)
    runs = [ingest_run(root, base, None)] if base else []
    runs += [ingest_run(root, ROOT, level) for level in levels]
    return {
        "root": str(root),
        "source_bytes": sum(size for _, size in files),
        "raw": {"seconds": round(raw["seconds"], 2), "cpu_seconds": round(raw["cpu_seconds"], 2)},
        "runs": runs,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, action="append", required=True)
    ap.add_argument("--levels", default="3,6,9,12,19", help="body_pack_level values")
    ap.add_argument("--base", type=Path, help="also run this checkout's code (its default)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x]
    results = [tree_curve(r.resolve(), levels, args.base) for r in args.root]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for tree in results:
        print(f"{tree['root']}: {tree['source_bytes'] / 1e6:.1f} MB; raw FTS5 "
              f"{tree['raw']['seconds']} s, {tree['raw']['cpu_seconds']} CPU s")  # fmt: skip
        for r in tree["runs"]:
            roles = " / ".join(f"{v:.1f}" for v in r["cpu_by_role"].values())
            print(f"  {r['code']} level {r['level'] if r['level'] is not None else 'default'}:"
                  f" {r['cpu_seconds']} CPU s ({roles}), after searchable"
                  f" {r['cpu_after_searchable']} ({r['after_share']:.0%}), WAL"
                  f" {r['wal_peak_mib']} MiB, home {r['store_ratio']}x, wall"
                  f" {r['wall_seconds']} s (load {r['load_avg_1m']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
