"""The structure of configuration and documentation files, read aloud.

A fact in a manifest sits under a key path (``engines.node = ">=22.5.0"``,
``[tool.pytest.ini_options] timeout = 30``) and a paragraph of a README under its
headings; a chunk cut from the middle of such a file keeps neither. One rule per
FORMAT (JSON, TOML, INI, YAML, Makefile, Dockerfile, go.mod, markdown; the format
from the file's name: :func:`format_of`) reads each line's place in the file
(:func:`parse`): the keys or headings it sits under, whether it starts a unit
(a top-level key, a section, a step, a rule, an instruction, a heading) and, for a
value that is a version constraint, its operator read as words
(``lexicon/format_words.txt``). A chunk then carries, in its index text only,
those words its own text lacks (:func:`context_words`): ``devDependencies`` as
"dev dependencies", the ``engines`` above a ``"node"`` line, a section's heading.

Everything here is a function of the file's path and text, so the index text can
be made again from the stored body (:mod:`memoryd.storage.corpus`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoryd.text.lazy_re import Lazy
from memoryd.text.lexicon import word_table
from memoryd.text.terms import STOPWORDS

CONTEXT_MAX_WORDS = 48  # words a chunk's context adds at most (a minified file's keys)

_WORDS = Lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_VERSION = Lazy(r"^\s*(>=|<=|~=|==|>|<|\^|~|=)?\s*v?(\d+(?:\.[\dx*]+)*)\b")


@dataclass(frozen=True)
class Line:
    """One line's place: the keys (or headings) it sits under, whether it starts a
    unit of the file, and the words its value reads as."""

    path: tuple[str, ...] = ()
    start: bool = False
    spoken: tuple[str, ...] = ()


def format_of(path: str) -> str | None:
    """The structured format of a file by its name, or None (chunked by lines)."""
    name = path.rpartition("/")[2].lower()
    dot = name.rfind(".")
    suffix = name[dot:] if dot > 0 else ""
    if name in ("makefile", "gnumakefile") or suffix == ".mk":
        return "makefile"
    if name in ("dockerfile", "containerfile") or name.startswith("dockerfile."):
        return "dockerfile"
    if suffix == ".dockerfile":
        return "dockerfile"
    if name in ("go.mod", "go.work"):
        return "gomod"
    return _BY_SUFFIX.get(suffix)


_BY_SUFFIX = {
    ".json": "json", ".jsonc": "json", ".json5": "json", ".toml": "toml", ".cfg": "ini",
    ".ini": "ini", ".yml": "yaml", ".yaml": "yaml", ".md": "markdown",
    ".markdown": "markdown",
}  # fmt: skip


def parse(path: str, lines: Sequence[str]) -> list[Line] | None:
    """Each line's :class:`Line` under its format's rule; None for a file of no
    structured format."""
    fmt = format_of(path)
    return None if fmt is None else _PARSERS[fmt](lines)


def words_of(text: str) -> list[str]:
    """A key or heading as lowercase words: split at punctuation and case changes
    (``devDependencies`` -> dev, dependencies; ``ini_options`` -> ini, options)."""
    return [w.lower() for w in _WORDS.findall(text) if not w.isdigit()]


def context_words(chunk: str, lines: Sequence[Line]) -> str:
    """The words of the chunk's lines' paths and values its text lacks (no stopword,
    no single character), in order, at most ``CONTEXT_MAX_WORDS``: "" when none."""
    present = set(re.findall(r"[a-z0-9]+", chunk.lower()))
    out: list[str] = []
    seen: set[str] = set()
    for line in lines:
        for key in (*line.path, *line.spoken):
            for w in words_of(key):
                if w in seen or w in present or len(w) < 2 or w in STOPWORDS:
                    continue
                seen.add(w)
                out.append(w)
                if len(out) >= CONTEXT_MAX_WORDS:
                    return " ".join(out)
    return " ".join(out)


def chunk_contexts(
    path: str, lines: Sequence[str], chunks: Sequence[tuple[int, int, str]]
) -> list[str]:
    """The context words of each (start line, end line, text) chunk of the file (all ""
    for a file of no structured format)."""
    parsed = parse(path, lines)
    if parsed is None:
        return [""] * len(chunks)
    return [context_words(text, parsed[start - 1 : end]) for start, end, text in chunks]


def spoken_value(value: str) -> tuple[str, ...]:
    """A version constraint's operator as words, and "version" (``>=22.5.0``:
    minimum, lowest, least, version); () for any other value."""
    m = _VERSION.match(value.strip().strip("\"'"))
    if not m:
        return ()
    op = m.group(1) or ""
    return (*word_table("format_words.txt").get(("version", op), ()), "version")


def _spoken(fmt: str, keyword: str) -> tuple[str, ...]:
    return word_table("format_words.txt").get((fmt, keyword.lower()), ())


# -- JSON --------------------------------------------------------------------------

_JSON_TOKENS = Lazy(r'"(?:[^"\\]|\\.)*"|//.*|/\*.*?\*/|[{}\[\]:,]')


def _json(lines: Sequence[str]) -> list[Line]:
    """Keys by the containers open at each line (tolerant of comments, trailing commas
    and a file cut short: a line-by-line read, not a parser)."""
    stack: list[str | None] = []  # the key of each open container (None: unnamed)
    out = []
    for text in lines:
        before = tuple(filter(None, stack))  # a closing line belongs to what it closes
        keys: list[tuple[str, ...]] = []
        spoken: tuple[str, ...] = ()
        start = False
        key: str | None = None
        last: str | None = None  # the previous token when it was a string
        for tok in _JSON_TOKENS.findall(text):
            if tok[0] == '"':
                if key is not None and last is None and not spoken:
                    spoken = spoken_value(tok)
                last = tok[1:-1]
                continue
            if tok == ":" and last is not None:
                key, spoken = last, ()
                keys.append((*filter(None, stack), key))
                start = start or len(stack) == 1
            elif tok in "{[":
                stack.append(key)
                key = None
            elif tok in "}]":
                stack = stack[:-1]
                key = None
            elif tok == ",":
                key = None
            last = None
        after = tuple(filter(None, stack))
        path = tuple(k for p in keys for k in p) if keys else max(before, after, key=len)
        out.append(Line(path, start, spoken))
    return out


# -- TOML and INI --------------------------------------------------------------------

_TOML_HEADER = Lazy(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = Lazy(
    r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+))*)"
    r"\s*=\s*(.*)$"
)
_DOTTED = Lazy(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_\-]+)")


def _dotted(name: str) -> tuple[str, ...]:
    return tuple(next(g for g in m.groups() if g is not None) for m in _DOTTED.finditer(name))


def _balance(value: str) -> int:
    """Brackets a value opens and does not close (strings and comments aside)."""
    bare = re.sub(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'|#.*", "", value)
    return bare.count("[") + bare.count("{") - bare.count("]") - bare.count("}")


def _toml(lines: Sequence[str]) -> list[Line]:
    section: tuple[str, ...] = ()
    key: tuple[str, ...] = ()
    depth = 0  # brackets of a multi-line array or table still open
    quote = ""  # the delimiter of a multi-line string still open
    out = []
    for text in lines:
        if quote or depth > 0:
            if quote and quote in text:
                quote = ""
            elif not quote:
                depth += _balance(text)
            out.append(Line((*section, *key)))
            continue
        if m := _TOML_HEADER.match(text):
            section, key = _dotted(m.group(1)), ()
            out.append(Line(section, True))
        elif m := _TOML_KEY.match(text):
            key, value = _dotted(m.group(1)), m.group(2)
            for q in ('"""', "'''"):
                if value.startswith(q) and value.count(q) == 1:
                    quote = q
            depth = 0 if quote else _balance(value)
            out.append(Line((*section, *key), not section, spoken_value(value)))
        else:
            out.append(Line(section))
    return out


