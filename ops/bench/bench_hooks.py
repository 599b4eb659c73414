"""Hook replay under kills: every event archived exactly once, no secret kept anywhere.

Generates N synthetic sessions (:mod:`hook_sessions`: prompts, tool calls with
outputs of 10 B-2 MB, compactions, resumes, planted secrets and ``<private>``
spans) and replays them twice, each into its own home, running the hook command
``memoryd hooks install`` writes (a real process per event, ``--parallel``
sessions at once, transcripts written as the agents write them, a line sometimes
half-written while a hook reads):

* **clean**: a supervisor (``memoryd run --workers 1``) runs throughout;
* **drill**: the same, while a drill thread SIGKILLs, every ``--kill-every``
  seconds on average, one of: a running hook process (never a session's last
  one), the supervisor holding the home (ours, or a draining one a hook started),
  or one of its workers; a killed supervisor is restarted after 0.5-3 s.

Then each home is drained (``memoryd run --drain`` until the spool and the drain's
batch manifests are empty) and checked:

* exactly once: every unit (a text the archive should keep, tagged per session)
  is archived once in the clean home; in the drilled one, once too, except a
  unit only a killed hook's payload brought, kept at most once; a compaction's
  summary never (it sums up turns kept); per session the conversation lines and
  tool documents (as hashes) equal the clean home's;
* no planted secret: the tag every secret holds (any case) found in no file of
  either home (a raw byte scan of every file) and in no key or value of the
  archive (its zstd payloads decompressed);
* hook wall time p50/p95/p99 (and CPU) per event, the spool's peak size.

    .venv/bin/python ops/bench/bench_hooks.py [--sessions 1000] [--parallel 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import hook_sessions as hs  # noqa: E402
import psutil  # noqa: E402

from memoryd.base import hooklog, hookspool  # noqa: E402
from memoryd.base.locks import running_supervisor  # noqa: E402
from memoryd.faces.hooks.install import command  # noqa: E402

PY = sys.executable
UNIT = re.compile(r"\bunit\d{5}x\d{3}\b")
HOOK_TIMEOUT = 300.0  # a hook not done by then is killed and counted as hung
SCAN_CHUNK = 1 << 22


def memoryd(*args: str, home: Path) -> list[str]:
    return [PY, "-m", "memoryd.faces.cli.main", *args, "--home", str(home)]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


# -- one replay ---------------------------------------------------------------------------


class Replay:
    """One home driven by the sessions; with ``kill_every`` a drill kills as it goes."""

    def __init__(
        self,
        base: Path,
        name: str,
        sessions: list,
        parallel: int,
        kill_every: float | None,
        seed: int,
        drain_timeout: float,
        think: float = 0.0,
    ) -> None:
        self.base, self.name, self.sessions = base / name, name, sessions
        self.think = think  # seconds a session waits before each hook after its first
        self.home = self.base / "home"
        self.parallel, self.kill_every = parallel, kill_every
        self.rng = random.Random(seed)
        self.env = child_env()
        self.lock = threading.Lock()
        self.running: dict[int, tuple[int, int]] = {}  # killable hooks: pid -> (session, step)
        self.times: dict[str, list[tuple[float, float]]] = defaultdict(list)  # event -> (wall, cpu)
        self.killed: set[tuple[int, int]] = set()
        self.killed_events: Counter[str] = Counter()
        self.kills: Counter[str] = Counter()
        self.hung = 0
        self.bad: list[str] = []  # hooks that exited other than 0 or printed garbage
        self.injected: Counter[str] = Counter()  # hooks that printed context
        self.peak = {"bytes": 0, "events": 0}
        self.stop = threading.Event()
        self.daemon: subprocess.Popen | None = None
        self.drain_timeout = drain_timeout
        self.unfinished = False

    # -- setup and the supervisor we keep running

    def prepare(self) -> None:
        self.base.mkdir(parents=True)
        (self.base / "transcripts").mkdir()
        for p in hs.PROJECTS:
            (self.base / "projects" / p).mkdir(parents=True)
        subprocess.run(
            memoryd("init", home=self.home), env=self.env, check=True, stdout=subprocess.DEVNULL
        )

    def start_daemon(self) -> None:
        log = open(self.base / "supervisor.log", "ab")  # noqa: SIM115 (the child holds it)
        self.daemon = subprocess.Popen(
            memoryd("run", "--workers", "1", home=self.home),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()

    def keep_daemon(self) -> None:
        """Restart ours when it is gone and no supervisor holds the home."""
        if self.daemon is not None and self.daemon.poll() is None:
            return
        if running_supervisor(self.home) is None:
            self.start_daemon()

    # -- the sessions

    def run(self) -> dict:
        self.prepare()
        self.start_daemon()
        threads = [threading.Thread(target=self.sampler, daemon=True)]
        if self.kill_every:
            threads.append(threading.Thread(target=self.drill, daemon=True))
        for t in threads:
            t.start()
        todo = list(range(len(self.sessions)))
        todo.reverse()
        started = time.perf_counter()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        drivers = [threading.Thread(target=self.driver, args=(todo,)) for _ in range(self.parallel)]
        for t in drivers:
            t.start()
        for t in drivers:
            t.join()
        replay_s = time.perf_counter() - started
        self.stop.set()
        for t in threads:
            t.join()
        drain_s = self.finish()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
        return {
            "replay_seconds": round(replay_s, 1),
            "final_drain_seconds": round(drain_s, 1),
            "children_cpu_seconds": round(cpu, 1),
        }

    def driver(self, todo: list[int]) -> None:
        while True:
            with self.lock:
                if not todo:
                    return
                i = todo.pop()
            self.play(self.sessions[i])
            if (i + 1) % 50 == 0:
                print(f"  [{self.name}] {i + 1} sessions", file=sys.stderr, flush=True)

    def play(self, s) -> None:
        """A session's hooks in order, each after the transcript lines the agent wrote."""
        cwd = str(self.base / "projects" / s.project)
        path = self.base / "transcripts" / f"{s.sid}.jsonl"
        transcript = str(path) if s.transcript else None
        carry: dict[int, bytes] = {}  # step -> its lines already rendered (half written)
        written: dict[int, int] = {}  # step -> bytes of them already in the file
        with open(path, "ab") as f:
            for k, step in enumerate(s.steps):
                text_of: dict = {}
                data = carry.pop(k, None)
                if data is None:
                    data = b"".join(hs.render(s, line, text_of) for line in step.lines)
                self.append(f, data[written.pop(k, 0) :])
                if step.partial:
                    self.half_write(s, k, f, carry, written)
                p = hs.payload(s, step, cwd, transcript, text_of)
                if k and self.think:
                    time.sleep(self.think)  # the agent's turn between two hooks
                self.hook(s, k, step, json.dumps(p).encode())

    @staticmethod
    def append(f, data: bytes) -> None:
        if data:
            f.write(data)
            f.flush()

    def half_write(self, s, k: int, f, carry: dict, written: dict) -> None:
        """Write part of the next step's lines now, as an agent mid-write leaves it."""
        nxt = next((j for j in range(k + 1, len(s.steps)) if s.steps[j].lines), None)
        if nxt is None:
            return
        data = b"".join(hs.render(s, line, {}) for line in s.steps[nxt].lines)
        cut = max(1, len(data) // 2)
        carry[nxt], written[nxt] = data, cut
        self.append(f, data[:cut])

    def hook(self, s, k: int, step, data: bytes) -> None:
        """Run the installed hook command; its wall and CPU time, or that it was killed;
        a hook that exits other than 0 or prints what the agent cannot read is noted."""
        rc, out, err, wall, cpu = self.spawn(s, k, step, data)
        with self.lock:
            if rc == -signal.SIGKILL:
                self.hung += wall >= HOOK_TIMEOUT
                self.killed.add((s.index, k))
                self.killed_events[step.event] += 1
                return
            if rc != 0:
                self.bad.append(f"hook {step.event} exited {rc}: {err[-300:]!r}")
            elif not readable(step.event, out):
                self.bad.append(f"hook {step.event} printed {out[:200]!r}")
            self.injected[step.event] += bool(out.strip())
            self.times[step.event].append((wall, cpu))

    def spawn(self, s, k: int, step, data: bytes) -> tuple[int, bytes, bytes, float, float]:
        """(exit code, stdout, stderr, wall s, CPU s) of one hook process; killable by the
        drill unless it is its session's last."""
        argv = shlex.split(command(step.event, s.agent, str(self.home)))
        t = time.perf_counter()
        pipe = subprocess.PIPE
        proc = subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, env=self.env)
        if not step.final:
            with self.lock:
                self.running[proc.pid] = (s.index, k)
        timer = threading.Timer(HOOK_TIMEOUT, lambda: _kill(proc.pid))
        timer.start()
        try:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(data)
                proc.stdin.close()
            out, err = proc.stdout.read(), proc.stderr.read()
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            with self.lock:
                self.running.pop(proc.pid, None)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        return proc.returncode, out, err, time.perf_counter() - t, ru.ru_utime + ru.ru_stime

    # -- the drill and the spool's size

    def drill(self) -> None:
        while not self.stop.wait(self.rng.expovariate(1 / self.kill_every)):
            target = self.rng.choices(("hook", "supervisor", "worker"), (5, 2, 3))[0]
            if target == "hook":
                with self.lock:
                    pids = sorted(self.running)
                if pids and _kill(self.rng.choice(pids)):
                    self.kills["hook"] += 1
                continue
            sup = running_supervisor(self.home)
            if sup is None:
                continue
            if target == "supervisor":
                if _kill(sup):
                    self.kills["supervisor"] += 1
                    self.stop.wait(self.rng.uniform(0.5, 3.0))
            else:
                with contextlib.suppress(psutil.Error):
                    kids = psutil.Process(sup).children()
                    if kids and _kill(self.rng.choice(kids).pid):
                        self.kills["worker"] += 1
            if not self.stop.is_set():
                with contextlib.suppress(OSError):
                    self.keep_daemon()

    def sampler(self) -> None:
        while not self.stop.wait(0.25):
            try:
                size = hookspool.spool_size(hookspool.spool_dir(str(self.home)))
                count = hooklog.waiting_events(str(self.home))
            except OSError:
                continue  # the spool's directory not made yet
            self.peak["bytes"] = max(self.peak["bytes"], size)
            self.peak["events"] = max(self.peak["events"], count)

    # -- the end

    def finish(self) -> float:
        """Stop our supervisor, let any draining one (a hook's) end, then drain until
        nothing waits; past ``drain_timeout`` whatever holds the home is killed and the
        spool left as it is (the checks then find what was not archived)."""
        t = time.perf_counter()
        deadline = time.monotonic() + self.drain_timeout
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.daemon.wait(max(1.0, deadline - time.monotonic()))
        while time.monotonic() < deadline:
            if self.wait_no_supervisor(deadline):
                self.drain_once(deadline)
            if not self.waiting() and running_supervisor(self.home) is None:
                break
        else:
            self.unfinished = True
        while (pid := running_supervisor(self.home)) is not None:
            _kill_tree(pid)
            time.sleep(0.5)
        return time.perf_counter() - t

    def drain_once(self, deadline: float) -> None:
        with open(self.base / "supervisor.log", "ab") as log:
            proc = subprocess.Popen(memoryd("run", "--drain", home=self.home), env=self.env,
                                    stdout=log, stderr=log)  # fmt: skip
        try:
            proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_tree(proc.pid)
            proc.wait()

    def wait_no_supervisor(self, deadline: float) -> bool:
        """Whether no supervisor holds the home, twice 2 s apart (a hook's drain takes a
        moment to start), before ``deadline``."""
        for _ in range(2):
            while running_supervisor(self.home) is not None:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.5)
            time.sleep(2)
        return True

    def waiting(self) -> bool:
        batches = self.home / hookspool.HOOKS_DIR / hookspool.BATCHES
        return hooklog.waiting(str(self.home)) or any(batches.glob("*.json"))


