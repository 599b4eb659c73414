"""``memoryd hook EVENT`` (what an agent's hook runs) and ``memoryd hooks ...`` (installs
it in an agent's configuration)."""

from __future__ import annotations

from pathlib import Path

import click

from memoryd.base.errors import UsageError
from memoryd.faces.cli.common import DIRECTORY, command, emit, emit_json, out
from memoryd.operations.api import Memoryd


@click.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(args: tuple[str, ...]) -> None:
    """Run by an agent's lifecycle hook: capture the event, print recalled context.

    \b
    Example:
      echo '{"session_id":"s1","prompt":"how do we deploy?"}' | memoryd hook UserPromptSubmit
    """
    from memoryd.faces.hooks.event import run

    run(list(args) or ["--help"])


@click.group("hooks")
def hooks_group() -> None:
    """Install memoryd in an agent's hooks (Claude Code, Codex CLI), or remove it.

    \b
    Example:
      memoryd hooks install --agent claude-code --project . --print
    """


def _hook_target(project: str | None, user: bool) -> Path | None:
    if bool(project) == user:
        raise UsageError("name where: --project DIR or --user")
    return Path(project).resolve() if project else None


_AGENT = click.option(
    "--agent", type=click.Choice(["claude-code", "codex"]), required=True, help="Which agent."
)
_PROJECT = click.option("--project", type=DIRECTORY, help="A project's hooks.")
_USER = click.option("--user", is_flag=True, help="The user's hooks (every project).")
_PRINT = click.option("--print", "dry_run", is_flag=True, help="Show the result, write nothing.")


@command(hooks_group, "install", "memoryd hooks install --agent claude-code --project .")
@_AGENT
@_PROJECT
@_USER
@_PRINT
def hooks_install(md: Memoryd, as_json: bool, agent: str, project, user: bool, dry_run: bool):
    """Add memoryd's hook to each event the agent captures (keeps other hooks; backup).

    Claude Code: .claude/settings.json (--project) or ~/.claude/settings.json (--user);
    Codex CLI: .codex/hooks.json or ~/.codex/hooks.json. The home is initialized."""
    from memoryd.faces.hooks import install

    where = _hook_target(project, user)
    if not dry_run:
        md.init()
    r = install.install(agent, where, str(md.home), dry_run=dry_run)
    _print_hooks(as_json, r, "installed in")


@command(hooks_group, "uninstall", "memoryd hooks uninstall --agent codex --user")
@_AGENT
@_PROJECT
@_USER
@_PRINT
def hooks_uninstall(md: Memoryd, as_json: bool, agent: str, project, user: bool, dry_run: bool):
    """Remove memoryd's hooks from the agent's configuration (other hooks stay)."""
    from memoryd.faces.hooks import install

    r = install.uninstall(agent, _hook_target(project, user), dry_run=dry_run)
    _print_hooks(as_json, r, "removed from" if r["removed"] else "was not in")


def _print_hooks(as_json: bool, r: dict, verb: str) -> None:
    if as_json:
        emit_json(r)
    elif not r["written"] and r.get("removed", True):
        emit_json(r["config"])
    else:
        backup = f" (backup: {r['backup']})" if r.get("backup") else ""
        out.print(f"memoryd hooks {verb} {r['path']}{backup}", highlight=False)


@command(hooks_group, "off", "memoryd hooks off --project .")
@click.option("--project", type=DIRECTORY, default=".", show_default=True)
def hooks_off(md: Memoryd, as_json: bool, project: str) -> None:
    """Stop capture and recall under a directory (writes its .memoryd-off file)."""
    from memoryd.faces.hooks.event import OFF_FILE

    path = Path(project).resolve() / OFF_FILE
    path.write_text("memoryd hooks capture nothing under this directory\n")
    emit(as_json, {"off": str(path)}, f"memoryd hooks are off under {path.parent}")


@command(hooks_group, "on", "memoryd hooks on --project .")
@click.option("--project", type=DIRECTORY, default=".", show_default=True)
def hooks_on(md: Memoryd, as_json: bool, project: str) -> None:
    """Capture and recall again under a directory (removes its .memoryd-off file)."""
    from memoryd.faces.hooks.event import OFF_FILE

    path = Path(project).resolve() / OFF_FILE
    path.unlink(missing_ok=True)
    emit(as_json, {"on": str(path.parent)}, f"memoryd hooks are on under {path.parent}")
