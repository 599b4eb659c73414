"""`memoryd diagnose`: the offline real-project diagnostic.

An explicit run against a chosen checkout, in a fresh workspace of its own (never
the user's home, no network, no model: the offline encoder only). It ingests the
checkout and reports bytes by phase, time, given an oracle file strict
per-question scores, and the design's workload on every route
(:mod:`memoryd.faces.diagnose_workload`). The report holds questions, paths,
a constant's name, hashes and numbers, never the checkout's text.

Bytes are split by file (database, WAL, SHM, archive, other) and measured at
every phase boundary; the peak is sampled after every transaction the ingest's
supervisor commits, and once after the workload's facts (`memory add --wait`
consolidates them in a drain of its own, before the checkpoint of "quiescent").
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import shlex
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memoryd.base.config import (
    ARCHIVE_DIR,
    AUTHORITY_FILE,
    DIAGNOSE_WARM_REPETITIONS,
    load_config,
)
from memoryd.base.errors import UsageError
from memoryd.faces import diagnose_workload as workload
from memoryd.faces.diagnose_workload import percentile, score_unanswerable
from memoryd.operations.projects import Projects
from memoryd.operations.search import Search
from memoryd.workers.extensions import Extension

PROJECT = "diagnosed"
PATH_QUERIES = 10  # questions made from file names when no oracle file is given


class WorkspaceExists(UsageError):
    code = "WORKSPACE_EXISTS"


class BadOracles(UsageError):
    code = "BAD_ORACLES"


# -- bytes ---------------------------------------------------------------------


def footprint(home: Path) -> dict[str, int]:
    """Bytes of the home by part: database, WAL, SHM, archive, other, total."""
    parts = dict.fromkeys(("database", "wal", "shm", "archive", "other"), 0)
    names = {
        AUTHORITY_FILE: "database",
        f"{AUTHORITY_FILE}-wal": "wal",
        f"{AUTHORITY_FILE}-shm": "shm",
    }
    for dirpath, _, files in os.walk(home):
        top = Path(dirpath).relative_to(home).parts[:1]
        for name in files:
            try:
                size = (Path(dirpath) / name).stat().st_size
            except FileNotFoundError:
                continue  # a file that came and went while we walked
            if top == (ARCHIVE_DIR,):
                parts["archive"] += size
            else:
                parts[names.get(name, "other") if not top else "other"] += size
    return {f"{k}_bytes": v for k, v in parts.items()} | {"total_bytes": sum(parts.values())}


class PeakSampler(Extension):
    """The largest footprint and WAL seen, sampled after each transaction the
    supervisor commits (a supervisor extension)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.peak: dict[str, int] = footprint(home)
        self.largest_wal_bytes = self.peak["wal_bytes"]
        self.last: dict[str, int] = self.peak
        self.samples = 0

    def after_commit(self) -> None:
        self.last = footprint(self.home)
        self.samples += 1
        self.largest_wal_bytes = max(self.largest_wal_bytes, self.last["wal_bytes"])
        if self.last["total_bytes"] > self.peak["total_bytes"]:
            self.peak = self.last


def describe_checkout(checkout: Path) -> tuple[int, str]:
    """Bytes of every regular file under ``checkout`` (skipped ones included), and a
    hash of their paths and sizes that names the tree without its text: one walk."""
    total, h = 0, hashlib.sha256()
    for dirpath, dirs, files in os.walk(checkout):
        dirs.sort()
        for name in sorted(files):
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                size = path.stat().st_size
                total += size
                h.update(f"{path.relative_to(checkout)}\0{size}\n".encode())
    return total, h.hexdigest()[:16]


# -- oracles ---------------------------------------------------------------------


