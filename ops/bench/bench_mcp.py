"""Recall through MCP against recall in-process, and lease heartbeats over the control
socket.

Corpus: the running interpreter's standard library ingested as project
``stdlib`` (``memoryd ingest ROOT --wait``), plus one archived conversation per
query module (its docstring's first line said by the user, a short assistant
reply), so recall searches both project memory and the archive. Queries: the
modules' first docstring lines (``bench_longmemeval.docstring_queries``).

Measured, each after one warm-up pass and once the writes it implied are done
(:func:`settle`):

* ``recall`` in-process: :func:`memoryd.operations.recall.recall` (embedded: no supervisor);
* ``recall`` through MCP: ``memoryd mcp --project stdlib`` as a subprocess,
  driven by the MCP SDK's stdio client (``call_tool``), embedded;
* ``recall`` from this process over the control socket of a running supervisor
  (the in-process baseline of the next row);
* the same through MCP while a supervisor runs (the MCP server then asks the
  supervisor's control socket);
* a lease heartbeat (``archive lease renew``) over the control socket;
* the SDK's floor: a server of the same SDK whose one tool does nothing,
  called the same way (what MCP itself costs a call on this machine).

Rows served by other processes also give the CPU those processes (the supervisor,
the MCP server) spent per call during the measured pass (``server_cpu_ms_per_call``,
from /proc): the machine's load moves it less than wall times (a loaded machine still
inflates it: caches and cores shared).

    .venv/bin/python ops/bench/bench_mcp.py [--queries N] [--beats N] [--json] [--home DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import anyio
import orjson
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_longmemeval import docstring_queries  # noqa: E402

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.control_client import request, socket_path  # noqa: E402
from memoryd.operations.recall import recall  # noqa: E402

PROJECT = "stdlib"
MEMORYD = [sys.executable, "-m", "memoryd.faces.cli.main"]


def env(home: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return {**e, "MEMORYD_HOME": str(home), "PYTHONPATH": str(ROOT)}


def cli(home: Path, *args: str) -> None:
    subprocess.run([*MEMORYD, *args], env=env(home), check=True, capture_output=True)


def prepare(home: Path, queries: list[str]) -> None:
    stdlib = sysconfig.get_paths()["stdlib"]
    cli(home, "ingest", stdlib, "--project", PROJECT, "--wait", "--workers", "2")
    created = time.time() - 86400
    for i, text in enumerate(queries):
        path = home.parent / f"session{i}.jsonl"
        lines = [
            {"role": "user", "content": f"Where is this handled: {text}", "timestamp": created},
            {"role": "assistant", "content": "In the module whose docstring says so."},
        ]
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        cli(
            home,
            "archive",
            "add",
            str(path),
            "--project",
            PROJECT,
            "--new-project",
            "--session",
            f"s{i}",
        )


def ms(seconds: list[float], served_cpu: float | None = None) -> dict[str, float]:
    """p50/p95 of a series; with ``served_cpu`` (seconds), that CPU per call too."""
    q = statistics.quantiles(seconds, n=20)
    out = {"p50_ms": round(statistics.median(seconds) * 1000, 2), "p95_ms": round(q[-1] * 1000, 2)}
    if served_cpu is not None:
        out["server_cpu_ms_per_call"] = round(served_cpu / len(seconds) * 1000, 2)
    return out


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's child processes (the
    supervisor, the MCP server): what serving the calls cost, apart from the time they
    wait for a CPU."""
    me, tick, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == me:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def settle(home: Path) -> None:
    """Wait until the warm-up's implied writes are done: the access records and retrieval
    leases a supervisor's control socket queues (at most one flush period later), and
    the first of them starting the retention worker. The measured pass then sees the
    supervisor at rest, as later passes do, not that one-time start."""
    md = Memoryd(home)
    try:
        time.sleep(2 * md.config.control_write_flush_seconds)
        while md.queue.has_pending():
            time.sleep(0.05)
    finally:
        md.close()


def in_process(home: Path, queries: list[str]) -> dict:
    md = Memoryd(home)
    for q in queries:
        recall(md, q, PROJECT)
    seconds = []
    for q in queries:
        t0 = time.perf_counter()
        recall(md, q, PROJECT)
        seconds.append(time.perf_counter() - t0)
    md.close()
    return ms(seconds)


