"""Every read stays inside the repository, and a file name
that is not UTF-8 never fails an ingest. Real CLI, real supervisor, real files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memoryd.base.config import READ_STEP_BYTES
from memoryd.ingest.jobs import BATCH
from memoryd.ingest.scan import Skipped, read_files
from memoryd.operations.api import Memoryd
from memoryd.queue import JobSpec
from tests.conftest import MEMORYD, clean_env, query, queue_counts
from tests.ingest.test_ingest import fts_paths, ingest

MARKER = "zyxoutsidemarker"  # one FTS token that only the outside file holds


def _outside(tmp_path: Path) -> Path:
    """A directory outside the repository with content that must never be indexed."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "notes.txt").write_text(f"{MARKER} private words\n")
    (out / "passwd").write_text(f"root:x:0:0:{MARKER}:/root:/bin/sh\n")
    return out


def _jobs(home: Path) -> dict[str, set[str]]:
    states: dict[str, set[str]] = {}
    for kind, state in query(home, "SELECT kind, state FROM jobs"):
        states.setdefault(kind, set()).add(state)
    return states


def _scan_applied_batches_pending(cli, home: Path) -> None:
    """Run a supervisor SIGKILLed at its Kth commit, K = 1, 2, ..., each from the same
    queued home, until the scan's effect is committed while its batches are not: the
    moment between scan and batch. How much one group commit holds depends on timing,
    so a run that got past that moment is redone from the queued home."""
    queued = home.with_name(home.name + "-queued")
    shutil.copytree(home, queued)
    for attempt in range(40):
        shutil.rmtree(home)
        shutil.copytree(queued, home)
        k = attempt % 8 + 1
        cli("run", "--drain", "--workers", "1", env={"MEMORYD_KILL_AT": f"after_commit:{k}"})
        jobs = _jobs(home)
        if jobs.get("ingest.scan") == {"done"} and "done" not in jobs.get(BATCH, set()):
            return
    raise AssertionError(f"no run stopped between the scan and its batches: {_jobs(home)}")


def _pid(home: Path, project: str) -> int:
    return query(home, "SELECT id FROM projects WHERE name = ?", (project,))[0][0]


@pytest.mark.slow
def test_directory_swapped_for_symlink_between_scan_and_batch_is_not_followed(cli, home, tmp_path):
    outside = _outside(tmp_path)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "top.txt").write_text("ordinary words at the top\n")
    (repo / "sub" / "notes.txt").write_text("ordinary words in sub\n")
    (repo / "sub" / "passwd").write_text("ordinary words in a file named passwd\n")
    assert cli("ingest", str(repo)).code == 0  # queued, no supervisor
    _scan_applied_batches_pending(cli, home)

    (repo / "sub").rename(tmp_path / "sub-moved")
    (repo / "sub").symlink_to(outside, target_is_directory=True)
    res = cli("run", "--drain", "--workers", "1")
    assert res.code == 0, res.stderr
    assert queue_counts(home)["dead"] == 0
    pid = _pid(home, "repo")
    assert fts_paths(home, pid, MARKER) == set()
    assert set(dict(query(home, "SELECT path, live FROM files"))) == {"top.txt"}
    skipped = query(home, "SELECT skipped FROM ingest_runs")[0][0]
    assert b"outside_root" in skipped
    search = cli("search", MARKER, "--project", "repo", "--json").json()
    assert search["status"] == "abstained" and search["items"] == []


