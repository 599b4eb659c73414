"""One drill: a home, a seeded plan, what was enqueued (the oracle) and what went wrong.

The oracle lives in this process, outside the home: the ids of every ``noop``
and ``sleep`` job the drill enqueued, and the files it wrote. The checks
compare the home against it, not against the home's own bookkeeping.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import orjson

from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.base.config import SUPERVISOR_STATE_FILE, load_config
from memoryd.faces.drill.procs import Started, signal_pid
from memoryd.ingest.chunking import digest
from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects
from memoryd.queue import JobQueue, JobReads, JobSpec
from memoryd.storage import open_authority

T = TypeVar("T")
REPO_FILES = 40
# The drill's project starts compact (no stored index) and outgrows its limit after
# about this many more files (the repository grows by one a cycle, and an ingest
# counts a rewritten file's new bytes beside its old ones, so a few cycles): the
# first cycles run compact, one cycle's ingest stores the index (whatever its
# scenario kills), the rest run indexed.
COMPACT_GROWTH_FILES = 8
DAY = 86400.0
ARCHIVE_OLD_DAYS = 200  # past every class's default age
NOOPS_PER_CYCLE = 500
SLEEPS_PER_CYCLE = 16  # keeps workers busy for a moment, so random kills land mid-work
SLEEP_SECONDS = 0.05
RUN_TIMEOUT = 180.0  # a run past this is reported as hung, and the drill stops
POLL = 0.02
PROJECT = "drill-repo"


class DrillAborted(Exception):
    """The home is left in a state later cycles cannot recover from (reported, then stop)."""


@dataclass
class Oracle:
    """What the drill did, kept outside the home."""

    effect_jobs: set[int] = field(default_factory=set)  # noop/sleep ids it enqueued
    sessions: list[tuple[str, str, str]] = field(default_factory=list)  # session, kind, token
    files_before: dict[str, bytes] = field(default_factory=dict)  # path -> hash, cycle start
    files_after: dict[str, bytes] = field(default_factory=dict)  # path -> hash, after the edit
    run: int = 0  # this cycle's ingest run
    memory: set[str] = field(default_factory=set)  # memory candidate ids it staged


class Drill:
    def __init__(self, home: Path, *, seed: int, workers: int) -> None:
        self.home = home
        self.repo = home / "drill-repo"
        self.seed = seed
        self.rng = random.Random(seed)
        self.workers = workers
        self.kills: Counter = Counter()
        self.violations: list[str] = []
        self.oracle = Oracle()
        self.cycle_no = 0
        self.base = self.base_effect = 0  # largest job / effect id before this cycle
        self.turns = 8  # commits of a whole cycle's run, learned from runs that finish
        self.compact_limit: int | None = None  # the project's, fixed when it is created
        self.layouts: Counter = Counter()  # cycles verified compact / indexed

    def pick(self, options: Sequence[T]) -> T:
        """The cycle's scenario choice (which kill): drawn from the seed and the cycle's
        number alone, so a seed reaches the same kills however the shared ``rng``'s
        timing-dependent draws went (a range learned from a run changes their count)."""
        return random.Random(f"{self.seed}:{self.cycle_no}").choice(options)

    def fail(self, message: str) -> None:
        self.violations.append(f"cycle {self.cycle_no}: {message}")

    # -- reading the home --------------------------------------------------------

    @contextmanager
    def queue(self, **overrides: object) -> Iterator[JobQueue]:
        """The home's queue over a fresh connection (read-only unless ``overrides``)."""
        cfg = load_config(self.home, overrides)
        with open_authority(self.home, cfg, readonly=not overrides) as db:
            yield JobQueue(db)

    def read(self, fn: Callable[[JobReads], object]):
        with self.queue() as q:
            return fn(JobReads(q.db))

    def supervisor_state(self, sup: Started) -> dict:
        try:
            state = orjson.loads((self.home / SUPERVISOR_STATE_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return state if state.get("pid") == sup.pid else {}

    # -- processes ---------------------------------------------------------------

    def start(self, *args: str, env: dict[str, str] | None = None) -> Started:
        return Started(list(args), self.home, env or {})

    def supervisor(self, *, drain: bool = True, env: dict[str, str] | None = None) -> Started:
        args = ["run", "--workers", str(self.workers), "--json"]
        return self.start(*args, *(["--drain"] if drain else []), env=env)

    def await_exit(self, proc: Started, what: str, timeout: float = RUN_TIMEOUT) -> int:
        """Wait for ``proc`` while checking, at every poll, that no committed job has
        effects without its completion; a hang or such a job stops the drill."""
        deadline = time.monotonic() + timeout
        while (code := proc.poll()) is None:
            self.guard(proc, what)
            if time.monotonic() > deadline:
                proc.kill_tree()
                raise DrillAborted(f"{what} did not finish within {timeout:g}s")
            time.sleep(0.25)
        return code

    def guard(self, proc: Started, what: str) -> None:
        """Stop the drill if a committed job has effects without its completion."""
        lost = self.read(lambda q: q.applied_not_done(self.base_effect))
        if lost:
            proc.kill_tree()
            raise DrillAborted(
                f"{what}: {len(lost)} jobs (e.g. {', '.join(map(str, lost[:3]))}) have effects but"
                " are not done: a completion was lost"
            )

    def learn_turns(self, proc: Started) -> None:
        """A run that finished a whole cycle tells how many commits such a run makes."""
        out = proc.output()
        try:
            stats = orjson.loads(out[out.find("{") :])
        except orjson.JSONDecodeError:
            return
        self.turns = max(self.turns, int(stats.get("turns", 0)))

    def wait_work_started(self, sup: Started) -> bool:
        """Until some of this cycle's jobs are done (a random share); False if it exited."""
        want = self.rng.randint(1, NOOPS_PER_CYCLE // 2)
        deadline = time.monotonic() + RUN_TIMEOUT
        while sup.poll() is None and time.monotonic() < deadline:
            self.guard(sup, "supervisor")
            if len(self.read(lambda q: q.done_since(self.base))) >= want:
                time.sleep(self.rng.uniform(0.0, 0.2))
                return sup.poll() is None
            time.sleep(POLL)
        return False

    def expect_clean_exit(self, proc: Started, what: str) -> None:
        """``proc`` (a supervisor) must exit 0 by itself; ``what`` says when."""
        code = self.await_exit(proc, what)
        if code != 0:
            self.fail(f"{what}: the supervisor exited {code}: {proc.output() or 'no output'}")
        else:
            self.learn_turns(proc)
        proc.close()

    def drain(self) -> None:
        """The recovery run: a draining supervisor finishes whatever is left."""
        self.expect_clean_exit(self.supervisor(), "recovery run")

    # -- workload ----------------------------------------------------------------

    def mark_cycle_start(self) -> None:
        """Checks stay proportional to one cycle's work, however long the drill runs."""
        if (self.home / "authority.db").exists():
            self.base, self.base_effect = self.read(lambda q: q.last_ids())

    def edit_repo(self) -> None:
        """Create the repository, or change, add and delete a few files."""
        self.repo.mkdir(exist_ok=True)
        self.oracle.files_before = self.on_disk()
        files = sorted(self.repo.glob("*.py"))
        if not files:
            for i in range(REPO_FILES):
                self._write(self.repo / f"mod{i:03d}.py")
        else:
            for path in self.rng.sample(files, k=min(3, len(files))):
                self._write(path)
            for path in self.rng.sample(files, k=1):
                path.unlink()
            for _ in range(2):
                self._write(self.repo / f"mod{self.rng.randrange(10**6):06d}.py")
        self.oracle.files_after = self.on_disk()

    def on_disk(self) -> dict[str, bytes]:
        return {p.name: digest(p.read_bytes()) for p in self.repo.glob("*.py")}

    def _write(self, path: Path) -> None:
        token = self.rng.randrange(10**9)
        lines = [f"def f_{token}_{i}(x):\n    return x + {i}\n" for i in range(60)]
        path.write_text("".join(lines))

    def enqueue(self, extra: list[JobSpec] = ()) -> None:
        """Work for one cycle: an ingest, a wave of noops, sleeps that keep workers busy,
        two transcripts and a forced retention pass; ``extra`` first."""
        md = Memoryd(self.home, {"compact_max_bytes": self._compact_limit()})
        try:
            self.oracle.run = Projects(md).ingest(self.repo, PROJECT)["run"]
            specs = [
                *extra,
                *[JobSpec("noop")] * NOOPS_PER_CYCLE,
                *[JobSpec("sleep", {"seconds": SLEEP_SECONDS})] * SLEEPS_PER_CYCLE,
            ]
            ids = md.queue.enqueue_many(specs)
            self.oracle.effect_jobs.update(
                i for i, s in zip(ids, specs, strict=True) if s.kind in ("noop", "sleep")
            )
            md.queue.enqueue_many(self._archive_jobs())
        finally:
            md.close()

    def _compact_limit(self) -> int:
        """The project's compact limit (the setting counts only when the first cycle's
        ingest creates the project): its first repository and about
        ``COMPACT_GROWTH_FILES`` files more."""
        if self.compact_limit is None:
            sizes = [p.stat().st_size for p in self.repo.glob("*.py")]
            mean = sum(sizes) // max(1, len(sizes))
            self.compact_limit = sum(sizes) + COMPACT_GROWTH_FILES * mean
        return self.compact_limit

    def _archive_jobs(self) -> list[JobSpec]:
        """Two transcripts, one recent and one past its retention age, then a forced pass."""
        now = time.time()
        jobs = []
        for kind, age_days in (("recent", 1), ("old", ARCHIVE_OLD_DAYS)):
            session = f"{kind}-{len(self.oracle.sessions)}"
            token = f"zq{self.rng.randrange(10**9)}"
            self.oracle.sessions.append((session, kind, token))
            args = {
                "project": PROJECT,
                "session": session,
                "created_at": now - age_days * DAY,
                "content": f"user: where is {token} kept?\nassistant: {token} is in the vault",
                "turns": 2,
                "tools": [{"content": f"$ find {token}", "timestamp": None}],
                "allow_expired": True,  # the old one is due at once: the pass purges it
            }
            jobs.append(JobSpec(ARCHIVE_OP, {"op": "add", "args": args}))
        jobs.append(JobSpec(ARCHIVE_OP, {"op": "retention_run", "args": {"force": True}}))
        return jobs

    def sigkill(self, pid: int | None) -> None:
        if pid:
            signal_pid(pid, signal.SIGKILL)
