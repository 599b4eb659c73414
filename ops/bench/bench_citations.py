"""Memories that cite code: are their refs marked right after the code moves on?

Replays real history: pairs of trees (an old and a new version of one repository)
from this project's own git history, and vendored copies of libraries found on disk
at two versions (site-packages of two Python installs; a pair whose copies are not
on this machine is skipped and said so). For each pair:

1. the old tree is ingested as a project into a fresh home;
2. a script plants ``--refs`` refs at random spans (a random file, a random first
   line, 1 to 25 lines, both ends on non-blank lines), each in its own memory record
   (``memory add``: the apply anchors them);
3. the tree at the same root is replaced by the new version and ingested again (its
   commit re-anchors what moved);
4. each ref's mark (``memory show``) is scored against an independent oracle: git's
   own line mapping between the two versions (``git diff -M30% --unified=0``), and
   ``git blame -C -C`` for lines git saw move to another file, then the one place in
   the new tree (if exactly one) holding the span's non-blank lines verbatim:

   * every non-blank line of the span unchanged, in one run (only blank lines
     between): ``verified`` at the same path and lines, else ``moved`` there;
   * otherwise, in the file's new version (renames followed): its enclosing
     definition (Python's ``ast``; other files: none) still defined there, or, with
     none, one of the span's lines unchanged: ``changed``; else ``stale``.

Reported: the share of refs marked as the oracle marks them (goal >= 95%), the
oracle's moved refs given the right path and lines (>= 90%), refs the oracle calls
stale whose record search still returns as active (0), and what the read-time check
adds to a search's p95 (records and chunks, the project part of recall), measured
on the records' own texts, with the check and without it, interleaved (<= 2 ms);
CPU beside wall.

    .venv/bin/python ops/bench/bench_citations.py [--refs 80] [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from memoryd.consolidation.recall import RecordSource  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.memory import Memory  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402
from memoryd.storage.corpus import live_paths, project_id  # noqa: E402

# this repository's history: three sessions' work landing at once (the floor plan's
# moves of every module), and two stretches of about 40 commits each before it (fixed
# commits on main's first-parent history: the figures can be made again)
GIT_PAIRS = ("f68126e..7b894ad", "57700a0..2c02834", "2c02834..f68126e")
# vendored libraries at two versions: (name, old copy, new copy)
LIBRARY_PAIRS = (
    (
        "urllib3 2.7.0..2.8.0",
        "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/urllib3",
        f"{sys.prefix}/lib/python3.11/site-packages/urllib3",  # this venv's
    ),
    (
        "pip/_internal 23.0.1..23.2.1",
        "/root/.pyenv/versions/3.9.18/lib/python3.9/site-packages/pip/_internal",
        "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/pip/_internal",
    ),
)
# git's rename detection: a file moved and much rewritten in one change (a module
# moved to its floor and edited, 36-40% alike) is still that file; at git's default
# (50%) the oracle called every span of it stale, though its definition was there
RENAMES = "-M30%"
MAX_SPAN = 25
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
PY_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
        check=True, capture_output=True, text=True, errors="replace",
    ).stdout  # fmt: skip


# -- the trees ------------------------------------------------------------------------


@dataclass
class Pair:
    name: str
    repo: Path  # a git repository holding both versions
    old: str  # commits
    new: str


def library_repo(name: str, old: Path, new: Path, work: Path) -> Pair:
    """A git repository of two commits: the old copy, then the new one (their .py files)."""
    repo = work / re.sub(r"\W+", "_", name)
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for copy in (old, new):
        for item in repo.iterdir():
            if item.name != ".git":
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        for src in copy.rglob("*.py"):
            if "__pycache__" not in src.parts:
                dest = repo / src.relative_to(copy)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-qm", copy.name)
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return Pair(name, repo, *shas)


def checkout(pair: Pair, commit: str, root: Path) -> None:
    """The tree of ``commit`` at ``root`` (emptied first: the project's root stays)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(pair.repo), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)


def show(pair: Pair, commit: str, path: str) -> str | None:
    try:
        return git(pair.repo, "show", f"{commit}:{path}")
    except subprocess.CalledProcessError:
        return None


# -- the oracle -----------------------------------------------------------------------


@dataclass
class FileDiff:
    new_path: str | None  # None: deleted
    hunks: list[tuple[int, int, int, int]] = field(default_factory=list)

    def line(self, n: int) -> int | None:
        """The new line of old line ``n``, None when modified or deleted."""
        offset = 0
        for a, b, _c, d in self.hunks:
            if b and a <= n <= a + b - 1:
                return None
            if (b and a + b - 1 < n) or (not b and a < n):
                offset += d - b
        return n + offset


def parse_diff(text: str) -> tuple[dict[str, FileDiff], set[str]]:
    """Old path -> its FileDiff; and the new paths with added lines."""
    files: dict[str, FileDiff] = {}
    added: set[str] = set()
    old = new = None
    current: FileDiff | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            old = new = current = None
        elif line.startswith("rename from "):
            old = line[12:]
        elif line.startswith("rename to "):
            new = line[10:]
            current = files.setdefault(old, FileDiff(new))
        elif line.startswith("--- "):
            old = None if line == "--- /dev/null" else line[6:]
        elif line.startswith("+++ "):
            new = None if line == "+++ /dev/null" else line[6:]
            if old is not None:
                current = files.setdefault(old, FileDiff(new))
                current.new_path = new
        elif m := HUNK.match(line):
            a, b, c, d = (int(x) if x is not None else 1 for x in m.groups())
            if current is not None:
                current.hunks.append((a, b, c, d))
            if d and new:
                added.add(new)
    return files, added


def blame_origins(pair: Pair, path: str) -> dict[tuple[str, int], int]:
    """(old path, old line) -> line of new ``path``, for its lines git traces to the
    old version (moves and copies from other files followed: ``-C -C``)."""
    out = git(pair.repo, "blame", "-C", "-C", "--porcelain", f"{pair.old}..{pair.new}", "--", path)
    found: dict[tuple[str, int], int] = {}
    sha = orig = final = None
    for line in out.splitlines():
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and not line.startswith("\t"):
            sha, orig, final = head[0], int(head[1]), int(head[2])
        elif line.startswith("filename ") and sha == pair.old:
            found[(line[9:], orig)] = final
    return found


def py_symbol(text: str, first: int) -> str | None:
    """The innermost def or class holding line ``first`` (Python's ast)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        holds = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
            node.lineno <= first <= (node.end_lineno or node.lineno)
        )
        if holds and (best is None or node.lineno >= best.lineno):
            best = node
    return best.name if best else None


def py_defines(text: str, name: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return any(m[1] == name for m in map(PY_DEF.match, text.split("\n")) if m)
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
        for n in ast.walk(tree)
    )


def one_run(lines: list[int], text: str) -> tuple[int, int] | None:
    """(first, last) when ``lines`` (ascending) stand together in ``text``, only blank
    lines between them."""
    raw = text.split("\n")
    have = set(lines)
    if lines != sorted(lines) or not lines:
        return None
    for n in range(lines[0], lines[-1] + 1):
        if n not in have and raw[n - 1].strip():
            return None
    return lines[0], lines[-1]


def _runs_from(text: list[str], first: int, want: list[str]) -> int | None:
    """The index of the last line when ``want`` stands in ``text`` from ``first`` on,
    only blank lines between its lines."""
    i = first
    for k, line in enumerate(want):
        if k:
            i += 1
            while i < len(text) and not text[i].strip():
                i += 1
        if i >= len(text) or text[i] != line:
            return None
    return i


class Oracle:
    """Git's answer for a ref of the old version: (mark, new path, first, last line)."""

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        diff = git(pair.repo, "diff", RENAMES, "--unified=0", "--no-color", pair.old, pair.new)
        self.files, self.added = parse_diff(diff)
        self.blamed: dict[str, dict] = {}
        self.paths: list[str] | None = None
        self.texts: dict[str, str | None] = {}

    def new_text(self, path: str) -> str | None:
        if path not in self.texts:
            self.texts[path] = show(self.pair, self.pair.new, path)
        return self.texts[path]

    def moved_to(self, path: str, lines: list[int]) -> tuple[str, int, int] | None:
        """Another new file holding all of ``lines`` of old ``path``, traced by blame."""
        for target in sorted(self.added):
            if target not in self.blamed:
                self.blamed[target] = blame_origins(self.pair, target)
            origins = self.blamed[target]
            mapped = [origins.get((path, n)) for n in lines]
            if all(m is not None for m in mapped):
                text = self.new_text(target) or ""
                if run := one_run(mapped, text):
                    return target, *run
        return None

    def verbatim_at(self, raw: list[str], lines: list[int]) -> tuple[str, int, int] | None:
        """The one place in the new tree holding the span's non-blank lines verbatim, in
        order, only blank lines between (what blame did not trace); None when there is
        no such place or more than one."""
        want = [raw[n - 1] for n in lines]
        found = []
        for path in self.new_paths():
            new = (self.new_text(path) or "").split("\n")
            for i, line in enumerate(new):
                if line == want[0] and (end := _runs_from(new, i, want)) is not None:
                    found.append((path, i + 1, end + 1))
        return found[0] if len(found) == 1 else None

    def new_paths(self) -> list[str]:
        if self.paths is None:
            self.paths = git(self.pair.repo, "ls-tree", "-r", "--name-only", self.pair.new).split()
        return self.paths

    def mark(self, path: str, start: int, end: int, old_text: str) -> tuple:
        raw = old_text.split("\n")
        lines = [n for n in range(start, end + 1) if raw[n - 1].strip()]
        fd = self.files.get(path, FileDiff(path))
        new_path = fd.new_path
        new_text = self.new_text(new_path) if new_path else None
        mapped = [fd.line(n) for n in lines] if new_text is not None else [None]
        if all(m is not None for m in mapped) and (run := one_run(mapped, new_text)):
            same = new_path == path and run == (lines[0], lines[-1])
            return ("verified" if same else "moved", new_path, *run)
        if moved := self.moved_to(path, lines) or self.verbatim_at(raw, lines):
            return ("moved", *moved)
        if new_text is None:
            return ("stale", path, None, None)
        symbol = py_symbol(old_text, lines[0]) if path.endswith(".py") else None
        kept = py_defines(new_text, symbol) if symbol else any(m is not None for m in mapped)
        return ("changed" if kept else "stale", new_path, None, None)


# -- planting and scoring -------------------------------------------------------------


def plant(rng: random.Random, texts: dict[str, str], count: int) -> list[tuple[str, int, int]]:
    """``count`` random spans: a random file, a random non-blank first line, up to
    MAX_SPAN lines, ending on a non-blank line."""
    paths = sorted(p for p, t in texts.items() if any(x.strip() for x in t.split("\n")))
    spans = []
    while len(spans) < count:
        path = rng.choice(paths)
        raw = texts[path].split("\n")
        filled = [i + 1 for i, x in enumerate(raw) if x.strip()]
        start = rng.choice(filled)
        end = min(len(raw), start + rng.randint(1, MAX_SPAN) - 1)
        while not raw[end - 1].strip():
            end -= 1
        spans.append((path, start, end))
    return spans


def word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(9))