_INI_HEADER = Lazy(r"^\s*\[([^\]]+)\]")
_INI_KEY = Lazy(r"^([^\s=:#;\[][^=:]*?)\s*[=:]\s*(.*)$")


def _ini(lines: Sequence[str]) -> list[Line]:
    section: tuple[str, ...] = ()
    key: tuple[str, ...] = ()
    out = []
    for text in lines:
        if m := _INI_HEADER.match(text):
            section, key = (m.group(1).strip(),), ()
            out.append(Line(section, True))
        elif m := _INI_KEY.match(text):
            key = (m.group(1).strip(),)
            out.append(Line((*section, *key), False, spoken_value(m.group(2))))
        elif text[:1].isspace() and text.strip():  # a continuation of the key's value
            out.append(Line((*section, *key), False, spoken_value(text)))
        else:
            out.append(Line(section))
    return out


# -- YAML --------------------------------------------------------------------------

_YAML_KEY = Lazy(
    r"^(?P<indent> *)(?P<dash>(?:- +)*)"
    r"(?P<key>\"[^\"]*\"|'[^']*'|[^\s#'\"\-?:,\[\]{}&*!|>%@`][^#]*?)"
    r"\s*:(?:\s+(?P<value>.*))?$"
)
_YAML_ITEM = Lazy(r"^(?P<indent> *)- ")
_BLOCK_SCALAR = Lazy(r"^[|>][-+0-9]*\s*(?:#.*)?$")
YAML_UNIT_DEPTH = 3  # keys and list items this deep or less start a unit (jobs.test.steps[])