def readable(event: str, out: bytes) -> bool:
    """Nothing, or the agents' context output naming the event."""
    if not out.strip():
        return True
    try:
        hso = json.loads(out)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return False
    return hso.get("hookEventName") == event and isinstance(hso.get("additionalContext"), str)


def _kill_tree(pid: int) -> None:
    with contextlib.suppress(psutil.Error):
        for kid in psutil.Process(pid).children(recursive=True):
            _kill(kid.pid)
    _kill(pid)


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


# -- reading a home back ------------------------------------------------------------------


def archived(home: Path) -> dict[str, dict]:
    """Per session: its conversation lines and tool documents (hashed), its units counted."""
    from memoryd.archive.owner import ArchiveOwner
    from memoryd.base.config import load_config

    out: dict[str, dict] = defaultdict(
        lambda: {"lines": Counter(), "tools": Counter(), "units": Counter(), "docs": 0}
    )
    with ArchiveOwner(home, load_config(home)) as owner:
        ledgers, after = owner.store.ledgers, None
        while page := ledgers.documents(after=after):
            after = page[-1].doc_id
            for info in page:
                if info.status != "live":
                    continue
                doc = ledgers.get(info.locator)
                mine = out[doc["session"]]
                mine["docs"] += 1
                mine["units"].update(UNIT.findall(doc["content"]))
                if doc["class"] == "conversation":
                    mine["lines"].update(_digest(line) for line in doc["content"].split("\n"))
                else:
                    mine["tools"][_digest(doc["content"])] += 1
    return out


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def failures(home: Path) -> dict[str, int]:
    return dict(Counter(f.get("code") for f in hookspool.read_failures(str(home))))


