"""CPU of a restart: ``memoryd mcp`` from spawn to its first answered ``recall``, and
``memoryd run --workers 2`` from spawn to its first claimed job, per checkout.

For each ``--tree`` (a checkout; the first is the baseline) each round starts, in
turn (trees take turns round by round: a shared machine's drifting speed slows
every tree alike):

* ``mcp``: ``python -m memoryd.faces.cli.main mcp`` on a home with an ingested
  project and an archive, beside a running supervisor (as in the clients drill),
  driven over raw JSON-RPC lines: the process's CPU (user + system, all threads,
  from /proc) when the ``initialize`` answer arrives, when the first ``recall``'s
  answer arrives, and once it is idle (no CPU for ``IDLE_SECONDS``: what its start
  left running in the background, a preload, is done);
* ``supervisor``: ``python -m memoryd.faces.cli.main run --workers 2`` on a home
  holding one queued job: the CPU of the supervisor and its workers when the job is
  first claimed, and once idle.

Wall times are printed too but are the machine's: the CPU is the figure.

    python ops/bench/bench_mcp_start.py --runs 8 --tree /work/main --tree .
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw
import orjson
import psutil

PY = sys.executable
CLI = [PY, "-m", "memoryd.faces.cli.main"]
CWD = tempfile.gettempdir()  # ``python -m`` puts its cwd first on the path: not a checkout
PROJECT = "demo"
QUERY = "which port does the staging database listen on?"
IDLE_SECONDS = 1.0  # no CPU for this long: the start's background work is done
IDLE_MAX_SECONDS = 20.0
POLL_SECONDS = 0.05
TIMEOUT = 120.0


def tree_env(tree: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return env | {"PYTHONPATH": str(tree.resolve()), "MEMORYD_HOME": str(home)}


def cli(env: dict, *args: str, data: bytes | None = None) -> None:
    subprocess.run([*CLI, *args], env=env, input=data, check=True, capture_output=True, cwd=CWD)


def make_home(tmp: Path, tree: Path) -> Path:
    """An ingested one-file project and one archived session (each tree its own home)."""
    home, proj = tmp / "home", tmp / "proj"
    proj.mkdir(parents=True)
    (proj / "README.md").write_text("# Staging\n\nThe staging database listens on port 6543.\n")
    env = tree_env(tree, home)
    cli(env, "init")
    cli(env, "ingest", str(proj), "--project", PROJECT)
    line = orjson.dumps({"role": "user", "content": "staging db port", "timestamp": time.time()})
    cli(env, "archive", "add", "-", "--project", PROJECT, "--session", "s1", data=line)
    cli(env, "run", "--drain")
    return home


def cpu(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) of the processes still there."""
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def idle_cpu(pids_of: callable) -> float:
    """CPU once the processes stopped using any for ``IDLE_SECONDS``."""
    last, still = cpu(pids_of()), time.monotonic()
    deadline = time.monotonic() + IDLE_MAX_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        now = cpu(pids_of())
        if now != last:
            last, still = now, time.monotonic()
        elif time.monotonic() - still >= IDLE_SECONDS:
            break
    return last


class Rpc:
    """Raw JSON-RPC lines to one ``memoryd mcp``."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.buffer, self.next_id = proc, b"", 0

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                answer = orjson.loads(line)
                if answer.get("id") == self.next_id:
                    return answer
            if select.select([self.proc.stdout], [], [], 0.5)[0]:
                chunk = self.proc.stdout.read1(65536)
                if not chunk:
                    raise RuntimeError(f"mcp ended before answering {method}")
                self.buffer += chunk
        raise RuntimeError(f"{method} unanswered")


def mcp_once(env: dict) -> dict:
    """One server's start: CPU and wall at its handshake, first recall, and idle."""
    t0 = time.monotonic()
    proc = subprocess.Popen([*CLI, "mcp"], env=env, cwd=CWD, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    rpc = Rpc(proc)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "bench", "version": "1"}}  # fmt: skip
    rpc.request("initialize", hello)
    out = {"handshake": (cpu([proc.pid]), time.monotonic() - t0)}
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    answer = rpc.request("tools/call", {"name": "recall", "arguments": {"query": QUERY}})
    if answer.get("error") or answer["result"].get("isError"):
        raise RuntimeError(f"recall failed: {answer}")
    out["recall"] = (cpu([proc.pid]), time.monotonic() - t0)
    out["idle"] = (idle_cpu(lambda: [proc.pid]), time.monotonic() - t0)
    proc.stdin.close()
    proc.wait(60)
    proc.stdout.close()
    return out


def supervisor_once(env: dict, home: Path) -> dict:
    """One supervisor's start on a home holding one queued job: CPU (itself and its
    workers) and wall when the job is first claimed, and once idle."""
    cli(env, "jobs", "add", "noop")
    t0 = time.monotonic()
    proc = subprocess.Popen([*CLI, "run", "--workers", "2"], env=env, cwd=CWD,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    ps = psutil.Process(proc.pid)

    def pids() -> list[int]:
        try:
            return [proc.pid, *(c.pid for c in ps.children(recursive=True))]
        except psutil.NoSuchProcess:
            return [proc.pid]

    seen: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    while not claimed(home) and time.monotonic() < deadline:
        seen.update(pids())
        time.sleep(POLL_SECONDS)
    seen.update(pids())
    out = {"claimed": (cpu(sorted(seen)), time.monotonic() - t0)}
    out["idle"] = (idle_cpu(lambda: sorted(seen | set(pids()))), time.monotonic() - t0)
    proc.terminate()
    proc.wait(60)
    return out


def claimed(home: Path) -> bool:
    """Whether no job is queued any more (the one added was claimed)."""
    conn = apsw.Connection(str(home / "authority.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.set_busy_timeout(1000)
        return conn.execute("SELECT count(*) FROM jobs WHERE state = 'queued'").fetchone()[0] == 0
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--tree", action="append", type=Path, help="a checkout (repeat; first: base)")
    args = ap.parse_args()
    trees = args.tree or [Path(__file__).resolve().parents[2]]
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-start-"))
    homes = {t: make_home(tmp / f"tree{i}", t) for i, t in enumerate(trees)}
    envs = {t: tree_env(t, h) for t, h in homes.items()}
    got: dict[Path, dict[str, list]] = {t: {} for t in trees}
    sups = {t: subprocess.Popen([*CLI, "run", "--workers", "2"], env=envs[t], cwd=CWD,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for t in trees}  # fmt: skip
    try:
        for home in homes.values():
            while not (home / "memoryd.sock").exists():
                time.sleep(0.1)
        for i in range(args.runs + 1):
            for t in trees:
                for k, v in mcp_once(envs[t]).items():
                    if i:  # the first round warms the caches
                        got[t].setdefault(f"mcp {k}", []).append(v)
    finally:
        for sup in sups.values():
            sup.terminate()
            sup.wait(60)
    for i in range(args.runs + 1):
        for t in trees:
            for k, v in supervisor_once(envs[t], homes[t]).items():
                if i:
                    got[t].setdefault(f"supervisor {k}", []).append(v)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min) at the end; median of {args.runs}")
    for t in trees:
        print(f"\n{t}")
        for name, values in got[t].items():
            c = statistics.median(v[0] for v in values) * 1000
            w = statistics.median(v[1] for v in values) * 1000
            base = statistics.median(v[0] for v in got[trees[0]][name]) * 1000
            print(f"  {name:<22} cpu {c:7.0f} ms (x{c / base:.2f} of base)  wall {w:7.0f} ms")


if __name__ == "__main__":
    main()