def add_records(md: Memoryd, project: str, spans: list, rng: random.Random) -> list[str]:
    """One record per span (random words only: no two records share a word, so each is
    added, never judged a duplicate or an update of another)."""
    lines = [
        orjson.dumps(
            {
                "kind": "fact",
                "text": f"{word(rng)} {word(rng)} {word(rng)}",
                "refs": [f"{p}:{s}-{e}"],
            }
        )  # fmt: skip
        for p, s, e in spans
    ]
    added = Memory(md).add(b"\n".join(lines) + b"\n", project, wait=True)
    return [o["record_id"] for o in added["outcomes"]]


def ingest(md: Memoryd, root: Path, project: str) -> None:
    Projects(md).ingest(root, project, wait=True, workers=2)


def search_times(md: Memoryd, project: str, queries: list[str], rounds: int) -> dict:
    """Search p95 with the read-time check and without it, interleaved query by query
    (which goes first alternates), wall and CPU each; and the check's own time in each
    search that ran it (what it adds, free of the two runs' noise)."""
    deadline = time.monotonic() + 60
    while md.supervised() and time.monotonic() < deadline:  # a drain answering: not here
        time.sleep(0.2)
    assert not md.supervised(), "a supervisor still runs: searches would not run here"
    plain = RecordSource.checked
    check: dict[str, list[float]] = {"wall": [], "cpu": []}

    def timed(self, items):
        w, c = time.perf_counter(), time.process_time()
        try:
            return plain(self, items)
        finally:
            check["wall"].append(time.perf_counter() - w)
            check["cpu"].append(time.process_time() - c)

    took: dict[str, dict[str, list[float]]] = {
        k: {"wall": [], "cpu": []} for k in ("with", "without")
    }
    search = Search(md)
    for n in range(rounds):
        for i, q in enumerate(queries):
            for key in ("with", "without") if (n + i) % 2 else ("without", "with"):
                RecordSource.checked = timed if key == "with" else lambda self, items: items
                w, c = time.perf_counter(), time.process_time()
                search.search(q, project, limit=5)
                took[key]["wall"].append(time.perf_counter() - w)
                took[key]["cpu"].append(time.process_time() - c)
    RecordSource.checked = plain

    def p95(xs: list[float]) -> float:
        return round(statistics.quantiles(xs, n=20)[-1] * 1000, 3)

    out = {f"{k}_{m}_p95_ms": p95(took[k][m]) for k in took for m in ("wall", "cpu")}
    out["added_wall_p95_ms"] = round(out["with_wall_p95_ms"] - out["without_wall_p95_ms"], 3)
    out["check_wall_p95_ms"] = p95(check["wall"])
    out["check_cpu_p95_ms"] = p95(check["cpu"])
    out["searches"] = len(took["with"]["wall"])
    return out