# -- the checks ---------------------------------------------------------------------------


def killed_units(sessions: list, killed: set) -> set[str]:
    """The units only a killed hook brought: kept at most once, maybe not at all."""
    return {u for s in sessions for k, st in enumerate(s.steps) if (s.index, k) in killed
            for u in st.brings}  # fmt: skip


def check_units(sessions: list, got: dict, killed: set, name: str) -> tuple[list[str], dict]:
    """Every unit once; a unit only a killed hook brought, at most once."""
    problems, stats = [], Counter()
    maybe = killed_units(sessions, killed)
    for s in sessions:
        counts = got.get(s.sid, {}).get("units", Counter())
        for u, kind in s.units.items():
            n = counts.get(u, 0)
            if kind == "summary" and n:
                problems.append(f"{name}: {u}, a compaction's summary, archived (it repeats turns)")
            elif kind == "summary":
                stats["summaries_left_out"] += 1
            elif n > 1:
                problems.append(f"{name}: {u} ({kind}) archived {n} times")
            elif n == 0 and u not in maybe:
                problems.append(f"{name}: {u} ({kind}) lost")
            elif u in maybe:
                stats[f"killed_hook_units_kept_{n}"] += 1
            else:
                stats["units_once"] += 1
        extra = set(counts) - set(s.units)
        if extra:
            problems.append(f"{name}: session {s.sid} holds units of others: {sorted(extra)[:3]}")
    return problems, dict(stats)


