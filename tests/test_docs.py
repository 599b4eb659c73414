"""The help and the README stay in step with the commands (after sqlite-utils' test_docs).

Every command and group has ``--help`` with an ``Example:``; the README's CLI
section names every command, and names no command that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from memoryd.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"


def command_paths() -> list[tuple[str, ...]]:
    """Every command path, groups included: (), ("jobs",), ("jobs", "add"), ..."""
    paths: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        paths.append(path)
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))

    walk(main, ())
    return paths


def command_at(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return cmd


def cli_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## CLI\n") : text.index("\n## ", text.index("## CLI\n") + 1)]


def table_commands() -> list[tuple[str, ...]]:
    """The command paths the README's CLI table names (first column, each `code` span)."""
    named = []
    for row in cli_section().splitlines():
        if not row.startswith("| `"):
            continue
        for span in re.findall(r"`([^`]+)`", row.split(" | ")[0]):
            words = span.removeprefix("memoryd ").split()
            named.append(tuple(w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*", w)))
    return named


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "memoryd")
def test_every_help_has_an_example(cli, path: tuple[str, ...]) -> None:
    res = cli(*path, "--help")
    assert res.code == 0, res.stderr
    assert "Example:" in res.stdout
    example = res.stdout.split("Example:", 1)[1].split()
    assert example[0] == "memoryd" or "memoryd" in example[:3], "the example runs memoryd"


@pytest.mark.parametrize(
    "path", [p for p in command_paths() if p], ids=lambda p: " ".join(p) or "memoryd"
)
def test_readme_cli_section_names_every_command(path: tuple[str, ...]) -> None:
    named = table_commands()
    if isinstance(command_at(path), click.Group):
        assert any(n[: len(path)] == path for n in named), path
    else:
        assert path in named, path


def test_readme_names_no_command_that_does_not_exist() -> None:
    for path in table_commands():
        group: click.Command = main
        for name in path:
            if not isinstance(group, click.Group):
                break  # an argument after a leaf command
            assert name in group.commands, f"README names `memoryd {' '.join(path)}`"
            group = group.commands[name]


def test_shell_completion_is_documented_and_works(cli) -> None:
    assert "_MEMORYD_COMPLETE=bash_source memoryd" in cli_section()
    res = cli(env={"_MEMORYD_COMPLETE": "bash_source"}, home=None)
    assert res.code == 0 and "_memoryd_completion" in res.stdout
