"""What serves the home to others: ``mcp`` (an agent's tools), ``dashboard`` (a live
page) and ``service`` (systemd units)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memoryd.faces.cli.common import DIRECTORY, command, emit_json, emit_line, out
from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects


@command(None, "mcp", "memoryd mcp --project myrepo")
@click.option("--project", help="Default project of the session's tools.")
def mcp_cmd(md: Memoryd, as_json: bool, project: str | None) -> None:
    """Serve the memory tools to an agent over MCP (stdio) until it disconnects."""
    from memoryd.faces.mcp.server import serve

    if project:
        Projects(md).require(project)  # refused before serving, like every command's
    serve(md, project)


@command(None, "dashboard", "memoryd dashboard --port 8765 --open")
@click.option(
    "--port", "dashboard_port", type=click.IntRange(0, 65535), help="Port (default: a free one)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
def dashboard_cmd(
    md: Memoryd, as_json: bool, dashboard_port: int | None, open_browser: bool
) -> None:
    """Serve a live read-only page of the home on 127.0.0.1, behind a token in its URL."""
    from memoryd.faces.dashboard.app import serve

    def announce(url: str) -> None:
        if as_json:
            emit_line({"url": url})
        else:
            out.print(f"memoryd dashboard: [link={url}]{url}[/link]", soft_wrap=True)
            out.print("(the token in the URL is the key: requests without it are refused)")
        sys.stdout.flush()

    serve(md, port=md.config.dashboard_port, open_browser=open_browser, announce=announce)


@click.group("service")
def service_group() -> None:
    """systemd units for this home: the supervisor, and nightly retention on a timer.

    \b
    Example:
      memoryd service install --user && systemctl --user enable --now memoryd.service
    """


@command(service_group, "install", "memoryd service install --user --print")
@click.option("--user", is_flag=True, help="The user's systemd manager (default: the system).")
@click.option("--print", "to_stdout", is_flag=True, help="Print the units; write nothing.")
@click.option("--dir", "directory", type=DIRECTORY, help="Write them here.")
def service_install(
    md: Memoryd, as_json: bool, user: bool, to_stdout: bool, directory: str | None
) -> None:
    """Write memoryd.service, memoryd-retention.service and memoryd-retention.timer."""
    from memoryd.faces import service

    if to_stdout:
        units = service.render(md.home, md.config, user=user)
        if as_json:
            emit_json({"units": units})
            return
        for name, text in units.items():
            click.echo(f"# --- {name} ---\n{text}")
        return
    r = service.install(
        md.home, md.config, user=user, directory=Path(directory) if directory else None
    )
    if as_json:
        emit_json(r)
        return
    for path in r["written"]:
        out.print(f"wrote {path}", highlight=False)
    out.print(service.enable_hint(user, Path(directory) if directory else None), highlight=False)


@command(service_group, "uninstall", "memoryd service uninstall --user")
@click.option("--user", is_flag=True, help="The user's systemd manager (default: the system).")
@click.option("--dir", "directory", type=DIRECTORY, help="Remove them here.")
def service_uninstall(md: Memoryd, as_json: bool, user: bool, directory: str | None) -> None:
    """Remove the units (stop them first: systemctl disable --now ...)."""
    from memoryd.faces import service

    r = service.uninstall(user=user, directory=Path(directory) if directory else None)
    if as_json:
        emit_json(r)
        return
    for path in r["removed"]:
        out.print(f"removed {path}", highlight=False)
    if not r["removed"]:
        out.print("no memoryd units were installed there", highlight=False)
