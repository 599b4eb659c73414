"""The clients scenario: many faces on one home at once, while processes die at random.

``memoryd drill --scenario clients`` starts a supervisor and, for a duration:
``mcp`` MCP servers (``memoryd mcp``), each driven over raw JSON-RPC lines by
a client thread here issuing ``remember``, ``archive_add`` and ``recall``
and pausing between two calls as an agent thinks (``THINK``, ``--think``);
``writers`` CLI writers running ``memory add`` and ``archive add`` in turn, a few
seconds apart (``WRITER_PAUSE``); and
``readers`` processes that keep taking and holding read snapshots of the
authority (they pin its WAL). A killer SIGKILLs, at random moments, an MCP
server or a CLI writer (its client starts a new one), a job worker, or the
supervisor (the drill starts a new one at once; an MCP server's ``remember``
may start a draining one first): each kind once in every block of kills, in a
seeded order.

The oracle stays in this process, outside the home: the candidate ids and
texts of every acknowledged ``remember``/``memory add`` and the locators of
every acknowledged ``archive_add``/``archive add``. Each attempt uses fresh
text and a fresh session, so an unanswered attempt that was applied is never
confused with an acknowledged one. After a drain, every acknowledged request
must be applied exactly once: each candidate decided into one record seen
once, each locator one live version.

Figures: the WAL's peak size (sampled), recall latency (p50/p95, all and
outside kills: a recall overlapping the ``KILL_SETTLE`` seconds after any kill
is left out, and so is one answered with its session's own remembered
candidates still pending, after the server waited for them), and the longest
time without any answer after a supervisor kill; failed calls are counted by
error code. Kills start once every MCP server has answered its handshake.
Bounds are reported beside the figures (``bounds``); a missed bound is a
finding of the run, not a violation of the crash contract (``ok``).
"""

from __future__ import annotations

import contextlib
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psutil

from memoryd.archive.owner import ArchiveOwner
from memoryd.base.config import SUPERVISOR_STATE_FILE, load_config
from memoryd.base.locks import running_supervisor
from memoryd.faces.drill.procs import Started, child_env, signal_pid
from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects
from memoryd.storage import open_authority
from memoryd.storage import records as records_store
from memoryd.storage.archive import LocatorNotFound
from memoryd.storage.archive.records import parse_locator
from memoryd.storage.maintenance import integrity_check

PROJECT = "drill-clients"
MCP_CLIENTS = 16
CLI_WRITERS = 2
SNAPSHOT_READERS = 8
DURATION = 600.0  # seconds
KILL_EVERY = (2.0, 8.0)  # seconds between two kills, drawn uniformly
# An agent thinks between two calls of its MCP client (a model's turn: seconds), and a
# person or script runs a CLI write now and then: drawn uniformly, in seconds.
THINK = (0.5, 2.0)
WRITER_PAUSE = (2.0, 6.0)
CALL_WEIGHTS = {"recall": 5, "remember": 2, "archive_add": 1}  # an MCP client's mix
READER_HOLD = (0.2, 2.0)  # a reader's snapshot is held this long, then taken again
KILL_SETTLE = 2.0  # a recall overlapping this long after a kill is not "outside kills"
GAP_WINDOW = 10.0  # after a supervisor kill, the longest silence is looked for this long
REQUEST_TIMEOUT = 120.0  # an unanswered request past this is a violation
SAMPLE_SECONDS = 0.1  # WAL size sampling period
WAL_PEAK_BOUND = 32 * 1024 * 1024
RECALL_P95_BOUND = 0.025  # seconds
SUPERVISOR_GAP_BOUND = 2.0  # seconds
WORDS_PER_TEXT = 8
KILL_KINDS = ("mcp", "writer", "worker", "supervisor")
ERROR_CODE = re.compile(r"\b([A-Z][A-Z_]{3,})\b")  # a typed error's code in a tool error
WARMUP_TIMEOUT = 120.0  # seconds: the killer waits at most this long for the servers
VICTIM_POLL = 0.1  # seconds: a kill waits this long for a victim of its kind to exist

_READER = """
import random, sys, time
from pathlib import Path
from memoryd.base.config import load_config
from memoryd.storage import open_authority
home = Path(sys.argv[1])
conn = open_authority(home, load_config(home), readonly=True).conn
conn.set_busy_timeout(5000)
rng = random.Random(int(sys.argv[2]))
lo, hi = float(sys.argv[3]), float(sys.argv[4])
while True:
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM jobs").fetchall()
    time.sleep(rng.uniform(lo, hi))
    conn.execute("COMMIT")
    time.sleep(rng.uniform(0.0, lo))
"""


