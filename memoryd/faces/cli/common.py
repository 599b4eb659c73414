"""What every command of the ``memoryd`` CLI shares: its consoles and JSON output, the
one way a command fails, the :func:`command` decorator (``--home``, ``--json``, the
example in its help) and the formats of sizes, durations and counts.

Each command lives in a module of its own subject (:mod:`.status`, :mod:`.search`,
:mod:`.archive`, ...), imported by :mod:`.main` only when that command runs or its help
is shown (issue 32 item 6: a command's start declares no other command)."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import click
import orjson

from memoryd.base.config import SETTINGS
from memoryd.base.errors import MemorydError, corruption, is_corruption
from memoryd.faces.cli.output import Console, Table
from memoryd.operations.api import Memoryd

out = Console()
err = Console(stderr=True)


def emit_line(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
    sys.stdout.flush()


def emit_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def emit(as_json: bool, value: Any, text: str) -> None:
    """``value`` as JSON under --json, else the human ``text``."""
    if as_json:
        emit_json(value)
    else:
        out.print(text, highlight=False, markup=False)


def report_error(
    code: str,
    message: str,
    retryable: bool,
    exit_code: int,
    as_json: bool,
    details: dict | None = None,
):
    """The one way a command fails: a JSON object under --json, a red line on stderr, an exit."""
    if as_json:  # the JSON says it all: nothing on stderr besides
        emit_json({"error": code, "message": message, "retryable": retryable} | (details or {}))
    else:
        err.print(red_line(f"memoryd: {message}"))
    sys.exit(exit_code)


def red_line(text: str) -> Any:
    """``text`` in bold red, no markup read (rich's Text: imported for a failure)."""
    from rich.text import Text

    return Text(text, style="bold red")


class LazyChoice(click.Choice):
    """A choice among names a heavy module defines, imported only when the option is
    used (a value, ``--help``): not on every CLI start."""

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> list[str]:  # type: ignore[override]
        return self._names()

    @choices.setter
    def choices(self, _value: object) -> None:
        pass


def table_of(*columns: str, **options: Any) -> Table:
    """A table (rich's when rich prints it: :mod:`.output`)."""
    return Table(*columns, **options)


HOME_HELP = "Data home (default $MEMORYD_HOME, else $XDG_DATA_HOME/memoryd)."
#: The type of every ``--home`` and directory option: one instance, as each one made
#: looks its name's translation up on disk (gettext: 4 ms over every command at start).
DIRECTORY = click.Path(file_okay=False)


def command(
    group: click.Group | None,
    name: str,
    example: str,
    *,
    strict: bool = True,
    home_help: str = HOME_HELP,
    **kwargs,
) -> Callable:
    """Declare a command of ``group`` (a top-level one: None) with ``--home``, ``--json``
    and an example in its help.

    ``strict=False`` lets the command run on a faulty configuration (to report it).
    """

    def decorate(fn: Callable) -> click.Command:
        @functools.wraps(fn)
        def wrapper(home: str | None, as_json: bool, **params: Any) -> None:
            ctx = click.get_current_context()
            home = home or (ctx.find_root().params.get("home"))
            # A flag named like a setting (e.g. --workers) overrides it, strongest of all.
            overrides = {k: v for k, v in params.items() if k in SETTINGS and v is not None}
            md = None
            try:
                md = Memoryd(home, overrides, strict=strict)
                fn(md, as_json, **params)
            except Exception as exc:
                if is_corruption(exc):  # a damaged store: typed, naming the file
                    exc = corruption(exc, str(md.home if md else home))
                elif not isinstance(exc, MemorydError):
                    raise
                details = getattr(exc, "details", None) or {}  # e.g. a lease's "rejected"
                report_error(exc.code, str(exc), exc.retryable, exc.exit_code, as_json, details)
            finally:
                if md is not None:
                    md.close()

        wrapper = click.option("--json", "as_json", is_flag=True, help="Machine output.")(wrapper)
        wrapper = click.option(
            "--home",
            envvar="MEMORYD_HOME",
            type=DIRECTORY,
            help=home_help,
        )(wrapper)
        doc = inspect.cleandoc(fn.__doc__ or "")  # a docstring's indent is not prose
        declare = click.command if group is None else group.command
        return declare(name, help=f"{doc}\n\n\b\nExample:\n  {example}", **kwargs)(wrapper)

    return decorate


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 version``, ``2 versions``: a count with its noun agreeing."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


DURATION_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def human_duration(seconds: float) -> str:
    """A duration in words, in its largest whole unit: 7 days, 90 minutes, 1.5 seconds."""
    for unit, size in DURATION_UNITS:
        if seconds >= size and seconds % size == 0:
            return counted(int(seconds // size), unit)
    return f"{seconds:g} seconds"


def human_size(n: int) -> str:
    """Bytes in the largest binary unit they fill: 64 MiB, 1.5 KiB, 100 B (exact when whole)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.1f} {unit}"
    return f"{n} B"


def human_rate(n: int, seconds: float) -> str:
    """Bytes per second in :func:`human_size`'s units (the JSON's ``mb_per_s`` is decimal
    megabytes, as benchmarks count them)."""
    return f"{human_size(round(n / seconds) if seconds > 0 else 0)}/s"


def clip(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters; a cut is marked with an ellipsis."""
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def options_text(options: dict | list | bool) -> str:
    """A project's stored ingest options as the flags that give them."""
    import shlex  # here: only an ingest's or a project's report quotes its options

    from memoryd.ingest.runner import option_flags

    if isinstance(options, list):  # excludes
        return " ".join(shlex.quote(p) for p in options) or "none"
    if isinstance(options, bool):
        return "yes" if options else "no"
    return shlex.join(option_flags(options)) or "the defaults"


def skipped_line(f: dict) -> str:
    return f"  {f['reason']}: {f['path']}" + (f" ({f['detail']})" if f.get("detail") else "")
