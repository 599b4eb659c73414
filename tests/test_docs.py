"""The help and the README stay in step with the commands (after sqlite-utils' test_docs).

Every command and group has ``--help`` with an ``Example:``; the README's CLI
section names every command, and names no command that does not exist.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from memoryd.faces.cli.main import main

README = Path(__file__).resolve().parent.parent / "README.md"


def subcommands(cmd: click.Command) -> dict[str, click.Command]:
    """A group's commands by name, as click finds them (the root makes each on demand)."""
    if not isinstance(cmd, click.Group):
        return {}
    ctx = click.Context(cmd)
    return {name: cmd.get_command(ctx, name) for name in cmd.list_commands(ctx)}


def command_paths() -> list[tuple[str, ...]]:
    """Every command path, groups included: (), ("jobs",), ("jobs", "add"), ..."""
    paths: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        paths.append(path)
        for name, sub in subcommands(cmd).items():
            walk(sub, (*path, name))

    walk(main, ())
    return paths


def command_at(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        cmd = subcommands(cmd)[name]
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
    prose = res.stdout.split("Example:", 1)[0].split("Commands:", 1)[0]
    doubled = [line.strip() for line in prose.splitlines() if re.search(r"\S {2,}\S", line.strip())]
    assert not doubled, f"runs of spaces mid-sentence (a docstring's indent): {doubled}"


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
            assert name in subcommands(group), f"README names `memoryd {' '.join(path)}`"
            group = subcommands(group)[name]


def test_shell_completion_is_documented_and_works(cli) -> None:
    assert "_MEMORYD_COMPLETE=bash_source memoryd" in cli_section()
    res = cli(env={"_MEMORYD_COMPLETE": "bash_source"}, home=None)
    assert res.code == 0 and "_memoryd_completion" in res.stdout


def readme_commands() -> list[list[str]]:
    """Every `memoryd ...` command the README shows after a `$ ` prompt (continuations
    joined, `a && b` split), as argv without the program name."""
    commands = []
    lines = README.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("$ "):
            continue
        text, j = line[2:], i
        while text.endswith("\\"):
            j += 1
            text = text[:-1] + " " + lines[j].strip()
        for part in text.split("&&"):
            argv = shlex.split(part)
            if argv and argv[0] == "memoryd":
                commands.append(argv[1:])
    return commands


@pytest.mark.parametrize("argv", readme_commands(), ids=" ".join)
def test_every_readme_command_names_real_commands_and_options(cli, argv: list[str]) -> None:
    """`--help` appended: an unknown command or option fails the parse before help."""
    res = cli(*argv, "--help", home=None)
    assert res.code == 0, res.stderr
    words = [w for w in argv if not w.startswith("-")]
    path = []
    cmd: click.Command = main
    for word in words:
        if word not in subcommands(cmd):
            break
        cmd = subcommands(cmd)[word]
        path.append(word)
    assert res.stdout.startswith(f"Usage: memoryd {' '.join(path)}".rstrip()), res.stdout


@pytest.mark.slow
def test_the_worked_example_prints_what_the_readme_shows() -> None:
    """The README's worked example, rerun for real (numbers aside): see ops/readme_example.py."""
    script = README.parent / "ops" / "readme_example.py"
    res = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout + res.stderr


def mcp_tools() -> dict[str, str]:
    """Every tool the MCP server registers, with its description."""
    from memoryd.faces.mcp.server import Session, build
    from memoryd.operations.api import Memoryd

    server = build(Session(Memoryd(README.parent / "no-home"), None))
    return {name: t.description for name, t in server.tools.items()}


def mcp_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## MCP\n")
    return text[start : text.index("\n## ", start + 1)]


@pytest.mark.parametrize("tool", sorted(mcp_tools()))
def test_every_mcp_tool_is_documented_with_an_example(tool: str) -> None:
    description = mcp_tools()[tool]
    assert "Example: {" in description, "the description ends with an example call"
    rows = [r.split(" | ")[0] for r in mcp_section().splitlines() if r.startswith("| `")]
    assert any(f"`{tool}`" in row for row in rows), f"README's MCP table names {tool}"