def compare(sessions: list, clean: dict, drill: dict, killed: set) -> list[str]:
    """Per session, the drilled home holds what the clean one does (lines, tool documents),
    leaving out only what killed hooks alone brought."""
    problems = []
    maybe = killed_units(sessions, killed)
    for s in sessions:
        a, b = clean.get(s.sid), drill.get(s.sid)
        if a is None or b is None:
            problems.append(f"session {s.sid}: in clean {a is not None}, in drill {b is not None}")
            continue
        if any(u in maybe for u in s.units):
            lost = {u for u in maybe if u in s.units and b["units"].get(u, 0) == 0}
            if not lost and (a["lines"] != b["lines"] or a["tools"] != b["tools"]):
                problems.append(f"session {s.sid}: contents differ (no killed unit lost)")
            continue
        if a["lines"] != b["lines"]:
            problems.append(f"session {s.sid}: conversation lines differ from the clean replay's")
        if a["tools"] != b["tools"]:
            problems.append(f"session {s.sid}: tool documents differ from the clean replay's")
    return problems


def scan_files(home: Path) -> list[str]:
    """Files of the home whose raw bytes hold the tag (any case)."""
    tag, found = hs.TAG.encode(), []
    for d, _, files in os.walk(home):
        for name in files:
            path = os.path.join(d, name)
            with contextlib.suppress(OSError), open(path, "rb") as f:
                tail = b""
                while chunk := f.read(SCAN_CHUNK):
                    if tag in (tail + chunk).lower():
                        found.append(path)
                        break
                    tail = chunk[-len(tag) :]
    return found


