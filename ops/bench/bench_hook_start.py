"""Process start to exit of ``memoryd hook EVENT``, against Python's own start.

Runs each command N times (after two warm-up runs) and prints p50/p95/p99 wall
milliseconds and the children's CPU per run. A home is made with one archived
session so UserPromptSubmit recalls through a running supervisor's socket. Run it with
the checkout first on ``PYTHONPATH``: the installed command's rows run that checkout.

    PYTHONPATH=. python ops/bench/bench_hook_start.py --runs 200
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
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
