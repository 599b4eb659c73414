"""Consolidation's commit size: one group commit per run (today) against a commit
per candidate or per small fixed batch, on the same staged candidates.

``memory_run_candidates`` bounds how many candidates one ``memory.consolidate`` job
decides; its apply commits them together (a savepoint each) in the supervisor's
group commit. At 1 every candidate is its own job and its own commit: the seed's
per-candidate commit. The workload is bench_memory's (seeded made-up lessons,
duplicates and near duplicates; no real text). Each configuration stages the same
candidates in a fresh home (``memory add``), then one draining supervisor with two
workers consolidates them; reported: wall and CPU seconds of the drain (this
process and its reaped workers), candidates per second of each, and the jobs and
commits it took (rounds alternate the configurations).

    .venv/bin/python ops/bench/bench_consolidate_commit.py [--candidates N] [--rounds N]
        [--sizes 1024,16,1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

from bench_memory import PROJECT, workload  # noqa: E402

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.memory import Memory  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.storage import records  # noqa: E402


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def one(base: Path, items: list[tuple[str, bool]], size: int) -> dict:
    """Stage ``items`` in a fresh home and drain them with runs of ``size`` candidates."""
    repo = base / "repo"
    repo.mkdir()
    (repo / "README").write_text("bench\n")
    md = Memoryd(base / "home", {"workers": 2, "memory_run_candidates": size})
    Projects(md).ingest(repo, PROJECT, wait=True, workers=1)
    data = b"".join(orjson.dumps({"kind": "lesson", "text": t}) + b"\n" for t, _ in items)
    ids = Memory(md).add(data, PROJECT)["candidates"]
    t0, c0 = time.perf_counter(), _cpu()
    md.run(workers=2, drain=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    states = records.candidate_states(md.db.conn, ids)
    jobs = md.db.query("SELECT count(*) FROM jobs WHERE kind = 'memory.consolidate'")[0][0]
    md.close()
    return {
        "size": size,
        "candidates": len(ids),
        "consumed": sum(s.get("state") == "consumed" for s in states.values()),
        "jobs": jobs,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "per_wall_s": round(len(ids) / wall, 1),
        "per_cpu_s": round(len(ids) / cpu, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidates", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sizes", default="1024,16,1", help="memory_run_candidates compared")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    items = workload(args.candidates)
    runs: dict[int, list[dict]] = {s: [] for s in sizes}
    load = [round(os.getloadavg()[0], 2)]
    for _ in range(args.rounds):
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="memoryd-commit-") as tmp:
                runs[size].append(one(Path(tmp), items, size))
    load.append(round(os.getloadavg()[0], 2))
    base = sizes[0]
    report = {"load_1m": load, "candidates": args.candidates, "runs": runs, "median": {}}
    for size, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        cpu = statistics.median(r["cpu_s"] for r in rs)
        report["median"][size] = {"wall_s": wall, "cpu_s": cpu, "jobs": rs[0]["jobs"],
                                  "consumed": rs[0]["consumed"]}  # fmt: skip
    for m in report["median"].values():
        m["wall_x"] = round(m["wall_s"] / report["median"][base]["wall_s"], 2)
        m["cpu_x"] = round(m["cpu_s"] / report["median"][base]["cpu_s"], 2)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"load {load[0]} -> {load[1]}; {args.candidates} candidates, {args.rounds} rounds")
    for size, m in report["median"].items():
        print(f"run of {size:>5}: {m['jobs']:>5} jobs, wall {m['wall_s']} s ({m['wall_x']}x),"
              f" CPU {m['cpu_s']} s ({m['cpu_x']}x), {m['consumed']} consumed")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