def load_oracles(path: Path) -> dict:
    """The oracle file, checked: ``{"answerable": [{"id", "q", "expect_paths",
    "expect_phrase"?, "also"?}], "unanswerable": [{"id", "q"}]}``."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BadOracles(f"cannot read the oracle file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise BadOracles(f"{path}: expected an object with 'answerable' and 'unanswerable'")
    for group in ("answerable", "unanswerable"):
        for case in data.setdefault(group, []):
            if not (isinstance(case, dict) and isinstance(case.get("q"), str) and "id" in case):
                raise BadOracles(f"{path}: every {group} case needs an 'id' and a text 'q'")
            if group == "answerable" and not case.get("expect_paths"):
                raise BadOracles(f"{path}: answerable case {case['id']!r} has no expect_paths")
    return data


def _matches(item: dict, case: dict) -> bool:
    wanted = [(p, case.get("expect_phrase")) for p in case["expect_paths"]]
    wanted += [(a["path"], a.get("phrase")) for a in case.get("also", [])]
    text = item.get("excerpt") or ""
    return any(item.get("path") == p and (not ph or ph in text) for p, ph in wanted)


def score_answerable(case: dict, result: dict, k: int) -> dict:
    """hit@k, reciprocal rank of the first matching item, candidate precision."""
    items = result.get("items") or []
    hits = [i for i, item in enumerate(items[:k]) if _matches(item, case)]
    return {
        "id": case["id"],
        "q": case["q"],
        "status": result.get("status"),
        "returned": [item.get("path") for item in items[:k]],
        "hit": bool(hits),
        "reciprocal_rank": 1.0 / (hits[0] + 1) if hits else 0.0,
        "precision": len(hits) / len(items[:k]) if items else 0.0,
    }


def score(oracles: dict, ask: Callable[[str], dict], k: int) -> dict:
    answerable = [score_answerable(c, ask(c["q"]), k) for c in oracles["answerable"]]
    unanswerable = [score_unanswerable(c, ask(c["q"])) for c in oracles["unanswerable"]]
    n = len(answerable) or 1
    return {
        "k": k,
        "answerable": {
            "cases": len(answerable),
            "hits": sum(c["hit"] for c in answerable),
            "mrr": round(sum(c["reciprocal_rank"] for c in answerable) / n, 4),
            "precision": round(sum(c["precision"] for c in answerable) / n, 4),
        },
        "unanswerable": {
            "cases": len(unanswerable),
            "abstained": sum(c["passed"] for c in unanswerable),
        },
        "cases": answerable + unanswerable,
    }


# -- the run ---------------------------------------------------------------------


def _ask(md: Any, query: str, limit: int) -> dict:
    from memoryd.base.errors import MemorydError

    try:
        return Search(md).search(query, PROJECT, limit=limit)
    except MemorydError as exc:
        return {"error": exc.code, "message": str(exc)}


def _path_questions(md: Any) -> list[str]:
    """Timing questions without an oracle file: words of the checkout's file names."""
    from memoryd.storage.corpus import longest_paths

    paths = longest_paths(md.reader, PATH_QUERIES)
    return [" ".join(Path(path).stem.replace("_", " ").replace("-", " ").split()) for path in paths]


def _timings(md: Any, questions: list[str], limit: int) -> dict:
    first_start = time.perf_counter()
    _ask(md, questions[0], limit) if questions else None
    first_ms = (time.perf_counter() - first_start) * 1000
    warm = []
    for _ in range(DIAGNOSE_WARM_REPETITIONS):
        for q in questions:
            start = time.perf_counter()
            _ask(md, q, limit)
            warm.append((time.perf_counter() - start) * 1000)
    warm.sort()
    return {
        "first_query_ms": round(first_ms, 2),
        "warm_p50_ms": round(statistics.median(warm), 2) if warm else 0.0,
        "warm_p95_ms": round(percentile(warm, 0.95), 2),
        "warm_queries": len(warm),
    }


def _cpu_seconds() -> float:
    """CPU of this process (the supervisor) and its reaped children (its workers)."""
    who = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, who))


@contextlib.contextmanager
def _isolated() -> Iterator[list[str]]:
    """The caller's ``MEMORYD_*`` settings out of this process's environment (and so out
    of the supervisor's, its workers' and a baseline's) for the block: the workspace's
    home runs on the defaults alone. Yields the names set aside."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("MEMORYD_")}
    for name in saved:
        del os.environ[name]
    try:
        yield sorted(saved)
    finally:
        os.environ.update(saved)


def diagnose(
    checkout: str | Path,
    workspace: str | Path,
    *,
    oracles: str | Path | None = None,
    baseline: str | None = None,
    workers: int = 2,
    limit: int = 10,
) -> dict:
    """Ingest ``checkout`` into a fresh home in ``workspace`` and measure it, on the
    defaults alone: the caller's ``MEMORYD_*`` settings are set aside (and named in
    the report's ``ignored_settings``)."""
    with _isolated() as ignored:
        report = _diagnose(checkout, workspace, oracles, baseline, workers, limit)
    return {**report, "ignored_settings": ignored}


