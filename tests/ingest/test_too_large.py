"""Files skipped for their size are named, with the limit and the setting that raises
it, in the ingest summary, human and JSON."""

from __future__ import annotations

from pathlib import Path

import orjson

from memoryd.base.config import SKIPPED_PATHS_NAMED

LIMIT = 1000


def repo(root: Path, large: int) -> list[str]:
    """A repository with two small files and ``large`` files over LIMIT; their paths."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "small.py").write_text("def small():\n    return 1\n")
    (root / "notes.md").write_text("# notes\n\nshort\n")
    names = []
    for i in range(large):
        path = root / "data" / f"dump{i}.csv"
        path.parent.mkdir(exist_ok=True)
        path.write_text("a,b\n" + "1,2\n" * LIMIT)
        names.append(f"data/dump{i}.csv")
    return names


def summary(res) -> dict:
    """The run's answer: the last line (progress events come before it)."""
    assert res.code == 0, res.stderr
    return orjson.loads(res.stdout.splitlines()[-1])


def test_the_summary_names_files_too_large_and_the_setting(cli, tmp_path):
    big = repo(tmp_path / "repo", SKIPPED_PATHS_NAMED + 2)
    env = {"MEMORYD_MAX_FILE_BYTES": str(LIMIT)}
    res = cli("ingest", str(tmp_path / "repo"), "--project", "p", "--wait", "--json", env=env)
    answer = summary(res)
    assert answer["files_ingested"] == 2 and answer["skipped"]["too_large"] == len(big)
    large = answer["too_large"]
    assert large["files"] == len(big) and large["max_file_bytes"] == LIMIT
    assert large["setting"] == "max_file_bytes"
    assert len(large["paths"]) == SKIPPED_PATHS_NAMED and set(large["paths"]) <= set(big)
    (tmp_path / "repo" / "data" / "dump0.csv").write_text("a,b\n")  # now small: ingested
    human = cli("ingest", str(tmp_path / "repo"), "--project", "p", "--wait", env=env)
    assert human.code == 0, human.stderr
    line = next(x for x in human.stdout.splitlines() if "too large" in x)
    assert f"over {LIMIT:,} bytes" in line and "MEMORYD_MAX_FILE_BYTES" in line
    assert "data/dump1.csv" in line and "data/dump0.csv" not in line
    assert "1 more" in line  # six too large, five named


def test_a_run_with_nothing_too_large_says_nothing_of_it(cli, tmp_path):
    repo(tmp_path / "repo", 0)
    res = cli("ingest", str(tmp_path / "repo"), "--project", "p", "--wait", "--json")
    assert summary(res)["too_large"] is None
    human = cli("ingest", str(tmp_path / "repo"), "--project", "p", "--wait")
    assert "too large" not in human.stdout
