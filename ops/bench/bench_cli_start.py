"""Process start to exit of the plain CLI's ``status`` and ``search``, per checkout.

For each ``--tree`` (a checkout; the first is the baseline) runs ``python -m
memoryd.faces.cli.main`` with that tree first on ``PYTHONPATH``, N times after two
warm-up runs, and prints p50/p95 wall milliseconds and the children's CPU per run,
beside Python's own start. The home holds one small ingested project; ``search``
runs without a supervisor (embedded) and with one running (routed over its socket).

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


def timed(cmd: list[str], env: dict, runs: int) -> dict:
    """p50/p95 wall ms and mean CPU ms of ``runs`` runs (after two warm-up runs), each
    process's own CPU (``wait4``), not whatever else this process reaped meanwhile."""
    walls, cpus = [], []
    for i in range(runs + 2):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd=CWD)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd} exited {proc.returncode}")
        if i >= 2:
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((ru.ru_utime + ru.ru_stime) * 1000)
    walls.sort()

    def pick(q: float) -> float:
        return walls[min(len(walls) - 1, int(q * len(walls)))]

    return {"p50": pick(0.5), "p95": pick(0.95), "cpu_ms": sum(cpus) / len(cpus)}


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
    cli = [PY, "-m", "memoryd.faces.cli.main"]
    for args in (["init"], ["ingest", str(proj), "--project", "demo"], ["run", "--drain"]):
        subprocess.run([*cli, *args], env=env, check=True, capture_output=True, cwd=CWD)
    return home


def rows(tree: Path, home: Path, runs: int) -> dict[str, dict]:
    env = tree_env(tree, home)
    cli = [PY, "-m", "memoryd.faces.cli.main"]
    out = {
        "status": timed([*cli, "status"], env, runs),
        "search (no supervisor)": timed([*cli, "search", QUERY, "--project", "demo"], env, runs),
    }
    sup = subprocess.Popen([*cli, "run", "--workers", "1"], env=env, cwd=CWD,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while not (home / "memoryd.sock").exists():
            time.sleep(0.1)
        time.sleep(1)
        out["status (supervisor running)"] = timed([*cli, "status"], env, runs)
        out["search (supervisor running)"] = timed(
            [*cli, "search", QUERY, "--project", "demo"], env, runs
        )
    finally:
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
    py = {"python -c pass": timed([PY, "-c", "pass"], os.environ.copy(), args.runs)}
    results = {str(t): rows(t, homes[t], args.runs) for t in trees}
    for name, r in py.items():
        print(f"{name:<44} p50 {r['p50']:6.1f}  p95 {r['p95']:6.1f} ms  cpu {r['cpu_ms']:6.1f} ms")
    base = results[str(trees[0])]
    for tree, res in results.items():
        print(f"\n{tree}")
        for name, r in res.items():
            ratio = r["cpu_ms"] / base[name]["cpu_ms"]
            print(f"  {name:<42} p50 {r['p50']:6.1f}  p95 {r['p95']:6.1f} ms  "
                  f"cpu {r['cpu_ms']:6.1f} ms  (cpu x{ratio:.2f} of base)")  # fmt: skip


if __name__ == "__main__":
    main()
