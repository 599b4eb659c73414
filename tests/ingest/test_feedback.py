"""The user is told what is happening with an ingest."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
from pathlib import Path

import apsw
import orjson
import pytest
from rich.console import Console

from memoryd.faces.cli import ingest as cli_mod
from memoryd.faces.cli.output import Console as CliConsole
from memoryd.ingest import progress
from memoryd.ingest.jobs import BATCH
from memoryd.ingest.progress import ScanProgress
from memoryd.ingest.scan import scan
from memoryd.operations.api import Memoryd
from memoryd.queue import JobSpec
from tests.conftest import (
    MEMORYD,
    clean_env,
    in_sleep,
    query,
    queue_counts,
    wait_for,
    worker_pids,
)
from tests.workers.test_wal_pressure import generated_repo

MISSING_PROJECT = 987654321


@pytest.mark.slow
def test_queued_ingest_without_supervisor_is_explained_end_to_end(cli, home, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ledger.py").write_text("def reconcile_quarterly_ledger():\n    return 0\n")

    first = cli("ingest", str(repo))
    assert first.code == 0, first.stderr
    assert "queued: ingest run 1" in first.stdout
    assert "no supervisor is running" in first.stdout and "memoryd run --drain" in first.stdout
    second = cli("ingest", str(repo), "--json")
    assert second.json()["joined"] and second.json()["run"] == 1
    assert query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.scan'") == [(1,)]
    assert "already queued: ingest run 1" in cli("ingest", str(repo)).stdout

    st = cli("status", "--json").json()
    assert st["supervisor"] is None and st["waiting_without_supervisor"] == 1
    assert "no supervisor is running" in " ".join(cli("status").stdout.split())

    for q in ("reconcile quarterly ledger", "zebra"):
        res = cli("search", q, "--project", "repo")
        assert res.code == 1
        assert "first ingest of project 'repo' (run 1) has not finished" in res.message
        assert "memoryd run --drain" in res.message
    assert cli("search", "zebra", "--json").json()["error"] == "INGEST_PENDING"

    assert cli("run", "--drain", "--workers", "1").code == 0
    assert cli("status", "--json").json()["waiting_without_supervisor"] == 0
    res = cli("search", "zebra", "--project", "repo", "--json")
    assert res.code == 0 and res.json()["status"] == "abstained"
    res = cli("search", "reconcile quarterly ledger", "--project", "repo", "--json")
    assert res.json()["items"][0]["path"] == "ledger.py"
    # a later plain ingest queues a new scan: the first one ran
    assert "queued: ingest run 2" in cli("ingest", str(repo)).stdout


def _repo(tmp_path: Path, files: int = 3) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(files):
        (repo / f"mod_{i}.py").write_text(f"def function_number_{i}():\n    return {i}\n")
    return repo


def _terminal_sigint() -> None:
    """A terminal's job starts with Ctrl-C at its default; a process started with SIGINT
    ignored (as this test run may have been, by whatever started it) keeps ignoring it,
    and Python then installs no KeyboardInterrupt at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_ingest_wait(home: Path, repo: Path, *options: str) -> tuple[int, str]:
    """Run `ingest --wait` as a terminal's foreground job, Ctrl-C it once a worker sits
    in the project's sleep job, and return its exit code and stderr (collapsed)."""
    proc = subprocess.Popen(
        [*MEMORYD, "ingest", str(repo), *options, "--wait", "--workers", "1"],
        env=clean_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=_terminal_sigint,
    )
    try:
        workers = wait_for(lambda: worker_pids(home), what="a supervisor's worker")
        wait_for(lambda: in_sleep(workers[0]), what="the worker in the sleep job")
        # A supervisor already running has its worker asleep before `ingest` even starts:
        # wait for the command itself to sleep in its follow loop (not in its imports).
        wait_for(lambda: in_sleep(proc.pid), what="`ingest --wait` in its follow loop")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole group
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Aborted!" not in stderr and "Traceback" not in stderr
    return proc.returncode, " ".join(stderr.split())


# A job of the project claimed first holds the only worker: the run cannot end
# before Ctrl-C comes, whatever the machine's speed.
SLEEP = ("sleep", "--payload", '{"seconds": 600}', "--project", "repo", "--priority", "9")