def _diagnose(
    checkout: str | Path,
    workspace: str | Path,
    oracles: str | Path | None,
    baseline: str | None,
    workers: int,
    limit: int,
) -> dict:
    from memoryd.app import default_registry
    from memoryd.operations import runtime
    from memoryd.operations.api import Memoryd
    from memoryd.storage.corpus import file_totals, live_paths, project_id
    from memoryd.storage.maintenance import checkpoint_truncate
    from memoryd.storage.runs import last_finished
    from memoryd.workers.supervisor import Supervisor

    checkout = Path(checkout).resolve()
    workspace = Path(workspace)
    if not checkout.is_dir():
        raise UsageError(f"{checkout} is not a directory to diagnose")
    if workspace.exists():
        raise WorkspaceExists(
            f"workspace {workspace} exists; diagnose starts from nothing: name a new directory"
        )
    cases = load_oracles(Path(oracles)) if oracles else None
    workspace.mkdir(parents=True, mode=0o700)
    home = workspace / "home"

    md = Memoryd(home)
    md.init()
    checkpoint_truncate(md.db)
    empty = footprint(home)
    Projects(md).ingest(checkout, PROJECT)
    md.close()

    sampler = PeakSampler(home)
    start, started, cpu = time.perf_counter(), time.time(), _cpu_seconds()
    config = load_config(home)
    extensions = [*runtime.extensions(home, config, Memoryd), sampler]
    sup = Supervisor(
        home,
        config,
        workers=workers,
        drain=True,
        registry=default_registry(),
        extensions=extensions,
    )
    sup.run()
    # ingest time end to end: the drain ends with the run's last job (the index merge,
    # the vectors) committed; the run was searchable before that
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    after_drain = sampler.last

    md = Memoryd(home)
    finished = last_finished(md.reader)
    searchable = min(seconds, finished - started) if finished else seconds
    paths = [path for _, path in live_paths(md.reader, project_id(md.reader, PROJECT))]
    staged = workload.stage(md, PROJECT, checkout, paths)
    sampler.after_commit()  # the facts' commits: consolidated by `memory add`'s own drain
    md = Memoryd(home)
    checkpoint_truncate(md.db)
    quiescent = footprint(home)
    md.close()
    closed = footprint(home)

    md = Memoryd(home)
    questions = [c["q"] for g in ("answerable", "unanswerable") for c in (cases or {}).get(g, [])]
    timing = _timings(md, questions or _path_questions(md), limit)
    reopened = footprint(home)
    scored = score(cases, lambda q: _ask(md, q, limit), limit) if cases else None
    routes = workload.run_routes(md, PROJECT, staged.cases, limit)
    files, src = file_totals(md.reader)
    md.close()

    tree_bytes, tree_hash = describe_checkout(checkout)
    report = {
        "checkout": str(checkout),
        "checkout_sha256": tree_hash,
        "workspace": str(workspace),
        "checkout_bytes": tree_bytes,
        "source_bytes": src,  # what was ingested: the ratios' denominator
        "files": files,
        "ingest_seconds": round(seconds, 3),
        "ingest_mb_per_s": round(src / 1e6 / seconds, 2) if seconds else 0.0,
        "ingest_cpu_seconds": round(cpu, 3),
        "searchable_seconds": round(searchable, 3),
        "bytes": {
            "empty_authority": empty,
            "peak_live": sampler.peak,
            "live_after_drain": after_drain,
            "quiescent": quiescent,
            "closed": closed,
            "reopened": reopened,
            "largest_wal_bytes": sampler.largest_wal_bytes,
            "samples": sampler.samples,
        },
        "marginal_ratio": round((quiescent["total_bytes"] - empty["total_bytes"]) / src, 3)
        if src
        else None,
        "time": timing,
        "oracles": scored,
        "workload": workload.report(staged, routes, limit),
    }
    if baseline:
        report["baseline"] = run_baseline(baseline, checkout, workspace, oracles)
    return report


def run_baseline(command: str, checkout: Path, workspace: Path, oracles: Any) -> dict:
    """The same diagnostic run by another memoryd (``command``, e.g. another
    checkout's ``memoryd``), in a workspace beside ours; its JSON report."""
    argv = [*shlex.split(command), "diagnose", str(checkout), "--workspace"]
    argv += [str(workspace / "baseline"), "--json"]
    if oracles:
        argv += ["--oracles", str(oracles)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UsageError(
            f"the baseline command failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-500:]}"
        )
    return orjson.loads(done.stdout)


def comparison(report: dict) -> list[tuple[str, float, float, float | None]]:
    """``(measure, ours, baseline, ours / baseline)`` rows for the side-by-side table."""
    base = report["baseline"]
    rows = []
    for label, get in MEASURES:
        ours, theirs = get(report), get(base)
        if ours is None or theirs is None:
            continue
        rows.append((label, ours, theirs, round(ours / theirs, 3) if theirs else None))
    return rows


def _oracle(key: str, field: str) -> Callable[[dict], float | None]:
    return lambda r: (r["oracles"] or {}).get(key, {}).get(field) if r.get("oracles") else None


def _routes(key: str, field: str) -> Callable[[dict], float | None]:
    """The workload's ``key``/``field`` summed over its routes (None: a report before it)."""
    return lambda r: (
        sum(route[key][field] for route in r["workload"]["routes"].values())
        if r.get("workload")
        else None
    )


MEASURES: list[tuple[str, Callable[[dict], float | None]]] = [
    ("ingest MB/s", lambda r: r["ingest_mb_per_s"]),
    ("peak live bytes", lambda r: r["bytes"]["peak_live"]["total_bytes"]),
    ("quiescent bytes", lambda r: r["bytes"]["quiescent"]["total_bytes"]),
    ("largest WAL bytes", lambda r: r["bytes"]["largest_wal_bytes"]),
    ("first query ms", lambda r: r["time"]["first_query_ms"]),
    ("warm p50 ms", lambda r: r["time"]["warm_p50_ms"]),
    ("warm p95 ms", lambda r: r["time"]["warm_p95_ms"]),
    ("answerable hits", _oracle("answerable", "hits")),
    ("unanswerable abstained", _oracle("unanswerable", "abstained")),
    ("workload hits, all routes", _routes("answerable", "hits")),
    ("workload false positives, all routes", _routes("unanswerable", "false_positives")),
]
