"""A project remembers how it was ingested: its choices of files are stored with it,
reused by a plain re-run, shown by ``projects show``, and replaced (said so) by a flag."""

from __future__ import annotations

import pytest

from memoryd.ingest.runner import resolve_options, scan_options
from tests.conftest import query
from tests.ingest.test_ingest import ingest


def _repo(root):
    for rel in ("src/app.py", "tests/test_app.py", "docs/guide.md", ".config/tool.toml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\nvalue = 1\n")
    return root


def _live(home) -> set[str]:
    return {p for (p,) in query(home, "SELECT path FROM files WHERE live = 1")}


def test_options_not_given_are_the_stored_ones_and_given_ones_replace_them():
    stored = {"excludes": ["tests/"], "include_hidden": True, "include_secrets": False}
    nothing = {"excludes": None, "include_hidden": None, "include_secrets": None}
    assert resolve_options(stored, nothing) == (stored, {})
    assert resolve_options(None, nothing) == (scan_options(), {})  # first run: defaults
    options, replaced = resolve_options(stored, {**nothing, "excludes": []})
    assert options == {**stored, "excludes": []} and replaced == {"excludes": [["tests/"], []]}
    same = {**nothing, "include_hidden": True}  # given as stored: nothing replaced
    assert resolve_options(stored, same) == (stored, {})
    first = {**nothing, "include_hidden": True}  # no stored options: nothing to replace
    assert resolve_options(None, first) == ({**scan_options(), "include_hidden": True}, {})


@pytest.mark.slow
def test_a_plain_rerun_reuses_the_stored_options_and_a_flag_replaces_them(cli, home, tmp_path):
    repo = _repo(tmp_path / "repo")
    res, summary = ingest(cli, repo, "--exclude", "tests/", "--include-hidden")
    assert res.code == 0 and summary["complete"], res.stderr
    chosen = {"src/app.py", "docs/guide.md", ".config/tool.toml"}
    assert _live(home) == chosen

    res, summary = ingest(cli, repo)  # plain: the stored choices, not the defaults
    assert _live(home) == chosen and summary["retired"] == 0
    stored = {"excludes": ["tests/"], "include_hidden": True, "include_secrets": False}
    assert summary["options"] == stored and summary["options_replaced"] == {}
    human = cli("ingest", str(repo), "--wait")
    assert "with the project's stored options: --exclude tests/ --include-hidden" in human.stdout

    shown = cli("projects", "show", "repo", "--json").json()
    assert shown["ingest_options"] == stored and shown["files"] == 3
    assert {"path": "tests/", "reason": "exclude"} in shown["last_run"]["skipped_files"]
    text = cli("projects", "show", "repo").stdout
    assert "ingest options (a plain re-run reuses them): --exclude tests/ --include-hidden" in text

    res, summary = ingest(cli, repo, "--exclude", "docs/")  # replaces, and says so
    assert summary["options_replaced"] == {"excludes": [["tests/"], ["docs/"]]}
    assert _live(home) == {"src/app.py", "tests/test_app.py", ".config/tool.toml"}
    human = cli("ingest", str(repo), "--wait", "--no-include-hidden")
    assert "--include-hidden: no replaces the project's stored yes" in human.stdout
    assert _live(home) == {"src/app.py", "tests/test_app.py"}
    assert cli("projects", "show", "repo", "--json").json()["ingest_options"] == {
        "excludes": ["docs/"], "include_hidden": False, "include_secrets": False,
    }  # fmt: skip

    res, summary = ingest(cli, repo, "--no-exclude")
    assert summary["options"]["excludes"] == [] and "docs/guide.md" in _live(home)
    both = cli("ingest", str(repo), "--exclude", "x/", "--no-exclude")
    assert both.code != 0 and "not both" in both.stderr