@dataclass
class Call:
    """One request a face made: what, when, how long, and whether it was answered."""

    tool: str
    sent: float
    took: float | None = None  # None: no answer (its process died, or it timed out)
    ok: bool = False
    waited: bool = False  # a recall answered with its session's own candidates still pending


@dataclass
class Ledger:
    """The drill's record, outside the home. Appends from many threads (list.append and
    dict updates are atomic under the GIL)."""

    candidates: dict[str, str] = field(default_factory=dict)  # acknowledged id -> text
    locators: list[str] = field(default_factory=list)  # acknowledged archive versions
    calls: list[Call] = field(default_factory=list)
    kills: list[tuple[str, float]] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)  # tool errors and refusals, by code
    wal_peak: int = 0
    lost: int = 0  # acknowledged requests not applied (found by the checks)
    doubled: int = 0  # acknowledged requests applied more than once
    violations: list[str] = field(default_factory=list)


class Words:
    """Made-up words (never shortlisted together), from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lock = threading.Lock()

    def text(self) -> str:
        with self.lock:
            return " ".join(f"zq{self.rng.randrange(16**8):08x}" for _ in range(WORDS_PER_TEXT))

    def token(self) -> str:
        with self.lock:
            return f"{self.rng.randrange(16**12):012x}"


class Run:
    """Shared state of one clients run: home, deadline, ledger, the running supervisor."""

    def __init__(
        self, home: Path, scratch: Path, *, seed: int, workers: int, think: tuple[float, float]
    ) -> None:
        self.home = home
        self.think = think  # an MCP client's pause between two calls (min, max seconds)
        self.scratch = scratch  # inputs of the CLI writers, outside the home
        self.rng = random.Random(seed)
        self.words = Words(random.Random(seed + 1))
        self.kill_rng = random.Random(seed + 2)  # the killer's own: its plan is the seed's
        self.workers = workers
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.supervisor: Started | None = None
        self.lock = threading.Lock()  # the supervisor slot and the victims below
        self.mcp: list[McpClient] = []
        self.writers: list[Started | None] = []
        self.ended = 0.0  # when the faces were told to stop (monotonic)
        self.ready = threading.Semaphore(0)  # one release per MCP client's first handshake
        self.killing = threading.Event()  # every MCP server answered: kills and the clock run

    def start(self, *args: str) -> Started:
        return Started(list(args), self.home, {})

    def ensure_supervisor(self) -> None:
        """Start a supervisor when none runs on the home (ours died, or a drain ended)."""
        with self.lock:
            mine = self.supervisor
            if mine is not None and mine.poll() is None:
                return
            if running_supervisor(self.home) is not None:
                return
            if mine is not None:
                mine.close()
            self.supervisor = self.start("run", "--workers", str(self.workers))

    def fail(self, message: str) -> None:
        self.ledger.violations.append(message)

    def note_error(self, code: str) -> None:
        self.ledger.errors[code] += 1


# -- MCP clients -----------------------------------------------------------------------


class McpClient:
    """One ``memoryd mcp`` process and the JSON-RPC conversation with it."""

    def __init__(self, run: Run, n: int) -> None:
        self.run = run
        self.n = n
        self.rng = random.Random(run.rng.randrange(2**32))
        self.proc: subprocess.Popen | None = None
        self.next_id = 0
        self.buffer = b""
        self.starts = 0

    def spawn(self) -> bool:
        """A new server and its initialize handshake; False if it died meanwhile."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd.faces.cli.main", "mcp", "--home", str(self.run.home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env({}),
        )
        self.buffer = b""
        self.starts += 1
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": f"drill-{self.n}", "version": "1"}}  # fmt: skip
        if self.request("initialize", hello) is None:
            return False
        if self.starts == 1:
            self.run.ready.release()
        return self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def send(self, message: dict) -> bool:
        try:
            self.proc.stdin.write(orjson.dumps(message) + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True

    def request(self, method: str, params: dict) -> dict | None:
        """The answer to one request; None when the server died or did not answer."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        if not self.send(message):
            return None
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                with contextlib.suppress(orjson.JSONDecodeError):
                    message = orjson.loads(line)
                    if isinstance(message, dict) and message.get("id") == self.next_id:
                        return message
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                chunk = self.proc.stdout.read1(65536)
                if not chunk:
                    return None
                self.buffer += chunk
            elif self.proc.poll() is not None:
                return None
        self.run.fail(f"mcp client {self.n}: {method} unanswered for {REQUEST_TIMEOUT:g}s")
        self.proc.kill()
        return None

    def call(self, tool: str, arguments: dict) -> tuple[Call, dict | None]:
        """One tools/call, timed and logged; the tool's structured answer when it succeeded."""
        record = Call(tool, time.monotonic())
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        if answer is None:
            self.run.ledger.calls.append(record)
            return record, None
        record.took = time.monotonic() - record.sent
        self.run.ledger.calls.append(record)
        result = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            self.run.note_error(_error_code(answer))
            return record, None
        record.ok = True
        return record, _structured(result)

    def close(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def loop(self) -> None:
        while not self.run.stop.is_set():
            if self.pid is None:
                self.close()
                if not self.spawn():
                    continue
            op = self.rng.choices(list(CALL_WEIGHTS), weights=list(CALL_WEIGHTS.values()))[0]
            getattr(self, op)()
            self.run.stop.wait(self.rng.uniform(*self.run.think))
        self.close()

    def remember(self) -> None:
        texts = [self.run.words.text() for _ in range(self.rng.randint(1, 3))]
        candidates = [{"kind": "lesson", "text": t} for t in texts]
        _, answer = self.call("remember", {"candidates": candidates, "project": PROJECT})
        if answer is not None:
            _acknowledge(self.run, answer, texts)

    def archive_add(self) -> None:
        session = f"mcp-{self.n}-{self.run.words.token()}"
        transcript = _transcript(self.run.words.text())
        args = {"transcript": transcript.decode(), "project": PROJECT, "session": session}
        _, answer = self.call("archive_add", args)
        if answer is not None:
            self.run.ledger.locators.extend(answer["locators"])

    def recall(self) -> None:
        known = list(self.run.ledger.candidates.values())
        text = self.rng.choice(known) if known else self.run.words.text()
        query = " ".join(self.rng.sample(text.split(), k=3))
        record, answer = self.call("recall", {"query": query, "project": PROJECT})
        record.waited = bool(answer and answer.get("memory_pending"))


def _error_code(answer: dict) -> str:
    """A failed call's code: the typed error's (the tool error's text starts with it,
    after the SDK's prefix), else the JSON-RPC error's."""
    if "error" in answer:
        return f"jsonrpc {answer['error'].get('code')}"
    text = answer["result"]["content"][0]["text"]
    match = ERROR_CODE.search(text)
    return match.group(1) if match else text[:80]


def _structured(result: dict) -> dict:
    """A tool's answer: its structured content, else its first text block as JSON."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    return orjson.loads(result["content"][0]["text"])


def _transcript(text: str) -> bytes:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = [
        {"role": "user", "content": f"where is {text}?", "timestamp": now},
        {"role": "assistant", "content": f"{text} is in the vault", "timestamp": now},
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def _acknowledge(run: Run, answer: dict, texts: list[str]) -> None:
    """Candidate ids answer in staging order, one per valid line (all of ours are)."""
    ids = answer["candidates"]
    if len(ids) != len(texts) or answer.get("dropped"):
        run.fail(f"{len(texts)} candidates staged as {len(ids)}: {answer.get('dropped')}")
        return
    run.ledger.candidates.update(zip(ids, texts, strict=True))


# -- CLI writers and snapshot readers --------------------------------------------------


def _writer_loop(run: Run, n: int) -> None:
    """``memory add`` and ``archive add`` from the CLI, in turn, until the end."""
    rng = random.Random(run.rng.randrange(2**32))
    turn = 0
    while not run.stop.is_set():
        turn += 1
        source = run.scratch / f"writer-{n}-{turn}.jsonl"
        if turn % 2:
            texts = [run.words.text() for _ in range(rng.randint(1, 5))]
            source.write_bytes(b"".join(orjson.dumps({"text": t}) + b"\n" for t in texts))
            args = ("memory", "add", str(source), "--project", PROJECT, "--json")
        else:
            session = f"cli-{n}-{run.words.token()}"
            source.write_bytes(_transcript(run.words.text()))
            args = ("archive", "add", str(source), "--project", PROJECT, "--session", session,
                    "--json")  # fmt: skip
        answer = _run_writer(run, n, args)
        if answer is not None and turn % 2:
            _acknowledge(run, answer, texts)
        elif answer is not None:
            run.ledger.locators.extend(answer["locators"])
        source.unlink()
        run.stop.wait(rng.uniform(*WRITER_PAUSE))


def _run_writer(run: Run, n: int, args: tuple[str, ...]) -> dict | None:
    """Its JSON answer when it exited 0 (acknowledged); None when killed or refused."""
    proc = run.start(*args)
    run.writers[n] = proc
    try:
        code = proc.proc.wait(timeout=REQUEST_TIMEOUT)
    except subprocess.TimeoutExpired:
        run.fail(f"{' '.join(args[:2])} did not finish within {REQUEST_TIMEOUT:g}s")
        proc.kill_tree()
        run.writers[n] = None
        return None
    run.writers[n] = None
    out = proc.output() if code == 0 else ""
    proc.close()
    if code == 0:
        return orjson.loads(out[out.find("{") :])
    if code != -signal.SIGKILL:
        run.note_error(f"{' '.join(args[:2])} exited {code}")
    return None


def _readers(run: Run, n: int) -> list[subprocess.Popen]:
    db = str(run.home)
    lo, hi = READER_HOLD
    return [
        subprocess.Popen(
            [sys.executable, "-c", _READER, db, str(run.rng.randrange(2**32)), str(lo), str(hi)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=child_env({}),
        )
        for _ in range(n)
    ]


# -- the killer and the sampler ------------------------------------------------------


def _workers_of(home: Path, pid: int) -> list[int]:
    with contextlib.suppress(OSError, orjson.JSONDecodeError):
        state = orjson.loads((home / SUPERVISOR_STATE_FILE).read_bytes())
        if state.get("pid") == pid:
            return [w["pid"] for w in state.get("workers", [])]
    return []


def _victim(run: Run, kind: str) -> int | None:
    """A live pid of that kind, drawn at random, or None."""
    sup = running_supervisor(run.home)
    if kind == "supervisor":
        return sup
    if kind == "worker":
        pids = _workers_of(run.home, sup) if sup else []
    elif kind == "mcp":
        pids = [c.pid for c in run.mcp if c.pid]
    else:
        pids = [w.pid for w in run.writers if w is not None]
    return run.rng.choice(pids) if pids else None


def _killer(run: Run) -> None:
    """A kill every ``KILL_EVERY`` seconds; each block of ``len(KILL_KINDS)`` kills hits
    every kind once, in a seeded order (a short run still kills each kind)."""
    deadline = time.monotonic() + WARMUP_TIMEOUT
    for _ in run.mcp:  # kills start once every MCP server answered (start-up is slow)
        run.ready.acquire(timeout=max(0.0, deadline - time.monotonic()))
    run.killing.set()
    present = {"mcp": run.mcp, "writer": run.writers}
    kinds = [k for k in KILL_KINDS if present.get(k, True)]
    block: list[str] = []
    while not run.stop.wait(run.kill_rng.uniform(*KILL_EVERY)):
        if not block:
            block = list(kinds)
            run.kill_rng.shuffle(block)
        kind = block.pop()
        pid = _victim(run, kind)
        while pid is None and not run.stop.wait(VICTIM_POLL):  # e.g. between two writers
            pid = _victim(run, kind)
        if pid is None:
            return
        signal_pid(pid, signal.SIGKILL)
        run.ledger.kills.append((kind, time.monotonic()))
        if kind == "supervisor":
            _await_gone(pid)
            run.ensure_supervisor()


def _await_gone(pid: int) -> None:
    """Until a killed pid is gone (a child of ours is reaped by its thread's poll)."""
    with contextlib.suppress(psutil.Error):
        psutil.Process(pid).wait(timeout=10)


def _sampler(run: Run) -> None:
    """The WAL's size, sampled; and a supervisor kept running on the home."""
    wal = run.home / "authority.db-wal"
    while not run.stop.wait(SAMPLE_SECONDS):
        with contextlib.suppress(FileNotFoundError):
            run.ledger.wal_peak = max(run.ledger.wal_peak, wal.stat().st_size)
        run.ensure_supervisor()


# -- the run ---------------------------------------------------------------------------


def run_clients(
    home: Path,
    *,
    seed: int,
    workers: int,
    duration: float,
    mcp: int,
    writers: int,
    readers: int,
    think: tuple[float, float] = THINK,
) -> dict:
    """Drive the home with ``mcp`` MCP clients (each pausing ``think`` seconds, drawn
    between its bounds, between two calls), ``writers`` CLI writers and ``readers``
    snapshot readers for ``duration`` seconds (counted once every MCP server answered,
    when the kills start) while killing at random; then drain and
    check. The report's ``clients`` holds the figures."""
    with tempfile.TemporaryDirectory(prefix="memoryd-drill-clients-") as scratch:
        run = Run(home, Path(scratch), seed=seed, workers=workers, think=think)
        _prepare(run)
        started = time.monotonic()
        _drive(run, duration, mcp, writers, readers)
        driven = time.monotonic() - started
        _settle(run)
        _check(run)
    return _report(run, driven, mcp=mcp, writers=writers, readers=readers)


def _prepare(run: Run) -> None:
    """The project the clients use: a one-file repository, ingested."""
    repo = run.scratch / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 'hello'\n")
    md = Memoryd(run.home)
    try:
        Projects(md).ingest(repo, PROJECT)
    finally:
        md.close()


def _drive(run: Run, duration: float, mcp: int, writers: int, readers: int) -> None:
    run.ensure_supervisor()
    run.mcp = [McpClient(run, n) for n in range(mcp)]
    run.writers = [None] * writers
    held = _readers(run, readers)
    threads = [
        *(threading.Thread(target=c.loop, name=f"mcp-{c.n}") for c in run.mcp),
        *(threading.Thread(target=_writer_loop, args=(run, n)) for n in range(writers)),
        threading.Thread(target=_killer, args=(run,)),
        threading.Thread(target=_sampler, args=(run,)),
    ]
    for t in threads:
        t.start()
    try:
        run.killing.wait(WARMUP_TIMEOUT)  # a loaded machine starts 16 servers slowly
        run.stop.wait(duration)
    finally:
        run.ended = time.monotonic()
        run.stop.set()
        for t in threads:
            t.join()
        for reader in held:
            reader.kill()
            reader.wait()


def _settle(run: Run) -> None:
    """Stop the supervisor (SIGTERM: a graceful stop), wait for any drain the MCP servers
    started, then drain what is left with one more supervisor (exit 0 expected)."""
    sup = run.supervisor
    if sup is not None and sup.poll() is None:
        sup.proc.send_signal(signal.SIGTERM)
        try:
            sup.proc.wait(timeout=REQUEST_TIMEOUT)
        except subprocess.TimeoutExpired:
            run.fail(f"the supervisor did not stop within {REQUEST_TIMEOUT:g}s of SIGTERM")
            sup.kill_tree()
    if sup is not None:
        sup.close()
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while (pid := running_supervisor(run.home)) is not None and time.monotonic() < deadline:
        _await_gone(pid)
    drain = run.start("run", "--drain")
    code = drain.proc.wait(timeout=REQUEST_TIMEOUT * 5)
    if code != 0:
        run.fail(f"the recovery drain exited {code}: {drain.output()}")
    drain.close()


def _check(run: Run) -> None:
    """Every acknowledged request applied exactly once; the authority intact."""
    cfg = load_config(run.home)
    with open_authority(run.home, cfg, readonly=True) as db:
        _check_memory(run, db)
        if integrity_check(db) != ["ok"]:
            run.fail("integrity_check failed")
    with ArchiveOwner(run.home, cfg) as owner:
        _check_archive(run, owner)


def _check_memory(run: Run, db) -> None:
    acked = run.ledger.candidates
    states = records_store.candidate_outcomes(db.conn)
    undecided = [c for c in acked if states.get(c, ("",))[0] != "consumed"]
    if undecided:
        c = undecided[0]
        run.fail(
            f"{len(undecided)} acknowledged candidates were not applied (e.g. {c}:"
            f" {states.get(c, 'never seen')})"
        )
    records: dict[str, list[int]] = {}
    for text, count in records_store.active_text_counts(db.conn):
        records.setdefault(text, []).append(count)
    texts = set(acked.values())
    lost = [t for t in texts if t not in records]
    doubled = [t for t in texts if records.get(t, [1]) != [1]]
    if lost:
        run.fail(f"{len(lost)} acknowledged remembered texts have no active record")
    if doubled:
        run.fail(
            f"{len(doubled)} acknowledged remembered texts were applied more than once"
            f" (e.g. records with counts {records[doubled[0]]})"
        )
    run.ledger.lost += len(undecided) + len(lost)
    run.ledger.doubled += len(doubled)


def _check_archive(run: Run, owner: ArchiveOwner) -> None:
    lost = doubled = 0
    for locator in run.ledger.locators:
        doc, _ = parse_locator(locator)
        try:
            versions = owner.store.ledgers.versions(doc)
        except LocatorNotFound:
            versions = []
        live = [v for v in versions if v.status == "live"]
        lost += not live
        doubled += len(versions) > 1
    if lost:
        run.fail(f"{lost} acknowledged archive adds have no live version")
    if doubled:
        run.fail(f"{doubled} acknowledged archive adds have more than one version")
    run.ledger.lost += lost
    run.ledger.doubled += doubled


# -- the figures -------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _latency(seconds: list[float]) -> dict:
    return {
        "n": len(seconds),
        "p50": _ms(_percentile(seconds, 0.5)),
        "p95": _ms(_percentile(seconds, 0.95)),
    }


def _outside_kills(call: Call, kills: list[float]) -> bool:
    end = call.sent + (call.took or 0.0)
    return not any(k < end and call.sent < k + KILL_SETTLE for k in kills)


def _supervisor_gaps(run: Run, ended: float) -> list[float]:
    """For each supervisor kill, the longest time within ``GAP_WINDOW`` after it during
    which no face received a successful answer (kills too close to the end are left
    out: the faces stop answering then)."""
    answered = sorted(c.sent + c.took for c in run.ledger.calls if c.ok)
    gaps = []
    for kind, t in run.ledger.kills:
        if kind != "supervisor" or t + GAP_WINDOW > ended:
            continue
        edges = [t, *(a for a in answered if t < a <= t + GAP_WINDOW), t + GAP_WINDOW]
        gaps.append(max(b - a for a, b in zip(edges, edges[1:], strict=False)))
    return gaps


def _report(run: Run, driven: float, *, mcp: int, writers: int, readers: int) -> dict:
    ledger = run.ledger
    kill_times = [t for _, t in ledger.kills]
    recalls = [c for c in ledger.calls if c.tool == "recall" and c.ok]
    quiet = [c.took for c in recalls if not c.waited and _outside_kills(c, kill_times)]
    gaps = _supervisor_gaps(run, run.ended)
    p95 = _percentile(quiet, 0.95)
    kills: dict[str, int] = {}
    for kind, _ in ledger.kills:
        kills[kind] = kills.get(kind, 0) + 1
    figures = {
        "wal_peak_bytes": ledger.wal_peak,
        "recall_p95_ms": _ms(p95),
        "supervisor_gap_max_s": round(max(gaps), 2) if gaps else None,
    }
    bounds = {
        "wal_peak_bytes": WAL_PEAK_BOUND,
        "recall_p95_ms": RECALL_P95_BOUND * 1000,
        "supervisor_gap_max_s": SUPERVISOR_GAP_BOUND,
    }
    return {
        "processes": {"mcp": mcp, "writers": writers, "readers": readers, "workers": run.workers},
        "workload": _workload(run),
        "duration_s": round(driven, 1),
        "kills": dict(sorted(kills.items())),
        "requests": _counts(ledger.calls),
        "acknowledged": {"candidates": len(ledger.candidates), "locators": len(ledger.locators)},
        "lost": ledger.lost,
        "doubled": ledger.doubled,
        "errors": dict(sorted(ledger.errors.items())),
        **figures,
        "recalls_waiting_on_memory": sum(c.waited for c in recalls),
        "recall_ms": {
            "outside_kills": _latency(quiet),
            "all": _latency([c.took for c in recalls]),
        },
        "supervisor_gaps_s": [round(g, 2) for g in gaps],
        "bounds": {
            k: {"bound": b, "met": None if figures[k] is None else figures[k] <= b}
            for k, b in bounds.items()
        },  # fmt: skip
        "mcp_starts": sum(c.starts for c in run.mcp),
        "violations": ledger.violations,
    }


def _workload(run: Run) -> dict:
    """What each kind of process does, and how often (seconds drawn uniformly)."""
    return {
        "mcp": {"think_s": list(run.think), "call_weights": CALL_WEIGHTS},
        "writers": {"pause_s": list(WRITER_PAUSE), "calls": ["memory add", "archive add"]},
        "readers": {"snapshot_held_s": list(READER_HOLD)},
        "kill_every_s": list(KILL_EVERY),
    }


def _counts(calls: list[Call]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for c in calls:
        row = out.setdefault(c.tool, {"sent": 0, "answered": 0, "ok": 0})
        row["sent"] += 1
        row["answered"] += c.took is not None
        row["ok"] += c.ok
    return out