def scan_archive(home: Path) -> tuple[int, list[str]]:
    """(keys read, hits): every key and value of the archive, zstd payloads decompressed."""
    import zstandard
    from rocksdict import AccessType, Options, Rdict

    tag, hits, n = hs.TAG.encode(), [], 0
    dec = zstandard.ZstdDecompressor()
    db = Rdict(str(home / "archive"), Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        for key, value in db.items():
            n += 1
            texts = [key, value]
            for frame in (value, value[5:]):
                if frame[:4] == b"\x28\xb5\x2f\xfd":
                    with contextlib.suppress(zstandard.ZstdError):
                        texts.append(dec.decompress(frame))
            if any(tag in t.lower() for t in texts):
                hits.append(key[:60].hex())
    finally:
        db.close()
    return n, hits


def percentiles(times: dict[str, list[tuple[float, float]]]) -> dict[str, dict]:
    out = {}
    for event in hs.EVENTS_ORDER:
        rows = times.get(event)
        if not rows:
            continue
        walls = sorted(w for w, _ in rows)
        pick = lambda q, w=walls: round(w[min(len(w) - 1, int(q * len(w)))] * 1000, 1)  # noqa: E731
        out[event] = {
            "n": len(walls),
            "p50_ms": pick(0.5),
            "p95_ms": pick(0.95),
            "p99_ms": pick(0.99),
            "cpu_ms_mean": round(sum(c for _, c in rows) / len(rows) * 1000, 1),
        }
    return out


# -- the whole run -------------------------------------------------------------------------


def bench(
    base: Path,
    n: int,
    *,
    seed: int = 7,
    parallel: int = 3,
    kill_every: float = 2.0,
    max_output: int = hs.MAX_OUTPUT,
    drain_timeout: float = 3600.0,
    think: float = 0.0,
) -> dict:
    """Both replays and every check; ``problems`` empty when all hold. ``think``: seconds
    a session waits between two hooks (0: back to back, the hardest case)."""
    sessions = hs.sessions(n, seed, max_output)
    result: dict = {
        "sessions": n,
        "seed": seed,
        "parallel": parallel,
        "kill_every_s": kill_every,
        "think_s": think,
        "hooks": sum(len(s.steps) for s in sessions),
        "units": sum(len(s.units) for s in sessions),
        "secrets_planted": sum(len(s.secrets) for s in sessions),
        "tool_output_bytes": sum(_out_size(st) for s in sessions for st in s.steps),
    }
    problems: list[str] = []
    homes, got = {}, {}
    for name, kills in (("clean", None), ("drill", kill_every)):
        r = Replay(base, name, sessions, parallel, kills, seed, drain_timeout, think)
        timing = r.run()
        homes[name], got[name] = r, archived(r.home)
        found, stats = measure(r, sessions, got[name])
        problems += found
        result[name] = {**timing, **stats}
    problems += compare(sessions, got["clean"], got["drill"], homes["drill"].killed)
    result["problems"] = problems
    return result


def measure(r: Replay, sessions: list, got: dict) -> tuple[list[str], dict]:
    """One replayed home's problems (units, the tag anywhere, hung hooks, an unfinished
    drain) and figures."""
    problems, unit_stats = check_units(sessions, got, r.killed, r.name)
    keys, hits = scan_archive(r.home)
    problems += [f"{r.name}: the tag in {p}" for p in scan_files(r.home)]
    problems += [f"{r.name}: the tag in archive key {h}" for h in hits]
    if r.hung:
        problems.append(f"{r.name}: {r.hung} hooks hung past {HOOK_TIMEOUT:g}s")
    problems += [f"{r.name}: {b}" for b in r.bad]
    if r.unfinished:
        problems.append(f"{r.name}: the spool was not drained in {r.drain_timeout:g}s")
    return problems, {
        "kills": dict(r.kills),
        "killed_hooks": dict(r.killed_events),
        "spool_peak_bytes": r.peak["bytes"],
        "spool_peak_events": r.peak["events"],
        "failures": failures(r.home),
        "context_injected": dict(r.injected),
        "units": unit_stats,
        "documents": sum(v["docs"] for v in got.values()),
        "archive_keys_scanned": keys,
        "files_scanned": _count_files(r.home),
        "home_bytes": _du(r.home),
        "hooks": percentiles(r.times),
    }


def _out_size(step) -> int:
    out = step.fields.get("output")
    return out.size if isinstance(out, hs.Output) else len(out or "")


def _count_files(home: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(home))


def _du(home: Path) -> int:
    total = 0
    for d, _, files in os.walk(home):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(d, f)).st_size
    return total