def over_socket(home: Path, queries: list[str]) -> dict:
    """Recall from this process through the supervisor's control socket (no MCP)."""
    timed = []
    for measure in (False, True):
        if measure:
            settle(home)
        cpu = children_cpu()
        for q in queries:
            t0 = time.perf_counter()
            answer = request(home, "recall", query=q, project=PROJECT, limit=5)
            if measure:
                timed.append(time.perf_counter() - t0)
            assert answer["ok"], answer
    return ms(timed, children_cpu() - cpu)


NOOP_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("noop")
@server.tool(name="recall", description="Does nothing.")
async def recall(query: str) -> dict:
    return {"status": "abstained", "items": []}
server.run("stdio")
"""


def through_mcp(home: Path, queries: list[str], server: list[str] | None = None) -> dict:
    """Recall through ``memoryd mcp`` (or through ``server``: the SDK floor)."""
    args = server or [*MEMORYD[1:], "mcp", "--project", PROJECT]

    async def run() -> list[float]:
        params = StdioServerParameters(command=MEMORYD[0], args=args, env=env(home))
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for q in queries:
                    await session.call_tool("recall", {"query": q})
                settle(home)
                seconds = []
                cpu = children_cpu()
                for q in queries:
                    t0 = time.perf_counter()
                    result = await session.call_tool("recall", {"query": q})
                    seconds.append(time.perf_counter() - t0)
                    assert not result.is_error, result.content[0].text
                return ms(seconds, children_cpu() - cpu)

    return anyio.run(run)


def heartbeats(home: Path, beats: int, query: str) -> dict:
    found = request(home, "archive", op="search", args={"project": PROJECT, "query": query})
    locator = found["result"]["items"][0]["locator"]
    lease = {"action": "acquire", "client": "bench", "project": PROJECT, "locators": [locator]}
    assert request(home, "archive", op="lease", args=lease)["ok"]
    renew = {"action": "renew", "client": "bench"}
    seconds = []
    for measure in (False, True):
        if measure:
            settle(home)  # a warm-up, as the other series: the workers start beside it
        for _ in range(beats):
            t0 = time.perf_counter()
            answer = request(home, "archive", op="lease", args=renew)
            if measure:
                seconds.append(time.perf_counter() - t0)
            assert answer["ok"], answer
    return ms(seconds)


def with_supervisor(home: Path, fn, *args):
    sup = subprocess.Popen([*MEMORYD, "run", "--workers", "1"], env=env(home),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while not socket_path(home).exists():
            time.sleep(0.05)
        return fn(*args)
    finally:
        sup.terminate()
        sup.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--beats", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--home", type=Path, help="a home prepared by an earlier run: kept, reused")
    args = ap.parse_args()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    queries = docstring_queries(sorted(stdlib.glob("*.py")), args.queries)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        home = args.home or Path(tmp) / "home"
        if not (home / "authority.db").exists():
            prepare(home, queries)
        report = {"queries": len(queries), "recall_in_process": in_process(home, queries)}
        report["recall_mcp_embedded"] = through_mcp(home, queries)
        report["recall_socket"] = with_supervisor(home, over_socket, home, queries)
        report["recall_mcp_supervisor"] = with_supervisor(home, through_mcp, home, queries)
        report["heartbeat_socket"] = with_supervisor(home, heartbeats, home, args.beats, queries[0])
        report["mcp_sdk_floor"] = through_mcp(home, queries, ["-c", NOOP_SERVER])
    base = report["recall_in_process"]["p95_ms"]
    report["ratio_p95_mcp_embedded"] = round(report["recall_mcp_embedded"]["p95_ms"] / base, 2)
    sock = report["recall_socket"]["p95_ms"]
    report["ratio_p95_mcp_supervisor"] = round(report["recall_mcp_supervisor"]["p95_ms"] / sock, 2)
    report["load_average"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2) if args.json else _text(report))


def _text(r: dict) -> str:
    rows = [f"{r['queries']} recall queries on the stdlib project"]
    for key in ("recall_in_process", "recall_mcp_embedded", "recall_socket",
                "recall_mcp_supervisor", "heartbeat_socket", "mcp_sdk_floor"):  # fmt: skip
        cpu = r[key].get("server_cpu_ms_per_call")
        served = "" if cpu is None else f"   serving CPU {cpu:6.2f} ms/call"
        p50, p95 = r[key]["p50_ms"], r[key]["p95_ms"]
        rows.append(f"{key:24} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms{served}")
    rows.append(f"p95 ratio through MCP: embedded, to in-process {r['ratio_p95_mcp_embedded']}x; "
                f"with a supervisor, to the socket {r['ratio_p95_mcp_supervisor']}x")  # fmt: skip
    rows.append(f"load average (1 min) at the end: {r['load_average']:.2f}")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
