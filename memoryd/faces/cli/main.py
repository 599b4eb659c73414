"""The ``memoryd`` command: parses arguments, calls :mod:`memoryd.operations.api`, prints.

Exit codes: 0 success, 1 a reported failure, 2 bad usage.

Each command is declared in the module of its subject (:data:`COMMANDS`), imported when
the command runs or its help is shown: a command's start builds its own options, not
the 52 commands' (issue 32 item 6: ``status`` and ``search`` under 250 ms).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from memoryd.faces.cli.common import DIRECTORY, err, report_error

#: Each top-level command or group: the module of memoryd.faces.cli declaring it, and
#: its name there.
COMMANDS: dict[str, tuple[str, str]] = {
    "archive": ("archive", "archive_group"),
    "checkpoint-wal": ("home", "checkpoint_cmd"),
    "config": ("home", "config_cmd"),
    "dashboard": ("serve", "dashboard_cmd"),
    "diagnose": ("diagnose", "diagnose_cmd"),
    "doctor": ("home", "doctor_cmd"),
    "drill": ("drill", "drill_cmd"),
    "hook": ("hooks", "hook_cmd"),
    "hooks": ("hooks", "hooks_group"),
    "ingest": ("ingest", "ingest_cmd"),
    "init": ("home", "init_cmd"),
    "jobs": ("jobs", "jobs_group"),
    "mcp": ("serve", "mcp_cmd"),
    "memory": ("memory", "memory_group"),
    "projects": ("projects", "projects_group"),
    "rebuild": ("home", "rebuild_cmd"),
    "recall": ("recall", "recall_cmd"),
    "retention": ("retention", "retention_group"),
    "run": ("home", "run_cmd"),
    "search": ("search", "search_cmd"),
    "service": ("serve", "service_group"),
    "status": ("status", "status_cmd"),
    "stop": ("home", "stop_cmd"),
}


class MemorydGroup(click.Group):
    """click's group, but a usage error under ``--json`` is a JSON error object too, and
    each command is imported from its module (:data:`COMMANDS`) when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, name = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"{__package__}.{module}"), name))
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:  # no such command: click's "did you mean" looks among
            for name in COMMANDS:  # the commands made, so every one is made first
                self.get_command(ctx, name)
            return super().resolve_command(ctx, args)

    def main(self, args: list[str] | None = None, **kwargs: Any) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            if "--json" not in args:
                exc.show()
                sys.exit(exc.exit_code)
            report_error("BAD_USAGE", exc.format_message(), False, exc.exit_code, True)
        except click.exceptions.Abort:
            err.print("Aborted!")
            sys.exit(130)
        except BrokenPipeError:  # `memoryd jobs list | head`: the reader left
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=MemorydGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="MEMORYD_HOME", type=DIRECTORY, hidden=True)
@click.version_option(package_name="memoryd")
def main(home: str | None) -> None:
    """memoryd: a local, crash-safe memory service for coding agents.

    \b
    Example:
      memoryd init && memoryd jobs add noop --count 100 && memoryd run --drain
    """


if __name__ == "__main__":
    main()
