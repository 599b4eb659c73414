"""A compact project (no stored index while its source is small) under SIGKILL: a
supervisor killed before or after any commit of an ingest, its own or the one that
stores the index as the project grows past its limit, recovers to the files on
disk, the layout the size calls for, and the answers of a project indexed from the
start. Real CLI, real supervisor, real kills."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import digest
from memoryd.search import search
from memoryd.search import stats as stats_mod
from memoryd.storage import open_authority, rebuild
from memoryd.storage.corpus import compact_limit, live_hashes, project_id
from memoryd.storage.maintenance import integrity_check
from tests.conftest import query, queue_counts, run_cli

LIMIT = 40_000  # source bytes a compact project may hold
FILE_BYTES = 3_000  # about
SETTINGS = {"MEMORYD_COMPACT_MAX_BYTES": str(LIMIT), "MEMORYD_INGEST_BATCH_FILES": "2"}
WORDS = ["kiln", "glaze", "ledger", "harbor", "lantern", "orchard", "quarry", "sextant",
         "thimble", "walnut", "bellows", "compass", "furnace", "mortar", "pulley"]  # fmt: skip
QUERIES = ["kiln glaze", "harbor lantern ledger", "walnut", "bellows furnace", "sextant"]
KILL_POINTS = ("before_commit", "after_commit")
MAX_COMMITS = 16  # a run of this test commits fewer times: the loop ends before


def _write(path: Path, rng: random.Random) -> None:
    lines, size = [], 0
    while size < FILE_BYTES:
        a, b, c = rng.sample(WORDS, 3)
        line = f"def {a}_{rng.randrange(10**6)}(x):\n    return '{b} {c}'  # {a} and {c}\n"
        lines.append(line)
        size += len(line)
    path.write_text("".join(lines))


def _repo(tmp_path: Path, files: int, rng: random.Random) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(files):
        _write(repo / f"m{i:02d}.py", rng)
    return repo


def _grow(repo: Path, rng: random.Random, add: int) -> None:
    """Change two files, delete one and add ``add``."""
    files = sorted(repo.glob("*.py"))
    for path in files[:2]:
        _write(path, rng)
    files[-1].unlink()
    for i in range(add):
        _write(repo / f"n{i:02d}.py", rng)


def _state(home: Path) -> tuple[bool, bool]:
    """(compact, the ingest run finished) as a killed supervisor left them."""
    with open_authority(home, load_config(home), readonly=True) as db:
        compact = bool(compact_limit(db, project_id(db, "repo")))
    finished = query(home, "SELECT count(*) FROM ingest_runs WHERE finished_at IS NULL")[0][0] == 0
    return compact, finished


def _answers(home: Path) -> list:
    stats_mod.clear()
    with open_authority(home, load_config(home), readonly=True) as db:
        out = []
        for q in QUERIES:
            r = search(db, "repo", q, limit=10)
            out.append(
                [r["status"], *[(i["path"], i["start_line"], i["score"]) for i in r["items"]]]
            )
        return out


def _check(home: Path, repo: Path, compact: bool, reference: list) -> None:
    """Recovered: every job done, the files on disk and nothing else, the layout the
    size calls for, the index rebuilt equal, and the reference's answers."""
    counts = queue_counts(home)
    assert counts["dead"] == 0 and counts["queued"] == 0, counts
    with open_authority(home, load_config(home), readonly=True) as db:
        pid = project_id(db, "repo")
        on_disk = {p.name: digest(p.read_bytes()) for p in repo.glob("*.py")}
        assert live_hashes(db, pid) == on_disk
        assert bool(compact_limit(db, pid)) is compact
        assert integrity_check(db) == ["ok"]
    with open_authority(home, load_config(home)) as db:
        assert rebuild.verify(db)["equal"]
    assert _answers(home) == reference


@pytest.mark.slow
@pytest.mark.parametrize("crosses", [False, True], ids=["stays-compact", "compact-to-indexed"])
def test_sigkill_at_every_commit_of_an_ingest_of_a_compact_project(cli, home, tmp_path, crosses):
    rng = random.Random(34)
    repo = _repo(tmp_path, 10, rng)  # about 30 KB: compact
    assert cli("ingest", str(repo), "--wait", env=SETTINGS).code == 0
    assert _state(home) == (True, True)
    _grow(repo, rng, add=5 if crosses else 1)  # about 42 KB past the limit, or 30 KB
    size = sum(p.stat().st_size for p in repo.glob("*.py"))
    assert (size > LIMIT) is crosses
    reference_home = tmp_path / "reference"  # the final files, indexed from the start
    done = run_cli("ingest", str(repo), "--wait", home=reference_home,
                   env={"MEMORYD_COMPACT_MAX_BYTES": "0"})  # fmt: skip
    assert done.code == 0, done.stderr
    reference = _answers(reference_home)
    assert cli("ingest", str(repo), env=SETTINGS).code == 0  # queued: no supervisor yet
    queued = tmp_path / "queued"
    shutil.copytree(home, queued)
    seen = set()
    for point in KILL_POINTS:
        for k in range(1, MAX_COMMITS + 1):
            shutil.rmtree(home)
            shutil.copytree(queued, home)
            killed = cli("run", "--drain", "--workers", "1",
                         env={**SETTINGS, "MEMORYD_KILL_AT": f"{point}:{k}"})  # fmt: skip
            if killed.code == 0:  # the run committed fewer than k times: every commit hit
                break
            seen.add(_state(home))
            recovered = cli("run", "--drain", "--workers", "1", env=SETTINGS)
            assert recovered.code == 0, recovered.stderr
            _check(home, repo, not crosses, reference)
        else:
            raise AssertionError(f"a run committed more than {MAX_COMMITS} times")
    # kills left the project compact with its run unfinished, and (when it grows)
    # indexed: the commit that stores the index was hit on both sides (whether a kill
    # after it also finds the run unfinished depends on how the supervisor groups the
    # run's last jobs into commits)
    assert (True, False) in seen
    assert any(not compact for compact, _ in seen) is crosses