@pytest.mark.slow
def test_crafted_batch_payload_naming_dotdot_reads_nothing_outside(cli, home, tmp_path):
    outside = _outside(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("ordinary words\n")
    res, summary = ingest(cli, repo)
    assert res.code == 0 and summary["complete"], res.stderr
    pid = _pid(home, "repo")
    md = Memoryd(home)
    try:
        run = md.db.query("SELECT max(id) FROM ingest_runs")[0][0]
        crafted = [
            [os.path.relpath(outside / "passwd", repo), 40],
            [str(outside / "notes.txt"), 40],  # absolute
            ["../../../../../../../../etc/passwd", 40],
            ["./a.txt/../../outside/notes.txt", 40],
        ]
        payload = {"run": run, "project_id": pid, "project": "repo", "root": str(repo)}
        md.queue.enqueue(JobSpec(BATCH, {**payload, "files": crafted, "dict": None}, "repo"))
        # a payload naming another root: the project's recorded root is used instead
        elsewhere = {**payload, "root": str(outside), "files": [["passwd", 40], ["a\0b", 1]]}
        md.queue.enqueue(JobSpec(BATCH, {**elsewhere, "dict": None}, "repo"))
    finally:
        md.close()
    res = cli("run", "--drain", "--workers", "1")
    assert res.code == 0, res.stderr
    assert _jobs(home)[BATCH] == {"done"}
    assert fts_paths(home, pid, MARKER) == set()
    assert fts_paths(home, pid, "root") == set()  # /etc/passwd was not read either
    assert [p for (p,) in query(home, "SELECT path FROM files")] == ["a.txt"]


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_is_skipped_and_counted(cli, home, tmp_path):
    """Chosen behaviour: such a file is skipped and counted as ``bad_name`` (its name
    could travel in no JSON payload nor be stored as text); the others are ingested."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(20):
        (repo / f"file_{i:02d}.txt").write_text(f"ordinary words of file {i}\n")
    (repo / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 named file\n")
    (repo / os.fsdecode(b"dir\xff")).mkdir()
    (repo / os.fsdecode(b"dir\xff") / "inner.txt").write_text("inside a badly named dir\n")
    res, summary = ingest(cli, repo)
    assert res.code == 0, res.stderr
    assert summary["complete"] and summary["dead_jobs"] == 0
    assert summary["files_ingested"] == 20
    assert summary["skipped"] == {"bad_name": 2}
    shown = {f["path"] for f in summary["skipped_files"]}
    assert shown == {"caf\\xe9.txt", "dir\\xff/"}, shown  # named, its bytes escaped
    assert query(home, "SELECT count(*) FROM files WHERE live = 1")[0][0] == 20


def test_a_repository_path_that_is_not_utf8_is_refused_clearly(cli, home, tmp_path):
    bad = tmp_path / os.fsdecode(b"repo\xe9")
    bad.mkdir()
    (bad / "a.txt").write_text("words\n")
    proc = subprocess.run(
        [*MEMORYD, "ingest", os.fsencode(bad)], env=clean_env(home), capture_output=True
    )
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr
    assert b"the repository path is not UTF-8" in proc.stderr


def _deep(repo: Path, levels: int, name: str) -> None:
    """A directory chain past PATH_MAX (made component by component), with ``name``
    at its bottom."""
    fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"deep words nobody can reach by path\n")
        os.close(out)
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_tree_holding_every_hostile_entry_at_once_is_ingested_around_them(cli, home, tmp_path):
    """Each entry the scan cannot take is skipped and counted on its own; none fails
    the run (a path past PATH_MAX once killed the scan job)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(5):
        (repo / f"ok_{i}.py").write_text(f"def hostile_neighbour_{i}():\n    return {i}\n")
    _deep(repo, 25, "deep.py")  # 5,000+ characters of path
    (repo / os.fsdecode(b"bad\xe9.py")).write_text("a name that is not UTF-8\n")
    os.mkfifo(repo / "pipe.py")
    (repo / "dangling.py").symlink_to(repo / "nowhere.py")
    (repo / "escape.py").symlink_to(_outside(tmp_path) / "notes.txt")
    (repo / "linked_dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (repo / "blob.py").write_bytes(b"\0binary\0" * 64)
    res, summary = ingest(cli, repo)
    assert res.code == 0, res.stderr
    assert summary["complete"] and summary["dead_jobs"] == 0, summary
    assert summary["files_ingested"] == 5
    assert summary["skipped"] == {
        "name_too_long": 1,
        "bad_name": 1,
        "special": 1,
        "broken_symlink": 1,
        "symlink_outside": 1,
        "symlink_dir": 1,
        "binary": 1,
    }, summary["skipped"]
    live = [p for (p,) in query(home, "SELECT path FROM files WHERE live = 1 ORDER BY path")]
    assert live == [f"ok_{i}.py" for i in range(5)]


def test_one_batch_read_judges_every_entry_as_a_fresh_open_would(tmp_path):
    """A batch's files read in one pass (directories kept open between files): a
    symlink inside is read through, one leading out or dangling, a directory swapped for
    a symlink, a crafted path and a FIFO are skipped with their reasons; a file larger
    than a read step comes whole."""
    outside = _outside(tmp_path)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "a.txt").write_text("a\n")
    big = b"x" * (3 * READ_STEP_BYTES + 5)
    (repo / "sub" / "big.txt").write_bytes(big)
    (repo / "sub" / "link.txt").symlink_to(repo / "sub" / "a.txt")
    (repo / "sub" / "out.txt").symlink_to(outside / "notes.txt")
    (repo / "sub" / "gone.txt").symlink_to(repo / "nowhere")
    (repo / "swapped").symlink_to(outside, target_is_directory=True)
    os.mkfifo(repo / "sub" / "pipe")
    rels = ["sub/a.txt", "sub/big.txt", "sub/link.txt", "sub/out.txt", "sub/gone.txt",
            "swapped/notes.txt", "../outside/notes.txt", "sub/pipe", "sub/missing"]  # fmt: skip
    skipped = Skipped()
    read = dict(read_files(repo, rels, 4 * READ_STEP_BYTES, skipped))
    assert read == {"sub/a.txt": b"a\n", "sub/big.txt": big, "sub/link.txt": b"a\n"}
    assert {(reason, path) for reason, path, _ in skipped.listed} == {
        ("symlink_outside", "sub/out.txt"),
        ("broken_symlink", "sub/gone.txt"),
        ("outside_root", "swapped/notes.txt"),
        ("outside_root", "../outside/notes.txt"),
        ("special", "sub/pipe"),
        ("vanished", "sub/missing"),
    }
