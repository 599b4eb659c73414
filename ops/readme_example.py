"""The README's worked example, run for real: `make readme` rewrites its output,
`--check` (a test) fails when the live output no longer matches it.

The example is the first ```text block after "## Worked example": each line that
starts with ``$ `` is a command (a trailing backslash continues it), the lines
after it are its output. All commands run in order in one bash, in a scratch
home, with ``memoryd`` this checkout's CLI and ``python3`` this interpreter.
``--check`` compares with every number replaced by ``N`` and whitespace
collapsed: timings, scores, line numbers and the interpreter's standard library
vary between machines, what the commands print does not.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "## Worked example"
MARK = "\x1e--memoryd-readme-example--"
COLUMNS = "90"
SHOWN_HOME = "~/.local/share/memoryd"  # the scratch home, shown as a user's default one


def example_span(text: str) -> tuple[int, int]:
    """Offsets of the example block's body (between its fences)."""
    start = text.index("```text\n", text.index(SECTION)) + len("```text\n")
    return start, text.index("```", start)


def split_commands(body: str) -> list[tuple[str, list[str]]]:
    """``(command, output lines)`` pairs of a block, in order."""
    pairs: list[tuple[str, list[str]]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            pairs.append((cmd, []))
        elif pairs:
            pairs[-1][1].append(line)
        i += 1
    return pairs


def run(commands: list[str]) -> list[list[str]]:
    """Every command's output (stdout and stderr, as a terminal shows them)."""
    with tempfile.TemporaryDirectory(prefix="memoryd-readme-") as tmp:
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        for name, argv in (("memoryd", "-m memoryd.faces.cli.main"), ("python3", "")):
            script = bin_dir / name
            script.write_text(f'#!/bin/sh\nexec "{sys.executable}" {argv} "$@"\n')
            script.chmod(0o755)
        env = {
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "MEMORYD_HOME": str(Path(tmp) / "home"),
            "PYTHONPATH": str(ROOT),
            "COLUMNS": COLUMNS,
            "NO_COLOR": "1",
        }
        script = "".join(f"printf '{MARK}\\n'\n{cmd} 2>&1\n" for cmd in commands)
        out = subprocess.run(
            ["bash", "-c", script], env=env, cwd=tmp, capture_output=True, text=True, check=False
        ).stdout.replace(env["MEMORYD_HOME"], SHOWN_HOME)
    chunks = out.split(MARK + "\n")[1:]
    return [[line.rstrip() for line in chunk.rstrip("\n").splitlines()] for chunk in chunks]


def render(pairs: list[tuple[str, list[str]]], outputs: list[list[str]]) -> str:
    blocks = []
    for (cmd, _), output in zip(pairs, outputs, strict=True):
        blocks.append("\n".join([f"$ {wrap(cmd)}", *output]))
    return "\n\n".join(blocks) + "\n"


def wrap(cmd: str, width: int = 88) -> str:
    """A long command as shell continuation lines, as it was written."""
    lines, line = [], ""
    for word in re.findall(r"(?:'[^']*'|\"[^\"]*\"|\S)+", cmd):
        if line and len(line) + len(word) + 3 > width:
            lines.append(line + " \\")
            line = "      " + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def normalized(lines: list[str]) -> str:
    return " ".join(re.sub(r"\d[\d,.]*", "N", " ".join(lines)).split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    start, end = example_span(text)
    pairs = split_commands(text[start:end])
    outputs = run([cmd for cmd, _ in pairs])
    if len(outputs) != len(pairs):
        print(f"ran {len(outputs)} of {len(pairs)} commands", file=sys.stderr)
        return 1
    if not args.check:
        README.write_text(text[:start] + render(pairs, outputs) + text[end:], encoding="utf-8")
        return 0
    failed = 0
    for (cmd, documented), live in zip(pairs, outputs, strict=True):
        if normalized(documented) != normalized(live):
            failed += 1
            print(f"$ {cmd}: the README's output differs from the live output:")
            print("\n".join(difflib.unified_diff(documented, live, "README", "live", lineterm="")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
