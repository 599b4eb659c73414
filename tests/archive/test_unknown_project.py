"""Unknown project names are refused the same way everywhere: an
archive add into a mistyped project and an MCP server started for one say which
projects exist and how to start one; ``--new-project`` starts one explicitly."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import orjson
import pytest

from memoryd.archive.spool import spool_dir
from tests.agent.conftest import call, connect
from tests.conftest import MEMORYD, clean_env


def chat(path: Path, content: str) -> Path:
    line = {"role": "user", "content": content, "timestamp": time.time() - 60}
    path.write_bytes(orjson.dumps(line) + b"\n")
    return path


def archived_projects(cli) -> list[str]:
    """The archive's projects, as an archive search of a name not among them lists them."""
    res = cli("archive", "search", "anything at all", "--project", "~none~", "--json")
    message = res.json()["message"]
    known = message.split("known projects: ", 1)[1].split(" (", 1)[0]
    return [] if known == "none" else known.split(", ")


def refused_typo(cli, path: Path) -> None:
    res = cli("archive", "add", str(path), "--project", "demp", "--json")
    assert res.code == 1, res.stdout
    err = res.json()
    assert err["error"] == "UNKNOWN_PROJECT"
    assert "no project named 'demp'; known projects: demo " in err["message"]
    assert "--new-project" in err["message"], "it says how to start a project"


@pytest.mark.parametrize("supervised", [False, True], ids=["embedded", "supervised"])
def test_archive_add_refuses_an_unknown_project_until_asked_to_start_it(
    cli, home, tmp_path, background, supervised
):
    if supervised:
        background("run", "--workers", "1").wait_running(1)
    first = chat(tmp_path / "a.jsonl", "we chose port 5173 for the dev server")
    assert cli("archive", "add", str(first), "--project", "demo", "--json").code == 1
    res = cli("archive", "add", str(first), "--project", "demo", "--new-project", "--json")
    assert res.code == 0, res.stdout
    second = chat(tmp_path / "b.jsonl", "the proxy keeps port 8080")
    refused_typo(cli, second)
    assert archived_projects(cli) == ["demo"], "a refused add starts no project"
    again = cli("archive", "add", str(second), "--project", "demo", "--json")
    assert again.code == 0, "a project archived into before is known"
    assert not list(spool_dir(home).glob("*.json")), "a refused add leaves no spool file"


def test_an_ingested_project_takes_archive_adds_without_the_flag(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("def port():\n    return 5173\n")
    assert cli("ingest", str(src), "--project", "repo", "--wait").code == 0
    path = chat(tmp_path / "c.jsonl", "we chose port 5173")
    assert cli("archive", "add", str(path), "--project", "repo", "--json").code == 0


def test_mcp_refuses_to_serve_an_unknown_project(cli, home, tmp_path):
    path = chat(tmp_path / "a.jsonl", "we chose port 5173")
    assert cli("archive", "add", str(path), "--project", "demo", "--new-project").code == 0
    proc = subprocess.run(
        [*MEMORYD, "mcp", "--project", "nosuch"],
        env=clean_env(home),
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert b"UNKNOWN_PROJECT" in proc.stderr or b"no project named 'nosuch'" in proc.stderr
    assert b"known projects: demo " in proc.stderr


@pytest.mark.parametrize("supervised", [False, True], ids=["embedded", "supervised"])
def test_an_ingested_project_with_nothing_archived_abstains(
    cli, home, tmp_path, background, supervised
):
    """A project is a project before anything is archived into it: an archive search
    (the CLI's and the agent's tool) abstains, saying why, and a name no one knows is
    refused with every known project named, ingested ones too."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("def port():\n    return 5173\n")
    assert cli("ingest", str(src), "--project", "repo", "--wait").code == 0
    if supervised:
        background("run", "--workers", "1").wait_running(1)
    res = cli("archive", "search", "which port", "--project", "repo", "--json")
    assert res.code == 0, res.stdout
    assert res.json()["status"] == "abstained" and res.json()["items"] == []
    assert "nothing is archived for project 'repo'" in res.json()["gap"]

    async def tool() -> dict:
        async with connect(home, "repo") as s:
            return await call(s, "archive_search", query="which port")

    assert anyio.run(tool)["gap"] == res.json()["gap"]
    typo = cli("archive", "search", "which port", "--project", "rpeo", "--json")
    assert typo.code == 1 and "known projects: repo " in typo.json()["message"]