def run_pair(pair: Pair, work: Path, refs: int, rng: random.Random) -> dict:
    home, root, project = work / "home", work / "tree", "cited"
    checkout(pair, pair.old, root)
    md = Memoryd(home, {"workers": 2})
    try:
        ingest(md, root, project)
        pid = project_id(md.db, project)
        live = {path for _, path in live_paths(md.db, pid)}
        texts = {p: (root / p).read_text(errors="replace") for p in sorted(live)}
        spans = plant(rng, texts, refs)
        ids = add_records(md, project, spans, rng)
        checkout(pair, pair.new, root)
        t0 = time.perf_counter()
        ingest(md, root, project)
        reingest = time.perf_counter() - t0
        oracle = Oracle(pair)
        rows = []
        for (path, s, e), rid in zip(spans, ids, strict=True):
            expect = oracle.mark(path, s, e, texts[path])
            shown = Memory(md).show(rid)
            got = shown["cited"][0] if shown["cited"] else {"mark": "none", "path": None,
                                                             "lines": None}  # fmt: skip
            rows.append({"ref": f"{path}:{s}-{e}", "record": rid, "text": shown["text"],
                         "oracle": expect, "got": got})  # fmt: skip
        stale_active = active_stale(md, project, rows)
        queries = [r["text"] for r in rows[:60]]
        times = search_times(md, project, queries, rounds=5)
    finally:
        md.close()
    return {"pair": pair.name, "old": pair.old[:12], "new": pair.new[:12], "rows": rows,
            "stale_returned_active": stale_active, "reingest_s": round(reingest, 2),
            **times}  # fmt: skip


