"""Randomized crash drills: SIGKILL the supervisor, a worker or both, restart, verify.

Each cycle edits a generated repository, enqueues its ingest and a wave of
``noop`` jobs, starts ``memoryd run`` and kills it at a random moment or at a
named kill point (:mod:`memoryd.killpoints`). A draining supervisor then
finishes the work, and the drill checks the crash contract:

- no committed job lost: every job seen done before the kill is still done,
  with the same finish time (so it was not run again);
- no effect applied twice: one effect row per done ``noop`` job, none twice;
- every job ends done (none dead);
- the index equals the repository (same paths and content hashes);
- ``rebuild --verify`` equal and ``PRAGMA integrity_check`` ok;
- archive: every recent transcript is live and found by search, every
  transcript past its retention age is expired and never returned, and the
  archive's derived postings match its canonical payloads.

Each cycle also archives two transcripts (one recent, one past its age) and
runs a forced retention pass, so kills land in the retention worker too: at
random moments and at the archive's kill points (mid-wave, after a flush).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

from memoryd.api import Memoryd
from memoryd.archive.jobs import ARCHIVE_OP
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.transcripts import doc_id
from memoryd.config import SUPERVISOR_STATE_FILE, load_config
from memoryd.ingest.chunking import digest
from memoryd.killpoints import ENV as KILL_ENV
from memoryd.killpoints import NAMES as KILL_POINTS
from memoryd.killpoints import ONCE_ENV
from memoryd.killpoints import RETENTION_NAMES as RETENTION_KILL_POINTS
from memoryd.queue import JobSpec
from memoryd.storage import open_authority

REPO_FILES = 40
DAY = 86400.0
ARCHIVE_OLD_DAYS = 200  # past every class's default age
ARCHIVE_RECHECK = 20  # earlier transcripts re-checked each cycle, at random
NOOPS_PER_CYCLE = 500
SLEEPS_PER_CYCLE = 16  # keeps workers busy for a moment, so random kills land mid-work
KILL_DELAY = (0.1, 0.7)  # seconds after the supervisor starts: a random kill lands mid-work
SLEEP_SECONDS = 0.05
RUN_TIMEOUT = 120.0
PROJECT = "drill-repo"


class Drill:
    def __init__(self, home: Path, *, seed: int, workers: int) -> None:
        self.home = home
        self.repo = home / "drill-repo"
        self.rng = random.Random(seed)
        self.workers = workers
        self.kills: Counter = Counter()
        self.violations: list[str] = []
        self.sessions: list[tuple[str, str, str]] = []  # (session, "recent"|"old", token)
        self.base = self.base_effect = 0  # largest job / effect id before this cycle

    # -- processes -------------------------------------------------------------

    def _cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "memoryd.cli", *args, "--home", str(self.home)]

    def _drain(self) -> None:
        proc = subprocess.run(
            self._cmd("run", "--drain", "--workers", str(self.workers)),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            self.violations.append(f"recovery run failed: {proc.stderr.strip()[-500:]}")

    def _start_supervisor(self, kill_at: str | None, once: Path) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k not in (KILL_ENV, ONCE_ENV)}
        if kill_at:
            env[KILL_ENV] = kill_at
            env[ONCE_ENV] = str(once)  # a respawned worker must not die there again
        return subprocess.Popen(
            self._cmd("run", "--drain", "--workers", str(self.workers)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _supervisor_state(self, sup: subprocess.Popen) -> dict:
        try:
            state = orjson.loads((self.home / SUPERVISOR_STATE_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return state if state.get("pid") == sup.pid else {}

    def _worker_pids(self, sup: subprocess.Popen) -> list[int]:
        return [w["pid"] for w in self._supervisor_state(sup).get("workers", [])]

    # -- workload --------------------------------------------------------------

    def _edit_repo(self) -> None:
        """Create the repository, or change, add and delete a few files."""
        self.repo.mkdir(exist_ok=True)
        files = sorted(self.repo.glob("*.py"))
        if not files:
            for i in range(REPO_FILES):
                self._write(self.repo / f"mod{i:03d}.py")
            return
        for path in self.rng.sample(files, k=min(3, len(files))):
            self._write(path)
        for path in self.rng.sample(files, k=1):
            path.unlink()
        for _ in range(2):
            self._write(self.repo / f"mod{self.rng.randrange(10**6):06d}.py")

    def _write(self, path: Path) -> None:
        token = self.rng.randrange(10**9)
        lines = [f"def f_{token}_{i}(x):\n    return x + {i}\n" for i in range(60)]
        path.write_text("".join(lines))

    def _enqueue(self) -> None:
        """Work for one cycle: an ingest, a wave of noops, and sleeps that keep workers busy."""
        md = Memoryd(self.home)
        try:
            md.ingest(self.repo, PROJECT)
            md.add_jobs("noop", count=NOOPS_PER_CYCLE)
            md.add_jobs("sleep", count=SLEEPS_PER_CYCLE, payload={"seconds": SLEEP_SECONDS})
            md.queue.enqueue_many(self._archive_jobs())
        finally:
            md.close()

    def _archive_jobs(self) -> list[JobSpec]:
        """Two transcripts, one recent and one past its retention age, then a forced pass."""
        now = time.time()
        jobs = []
        for kind, age_days in (("recent", 1), ("old", ARCHIVE_OLD_DAYS)):
            session = f"{kind}-{len(self.sessions)}"
            token = f"zq{self.rng.randrange(10**9)}"
            self.sessions.append((session, kind, token))
            args = {
                "project": PROJECT,
                "session": session,
                "created_at": now - age_days * DAY,
                "content": f"user: where is {token} kept?\nassistant: {token} is in the vault",
                "turns": 2,
                "tools": [{"content": f"$ find {token}", "timestamp": None}],
            }
            jobs.append(JobSpec(ARCHIVE_OP, {"op": "add", "args": args}))
        jobs.append(JobSpec(ARCHIVE_OP, {"op": "retention_run", "args": {"force": True}}))
        return jobs

    # -- one cycle -------------------------------------------------------------

    def cycle(self, n: int) -> None:
        self._mark_cycle_start()
        self._edit_repo()
        self._enqueue()
        target = self.rng.choice(["supervisor", "supervisor", "worker", "both", "retention"])
        point = None
        if target == "supervisor":
            point = self.rng.choice([None, *KILL_POINTS])
        elif target == "retention":
            point = self.rng.choice([None, *RETENTION_KILL_POINTS])
        kill_at = f"{point}:{self.rng.randint(1, 4) if target == 'supervisor' else 1}"
        once = self.home / f"killed-{n}"
        sup = self._start_supervisor(kill_at if point else None, once)
        if target == "retention":
            done_before = self._kill_retention(sup, point, once)
        else:
            done_before = self._kill(sup, target, point)
        self._drain()
        self._verify(n, done_before)

    def _kill(self, sup: subprocess.Popen, target: str, point: str | None) -> dict[int, float]:
        """Kill as planned; return the done jobs a reader saw just before the kill."""
        if point:
            try:
                code = sup.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                sup.kill()
                sup.wait()
                raise
            self.kills[point if code == -signal.SIGKILL else "not_reached"] += 1
            return self._done_jobs()
        time.sleep(self.rng.uniform(*KILL_DELAY))
        done = self._done_jobs()
        workers = self._worker_pids(sup)
        if sup.poll() is not None:
            self.kills["finished_before_kill"] += 1
            return done
        if target in ("worker", "both") and workers:
            _sigkill(self.rng.choice(workers))
        if target in ("supervisor", "both"):
            _sigkill(sup.pid)
        if target == "worker":
            time.sleep(self.rng.uniform(0.0, 0.3))
            _sigkill(sup.pid) if sup.poll() is None else None
        sup.wait(timeout=RUN_TIMEOUT)
        self.kills[f"random_{target}"] += 1
        return done

    def _kill_retention(self, sup: subprocess.Popen, point: str | None, once: Path):
        """Kill the retention worker (at a named point, or at a random moment) while its
        supervisor keeps going: it must respawn it and redo the archive job."""
        if point is None:
            time.sleep(self.rng.uniform(*KILL_DELAY))
            pid = self._supervisor_state(sup).get("retention_worker")
            if pid and sup.poll() is None:
                _sigkill(pid)
                self.kills["random_retention"] += 1
            else:
                self.kills["finished_before_kill"] += 1
        done = self._done_jobs()
        sup.wait(timeout=RUN_TIMEOUT)
        if point:
            self.kills[point if once.exists() else "not_reached"] += 1
        return done

    # -- checks ----------------------------------------------------------------

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with open_authority(self.home, load_config(self.home), readonly=True) as db:
            return db.query(sql, args)

    def _done_jobs(self) -> dict[int, float]:
        """Done jobs of this cycle (earlier cycles were verified when they ended)."""
        if not (self.home / "authority.db").exists():
            return {}
        return dict(
            self._query(
                "SELECT id, finished_at FROM jobs WHERE id > ? AND state = 'done'", (self.base,)
            )
        )

    def _mark_cycle_start(self) -> None:
        """Checks stay proportional to one cycle's work, however long the drill runs."""
        if not (self.home / "authority.db").exists():
            self.base = self.base_effect = 0
            return
        self.base = self._query("SELECT coalesce(max(id), 0) FROM jobs")[0][0]
        self.base_effect = self._query("SELECT coalesce(max(id), 0) FROM job_effects")[0][0]

    def _verify(self, n: int, done_before: dict[int, float]) -> None:
        def fail(message: str) -> None:
            self.violations.append(f"cycle {n}: {message}")

        done_after = self._done_jobs()
        for job, finished in done_before.items():
            if job not in done_after:
                fail(f"job {job} was done before the kill and is not now")
            elif done_after[job] != finished:
                fail(f"job {job} was done before the kill and ran again")
        # every job of every cycle: the states other than done have partial indexes
        for job, state, error in self._query(
            "SELECT id, state, last_error FROM jobs WHERE state IN ('queued', 'failed')"
            " UNION ALL SELECT id, state, last_error FROM jobs WHERE state = 'claimed'"
            " UNION ALL SELECT id, state, last_error FROM jobs WHERE state = 'dead'"
        ):
            fail(f"job {job} ended {state}: {error}")
        applied = Counter(
            job for (job,) in self._query(
                "SELECT job_id FROM job_effects WHERE id > ?", (self.base_effect,))
        )  # fmt: skip
        for job, count in applied.items():
            if count > 1:
                fail(f"job {job} applied {count} times")
            if job <= self.base:
                fail(f"job {job} of an earlier cycle was applied again")
        with_effects = self._query(
            "SELECT id FROM jobs WHERE id > ? AND kind IN ('noop', 'sleep')", (self.base,)
        )
        missing = [job for (job,) in with_effects if job not in applied]
        if missing:
            fail(f"{len(missing)} done noop/sleep jobs have no effect row")
        indexed = dict(
            self._query(
                "SELECT f.path, f.content_hash FROM files f JOIN projects p ON p.id = f.project_id"
                " WHERE p.name = ? AND f.live = 1",
                (PROJECT,),
            )
        )
        on_disk = {p.name: digest(p.read_bytes()) for p in self.repo.glob("*.py")}
        if indexed != on_disk:
            fail(f"index differs from the repository: {len(indexed)} vs {len(on_disk)} files")
        if self._query("PRAGMA integrity_check") != [("ok",)]:
            fail("integrity_check failed")
        self._verify_archive(fail)
        md = Memoryd(self.home)
        try:
            verify = md.rebuild(verify=True)
        finally:
            md.close()
        if not verify["equal"]:
            fail(f"rebuild --verify differs: {verify['mismatches']}")

    def _verify_archive(self, fail: Callable[[str], None]) -> None:
        """After recovery and one more complete forced pass (a killed add may have been
        redone after the cycle's pass): recent transcripts live and found, old ones
        expired and never returned. Reads take no retrieval leases (those protect)."""
        with ArchiveOwner(self.home, load_config(self.home)) as owner:
            owner.maintenance.tick(force=True)
            earlier = self.sessions[:-2]
            sample = self.rng.sample(earlier, k=min(ARCHIVE_RECHECK, len(earlier)))
            for session, kind, token in [*self.sessions[-2:], *sample]:
                versions = owner.store.versions(doc_id("s", PROJECT, session))
                statuses = {v.status for v in versions}
                hits = owner.store.search(PROJECT, [token], limit=10)
                returned = any(hit.session == session for hit in hits)
                if kind == "recent" and (statuses != {"live"} or not returned):
                    fail(f"recent transcript {session} is {statuses}, found={returned}")
                if kind == "old" and (statuses != {"expired"} or returned):
                    fail(f"old transcript {session} is {statuses}, found={returned}")
            postings = owner.store.verify_postings()
            if not postings["ok"]:
                fail(f"archive postings differ from payloads: {postings}")


def _sigkill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def run_drill(
    *,
    cycles: int,
    seed: int,
    workers: int = 2,
    home: Path | None = None,
    on_cycle: Callable[[int, dict], None] | None = None,
) -> dict:
    """Run ``cycles`` kill-and-recover cycles; ``home`` defaults to a scratch directory."""
    scratch = None if home else Path(tempfile.mkdtemp(prefix="memoryd-drill-"))
    drill = Drill(Path(home or scratch), seed=seed, workers=workers)
    drill.home.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        for n in range(1, cycles + 1):
            drill.cycle(n)
            if on_cycle:
                on_cycle(n, {"kills": dict(drill.kills), "violations": len(drill.violations)})
        jobs = drill._query("SELECT count(*) FROM jobs")[0][0]
        effects = drill._query("SELECT count(*) FROM job_effects")[0][0]
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return {
        "ok": not drill.violations,
        "cycles": cycles,
        "seed": seed,
        "workers": workers,
        "kills": dict(sorted(drill.kills.items())),
        "violations": drill.violations,
        "jobs": jobs,
        "effects": effects,
        "seconds": round(time.monotonic() - start, 1),
    }