def print_report(r: dict) -> None:
    print(
        f"{r['sessions']} sessions, {r['hooks']} hooks, {r['units']} units, "
        f"{r['secrets_planted']} secrets planted, "
        f"{r['tool_output_bytes'] / 1e6:.0f} MB of tool output"
    )
    for name in ("clean", "drill"):
        x = r[name]
        print(
            f"\n[{name}] replay {x['replay_seconds']} s, final drain {x['final_drain_seconds']} s, "
            f"children CPU {x['children_cpu_seconds']} s; kills {x['kills']}; killed hooks "
            f"{x['killed_hooks']}; spool peak {x['spool_peak_bytes'] / 1e6:.1f} MB "
            f"({x['spool_peak_events']} events); failures {x['failures']}; units {x['units']}; "
            f"{x['documents']} documents; scanned {x['files_scanned']} files "
            f"({x['home_bytes'] / 1e6:.0f} MB), {x['archive_keys_scanned']} archive keys"
        )
        for event, h in x["hooks"].items():
            print(
                f"  {event:<17} n {h['n']:>6}  p50 {h['p50_ms']:7.1f}  p95 {h['p95_ms']:7.1f}  "
                f"p99 {h['p99_ms']:7.1f} ms  cpu {h['cpu_ms_mean']:6.1f} ms"
            )
    print(f"\nproblems: {len(r['problems'])}")
    for p in r["problems"][:50]:
        print(f"  {p}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--parallel", type=int, default=3, help="sessions replayed at once")
    ap.add_argument("--kill-every", type=float, default=2.0, help="mean seconds between kills")
    ap.add_argument("--max-output", type=int, default=hs.MAX_OUTPUT)
    ap.add_argument("--think", type=float, default=0.0, help="seconds between hooks")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep the homes (printed)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="memoryd-bench-hooks-"))
    try:
        r = bench(
            base,
            args.sessions,
            seed=args.seed,
            parallel=args.parallel,
            kill_every=args.kill_every,
            max_output=args.max_output,
            think=args.think,
        )
    finally:
        if args.keep:
            print(f"homes kept under {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(r, indent=2)) if args.json else print_report(r)
    sys.exit(1 if r["problems"] else 0)


if __name__ == "__main__":
    main()