@pytest.mark.slow
def test_ctrl_c_during_ingest_wait_says_what_is_left_and_exits_130(cli, home, tmp_path):
    repo = _repo(tmp_path)
    options = ("--project", "repo", "--exclude", "docs and notes/", "--include-hidden")
    assert cli("ingest", str(repo), *options).code == 0  # the scan, queued
    assert cli("jobs", "add", *SLEEP).code == 0
    code, message = _interrupt_ingest_wait(home, repo, *options)
    assert code == 130, message
    left = query(home, "SELECT count(*) FROM jobs WHERE state != 'done'")[0][0]
    done = "(the scan had not finished|0 of 3 files indexed)"  # the sleep holds the batch
    assert re.search(
        f"interrupted: ingest run 1 of project 'repo': {done}, {left} jobs left in the queue"
        r" \(nothing committed is lost\)",
        message,
    ), message
    # the hint repeats the run's own options: following it goes on with the same scan
    hint = f"memoryd ingest {repo} --project repo --exclude 'docs and notes/' --include-hidden"
    assert f"resume with `memoryd run --drain`, or `{hint} --wait`" in message
    assert cli("status", "--json").json()["supervisor"] is None  # ours stopped with us


@pytest.mark.slow
def test_ctrl_c_while_following_a_running_supervisor_leaves_it_running(
    cli, home, tmp_path, background
):
    repo = _repo(tmp_path)
    assert cli("jobs", "add", *SLEEP).code == 0
    sup = background("run", "--workers", "1")
    sup.wait_running(1)
    code, message = _interrupt_ingest_wait(home, repo)
    assert code == 130, message
    assert "interrupted: ingest run 1 of project 'repo'" in message
    assert "the running supervisor goes on with them" in message
    assert sup.alive()
    assert sup.terminate() == 0


def _queue_with_a_doomed_batch(cli, home: Path, repo: Path) -> None:
    """Queue a plain ingest, and beside it a batch of its run that dies at its first
    attempt (its project id names no project)."""
    res = cli("ingest", str(repo), "--json")
    run = res.json()["run"]
    md = Memoryd(home)
    try:
        payload = {"run": run, "project_id": MISSING_PROJECT, "project": "repo",
                   "root": str(repo), "files": [["mod_0.py", 10]]}  # fmt: skip
        md.queue.enqueue(JobSpec(BATCH, payload, project="repo", max_attempts=1))
    finally:
        md.close()


@pytest.mark.slow
def test_an_incomplete_ingest_names_its_dead_jobs_reasons(cli, home, tmp_path):
    repo = _repo(tmp_path)
    _queue_with_a_doomed_batch(cli, home, repo)
    res = cli("ingest", str(repo), "--wait", "--workers", "1", "--json")  # joins that run
    summary = orjson.loads(res.stdout.splitlines()[-1])
    assert summary["dead_jobs"] == 1
    [reason] = summary["dead_reasons"]
    assert reason["kind"] == BATCH and reason["jobs"] == 1
    assert f"no project with id {MISSING_PROJECT} and a repository root" in reason["error"]

    _queue_with_a_doomed_batch(cli, home, repo)
    res = cli("ingest", str(repo), "--wait", "--workers", "1")
    text = " ".join(res.stdout.split())
    assert "1 dead ingest.batch: " in text
    assert f"no project with id {MISSING_PROJECT} and a repository root" in text
    assert "see `memoryd jobs dead`" in text

    res = cli("ingest", str(repo), "--wait")  # a new run: no dead job of its own
    assert "dead" not in res.stdout


@pytest.mark.slow
def test_plain_progress_lines_when_stderr_is_not_a_terminal(cli, home, tmp_path):
    repo = _repo(tmp_path, files=40)
    res = cli("ingest", str(repo), "--wait", env={"MEMORYD_PROGRESS_LINE_SECONDS": "0"})
    assert res.code == 0, res.stderr
    lines = res.stderr.splitlines()
    assert lines and all(line.startswith("ingest run 1: ") for line in lines), res.stderr
    assert "\x1b" not in res.stderr  # no terminal control codes in a log
    assert "repo: complete: 40 files" in res.stdout


def test_a_scan_reports_the_files_it_found_before_it_commits(tmp_path):
    repo = _repo(tmp_path, files=7)
    home = tmp_path / "home"
    home.mkdir()
    result = scan(repo, max_bytes=1 << 20, on_eligible=ScanProgress(home, 5, period=0.0))
    assert len(result.eligible) == 7
    assert progress.discovered(home, 5) == 7
    progress.clear(home, 5)
    assert progress.discovered(home, 5) == 0 and not progress.progress_path(home, 5).exists()


