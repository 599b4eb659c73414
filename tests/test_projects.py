"""`memoryd projects`: list, rename, and removal in bounded steps through the queue."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest

from memoryd.base.config import load_config
from memoryd.storage import open_authority
from memoryd.storage.projects import remove_step
from tests.conftest import query, status

SMALL_STEPS = {"MEMORYD_PROJECT_REMOVE_BATCH_ROWS": "7"}


def make_tree(root: Path, word: str, files: int = 12) -> Path:
    for i in range(files):
        body = "\n".join(f"def {word}_{i}_{n}():\n    return {n}  # {word}" for n in range(30))
        (root / f"mod_{i}.py").parent.mkdir(parents=True, exist_ok=True)
        (root / f"mod_{i}.py").write_text(body + "\n")
    return root


def ingest(cli, root: Path, project: str) -> dict:
    res = cli("ingest", str(root), "--project", project, "--wait", "--workers", "1", "--json")
    assert res.code == 0, res.stderr
    return orjson.loads(res.stdout.splitlines()[-1])


def project_rows(home: Path, pid: int) -> dict[str, int]:
    counts = {
        table: query(home, f"SELECT count(*) FROM {table} WHERE project_id = ?", (pid,))[0][0]
        for table in ("files", "ingest_runs")  # zdicts: an older home's only
    }
    counts["chunks"] = query(  # a chunk's project is its file's
        home,
        "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.project_id = ?",
        (pid,),
    )[0][0]
    counts["history"] = query(home, "SELECT count(*) FROM history WHERE project = ?", (str(pid),))[
        0
    ][0]
    counts["projects"] = query(home, "SELECT count(*) FROM projects WHERE id = ?", (pid,))[0][0]
    counts["fts tables"] = query(
        home, "SELECT count(*) FROM sqlite_master WHERE name LIKE ?", (f"fts_{pid}%",)
    )[0][0]
    return counts


def pid_of(home: Path, name: str) -> int:
    return query(home, "SELECT id FROM projects WHERE name = ?", (name,))[0][0]


def verify_equal(cli) -> None:
    res = cli("rebuild", "--verify", "--json")
    assert res.code == 0 and res.json()["equal"], res.stdout


@pytest.fixture
def two_projects(cli, home: Path, tmp_path: Path) -> tuple[int, int]:
    ingest(cli, make_tree(tmp_path / "alpha-src", "aardvark"), "alpha")
    ingest(cli, make_tree(tmp_path / "beta-src", "bumblebee"), "beta")
    return pid_of(home, "alpha"), pid_of(home, "beta")


@pytest.mark.slow
def test_projects_list(cli, home: Path, tmp_path: Path, two_projects) -> None:
    res = cli("projects", "--json")
    assert res.code == 0, res.stderr
    listed = {p["project"]: p for p in res.json()}
    assert set(listed) == {"alpha", "beta"}
    alpha = listed["alpha"]
    assert alpha["root"] == str(tmp_path / "alpha-src")
    assert alpha["files"] == 12 and alpha["chunks"] > 0 and alpha["source_bytes"] > 0
    assert alpha["last_ingest_at"].endswith("Z") and alpha["created_at"].endswith("Z")
    assert cli("projects", "list", "--json").json() == res.json()
    human = cli("projects")
    assert human.code == 0 and "alpha" in human.stdout and "alpha-src" in human.stdout


@pytest.mark.slow
def test_remove_runs_in_bounded_steps_through_the_queue(cli, home: Path, two_projects) -> None:
    alpha, beta = two_projects
    beta_before = project_rows(home, beta)
    alpha_before = project_rows(home, alpha)
    rows = sum(alpha_before[t] for t in ("chunks", "files", "ingest_runs", "history"))
    res = cli("projects", "remove", "alpha", "--json")
    assert res.code == 0, res.stderr
    assert res.json()["removed"] is False
    # The name is gone at once: listing and search no longer see it.
    assert [p["project"] for p in cli("projects", "--json").json()] == ["beta"]
    assert [p["project"] for p in status(home)["projects"]] == ["beta"]
    assert cli("search", "aardvark", "--project", "alpha").code != 0
    assert project_rows(home, alpha)["chunks"] > 0, "nothing is deleted before the queue runs"

    res = cli("run", "--drain", "--workers", "1", env=SMALL_STEPS)
    assert res.code == 0, res.stderr
    steps = cli("jobs", "list", "--kind", "projects.remove", "--json").json()
    assert len(steps) >= math.ceil(rows / 7) > 4, "each job deleted at most 7 rows"
    assert {j["state"] for j in steps} == {"done"}
    assert set(project_rows(home, alpha).values()) == {0}
    assert project_rows(home, beta) == beta_before
    verify_equal(cli)
    found = cli("search", "bumblebee_3_7", "--project", "beta", "--json")
    assert found.code == 0 and found.json()["status"] == "ok"


@pytest.mark.slow
def test_verify_stays_equal_between_removal_steps(cli, home: Path, two_projects) -> None:
    alpha, _ = two_projects
    assert cli("projects", "remove", "alpha").code == 0
    with open_authority(home, load_config(home)) as db:
        for _ in range(3):  # what three queued steps do, then stop there
            assert db.write(lambda tx: remove_step(tx, alpha, 5)) is False
    assert project_rows(home, alpha)["chunks"] > 0
    verify_equal(cli)


@pytest.mark.slow
def test_remove_wait_and_name_reuse(cli, home: Path, tmp_path: Path, two_projects) -> None:
    alpha, _ = two_projects
    res = cli("projects", "remove", "alpha", "--wait")
    assert res.code == 0, res.stderr
    assert "removed project alpha" in res.stdout
    assert set(project_rows(home, alpha).values()) == {0}
    summary = ingest(cli, make_tree(tmp_path / "alpha-src", "aardvark"), "alpha")
    assert summary["files_ingested"] == 12, "a removed name can be ingested afresh"
    verify_equal(cli)


@pytest.mark.slow
def test_remove_and_rename_refused_while_the_project_has_queued_work(
    cli, home: Path, tmp_path: Path
) -> None:
    res = cli("ingest", str(make_tree(tmp_path / "d", "dingo")), "--project", "delta")
    assert res.code == 0, res.stderr
    for args in (["remove", "delta"], ["rename", "delta", "epsilon"]):
        res = cli("projects", *args, "--json")
        assert res.code == 1, res
        assert res.json()["error"] == "PROJECT_BUSY"
        assert "queued or running" in res.json()["message"]
    assert [p["project"] for p in cli("projects", "--json").json()] == ["delta"]


@pytest.mark.slow
def test_rename(cli, home: Path, two_projects) -> None:
    res = cli("projects", "rename", "beta", "gamma")
    assert res.code == 0, res.stderr
    assert "renamed project beta to gamma" in res.stdout
    assert sorted(p["project"] for p in cli("projects", "--json").json()) == ["alpha", "gamma"]
    found = cli("search", "bumblebee_3_7", "--project", "gamma", "--json")
    assert found.code == 0 and found.json()["status"] == "ok"
    res = cli("projects", "rename", "gamma", "alpha", "--json")
    assert (res.code, res.json()["error"]) == (2, "PROJECT_EXISTS")
    res = cli("projects", "rename", "nosuch", "zeta", "--json")
    assert (res.code, res.json()["error"]) == (1, "UNKNOWN_PROJECT")
    res = cli("projects", "remove", "nosuch")
    assert res.code == 1 and "no project named 'nosuch'" in res.message
    verify_equal(cli)


@pytest.mark.slow
def test_search_all_names_each_hits_project(cli, home: Path, tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        root = make_tree(tmp_path / f"{name}-src", name)
        (root / "NOTES.md").write_text(
            f"# Hangar\n\nThe zeppelin hangar of {name} is inspected every spring;"
            " the inspection checklist lives beside the mooring mast.\n"
        )
        ingest(cli, root, name)
    res = cli("search", "zeppelin hangar inspection checklist", "--json")
    assert res.code == 2 and "--all" in res.json()["message"]  # two projects: say which

    res = cli("search", "zeppelin hangar inspection checklist", "--all", "--json")
    assert res.code == 0, res.stdout
    hits = res.json()["items"]
    assert {(h["project"], h["path"]) for h in hits} == {(p, "NOTES.md") for p in ("alpha", "beta")}
    res = cli("search", "zeppelin hangar inspection checklist", "--all")
    assert "alpha NOTES.md" in res.stdout and "beta NOTES.md" in res.stdout

    res = cli("search", "function alpha_3_7 returns", "--all", "--json")
    assert {h["project"] for h in res.json()["items"]} == {"alpha"}
    assert cli("search", "zeppelin", "--all", "--project", "alpha").code == 2


@pytest.mark.slow
def test_memory_follows_a_rename_and_goes_with_a_removal(cli, home: Path, tmp_path: Path) -> None:
    ingest(cli, make_tree(tmp_path / "src", "otter"), "alpha")
    facts = tmp_path / "facts.jsonl"
    facts.write_text('{"kind": "fact", "text": "Backups of the otter cache run hourly"}\n')
    assert cli("memory", "add", str(facts), "--project", "alpha", "--wait").code == 0
    assert (home / "memory" / "alpha").is_dir()

    assert cli("projects", "rename", "alpha", "beta").code == 0
    assert not (home / "memory" / "alpha").exists() and (home / "memory" / "beta").is_dir()
    assert len(cli("memory", "list", "--project", "beta", "--json").json()) == 1

    assert cli("projects", "remove", "beta", "--wait").code == 0
    assert not (home / "memory" / "beta").exists()
    for table in ("memory_records", "memory_history", "memory_candidates", "memory_runs"):
        assert query(home, f"SELECT count(*) FROM {table}")[0][0] == 0, table
    assert query(home, "SELECT count(*) FROM memory_fts")[0][0] == 0
    verify_equal(cli)
