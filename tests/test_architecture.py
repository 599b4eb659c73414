"""The floor plan holds: imports run down the layers, no import cycle (lazy imports
included), SQL only in the stores, no class too wide, and the module map in
docs/architecture.md names every package folder.

The layers, bottom up (a module may import its own layer and the ones below):

- ``base``: config, errors, locks, kill points, faults, times, home, logs;
- ``text``: tokenizers, lexicon data, stopwords, speakers, encoders, vector codes;
- ``storage``: the SQLite authority and the RocksDB archive, one contract per store;
- ``queue``: the job queue (the only SQL on ``jobs``);
- ``workers``: the runtime (job contract, supervisor, pools, extensions);
- ``capabilities``: ingest, search, archive, retention, projects, consolidation;
- ``app``: the composition root (every capability's job kinds, the supervisor);
- ``operations``: what a request does, over home, config, authority and archive;
- ``faces``: the CLI, the MCP server, the control socket, the dashboard, doctor,
  diagnose, service units, the drill.

Run as a script, it prints the counts it checks (``python tests/test_architecture.py``).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memoryd"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("memoryd.base",)),
    ("text", ("memoryd.text",)),
    ("storage", ("memoryd.storage",)),
    ("queue", ("memoryd.queue",)),
    ("workers", ("memoryd.workers",)),
    (
        "capabilities",
        (
            "memoryd.ingest",
            "memoryd.search",
            "memoryd.archive",
            "memoryd.retention",
            "memoryd.projects",
            "memoryd.consolidation",
            "memoryd.capture",
        ),
    ),
    ("app", ("memoryd.app",)),
    ("operations", ("memoryd.operations",)),
    ("faces", ("memoryd.faces",)),
]
STORES = ("memoryd.storage", "memoryd.queue")  # the only modules that hold SQL
MAX_PUBLIC_METHODS = 40
SQL = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|WITH|BEGIN|COMMIT|"
    r"SAVEPOINT|RELEASE|ROLLBACK|REPLACE|VACUUM|ANALYZE|REINDEX)\s"
)


@dataclass
class Plan:
    """What the package's source says: its modules, import edges and findings."""

    modules: dict[str, Path] = field(default_factory=dict)
    edges: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    # the edges Python runs (lazy imports included; ``if TYPE_CHECKING:`` ones are not)
    runtime_edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    sql: list[str] = field(default_factory=list)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    """The layer index of ``module`` (None: the package root itself)."""
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def read_plan(package: Path = PACKAGE) -> Plan:
    plan = Plan()
    for path in sorted(package.rglob("*.py")):
        plan.modules[module_name(path)] = path
    for name, path in plan.modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        sql_lines: set[int] = set()
        typing_only = _typing_only_imports(tree)
        for node in ast.walk(tree):
            for target in _imported(node, name, is_package, plan.modules):
                plan.edges[name].setdefault(target, node.lineno)
                if id(node) not in typing_only:
                    plan.runtime_edges[name].add(target)
            if not name.startswith(STORES) and _is_sql(node):
                sql_lines.add(node.lineno)
        plan.sql += [f"{name}:{line}" for line in sorted(sql_lines)]
    return plan


