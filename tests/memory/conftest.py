"""Fixtures for memory consolidation: a home with a small ingested project, candidate
lines, and an external adjudicator script the tests write."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from memoryd.operations.api import Memoryd
from memoryd.operations.projects import Projects
from tests.conftest import CLI_TIMEOUT, MEMORYD, Result, clean_env, run_cli

BENCH = Path(__file__).resolve().parents[2] / "ops" / "bench"
FAST = {"retry_backoff_base": 0.01, "retry_backoff_max": 0.05}

JUDGE = """
import json, sys, time
rules = json.load(open(sys.argv[1]))
req = json.load(sys.stdin)
text = req["candidate"]["text"]
rule = next((r for key, r in rules.items() if key in text), {"verdict": "distinct"})
how = rule.get("how", "answer")
if how == "hang":
    time.sleep(3600)
if how == "crash":
    sys.stderr.write("judge fell over")
    sys.exit(3)
if how == "garbage":
    print("certainly! the verdict is: duplicate")
    sys.exit(0)
ids = [h["id"] for h in req["shortlist"]]
if how == "archive_first":  # another writer flips the target between decision and apply
    import sqlite3
    with sqlite3.connect(rule["db"], timeout=60) as db:
        db.execute("UPDATE memory_records SET status = 'archived' WHERE id = ?", (ids[0],))
verdict = {"verdict": rule["verdict"]}
if rule["verdict"] == "merge":
    verdict["targets"] = ids
elif rule["verdict"] != "distinct":
    verdict["target"] = ids[0]
print(json.dumps(verdict))
"""


def cli(home: Path, *args: str, data: bytes | None = None) -> Result:
    """``memoryd ARGS`` on ``home``, with ``data`` on stdin."""
    if data is None:
        return run_cli(*args, home=home)
    p = subprocess.run(
        [*MEMORYD, *args], input=data, capture_output=True, env=clean_env(home), timeout=CLI_TIMEOUT
    )
    return Result(p.returncode, p.stdout.decode(), p.stderr.decode())


def bench_module(name: str) -> Iterator[ModuleType]:
    """The module ``ops/bench/NAME.py`` loaded by path, for a module-scoped fixture to
    ``yield from``; it is registered under its name while in use (its dataclasses look
    their module up by name). ``ops/bench`` is put on the import path, as when the module
    runs as a script, for it to import its siblings by name."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(name, None)


def lines(*candidates: dict) -> bytes:
    return b"".join(orjson.dumps(c) + b"\n" for c in candidates)


@pytest.fixture
def project_home(tmp_path: Path) -> Path:
    """A home with project ``app`` (one ingested file, ``src/a.py``)."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("def handler():\n    return 1\n")
    home = tmp_path / "home"
    md = Memoryd(home)
    try:
        Projects(md).ingest(repo, "app", wait=True, workers=1)
    finally:
        md.close()
    return home


@pytest.fixture
def judge(tmp_path: Path) -> Callable[[dict], str]:
    """``judge({text fragment: {"verdict": V} | {"how": "hang"|"crash"|"garbage"}})``
    writes the rules and returns the ``memory_adjudicator`` command running the script."""
    script = tmp_path / "judge.py"
    script.write_text(JUDGE)

    def make(rules: dict) -> str:
        path = tmp_path / "rules.json"
        path.write_bytes(orjson.dumps(rules))
        return f"{sys.executable} {script} {path}"

    return make


@pytest.fixture
def memoryd(project_home: Path) -> Callable[..., Memoryd]:
    """``memoryd(**settings)``: the library on the project home (closed at teardown)."""
    opened: list[Memoryd] = []

    def make(**settings) -> Memoryd:
        md = Memoryd(project_home, {"workers": 1, **FAST, **settings})
        opened.append(md)
        return md

    yield make
    for md in opened:
        md.close()
