"""Process start to exit of the plain CLI's ``status`` and ``search``, per checkout.

For each ``--tree`` (a checkout; the first is the baseline) runs ``python -m
memoryd.faces.cli.main`` with that tree first on ``PYTHONPATH``, N times after two
warm-up runs, and prints p50/p95 wall milliseconds and the children's CPU per run,
beside Python's own start. The trees take turns run by run (a shared machine whose
speed drifts during the bench slows every tree alike). Each tree's home holds one
small ingested project; ``search`` runs without a supervisor (embedded) and with
one running (each tree's own, routed over its socket).

    python ops/bench/bench_cli_start.py --runs 20 --tree /work/main --tree .
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
QUERY = "which port does the staging database listen on?"
#: Every command runs here: ``python -m`` puts its working directory first on the
#: path, and a checkout there would be imported instead of ``--tree``'s.
CWD = tempfile.gettempdir()
CLI = [PY, "-m", "memoryd.faces.cli.main"]
COMMANDS = {"status": ["status"], "search": ["search", QUERY, "--project", "demo"]}


def run_once(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU ms of one run: the process's own CPU (``wait4``), not whatever else
    this process reaped meanwhile."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd=CWD)
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd} exited {os.waitstatus_to_exitcode(status)}")
    return (time.perf_counter() - t) * 1000, (ru.ru_utime + ru.ru_stime) * 1000


def summary(walls: list[float], cpus: list[float]) -> dict:
    """p50/p95 wall ms and mean CPU ms."""
    walls = sorted(walls)

    def pick(q: float) -> float:
        return walls[min(len(walls) - 1, int(q * len(walls)))]

    return {"p50": pick(0.5), "p95": pick(0.95), "cpu_ms": sum(cpus) / len(cpus)}


def timed(cmds: dict[Path, tuple[list[str], dict]], runs: int) -> dict[Path, dict]:
    """Each tree's command (with its env) run ``runs`` times after two warm-up runs,
    the trees taking turns run by run: its :func:`summary` per tree."""
    got: dict[Path, tuple[list, list]] = {tree: ([], []) for tree in cmds}
    for i in range(runs + 2):
        for tree, (cmd, env) in cmds.items():
            wall, cpu = run_once(cmd, env)
            if i >= 2:
                got[tree][0].append(wall)
                got[tree][1].append(cpu)
    return {tree: summary(walls, cpus) for tree, (walls, cpus) in got.items()}


def tree_env(tree: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return env | {"PYTHONPATH": str(tree.resolve()), "MEMORYD_HOME": str(home)}


def make_home(tmp: Path, tree: Path) -> Path:
    """A home with one project of one file, ingested by ``tree`` (each tree its own
    home: an older checkout refuses a newer schema)."""
    home, proj = tmp / "home", tmp / "proj"
    proj.mkdir(parents=True)
    (proj / "README.md").write_text(
        "# Staging\n\nThe staging database listens on port 6543.\nThe cache evicts LRU.\n"
    )
    env = tree_env(tree, home)
    for args in (["init"], ["ingest", str(proj), "--project", "demo"], ["run", "--drain"]):
        subprocess.run([*CLI, *args], env=env, check=True, capture_output=True, cwd=CWD)
    return home


def rows(homes: dict[Path, Path], runs: int) -> dict[str, dict[Path, dict]]:
    """Each command's figures per tree: without a supervisor, then with each tree's
    own running on its home."""
    envs = {tree: tree_env(tree, home) for tree, home in homes.items()}

    def each(args: list[str]) -> dict[Path, dict]:
        return timed({tree: ([*CLI, *args], env) for tree, env in envs.items()}, runs)

    out = {
        "status": each(COMMANDS["status"]),
        "search (no supervisor)": each(COMMANDS["search"]),
    }
    sups = [subprocess.Popen([*CLI, "run", "--workers", "1"], env=env, cwd=CWD,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for env in envs.values()]  # fmt: skip
    try:
        for home in homes.values():
            while not (home / "memoryd.sock").exists():
                time.sleep(0.1)
        time.sleep(1)
        out["status (supervisor running)"] = each(COMMANDS["status"])
        out["search (supervisor running)"] = each(COMMANDS["search"])
    finally:
        for sup in sups:
            sup.terminate()
            sup.wait(60)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--tree", action="append", type=Path, help="a checkout (repeat; first: base)")
    args = ap.parse_args()
    trees = args.tree or [Path(__file__).resolve().parents[2]]
    tmp = Path(tempfile.mkdtemp())
    homes = {t: make_home(tmp / f"tree{i}", t) for i, t in enumerate(trees)}
    py = timed({trees[0]: ([PY, "-c", "pass"], os.environ.copy())}, args.runs)[trees[0]]
    results = rows(homes, args.runs)
    print(f"{'python -c pass':<44} p50 {py['p50']:6.1f}  p95 {py['p95']:6.1f} ms  "
          f"cpu {py['cpu_ms']:6.1f} ms")  # fmt: skip
    for tree in trees:
        print(f"\n{tree}")
        for name, per_tree in results.items():
            r, ratio = per_tree[tree], per_tree[tree]["cpu_ms"] / per_tree[trees[0]]["cpu_ms"]
            print(f"  {name:<42} p50 {r['p50']:6.1f}  p95 {r['p95']:6.1f} ms  "
                  f"cpu {r['cpu_ms']:6.1f} ms  (cpu x{ratio:.2f} of base)")  # fmt: skip


if __name__ == "__main__":
    main()