def active_stale(md: Memoryd, project: str, rows: list[dict]) -> int:
    """Refs the oracle calls stale whose record a search for its own text returns as
    an active item."""
    bad = 0
    for r in rows:
        if r["oracle"][0] != "stale":
            continue
        found = Search(md).search(r["text"], project, limit=5)
        bad += any(i.get("id") == r["record"] and i["status"] == "active" for i in found["items"])
    return bad


def score(rows: list[dict]) -> dict:
    right = sum(r["got"]["mark"] == r["oracle"][0] for r in rows)
    moved = [r for r in rows if r["oracle"][0] == "moved"]
    placed = sum(
        r["got"]["mark"] == "moved"
        and r["got"]["path"] == r["oracle"][1]
        and r["got"]["lines"] == [r["oracle"][2], r["oracle"][3]]
        for r in moved
    )
    confusion = Counter(f"{r['oracle'][0]}->{r['got']['mark']}" for r in rows)
    return {
        "refs": len(rows),
        "correct": right,
        "correct_share": round(right / len(rows), 4) if rows else None,
        "moved": len(moved),
        "moved_right_lines": placed,
        "moved_right_share": round(placed / len(moved), 4) if moved else None,
        "oracle": dict(Counter(r["oracle"][0] for r in rows)),
        "confusion": dict(sorted(confusion.items())),
    }


def pairs(work: Path, only: str | None) -> tuple[list[Pair], list[str]]:
    found, skipped = [], []
    here = ROOT
    for spec in GIT_PAIRS:
        old, new = spec.split("..")
        shas = [git(here, "rev-parse", x).strip() for x in (old, new)]
        found.append(Pair(f"memoryd {spec}", here, *shas))
    for name, old, new in LIBRARY_PAIRS:
        if Path(old).is_dir() and Path(new).is_dir():
            found.append(library_repo(name, Path(old), Path(new), work))
        else:
            skipped.append(f"{name}: a copy is not on this machine ({old}, {new})")
    if only:
        found = [p for p in found if only in p.name]
    return found, skipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refs", type=int, default=80, help="refs planted per pair")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", help="pairs whose name holds this")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dump", help="write every ref's row here (JSON)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    started = (time.perf_counter(), time.process_time())
    with tempfile.TemporaryDirectory(prefix="bench-citations-") as tmp:
        work = Path(tmp)
        found, skipped = pairs(work, args.only)
        results = []
        for i, pair in enumerate(found):
            one = run_pair(pair, work / f"pair{i}", args.refs, rng)
            one["score"] = score(one["rows"])
            results.append(one)
            print(f"{pair.name}: {json.dumps(one['score'])}", file=sys.stderr)
    rows = [r for one in results for r in one["rows"]]
    total = score(rows)
    report = {
        "pairs": [{k: v for k, v in one.items() if k != "rows"} for one in results],
        "skipped": skipped,
        "total": total,
        "stale_returned_active": sum(one["stale_returned_active"] for one in results),
        "check_wall_p95_ms_max": max(o["check_wall_p95_ms"] for o in results),
        "added_search_wall_p95_ms_max": max(o["added_wall_p95_ms"] for o in results),
        "wall_s": round(time.perf_counter() - started[0], 1),
        "cpu_s": round(time.process_time() - started[1], 1),
        "load": os.getloadavg(),
    }
    if args.dump:
        Path(args.dump).write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
