"""The CLI's plain output (memoryd.faces.cli.output) is byte for byte rich's: each
string or table it prints itself is printed by rich here too, and compared."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console as RichConsole

from memoryd.faces.cli.output import Console, Table

WIDTH = 80


def rich_bytes(obj: object, width: int = WIDTH, **options: object) -> str:
    buf = io.StringIO()
    console = RichConsole(file=buf, width=width, force_terminal=False, force_jupyter=False)
    console.print(obj.rich() if isinstance(obj, Table) else obj, **options)
    return buf.getvalue()


def plain_bytes(obj: object, width: int = WIDTH, **options: object) -> str | None:
    return Console()._plain(obj, options, width)


LINES = [
    "",
    "    ",
    "plain words",
    "trailing spaces   ",
    "   leading",
    "x" * WIDTH,
    "x" * (WIDTH + 1),
    "a long line of words " * 5,
    "[bold cyan]decoder.py[/]:342-356  [dim]score 0.912[/]",
    "[magenta]json[/] [bold green]memory m-12[/] (fact, active, conflict with m-3)",
    "[yellow]abstained[/]: no chunk holds 'staging'",
    "[bold yellow]claims paused[/]: disk low",
    "a list [1, 2] in brackets",
    "an index a[i] and [/] closing",
    "escaped \\[bold] tag",
    "emoji :smile: code",
    "url http://host:8080/x",
    "type hints a: int, b: str",
    "rst literal::",
    "tab\there",
    "non-ascii café",
    "wide 漢字",
    "control \x1b[31m",
    "two\nlines",
    "[not a style=1]tag[/]",
    "[/bold]closing first",
    "[link=http://x]l[/link]",
]


@pytest.mark.parametrize("markup", [True, False])
@pytest.mark.parametrize("line", LINES)
def test_a_plain_line_is_rich_s_or_left_to_rich(line: str, markup: bool) -> None:
    plain = plain_bytes(line, markup=markup, highlight=False)
    if plain is not None:
        assert plain == rich_bytes(line, markup=markup, highlight=False)


def test_the_common_lines_are_printed_plain() -> None:
    """An excerpt line, a heading, a status line: no rich needed."""
    for line in LINES[:6] + LINES[8:12]:
        assert plain_bytes(line) is not None, line


def test_random_lines_are_rich_s() -> None:
    rng = random.Random(7)
    alphabet = "ab [/]:\\x1-_.,()'\"#@=é\t"
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
        for markup in (True, False):
            plain = plain_bytes(line, markup=markup)
            if plain is not None:
                assert plain == rich_bytes(line, markup=markup), repr(line)


def table(title: str | None, rows: list[tuple], *columns: str) -> Table:
    t = Table(*columns, **({} if title is None else {"title": title}))
    for row in rows:
        t.add_row(*row)
    return t


TABLES = [
    table("queue", [("queued", "0"), ("claimed", "0"), ("done", "4")], "state", "jobs"),
    table(
        "projects",
        [("json", "5", "29", "47.2 KiB", "/usr/lib/python3.11/json"), ("d", "1", "1", "63 B", "")],
        "project",
        "files",
        "chunks",
        "source",
        "root",
    ),  # fmt: skip
    table(None, [("a", "b")], "x", "y"),
    table("a title far wider than the table it is above", [("a", "b")], "x", "y"),
    table("t", [("short",)], "one", "two"),
    table("t", [("x" * 70, "y")], "one", "two"),
    table("t", [("[bold]x[/]", "a[1]")], "one", "two"),
    table("even", [("ab", "c")], "c1", "c2"),
    table("t", [], "one"),
]


@pytest.mark.parametrize("t", TABLES)
def test_a_plain_table_is_rich_s_or_left_to_rich(t: Table) -> None:
    for width in (WIDTH, 40, 20):
        plain = plain_bytes(t, width)
        if plain is not None:
            assert plain == rich_bytes(t, width), width


def test_status_tables_are_printed_plain() -> None:
    assert plain_bytes(TABLES[0]) is not None
    assert plain_bytes(TABLES[1]) is not None


def test_a_mismatched_closing_tag_is_left_to_rich() -> None:
    assert plain_bytes("[bold]x[/dim]") is None
    assert plain_bytes("[bold]x[/bold] [dim]y[/]") == "x y\n"
