"""``memoryd hooks install|uninstall``: merged into the agent's file, others kept."""

from __future__ import annotations

import orjson
import pytest

from tests.conftest import run_cli

OTHER = {"type": "command", "command": "lint.sh"}


@pytest.mark.parametrize(
    ("agent", "name", "events"),
    [("claude-code", ".claude/settings.json", 6), ("codex", ".codex/hooks.json", 5)],
)
def test_install_merges_keeps_other_hooks_and_uninstall_removes_only_ours(
    home, tmp_path, agent, name, events
):
    path = tmp_path / "repo" / name
    path.parent.mkdir(parents=True)
    before = {"model": "x", "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [OTHER]}]}}
    path.write_bytes(orjson.dumps(before))
    for _ in range(2):  # twice: replaced, never doubled
        res = run_cli("hooks", "install", "--agent", agent, "--project", str(tmp_path / "repo"),
                      "--json", home=home)  # fmt: skip
        assert res.code == 0, res.stderr
    after = orjson.loads(path.read_bytes())
    assert after["model"] == "x"
    ours = [h for groups in after["hooks"].values() for g in groups for h in g["hooks"]
            if "memoryd.faces.hooks" in h["command"]]  # fmt: skip
    assert len(ours) == events and all(f"--agent {agent}" in h["command"] for h in ours)
    assert OTHER in after["hooks"]["PostToolUse"][0]["hooks"]
    assert orjson.loads((path.parent / (path.name + ".memoryd-backup")).read_bytes()) == before
    res = run_cli("hooks", "uninstall", "--agent", agent, "--project", str(tmp_path / "repo"),
                  home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    assert orjson.loads(path.read_bytes()) == before


def test_print_writes_nothing(home, tmp_path):
    res = run_cli("hooks", "install", "--agent", "codex", "--project", str(tmp_path), "--print",
                  home=home)  # fmt: skip
    assert res.code == 0, res.stderr
    assert "UserPromptSubmit" in orjson.loads(res.stdout)["hooks"]
    assert not (tmp_path / ".codex").exists()
