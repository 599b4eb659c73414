"""The CLI's consoles: rich's, made on first use, and plain lines where rich would
print the same bytes (issue 32 item 6: rich's import is about 35 ms of a command's start).

A :class:`Console` prints a plain string as rich would, without importing it, when
its stream is no terminal (rich then styles nothing: markup and highlighting only
style) and the string is simple: printable ASCII lines that fit the width rich would
use, markup tags only where rich would read tags, nothing rich would read as an emoji
code. A :class:`Table` (what :func:`memoryd.faces.cli.common.table_of` returns) is
drawn the same way when rich's own layout is its natural one (every column as wide
as its widest cell, the whole within the width). Anything else is handed to rich
itself, imported then: a terminal, a long or non-ASCII line, other options.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from typing import Any

#: What rich reads as a markup tag (rich.markup's RE_TAGS, less its escapes: a
#: backslash before a bracket sends the string to rich).
_TAG = re.compile(r"\[([a-z#/@][^[]*?)]")
#: What rich may replace by an emoji (rich._emoji_replace's pattern): sent to rich.
_EMOJI = re.compile(r":\S*?:")
#: Style words a plain tag may hold (the CLI's own): other tags go to rich.
_STYLES = frozenset({"bold", "dim", "italic", "red", "green", "yellow", "blue", "magenta", "cyan"})
#: Variables rich's terminal and size detection reads besides the stream's own.
_RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "JUPYTER_COLUMNS", "JUPYTER_LINES")
#: rich's HEAVY_HEAD box (its tables' default): top, head row, head separator, row, bottom.
_BOX = ("┏━┳┓", "┃┃┃", "┡━╇┩", "│││", "└─┴┘")


def _width() -> int:
    """The width rich gives a console that is no terminal: the first of stdin, stdout
    and stderr that is a terminal, else 80; ``COLUMNS`` when it is a number."""
    width = None
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd)[0]
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80


def _style(tag: str) -> bool:
    return all(word in _STYLES for word in tag.split(" "))


def _plain_text(text: str, markup: bool) -> str | None:
    """``text`` as rich prints it unstyled, or None when only rich can tell."""
    if markup and "[" in text:
        if "\\" in text:
            return None
        open_tags: list[str] = []
        for m in _TAG.finditer(text):
            tag = m[1]
            if tag[0] != "/" and _style(tag):
                open_tags.append(tag)
            elif not open_tags or tag not in ("/", "/" + open_tags[-1]):
                return None  # rich's error (or another kind of tag): rich's to say
            else:
                open_tags.pop()
        text = _TAG.sub("", text)
    if _EMOJI.search(text):
        return None
    return text


def _simple(line: str, width: int) -> bool:
    """Printable ASCII (one cell a character, nothing rich strips or expands) within
    ``width``."""
    return len(line) <= width and line.isascii() and line.isprintable()


class Console:
    """rich's ``Console(stderr=stderr)``, imported and made on first use; see the
    module's docstring for what :meth:`print` prints itself."""

    def __init__(self, stderr: bool = False, rich: Any = None) -> None:
        self._stderr = stderr
        self._rich: Any = rich  # a rich Console to print through (tests hand one in)
        self._handed = rich is not None  # then every print is its: its stream, its width
        self._plain_width: tuple[Any, int | None] | None = None  # (stream, width)

    @property
    def file(self) -> Any:
        return sys.stderr if self._stderr else sys.stdout

    @property
    def rich(self) -> Any:
        if self._rich is None:
            from rich.console import Console as RichConsole

            self._rich = RichConsole(stderr=self._stderr)
        return self._rich

    def __getattr__(self, name: str) -> Any:  # is_terminal, status, ...: rich's
        return getattr(self.rich, name)

    def width(self) -> int | None:
        """The width rich would print at when it would style nothing, else None
        (looked up once per stream)."""
        if self._handed:
            return None
        file = self.file
        if self._plain_width is None or self._plain_width[0] is not file:
            encoding = (getattr(file, "encoding", None) or "utf-8").lower()
            plain = (
                os.name == "posix"
                and encoding.startswith("utf")  # else rich draws ASCII boxes
                and not any(v in os.environ for v in _RICH_ENV)
                and not hasattr(builtins, "get_ipython")
                and file is not None
                and not file.isatty()
            )
            self._plain_width = (file, _width() if plain else None)
        return self._plain_width[1]

    def print(self, *objects: Any, **options: Any) -> None:
        """rich's ``print``; a plain string (or :class:`Table`) written as rich would."""
        if self._rich is None and len(objects) == 1 and (width := self.width()):
            out = self._plain(objects[0], options, width)
            if out is not None:
                self.file.write(out)
                self.file.flush()  # as rich does: lines keep their order with stderr's
                return
        self.rich.print(*(o.rich() if isinstance(o, Table) else o for o in objects), **options)

    def _plain(self, obj: Any, options: dict, width: int) -> str | None:
        if isinstance(obj, Table):
            return obj.plain(width) if not options else None
        if type(obj) is not str or not set(options) <= {"highlight", "markup"}:
            return None  # highlighting styles alone: no byte of plain output
        text = _plain_text(obj, options.get("markup", True))
        if text is None or not all(_simple(line, width) for line in text.split("\n")):
            return None
        return text + "\n"