def _typing_only_imports(tree: ast.AST) -> set[int]:
    """The import nodes under ``if TYPE_CHECKING:``: a type checker reads them, Python
    never runs them (they count as layer edges, not as cycle edges)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for inner in node.body:
                found.update(id(n) for n in ast.walk(inner))
    return found


def _imported(node: ast.AST, name: str, is_package: bool, modules: dict) -> list[str]:
    """The package modules an import statement loads (a ``from X import y`` of a
    submodule ``y`` counts as importing ``X.y``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = name.split(".") if is_package else name.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    if not base.startswith("memoryd"):
        return []
    found = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
    if len(found) < len(node.names) and base in modules:
        found.append(base)
    return found


def _is_sql(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(SQL.match(node.value))
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        return isinstance(head, ast.Constant) and bool(SQL.match(str(head.value)))
    return False


def upward(plan: Plan) -> list[str]:
    """Each import of a module in a higher layer than the importer's (or of one in no layer)."""
    found = []
    for src, targets in plan.edges.items():
        for dst, line in targets.items():
            low, high = layer_of(src), layer_of(dst)
            if dst == "memoryd":
                continue
            if low is None or high is None or high > low:
                found.append(f"{src}:{line} -> {dst}")
    return sorted(found)


def cycles(plan: Plan) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), over the
    imports Python runs: at module top or inside a function (lazy)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in plan.runtime_edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in plan.modules:
        if v not in index:
            visit(v)
    return found


def wide_classes(plan: Plan, limit: int = MAX_PUBLIC_METHODS) -> dict[str, int]:
    """Classes whose public methods, counting those of bases defined in the package,
    exceed ``limit``."""
    classes: dict[str, tuple[list[str], set[str]]] = {}
    for path in plan.modules.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                own = {
                    f.name
                    for f in node.body
                    if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not f.name.startswith("_")
                }
                bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                classes.setdefault(node.name, (bases, own))

    def methods(name: str, seen: frozenset = frozenset()) -> set[str]:
        if name not in classes or name in seen:
            return set()
        bases, own = classes[name]
        return own.union(*(methods(b.split(".")[-1], seen | {name}) for b in bases))

    counts = {name: len(methods(name)) for name in classes}
    return {name: n for name, n in counts.items() if n > limit}


def package_folders(package: Path = PACKAGE) -> list[str]:
    return sorted(
        str(p.parent.relative_to(ROOT)) + "/"
        for p in package.rglob("__init__.py")
        if p.parent != package
    )


# -- the rules ------------------------------------------------------------------

PLAN = read_plan()


def test_every_module_sits_on_a_floor() -> None:
    homeless = [m for m in PLAN.modules if m != "memoryd" and layer_of(m) is None]
    assert homeless == []


def test_imports_run_down_the_layers() -> None:
    assert upward(PLAN) == []


def test_no_import_cycle_even_through_lazy_imports() -> None:
    assert cycles(PLAN) == []


def test_sql_lives_in_the_stores_only() -> None:
    assert PLAN.sql == []


def test_no_class_has_too_many_public_methods() -> None:
    assert wide_classes(PLAN) == {}


def test_the_module_map_names_every_package_folder() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    missing = [folder for folder in package_folders() if folder not in text]
    assert missing == []


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("from memoryd.faces import cli\n", upward),
        ("X = 'SELECT id FROM jobs WHERE state = ?'\n", None),
    ],
)
def test_the_rules_catch_a_break(tmp_path: Path, source: str, rule) -> None:
    """A throwaway package with a storage module that imports a face, or a capability
    that holds SQL: the checks see each."""
    pkg = tmp_path / "memoryd"
    for folder in ("storage", "faces", "search"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "faces" / "cli.py").write_text("")
    where = "storage" if rule else "search"
    (pkg / where / "mod.py").write_text(source)
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        plan = read_plan(pkg)
    finally:
        ROOT = saved
    if rule:
        assert rule(plan) == ["memoryd.storage.mod:1 -> memoryd.faces.cli"]
    else:
        assert plan.sql == ["memoryd.search.mod:1"]


def test_a_lazy_import_cycle_is_caught(tmp_path: Path) -> None:
    """A cycle closed by an import inside a function counts; one closed only by an
    ``if TYPE_CHECKING:`` import does not (Python never runs it)."""
    pkg = tmp_path / "memoryd" / "base"
    pkg.mkdir(parents=True)
    for name in ("__init__", "a", "b"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from memoryd.base import b\n")
    (pkg / "b.py").write_text("from memoryd.base import a\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        plan = read_plan(tmp_path / "memoryd")
    finally:
        ROOT = saved
    assert cycles(plan) == [["memoryd.base.a", "memoryd.base.b"]]
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memoryd.base import b\n"
    )
    saved, ROOT = ROOT, tmp_path
    try:
        plan = read_plan(tmp_path / "memoryd")
    finally:
        ROOT = saved
    assert cycles(plan) == []  # a type checker's import is never run


if __name__ == "__main__":
    print(f"modules: {len(PLAN.modules)}")
    ups = upward(PLAN)
    print(f"upward imports: {len(ups)}")
    for line in ups:
        print("  ", line)
    found = cycles(PLAN)
    print(f"cycles: {len(found)}")
    for c in found:
        print("  ", " ".join(c))
    print(f"SQL literals outside the stores: {len(PLAN.sql)}")
    for s in PLAN.sql:
        print("  ", s)
    print(f"classes over {MAX_PUBLIC_METHODS} public methods: {wide_classes(PLAN)}")