def test_the_terminal_bar_shows_files_found_and_leaves_nothing_behind(monkeypatch):
    """On a terminal: files found while scanning, and no stale bar once the run ends
    (a no-op rerun: scanned with nothing to do); the summary prints on a clean line."""
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120)
    monkeypatch.setattr(cli_mod, "err", CliConsole(stderr=True, rich=terminal))
    run = {"id": 2, "scanned_at": None, "discovered": 42, "files_done": 0, "files_total": 0,
           "bytes_done": 0, "bytes_total": 0, "finished_at": None, "unchanged": 0}  # fmt: skip
    with cli_mod.IngestProgress(as_json=False, line_seconds=10.0) as progress:
        progress(run)
        progress({**run, "scanned_at": 1.0, "finished_at": 2.0, "unchanged": 42})
    output = screen.getvalue()
    assert "42 files found" in output
    assert output.endswith("\x1b[2K")  # the bar's line is erased when it stops


def test_the_terminal_bar_shows_the_runs_jobs_once_its_files_are_in(monkeypatch):
    """Once every file is indexed the run's jobs go on (the index merge, the vectors):
    the bar names them with the jobs done and left instead of sitting at 100%."""
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120)
    monkeypatch.setattr(cli_mod, "err", CliConsole(stderr=True, rich=terminal))
    run = {"id": 2, "scanned_at": 1.0, "discovered": 9, "files_done": 9, "files_total": 9,
           "bytes_done": 900, "bytes_total": 900, "finished_at": 2.0, "unchanged": 0}  # fmt: skip
    with cli_mod.IngestProgress(as_json=False, line_seconds=10.0) as progress:
        progress(run)
        progress({**run, "stage": "packing", "jobs_done": 3, "jobs_left": 1})
        shown = screen.getvalue()
    assert "packing" in shown and "3 jobs done, 1 left" in shown


@pytest.mark.slow
def test_ingest_wait_reports_the_pack_jobs_until_its_summary(cli, home, tmp_path):
    """``--wait --json`` goes on reporting after the files, through the run's pack jobs
    (the index merged in bounded steps, each a job), and its summary's time covers them."""
    repo = generated_repo(tmp_path / "repo", files=16, kib=128, seed=5)
    env = {"MEMORYD_INDEX_MERGE_STEP_PAGES": "16", "MEMORYD_COMPACT_MAX_BYTES": "0"}
    res = cli("ingest", str(repo), "--wait", "--workers", "2", "--json", env=env)
    assert res.code == 0, res.stderr
    events = [orjson.loads(line) for line in res.stdout.splitlines()]
    summary, progress_events = events[-1], events[:-1]
    packing = [e for e in progress_events if e.get("stage") == "packing"]
    pack_jobs = query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.pack'")[0][0]
    assert pack_jobs > 2 and packing, "the merge must take several jobs to tell"
    assert all(e["files_done"] == e["files_total"] for e in packing)
    assert progress_events.index(packing[0]) > max(
        i for i, e in enumerate(progress_events) if "stage" not in e
    )  # after every files event
    done = [e["jobs_done"] for e in packing]
    assert done == sorted(done) and done[-1] < pack_jobs and all(e["jobs_left"] for e in packing)
    started, last = query(
        home, "SELECT min(created_at), max(finished_at) FROM jobs WHERE project = 'repo'"
    )[0]
    assert summary["seconds"] >= last - started  # end to end: the last pack job included


@pytest.mark.slow
def test_search_of_a_project_whose_first_ingest_died_points_at_the_dead_jobs(cli, home, tmp_path):
    repo = _repo(tmp_path)
    assert cli("ingest", str(repo)).code == 0
    with apsw.Connection(str(home / "authority.db")) as conn:  # the scan will find no root
        conn.execute("UPDATE projects SET root = NULL WHERE name = 'repo'")
    res = cli("run", "--drain", "--workers", "1", env={"MEMORYD_MAX_ATTEMPTS": "1"})
    assert res.code == 0, res.stderr
    assert queue_counts(home)["dead"] == 1
    res = cli("search", "zebra", "--project", "repo")
    assert res.code == 1
    assert "first ingest of project 'repo' (run 1) has not finished" in res.message
    assert "its remaining jobs are dead: see `memoryd jobs dead`" in res.message


def test_the_summary_counts_bytes_in_the_units_projects_shows(cli, home, tmp_path):
    """One unit convention in human output: the ingest summary's size and rate are in
    the binary units ``projects`` lists the source in."""
    repo = _repo(tmp_path, files=3)
    res = cli("ingest", str(repo), "--wait", env={"COLUMNS": "200"})
    assert res.code == 0, res.stderr
    listed = cli("projects", env={"COLUMNS": "200"}).stdout
    size = re.search(r"\d+(?:\.\d)? (?:KiB|MiB|GiB|B)\b", listed).group(0)
    assert f"({size}) ingested" in res.stdout, (res.stdout, listed)
    assert re.search(r"\d (?:KiB|MiB|GiB|B)/s", res.stdout), res.stdout
    assert " MB" not in res.stdout
