"""Real repositories through the real CLI and supervisor."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.ingest.scan import scan
from memoryd.storage.authority import open_authority
from memoryd.storage.corpus import ready_index
from memoryd.text.terms import STOPWORDS
from tests.conftest import MEMORYD, clean_env, query, sigkill_after_some_batches
from tests.ingest.conftest import STDLIB_EXCLUDES

EXCLUDE_ARGS = [arg for pattern in STDLIB_EXCLUDES for arg in ("--exclude", pattern)]
WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]{6,30}(?![A-Za-z0-9_])")  # one FTS token


def ingest(cli, root: Path, *extra: str, **kw):
    res = cli("ingest", str(root), "--wait", "--workers", "2", "--json", *extra, **kw)
    lines = [orjson.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return res, lines[-1] if lines else None


def index_state(home: Path, project: str) -> dict:
    """What must be identical between an interrupted and an uninterrupted ingest."""
    pid = query(home, "SELECT id FROM projects WHERE name = ?", (project,))[0][0]
    files = query(
        home,
        "SELECT path, content_hash, size, lines FROM files WHERE project_id = ? AND live = 1",
        (pid,),
    )
    chunks = query(
        home,
        "SELECT f.path, c.id - f.chunk_first, c.content_hash, c.start_line, c.end_line"
        " FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.project_id = ?",
        (pid,),
    )
    fts = index_query(home, pid, f"SELECT count(*) FROM fts_{pid}")[0][0]
    return {"files": sorted(files), "chunks": sorted(chunks), "fts_rows": fts}


def index_query(home: Path, pid: int, sql: str, bindings: tuple = ()) -> list[tuple]:
    """``sql`` over the project's index as search reads it (a compact project's is
    built on the read-only connection first)."""
    with open_authority(home, load_config(home), readonly=True) as db:
        ready_index(db, pid)
        return db.query(sql, bindings)


def fts_paths(home: Path, pid: int, term: str) -> set[str]:
    """Paths whose indexed chunks match ``term`` (a quoted token, no user syntax)."""
    return {
        row[0]
        for row in index_query(
            home,
            pid,
            f"SELECT f.path FROM fts_{pid} JOIN chunks c ON c.id = fts_{pid}.rowid"
            f" JOIN files f ON f.id = c.file_id WHERE fts_{pid} MATCH ?",
            (f'body:"{term}"',),
        )
    }


def rare_word(text: str) -> str | None:
    """The least frequent identifier-like word of a file: a token only it is likely to
    hold (not a stopword: search never looks one up alone, and a packed block's index
    leaves it out where it stands alone)."""
    counts = Counter(w for w in WORD.findall(text) if w.lower() not in STOPWORDS)
    return min(counts, key=lambda w: (counts[w], -len(w), w)) if counts else None


@pytest.mark.slow
def test_stdlib_every_eligible_file_searchable_and_incremental(cli, home, stdlib_copy):
    res, summary = ingest(cli, stdlib_copy, *EXCLUDE_ARGS)
    assert res.code == 0, res.stderr
    assert summary["complete"] and summary["dead_jobs"] == 0
    eligible = scan(stdlib_copy, max_bytes=2 * 1024 * 1024, excludes=list(STDLIB_EXCLUDES))
    assert len(eligible.eligible) > 500 and summary["files_ingested"] == len(eligible.eligible)
    assert summary["skipped"]["binary"] > 0  # lib-dynload's shared objects and friends
    pid = query(home, "SELECT id FROM projects WHERE name = ?", (stdlib_copy.name,))[0][0]

    # Every eligible file: stored live, with its hash, and found in the index by a rare token.
    stored = dict(query(home, "SELECT path, content_hash FROM files WHERE live = 1"))
    assert stored == {e.path: e.content_hash for e in eligible.eligible}
    missing = []
    for e in eligible.eligible:
        text = (stdlib_copy / e.path).read_text(encoding="utf-8", errors="replace")
        word = rare_word(text)
        if word and e.path not in fts_paths(home, pid, word):
            missing.append(e.path)
    assert not missing, f"files not found by their own rarest word: {missing[:10]}"

    # A done batch keeps its file count, not its list: history names what it wrote.
    batches = query(home, "SELECT id, payload FROM jobs WHERE kind = 'ingest.batch'")
    assert all(isinstance(orjson.loads(p)["files"], int) for _, p in batches)
    puts = query(home, "SELECT job_id, ref FROM history WHERE kind = 'file.put'")
    assert {j for j, _ in puts} == {j for j, _ in batches} and len(puts) == len(stored)
    assert sum(orjson.loads(p)["files"] for _, p in batches) == len(stored)

    # Re-ingest of an unchanged tree: no batch work at all.
    batches_before = query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.batch'")[0][0]
    res, again = ingest(cli, stdlib_copy, *EXCLUDE_ARGS)
    assert res.code == 0 and again["complete"]
    assert again["unchanged"] == len(eligible.eligible) and again["files_ingested"] == 0
    assert query(home, "SELECT count(*) FROM jobs WHERE kind = 'ingest.batch'")[0][0] == (
        batches_before
    )

    # A modified and a deleted file are reflected after re-ingest.
    (stdlib_copy / "colorsys.py").write_text("def zanzibar_quokka_marker():\n    return 42\n")
    (stdlib_copy / "this.py").unlink()
    res, third = ingest(cli, stdlib_copy, *EXCLUDE_ARGS)
    assert res.code == 0 and third["files_ingested"] == 1 and third["retired"] == 1
    assert fts_paths(home, pid, "zanzibar_quokka_marker") == {"colorsys.py"}
    assert "colorsys.py" not in fts_paths(home, pid, "rgb_to_yiq")
    assert query(home, "SELECT live FROM files WHERE path = 'this.py'") == [(0,)]
    assert not query(
        home, "SELECT 1 FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = 'this.py'"
    )
    [(job, payload)] = query(  # the run's finalize keeps a count; history names the file
        home, "SELECT id, payload FROM jobs WHERE kind = 'ingest.finalize' ORDER BY id DESC LIMIT 1"
    )
    assert orjson.loads(payload)["retire"] == 1
    assert query(
        home, "SELECT ref FROM history WHERE kind = 'file.retire' AND job_id = ?", (job,)
    ) == [("this.py",)]


def _small_repo(root: Path) -> Path:
    """A generated repository of many small files, in many batches."""
    for d in range(12):
        pkg = root / f"pkg{d}"
        pkg.mkdir(parents=True)
        for f in range(25):
            body = "\n".join(f"def fn_{d}_{f}_{i}(x):\n    return x * {i}\n" for i in range(60))
            (pkg / f"mod{f}.py").write_text(body)
    return root


@pytest.mark.slow
def test_sigkill_mid_ingest_then_resume_equals_uninterrupted(cli, home, tmp_path, background):
    repo = _small_repo(tmp_path / "repo")
    small_batches = {"MEMORYD_INGEST_BATCH_TARGET_BYTES": "4096"}  # ~300 batches

    reference = tmp_path / "reference-home"
    res, summary = ingest(cli, repo, env=small_batches, home=reference)
    assert res.code == 0 and summary["complete"], res.stderr

    assert cli("ingest", str(repo), env=small_batches).code == 0  # enqueue only
    sup = background("run", "--workers", "2", env=small_batches)
    sigkill_after_some_batches(home, sup)
    partial = query(home, "SELECT files_done, files_total FROM ingest_runs")[0]
    assert 0 < partial[0] < partial[1]

    res, summary = ingest(cli, repo, env=small_batches)
    assert res.code == 0 and summary["complete"], res.stderr
    assert index_state(home, "repo") == index_state(reference, "repo")
    assert query(home, "PRAGMA integrity_check") == [("ok",)]


def test_bad_input_each_has_a_clear_outcome(cli, home, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "good.py").write_text("def ordinary_function():\n    pass\n")
    (repo / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e unicorns\n".encode("latin-1"))
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    with open(repo / "huge.log.txt", "wb") as fh:  # 50 MB, sparse
        fh.truncate(50 * 1024 * 1024)
    (repo / "passwd-link").symlink_to("/etc/passwd")
    (repo / "dangling").symlink_to(repo / "nowhere")
    (repo / "inside-link.py").symlink_to(repo / "good.py")
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitignore").write_text("*.tmp\n")
    (repo / "sub" / "scratch.tmp").write_text("ignored by the nested gitignore\n")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "dep.js").write_text("module.exports = 1\n")

    res, summary = ingest(cli, repo)
    assert res.code == 0, res.stderr
    assert summary["complete"] and summary["dead_jobs"] == 0
    skipped = summary["skipped"]
    assert skipped["binary"] == 1
    assert skipped["too_large"] == 1
    assert skipped["symlink_outside"] == 1
    assert skipped["broken_symlink"] == 1
    assert skipped["gitignore"] == 1
    assert skipped["default_ignore"] >= 1
    live = dict(query(home, "SELECT path, size FROM files WHERE live = 1"))
    assert skipped["hidden"] == 1  # sub/.gitignore: hidden names are skipped by default
    # every skipped file is listed with its reason (a pruned directory as one entry)
    listed = {(f["path"], f["reason"]) for f in summary["skipped_files"]}
    assert len(listed) == sum(skipped.values()) and summary["skipped_unlisted"] == 0
    assert {("blob.bin", "binary"), ("huge.log.txt", "too_large"),
            ("dangling", "broken_symlink"), ("passwd-link", "symlink_outside"),
            ("sub/scratch.tmp", "gitignore"), ("sub/.gitignore", "hidden"),
            ("node_modules/", "default_ignore")} <= listed  # fmt: skip
    assert set(live) == {"good.py", "latin1.txt", "inside-link.py"}
    # invalid UTF-8 was decoded with replacement, and the rest of the file is searchable
    pid = query(home, "SELECT id FROM projects")[0][0]
    assert fts_paths(home, pid, "unicorns") == {"latin1.txt"}

    missing = cli("ingest", str(tmp_path / "does-not-exist"), "--wait")
    assert missing.code == 2 and "no such directory" in missing.message
    not_dir = cli("ingest", str(repo / "good.py"))
    assert not_dir.code == 2 and "not a directory" in not_dir.message


PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _without_file_override() -> None:
    """In the child before exec: drop root's power to read any file (bounding set)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_unreadable_file_is_skipped_not_fatal(home, tmp_path):
    """chmod 000 stops only a process without CAP_DAC_OVERRIDE: as root, the ingest
    (and the supervisor and workers it starts) run with that capability dropped."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ok.py").write_text("print('readable')\n")
    secret = repo / "secret.py"
    secret.write_text("print('unreadable')\n")
    secret.chmod(0)
    proc = subprocess.run(
        [*MEMORYD, "ingest", str(repo), "--wait", "--workers", "1", "--json"],
        env=clean_env(home),
        capture_output=True,
        text=True,
        preexec_fn=_without_file_override if os.geteuid() == 0 else None,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    summary = orjson.loads(proc.stdout.splitlines()[-1])
    assert summary["complete"] and summary["skipped"] == {"unreadable": 1}
    assert query(home, "SELECT path FROM files WHERE live = 1") == [("ok.py",)]