class Table:
    """A table to print: rich's ``Table(*columns, **options)`` (made when printed by
    rich), or drawn as rich draws it (see the module's docstring)."""

    def __init__(self, *columns: str, **options: Any) -> None:
        self.columns = [(c, {}) for c in columns]
        self.options = options
        self.rows: list[tuple] = []

    def add_column(self, header: str, **options: Any) -> None:
        self.columns.append((header, options))

    def add_row(self, *cells: Any) -> None:
        self.rows.append(cells)

    def rich(self) -> Any:
        from rich.table import Table as RichTable

        table = RichTable(**self.options)
        for header, options in self.columns:
            table.add_column(header, **options)
        for row in self.rows:
            table.add_row(*row)
        return table

    def plain(self, width: int) -> str | None:
        """The table as rich draws it within ``width`` (HEAVY_HEAD box, a space of
        padding each side of a cell, every column as wide as its widest cell, the title
        centred above), or None when rich would lay it out otherwise."""
        if set(self.options) - {"title"} or any(o for _, o in self.columns) or not self.rows:
            return None
        n = len(self.columns)
        grid = [[h for h, _ in self.columns]]
        for row in self.rows:
            if len(row) > n or not all(type(c) is str for c in row):
                return None
            grid.append([*row, *[""] * (n - len(row))])
        cells = [[_plain_text(c, True) for c in row] for row in grid]
        if any(c is None or not _simple(c, width) for row in cells for c in row):
            return None
        widths = [max(len(row[i]) for row in cells) for i in range(n)]
        total = sum(widths) + 3 * n + 1
        if total > width:
            return None

        def rule(box: str) -> str:
            return box[0] + box[2].join(box[1] * (w + 2) for w in widths) + box[3]

        def line(box: str, row: list) -> str:
            inner = box[1].join(f" {c:<{w}} " for c, w in zip(row, widths, strict=True))
            return box[0] + inner + box[2]

        lines = []
        if (title := self.options.get("title")) is not None:
            text = _plain_text(title, True) if type(title) is str else None
            if text is None or "\n" in text or not _simple(text, total):
                return None
            left = (total - len(text)) // 2
            lines.append(" " * left + text + " " * (total - len(text) - left))
        lines += [rule(_BOX[0]), line(_BOX[1], cells[0]), rule(_BOX[2])]
        lines += [line(_BOX[3], row) for row in cells[1:]]
        lines.append(rule(_BOX[4]))
        return "\n".join(lines) + "\n"
