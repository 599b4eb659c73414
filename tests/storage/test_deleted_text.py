"""Text a deletion path removes leaves no byte in the authority (its
free pages, its FTS5 segments, its zstd frames) nor its WAL once memoryd has stopped:
a file retired by a re-ingest (deleted or changed), a removed project's files and
memory records."""

from __future__ import annotations

import subprocess
from pathlib import Path

import zstandard

from tests.conftest import CLI_TIMEOUT, MEMORYD, clean_env, holding, marker, query, run_cli
from tests.memory.conftest import lines

STORED_INDEX = {"MEMORYD_COMPACT_MAX_BYTES": "0"}  # the index is stored, not built per search
FILLER_FILES = 12


def repo_with(root: Path, texts: dict[str, str]) -> Path:
    """A repository of ``texts`` among filler files, which share their body blocks."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    for i in range(FILLER_FILES):
        body = "\n".join(f"def helper_{i}_{n}(value):\n    return value * {n}" for n in range(40))
        (root / "src" / f"filler{i}.py").write_text(body + "\n")
    for name, text in texts.items():
        (root / "src" / name).write_text(text)
    return root


def ingest(home: Path, repo: Path, project: str = "app") -> None:
    res = run_cli("ingest", str(repo), "--project", project, "--wait", home=home, env=STORED_INDEX)
    assert res.code == 0, res.stderr


def authority_holding(home: Path, word: str) -> list[str]:
    """The authority's files (database, WAL, -shm) holding ``word``."""
    return [p for p in holding(home, word) if Path(p).name.startswith("authority.db")]


def frames_holding(home: Path, word: str) -> list[str]:
    """The stored zstd frames (body blocks, a file's own frame) whose text holds
    ``word``: zstd codes literals, so a byte scan cannot see inside a frame."""
    dctx, found = zstandard.ZstdDecompressor(), []
    for table, column in (("body_blocks", "data"), ("files", "body")):
        for rowid, frame in query(home, f"SELECT id, {column} FROM {table}"):
            if frame and word.encode() in dctx.decompress(frame):
                found.append(f"{table} {rowid}")
    return found


def test_a_file_retired_by_a_reingest_leaves_no_text_in_the_authority(tmp_path) -> None:
    home = tmp_path / "home"
    gone, changed, kept = marker("gone"), marker("changed"), marker("kept")
    repo = repo_with(
        tmp_path / "repo",
        {
            "gone.py": f"GREETING = '{gone}'\n",
            "changed.py": f"FAREWELL = '{changed}'\nport = 8080\n",
            "kept.py": f"NAME = '{kept}'\n",
        },
    )
    ingest(home, repo)
    for word in (gone, changed, kept):
        assert authority_holding(home, word), f"precondition: the scan finds {word}"
        assert frames_holding(home, word), f"precondition: a frame holds {word}"

    (repo / "src" / "gone.py").unlink()
    (repo / "src" / "changed.py").write_text("PASSWORD = 'rotated'\nport = 8080\n")
    ingest(home, repo)

    assert authority_holding(home, gone) == []
    assert authority_holding(home, changed) == []
    assert frames_holding(home, gone) == frames_holding(home, changed) == []
    assert authority_holding(home, kept) and frames_holding(home, kept), "live text stays"
    assert run_cli("search", "rotated", "--project", "app", home=home).code == 0


def remember(home: Path, project: str, text: str) -> None:
    p = subprocess.run(
        [*MEMORYD, "memory", "add", "-", "--project", project, "--wait"],
        input=lines({"kind": "fact", "text": text}),
        capture_output=True,
        env=clean_env(home),
        timeout=CLI_TIMEOUT,
    )
    assert p.returncode == 0, p.stderr.decode()


def test_a_removed_project_leaves_no_text_in_the_authority(tmp_path) -> None:
    home = tmp_path / "home"
    in_file, in_memory, kept = marker("file"), marker("memory"), marker("kept")
    ingest(home, repo_with(tmp_path / "old", {"secret.py": f"KEY = '{in_file}'\n"}), "old")
    ingest(home, repo_with(tmp_path / "new", {"live.py": f"NAME = '{kept}'\n"}), "new")
    remember(home, "old", f"The deploy key of the old service is {in_memory}")
    remember(home, "new", f"The release train leaves on {kept}")
    for word in (in_file, in_memory, kept):
        assert authority_holding(home, word), f"precondition: the scan finds {word}"

    res = run_cli("projects", "remove", "old", "--wait", home=home)
    assert res.code == 0, res.stderr

    assert authority_holding(home, in_file) == []
    assert authority_holding(home, in_memory) == []
    assert authority_holding(home, kept), "the other project's text stays"
