"""Process start to exit of ``memoryd hook EVENT``, against Python's own start.

Runs each command N times (after two warm-up runs) and prints p50/p95/p99 wall
milliseconds and the children's CPU per run. A home is made with one archived
session so UserPromptSubmit recalls through a running supervisor's socket. Run it with
the checkout first on ``PYTHONPATH``: the installed command's rows run that checkout.

    PYTHONPATH=. python ops/bench/bench_hook_start.py --runs 200

``--against ROOT`` (a directory holding another checkout's ``memoryd`` package, its
bytecode compiled) instead times the installed PostToolUse command of this checkout
and of ROOT's, and ``python -I -S -c pass``, interleaved run by run in a shuffled
order (a loaded machine's noise falls on all three alike), each into its own home,
and prints each one's p50/p95/p99 and this checkout's over ROOT's.

    PYTHONPATH=. python ops/bench/bench_hook_start.py --runs 300 --against /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from memoryd.base import hooklog, hookspool
from memoryd.faces.hooks.install import command

PY = sys.executable
MEMORYD = str(Path(PY).with_name("memoryd"))


def timed(cmd: list[str], data: bytes, env: dict, runs: int) -> dict:
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for i in range(runs + 2):
        t = time.perf_counter()
        subprocess.run(cmd, input=data, env=env, stdout=subprocess.DEVNULL, check=True)
        if i >= 2:
            walls.append((time.perf_counter() - t) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / (runs + 2)
    walls.sort()
    pick = lambda q: walls[min(len(walls) - 1, int(q * len(walls)))]  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "cpu_ms": cpu * 1000}


def boot(root: str, home: Path, event: str = "PostToolUse") -> list[str]:
    """The command ``hooks install`` writes, for the package under ``root``."""
    argv = shlex.split(command(event, "claude-code", str(home)))
    code = f"import sys; sys.path.insert(0, {json.dumps(root)}); "
    argv[4] = code + argv[4].split("; ", 2)[2]
    return argv


def against(base: str, runs: int, seed: int = 1) -> None:
    """This checkout's installed PostToolUse command against ``base``'s, interleaved."""
    tmp = Path(tempfile.mkdtemp())
    here = str(Path(__file__).resolve().parents[2])
    tool = orjson.dumps({"session_id": "b", "cwd": str(tmp), "tool_name": "Bash",
                         "tool_input": {"command": "ls"},
                         "tool_response": {"stdout": "x" * 2000}})  # fmt: skip
    rows = {
        "python -I -S -c pass": ([PY, "-I", "-S", "-c", "pass"], b""),
        f"PostToolUse installed, {base}": (boot(base, tmp / "base"), tool),
        "PostToolUse installed, this checkout": (boot(here, tmp / "here"), tool),
    }
    walls: dict[str, list[float]] = {name: [] for name in rows}
    cpus: dict[str, float] = dict.fromkeys(rows, 0.0)
    rng = random.Random(seed)
    order = list(rows)
    for i in range(runs + 2):
        rng.shuffle(order)
        for name in order:
            cmd, data = rows[name]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, input=data, stdout=subprocess.DEVNULL, check=True)
            wall = (time.perf_counter() - t) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i >= 2:
                walls[name].append(wall)
                cpus[name] += (after.ru_utime + after.ru_stime - before.ru_utime
                               - before.ru_stime) * 1000 / runs  # fmt: skip
    for home in ("base", "here"):  # a hook exits 0 whatever happens: each kept every event
        kept = hooklog.waiting_events(str(tmp / home))
        assert kept == runs + 2 and not hookspool.read_failures(str(tmp / home)), (home, kept)
    stats = {}
    for name, w in walls.items():
        w.sort()
        stats[name] = [w[min(len(w) - 1, int(q * len(w)))] for q in (0.5, 0.95, 0.99)]
        p50, p95, p99 = stats[name]
        print(f"{name:<60} p50 {p50:6.2f}  p95 {p95:6.2f}  p99 {p99:6.2f} ms"
              f"  cpu {cpus[name]:6.2f} ms")  # fmt: skip
    new = stats["PostToolUse installed, this checkout"]
    old = stats[f"PostToolUse installed, {base}"]
    bare = stats["python -I -S -c pass"]
    ratios = zip(("p50", "p95", "p99"), new, old, strict=True)
    print("this / base:       " + "  ".join(f"{q} {n / o:.3f}" for q, n, o in ratios))
    print(
        "over bare python:  this "
        + " / ".join(f"{n - b:+.2f}" for n, b in zip(new, bare, strict=True))
        + " ms, base "
        + " / ".join(f"{o - b:+.2f}" for o, b in zip(old, bare, strict=True))
        + " ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--against", metavar="ROOT", help="time against another checkout's hook")
    args = ap.parse_args()
    if args.against:
        against(args.against, args.runs)
        return
    tmp = Path(tempfile.mkdtemp())
    home, proj = tmp / "home", tmp / "proj"
    proj.mkdir()
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    subprocess.run([MEMORYD, "init"], env=env, check=True, stdout=subprocess.DEVNULL)
    tool = orjson.dumps(
        {
            "session_id": "b",
            "cwd": str(proj),
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "x" * 2000},
        }
    )
    prompt = orjson.dumps(
        {
            "session_id": "b",
            "cwd": str(proj),
            "prompt": "which port does the staging database listen on?",
        }
    )
    rows = {
        "python -c pass": ([PY, "-c", "pass"], b""),
        "python -I -S -c pass": ([PY, "-I", "-S", "-c", "pass"], b""),
        "python -c 'import orjson'": ([PY, "-c", "import orjson"], b""),
        "memoryd hook PostToolUse": ([MEMORYD, "hook", "PostToolUse"], tool),
        "PostToolUse, the command `hooks install` writes (-I -S)": (
            shlex.split(command("PostToolUse", "claude-code", str(home))),
            tool,
        ),
        "python -m memoryd.faces.hooks PostToolUse": (
            [PY, "-m", "memoryd.faces.hooks", "PostToolUse"],
            tool,
        ),
        "memoryd hook UserPromptSubmit (no supervisor: embedded recall)": (
            [MEMORYD, "hook", "UserPromptSubmit"],
            prompt,
        ),
    }
    out = {}
    for name, (cmd, data) in rows.items():
        out[name] = timed(cmd, data, env, args.runs if "embedded" not in name else 10)
    sup = subprocess.Popen(
        [MEMORYD, "run", "--workers", "1"],
        env=env,
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        while not (home / "memoryd.sock").exists():
            time.sleep(0.1)
        time.sleep(1)
        out["memoryd hook UserPromptSubmit (supervisor socket)"] = timed(
            [MEMORYD, "hook", "UserPromptSubmit"], prompt, env, args.runs
        )
        out["UserPromptSubmit, installed command (supervisor socket)"] = timed(
            shlex.split(command("UserPromptSubmit", "claude-code", str(home))),
            prompt,
            env,
            args.runs,
        )
        out["memoryd hook PostToolUse (supervisor running)"] = timed(
            [MEMORYD, "hook", "PostToolUse"], tool, env, args.runs
        )
    finally:
        sup.terminate()
        sup.wait(60)
    for name, r in out.items():
        print(
            f"{name:<68} p50 {r['p50']:6.1f}  p95 {r['p95']:6.1f}  p99 {r['p99']:6.1f} ms"
            f"  cpu {r['cpu_ms']:6.1f} ms"
        )


if __name__ == "__main__":
    main()