def _yaml(lines: Sequence[str]) -> list[Line]:
    """Keys by indentation (a list item's dash counts as indentation); the lines of a
    block scalar (``run: |``) belong to its key."""
    stack: list[tuple[int, str]] = []
    scalar = -1  # the indentation a block scalar's lines exceed (-1: none open)
    out = []
    for text in lines:
        indent = len(text) - len(text.lstrip(" "))
        if not text.strip() or text.lstrip().startswith("#") or (scalar >= 0 and indent > scalar):
            out.append(Line(tuple(k for _, k in stack)))
            continue
        scalar = -1
        m = _YAML_KEY.match(text)
        bare = None if m else _YAML_ITEM.match(text)
        item = m.group("dash") if m else (bare.group(0)[indent:] if bare else "")
        level = indent + len(item)
        while stack and stack[-1][0] >= (level if m else indent + 1):
            stack.pop()
        start = bool(item) and len(stack) <= YAML_UNIT_DEPTH
        if not m:
            out.append(Line(tuple(k for _, k in stack), start))
            continue
        stack.append((level, m.group("key").strip("\"'")))
        value = m.group("value") or ""
        if _BLOCK_SCALAR.match(value):
            scalar = level
        start = start or len(stack) <= YAML_UNIT_DEPTH - 1
        out.append(Line(tuple(k for _, k in stack), start, spoken_value(value)))
    return out


# -- Makefile, Dockerfile, go.mod ------------------------------------------------------

_MAKE_ASSIGN = Lazy(
    r"^(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*(?:::?=|\?=|\+=|!=|=)"
)
_MAKE_RULE = Lazy(r"^([^\s:#=][^:=#]*?)\s*::?(?!=)")


def _makefile(lines: Sequence[str]) -> list[Line]:
    """Rules (``target: prerequisites`` and their tab-indented recipe) and variables."""
    target: tuple[str, ...] = ()
    out = []
    for text in lines:
        if text.startswith("\t"):
            out.append(Line(target))
        elif m := _MAKE_ASSIGN.match(text):
            target = ()
            out.append(Line((m.group(1),), True))
        elif m := _MAKE_RULE.match(text):
            target = (*m.group(1).split(), *_spoken("makefile", "rule"))
            out.append(Line(target, True))
        else:
            out.append(Line(target))
    return out


_INSTRUCTION = Lazy(r"^\s*([A-Za-z]+)(?:\s+(.*))?$")


def _dockerfile(lines: Sequence[str]) -> list[Line]:
    """Instructions (a line ending in a backslash continues one) within their stage
    (``FROM image AS name``), each instruction read as its documentation's words."""
    stage: tuple[str, ...] = ()
    current: tuple[str, ...] = ()
    more = False
    out = []
    for text in lines:
        if more or not (m := _INSTRUCTION.match(text)) or text.lstrip().startswith("#"):
            out.append(Line(current))
            more = more and text.rstrip().endswith("\\")
            continue
        word, rest = m.group(1).lower(), m.group(2) or ""
        if word == "from":
            named = re.search(r"\s+as\s+(\S+)", rest, re.IGNORECASE)
            stage = (named.group(1),) if named else ()
        current = (*stage, word, *_spoken("dockerfile", word))
        out.append(Line(current, True))
        more = text.rstrip().endswith("\\")
    return out


_DIRECTIVE = Lazy(r"^\s*([a-z]+)\b(\s*\()?")


def _gomod(lines: Sequence[str]) -> list[Line]:
    """Directives (``go 1.22``, ``require ( ... )``), each read as its words."""
    block: tuple[str, ...] = ()
    out = []
    for text in lines:
        if block:
            out.append(Line(block))
            if text.strip() == ")":
                block = ()
            continue
        if m := _DIRECTIVE.match(text):
            words = (m.group(1), *_spoken("gomod", m.group(1)))
            block = words if m.group(2) else ()
            out.append(Line(words, True))
        else:
            out.append(Line())
    return out


# -- markdown ------------------------------------------------------------------------

_ATX = Lazy(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = Lazy(r"^ {0,3}(=+|-+)\s*$")
_FENCE = Lazy(r"^ {0,3}(```|~~~)")


def _markdown(lines: Sequence[str]) -> list[Line]:
    """Headings (``#`` and underlined) by level, code fences aside: each line under
    the headings above it, each heading starting a unit."""
    stack: list[tuple[int, str]] = []
    fence = ""
    out: list[Line] = []
    for i, text in enumerate(lines):
        if m := _FENCE.match(text):
            fence = "" if fence == m.group(1) else (fence or m.group(1))
        heading = None if fence else _heading(lines, i)
        if heading is None:
            out.append(Line(tuple(t for _, t in stack)))
            continue
        level, title = heading
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        out.append(Line(tuple(t for _, t in stack), True))
    return out


def _heading(lines: Sequence[str], i: int) -> tuple[int, str] | None:
    """(level, title) when line ``i`` is a heading (an underlined one: its text line)."""
    text = lines[i]
    if m := _ATX.match(text):
        return len(m.group(1)), m.group(2)
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    underline = _SETEXT.match(nxt)
    if not underline or not text.strip() or text.startswith(" " * 4):
        return None
    if _SETEXT.match(text) or _FENCE.match(text):
        return None
    return (1 if underline.group(1)[0] == "=" else 2), text.strip()


_PARSERS: dict[str, Callable[[Sequence[str]], list[Line]]] = {
    "json": _json, "toml": _toml, "ini": _ini, "yaml": _yaml, "makefile": _makefile,
    "dockerfile": _dockerfile, "gomod": _gomod, "markdown": _markdown,
}  # fmt: skip
