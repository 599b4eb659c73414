"""Ingestion throughput, store size and search latency on the standard library.

Corpus: the running interpreter's standard library without test directories
(``test/``, ``tests/``, ``idle_test/``) and site-packages, exactly the files
``memoryd ingest`` finds there (its scan decides; about 770 files, 12.6 MB).

Measured side by side in one run:

* ``memoryd`` end to end, with 1 and 2 workers, each on a fresh home: the
  user's command, ``memoryd ingest ROOT --wait --workers k``, in its own
  process (it forks its draining supervisor). The rate is source bytes over
  its summary's ``seconds``: from the command's start to the last job of the run
  committed (batches, vectors, the index merge), with its
  ``cpu_seconds`` (the command, its supervisor and workers) beside it, and
  when the run became searchable; the wall time of the whole call (it also
  stops the supervisor) is shown too.
* ``raw`` single-transaction FTS5 inserts of the same chunks, the limit of the
  index itself: read every file, decode, split into memoryd's line ranges,
  insert ``(body, path)`` into one FTS5 table (memoryd's tokenizer) in one
  transaction, WAL and ``synchronous=FULL``; once with stored content, once
  contentless with the zlib-compressed chunk text in a side table. Timed (wall
  and CPU) from the first read to the commit.
* store bytes over source bytes: the whole home of the 2-worker run (db, wal,
  shm) after a TRUNCATE checkpoint, with the largest tables (dbstat).
* search latency: ``memoryd.search.search`` in-process (gate included) on that
  home, queries are the modules' first docstring lines, as in
  ``bench_longmemeval.py`` (its helpers), measured after a warm-up pass.

    .venv/bin/python ops/bench/bench_ingest.py [--repeat N] [--queries N] [--json]

Search latency alone (``--home DIR``): the same measured pass on one stdlib home
(ingested there by ``memoryd ingest`` as above when DIR holds none yet), once in
each of ``--rounds`` fresh processes. Every process asks the same queries in the
same order from the same cold start, so a query's fastest round is its cost
without the other processes of a busy machine: the p50/p95 of those minima
(``min_of_rounds``) is the figure to compare between two versions measured
alternately, beside each round's own p50/p95 and the load average.

    .venv/bin/python ops/bench/bench_ingest.py --home DIR [--rounds N] [--json]

Two versions under one load (``--home DIR --pair OTHER_CHECKOUT``): this tree's
code and another checkout's ask each query in lock step, one process after the
other, in ``--rounds`` fresh pairs; per query the fastest round, p50/p95/mean of
each and this tree's over the other's (on a busy machine the ratios hold where
separate runs do not).

The encoder is the home's (``memoryd.toml``, ``MEMORYD_ENCODER``): the shipped default,
``wordllama``, ranks by the chunks' stored codes; ``--pair ... --other-home DIR2`` compares
two homes, e.g. one with ``encoder = "hashing"``. The hashing re-ranker's share (``--home
DIR --dense MODE`` on a ``hashing`` home, with ``--rounds``, ``--pair`` (this side only),
``--tail``): ``hashing`` searches as configured; ``off``
searches without the dense route (``encoder=False``: other answers, a bound only);
``table`` lets the hashing encoder meet every chunk's stems before the pass (no stem
is hashed at query time; the texts are still tokenized and summed: same answers);
``stored`` gives the hashing encoder every chunk's exact vector before the pass (a
text -> vector table built from the home's chunks, not timed), so the measured
queries hash nothing but their own new words: the same answers, and the bound of
any stored form of the hashing vectors (bench-only: no such table exists).

What the slow tail does (``--home DIR --tail``): one pass under cProfile; the
slowest tenth of the queries against the middle fifth, as CPU, SQL statements and
rows per query and the functions with the most own time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import zlib
from pathlib import Path

import apsw
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_longmemeval import docstring_queries, search_latency  # noqa: E402

from memoryd.base.config import MiB  # noqa: E402
from memoryd.ingest.chunking import decode, line_ranges  # noqa: E402
from memoryd.ingest.scan import scan  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.home import Home  # noqa: E402
from memoryd.search import search  # noqa: E402
from memoryd.storage.corpus import FTS_TOKENIZER, file_texts  # noqa: E402
from memoryd.text.dense import DEFAULT_ENCODER, HashingEncoder  # noqa: E402
from memoryd.text.terms import stems  # noqa: E402

EXCLUDES = ["test/", "tests/", "idle_test/"]
TARGET_RAW_SHARE = 0.80  # end to end
TARGET_STORE_RATIO = 0.50
TARGET_P95_MS = 5.0


def corpus(root: Path) -> list[tuple[str, int]]:
    """(relative path, size) of every file memoryd ingests there."""
    found = scan(root, max_bytes=2 * MiB, excludes=EXCLUDES)
    return [(e.path, e.size) for e in found.eligible]


def queries_of(root: Path, count: int) -> list[str]:
    """Docstring queries (``bench_longmemeval.docstring_queries``) of the files memoryd
    ingests under ``root``: ``count`` measured and as many for the warm-up."""
    return docstring_queries([root / rel for rel, _ in corpus(root)], count * 2)


def home_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.iterdir() if p.is_file())


# -- memoryd end to end ------------------------------------------------------------


def ingest_once(
    root: Path, workers: int | None, home: Path | None = None, project: str | None = None
) -> dict:
    """``memoryd ingest ROOT --wait --json`` on ``home`` (a new one by default);
    ``workers`` None: the setting's default; ``project``: the command's default name."""
    home = home or Path(tempfile.mkdtemp(prefix=f"memoryd-bench-w{workers}-"))
    # The user's path: `memoryd ingest --wait` in its own process (which forks its
    # draining supervisor); the run row times it from enqueue to searchable.
    cmd = [sys.executable, "-m", "memoryd.faces.cli.main", "ingest", str(root), "--home", str(home),
           "--wait", "--json"]  # fmt: skip
    if workers is not None:
        cmd += ["--workers", str(workers)]
    if project is not None:
        cmd += ["--project", project]
    for pattern in EXCLUDES:
        cmd += ["--exclude", pattern]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    summary = json.loads(out.splitlines()[-1])
    md = Memoryd(home)
    if not summary["complete"] or summary["dead_jobs"]:
        raise SystemExit(f"ingest incomplete: {summary}")
    run = md.db.query(
        "SELECT started_at, scanned_at FROM ingest_runs WHERE id = ?", (summary["run"],)
    )[0]
    return {
        "home": home,
        "md": md,
        "bytes": summary["bytes_ingested"],
        "files": summary["files_ingested"],
        "seconds": summary["seconds"],
        "cpu_seconds": summary["cpu_seconds"],
        "searchable_seconds": summary["searchable_seconds"],
        "scan_seconds": run[1] - run[0],
        "wall_seconds": wall,
    }


# -- raw FTS5 ----------------------------------------------------------------------


def raw_insert(root: Path, files: list[tuple[str, int]], contentless: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-raw-") as tmp:
        db = apsw.Connection(str(Path(tmp) / "raw.db"))
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        content = ", content=''" if contentless else ""
        db.execute(
            f"CREATE VIRTUAL TABLE fts USING fts5(body, path{content}, tokenize='{FTS_TOKENIZER}')"
        )
        if contentless:
            db.execute("CREATE TABLE texts (id INTEGER PRIMARY KEY, z BLOB NOT NULL)")
        chunks = 0
        t0, c0 = time.perf_counter(), time.process_time()
        with db:  # one transaction
            for rel, _size in files:
                lines = decode((root / rel).read_bytes()).split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                for start, end in line_ranges(lines):
                    text = "\n".join(lines[start - 1 : end])
                    db.execute("INSERT INTO fts (body, path) VALUES (?, ?)", (text, rel))
                    if contentless:
                        db.execute(
                            "INSERT INTO texts (id, z) VALUES (?, ?)",
                            (db.last_insert_rowid(), zlib.compress(text.encode())),
                        )
                    chunks += 1
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = home_bytes(Path(tmp))
        db.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "chunks": chunks, "store_bytes": size}


# -- store -------------------------------------------------------------------------


def store_report(md: Memoryd, source_bytes: int) -> dict:
    Home(md).checkpoint_wal()
    rows = md.db.query("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8")
    free = md.db.query("PRAGMA freelist_count")[0][0] * md.db.query("PRAGMA page_size")[0][0]
    total = home_bytes(md.home)
    return {
        "bytes": total,
        "ratio": total / source_bytes,
        "tables": {name: size for name, size in rows},
        "freelist_bytes": free,
    }


# -- search latency alone ------------------------------------------------------------


def chunk_texts(db) -> list[str]:
    """Every distinct chunk text of the home, as the engine cuts a candidate's text."""
    chunks = db.query("SELECT file_id, start_line, end_line FROM chunks")
    files = {f: tuple(t.split("\n")) for f, t in file_texts(db, {r[0] for r in chunks}).items()}
    return list({"\n".join(files[f][a - 1 : b]) for f, a, b in chunks if f in files})


class StoredVectors:
    """The hashing encoder with every chunk text's vector computed beforehand (the
    bound of storing them): a known text is looked up, any other text encoded."""

    def __init__(self, db) -> None:
        self._enc = HashingEncoder()
        self.dim, self.name = self._enc.dim, self._enc.name
        texts = chunk_texts(db)
        # the engine's own call for a candidate: its stems, one text per vector
        vectors = self._enc.encode_stems([stems(t) for t in texts])
        self._known = dict(zip(texts, vectors, strict=True))

    def encode(self, texts):
        missing = [t for t in texts if t not in self._known]
        new = dict(zip(missing, self._enc.encode(missing), strict=True)) if missing else {}
        return [self._known.get(t, new.get(t)) for t in texts]


def asker(db, dense: str):
    """``search`` with the dense route of ``--dense`` (see the module's docstring)."""
    if dense == "table":  # the default encoder has met every chunk's stems
        DEFAULT_ENCODER.encode_stems([stems(t) for t in chunk_texts(db)])
    if dense in ("hashing", "table"):
        return search
    encoder = False if dense == "off" else StoredVectors(db)
    return lambda db, project, text: search(db, project, text, encoder=encoder)


def search_pass(
    home: Path, root: Path, queries: int, warm_up_only: bool = False, dense: str = "hashing"
) -> dict:
    """One measured pass (after its warm-up) on ``home``, with each query's times.
    ``warm_up_only``: the warm-up alone (under an instruction counter, the difference
    of the two runs is the measured pass's work)."""
    md = Memoryd(home)
    texts = queries_of(root, queries)
    ask = asker(md.db, dense)
    try:
        if warm_up_only:
            for text in texts[queries:]:
                ask(md.db, root.name, text)
            return {"warm_up": len(texts) - queries}
        return search_latency(md.db, root.name, texts, queries, samples=True, ask=ask)
    finally:
        md.close()


def tail_report(home: Path, root: Path, queries: int, dense: str, top: int = 12) -> dict:
    """What the slowest tenth of the measured pass does that its middle fifth does not
    (after the same warm-up): per query thread CPU under cProfile, SQL statements run
    and rows fetched (apsw's traces), and the functions with the most own time, as ms
    per query of each group."""
    md = Memoryd(home)
    texts = queries_of(root, queries)
    ask = asker(md.db, dense)
    for text in texts[queries:]:
        ask(md.db, root.name, text)
    count = {"sql": 0, "rows": 0}

    def statement(cursor, sql, bindings) -> bool:
        count["sql"] += 1
        return True

    def row(cursor, values):
        count["rows"] += 1
        return values

    md.db.conn.exec_trace, md.db.conn.row_trace = statement, row
    per = []
    for text in texts[:queries]:
        count.update(sql=0, rows=0)
        prof = cProfile.Profile()
        c0 = time.thread_time()
        prof.runcall(ask, md.db, root.name, text)
        per.append(((time.thread_time() - c0) * 1000, count["sql"], count["rows"], prof, text))
    md.close()
    per.sort(key=lambda x: -x[0])
    n = len(per)
    groups = {"tail": per[: max(1, n // 10)], "middle": per[2 * n // 5 : 3 * n // 5]}

    def own_ms(group: list) -> dict[str, float]:
        st = pstats.Stats(group[0][3])
        for x in group[1:]:
            st.add(x[3])
        return {f"{Path(f).name}:{line}({fn})": tt * 1000 / len(group)
                for (f, line, fn), (_, _, tt, _, _) in st.stats.items()}  # type: ignore[attr-defined]  # fmt: skip

    out: dict = {"queries": n, "slowest": [x[4] for x in groups["tail"][:5]]}
    own = {}
    for name, group in groups.items():
        out[name] = {"cpu_ms": round(statistics.mean(x[0] for x in group), 2),
                     "sql_statements": round(statistics.mean(x[1] for x in group), 1),
                     "rows": round(statistics.mean(x[2] for x in group), 1)}  # fmt: skip
        own[name] = own_ms(group)
    heavy = sorted(own["tail"], key=lambda k: -own["tail"][k])[:top]
    out["own_ms_per_query"] = {
        k: {"tail": round(own["tail"][k], 3), "middle": round(own["middle"].get(k, 0.0), 3)}
        for k in heavy
    }
    return out


def serve(home: Path, root: Path, queries: int, dense: str) -> None:
    """One side of :func:`paired`: after the warm-up, "ready"; then for each query
    number read from stdin, that query's wall and thread-CPU ms."""
    md = Memoryd(home)
    texts = queries_of(root, queries)
    ask = asker(md.db, dense)
    for text in texts[queries:]:
        ask(md.db, root.name, text)
    print("ready", flush=True)
    for line in sys.stdin:
        t0, c0 = time.perf_counter(), time.thread_time()
        ask(md.db, root.name, texts[int(line)])
        print((time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000, flush=True)
    md.close()


def _server(tree: Path, home: Path, root: Path, queries: int, dense: str) -> subprocess.Popen:
    """A :func:`serve` process of ``tree``'s bench_ingest.py and package (``dense``
    other than ``hashing``: this tree only, another checkout may not know it)."""
    cmd = [sys.executable, str(tree / "ops/bench/bench_ingest.py"), "--home", str(home),
           "--root", str(root), "--queries", str(queries), "--serve",
           *(["--dense", dense] if dense != "hashing" else [])]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    pipe = subprocess.PIPE
    return subprocess.Popen(cmd, env=env, cwd=tree, text=True, stdin=pipe, stdout=pipe)


def paired(
    home: Path, root: Path, queries: int, rounds: int, other: Path, dense: str,
    other_home: Path | None = None,
) -> dict:  # fmt: skip
    """This tree's code and ``other``'s (another checkout: its own bench_ingest.py and
    package) in lock step: each query is asked by one process, then by the other (the
    first alternating by round), so both meet the same load; per query the fastest of
    ``rounds`` fresh pairs of processes, p50/p95 of each version and their ratios.
    ``other_home``: the other side searches that home (e.g. one built with another
    encoder: its ``memoryd.toml`` decides) instead of ``home``."""
    trees = {"this": ROOT, "other": other.resolve()}
    homes = {"this": home, "other": (other_home or home).resolve()}
    samples: dict[str, list] = {k: [] for k in trees}
    loads = []
    for r in range(rounds):
        procs = {
            k: _server(tree, homes[k], root, queries, dense if k == "this" else "hashing")
            for k, tree in trees.items()
        }
        for proc in procs.values():
            assert proc.stdout.readline().strip() == "ready"
        got: dict[str, list] = {k: [] for k in trees}
        for i in range(queries):
            for k in list(trees)[:: 1 if r % 2 == 0 else -1]:
                procs[k].stdin.write(f"{i}\n")
                procs[k].stdin.flush()
                got[k].append(tuple(map(float, procs[k].stdout.readline().split())))
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
        for k in trees:
            samples[k].append(got[k])
        loads.append(round(os.getloadavg()[0], 2))

    def pcts(values: list[float]) -> dict:
        values = sorted(values)
        return {"p50": round(statistics.median(values), 2),
                "p95": round(values[int(0.95 * (len(values) - 1))], 2),
                "mean": round(statistics.mean(values), 3)}  # fmt: skip

    out: dict = {"queries": queries, "rounds": rounds, "load_avg_1m": loads}
    for k in trees:
        fastest = [[min(run[i][j] for run in samples[k]) for i in range(queries)] for j in (0, 1)]
        out[k] = {
            "tree": str(trees[k]),
            "home": str(homes[k]),
            "wall_ms": pcts(fastest[0]),
            "cpu_ms": pcts(fastest[1]),
        }
    out["this_over_other"] = {
        f"{unit}_{stat}": round(out["this"][unit][stat] / out["other"][unit][stat], 3)
        for unit in ("wall_ms", "cpu_ms") for stat in ("p50", "p95", "mean")
    }  # fmt: skip
    return out


def search_rounds(home: Path, root: Path, queries: int, rounds: int, dense: str) -> dict:
    """:func:`search_pass` in ``rounds`` fresh processes; p50/p95 of each round and of
    every query's fastest round (wall and CPU)."""
    if not (home / "authority.db").exists():
        ingest_once(root, 2, home)["md"].close()
    cmd = [sys.executable, __file__, "--home", str(home), "--root", str(root),
           "--queries", str(queries), "--one-pass", "--dense", dense]  # fmt: skip
    runs = [
        json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        for _ in range(rounds)
    ]

    def pcts(values: list[float]) -> dict:
        values = sorted(values)
        return {"p50": round(statistics.median(values), 2),
                "p95": round(values[int(0.95 * (len(values) - 1))], 2)}  # fmt: skip

    fastest = {k: [min(xs) for xs in zip(*(r[k] for r in runs), strict=True)]
               for k in ("wall_ms", "cpu_ms")}  # fmt: skip
    return {
        "queries": runs[0]["queries"],
        "abstained": runs[0]["abstained"],
        "rounds": [
            {k: r[k] for k in ("p50_ms", "p95_ms", "p50_cpu_ms", "p95_cpu_ms", "load_avg_1m")}
            for r in runs
        ],  # fmt: skip
        "min_of_rounds": {"wall_ms": pcts(fastest["wall_ms"]), "cpu_ms": pcts(fastest["cpu_ms"])},
    }


def latency_main(args) -> int:
    home, root = args.home.resolve(), args.root.resolve()
    if args.one_pass:
        print(json.dumps(search_pass(home, root, args.queries, args.warm_up_only, args.dense)))
        return 0
    if args.tail:
        print(json.dumps(tail_report(home, root, args.queries, args.dense), indent=2))
        return 0
    if args.serve:
        serve(home, root, args.queries, args.dense)
        return 0
    if args.pair:
        print(
            json.dumps(
                paired(
                    home, root, args.queries, args.rounds, args.pair, args.dense, args.other_home
                ),
                indent=2,
            )
        )
        return 0
    result = search_rounds(home, root, args.queries, args.rounds, args.dense)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    t = Table(title=f"Search latency on {home} ({result['queries']} queries, "
              f"{result['abstained']} abstained; {os.cpu_count()} CPUs)")  # fmt: skip
    for col in ("round", "p50 ms", "p95 ms", "p50 CPU ms", "p95 CPU ms", "load"):
        t.add_column(col, justify="left" if col == "round" else "right")
    for i, r in enumerate(result["rounds"], 1):
        t.add_row(str(i), *(f"{r[k]:.2f}" for k in ("p50_ms", "p95_ms", "p50_cpu_ms",
                                                    "p95_cpu_ms", "load_avg_1m")))  # fmt: skip
    m = result["min_of_rounds"]
    t.add_row("[b]each query's fastest round[/b]", f"{m['wall_ms']['p50']:.2f}",
              f"[b]{m['wall_ms']['p95']:.2f}[/b]", f"{m['cpu_ms']['p50']:.2f}",
              f"[b]{m['cpu_ms']['p95']:.2f}[/b]", "")  # fmt: skip
    Console(width=110).print(t)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--queries", type=int, default=300, help="search queries measured")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--home", type=Path, help="search latency only, on this stdlib home")
    ap.add_argument("--rounds", type=int, default=3, help="with --home: fresh processes")
    ap.add_argument("--one-pass", action="store_true", help="with --home: one pass, this process")
    ap.add_argument("--warm-up-only", action="store_true", help="with --one-pass: the warm-up")
    ap.add_argument("--tail", action="store_true", help="with --home: profile the slowest tenth")
    ap.add_argument("--pair", type=Path, help="with --home: in lock step with this checkout")
    ap.add_argument("--other-home", type=Path, help="with --pair: the other side's home")
    ap.add_argument("--dense", choices=("hashing", "table", "stored", "off"), default="hashing",
                    help="with --home: the dense route (see the docstring)")  # fmt: skip
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # --pair's sides
    args = ap.parse_args(argv)
    if args.home is not None:
        return latency_main(args)
    root = args.root.resolve()
    files = corpus(root)
    source = sum(s for _, s in files)
    for rel, _ in files[:50]:
        (root / rel).read_bytes()  # warm the page cache for every runner alike
    results: dict = {"files": len(files), "source_bytes": source, "runs": args.repeat}
    load_before = os.getloadavg()[0]

    # Rounds interleave every runner (raw, raw contentless, 1 worker, 2 workers), so
    # a busy machine slows them alike; each measure is the median over the rounds,
    # and each ratio to raw the median of the per-round ratios.
    runners = {
        "raw": lambda: raw_insert(root, files, contentless=False),
        "rawz": lambda: raw_insert(root, files, contentless=True),
        1: lambda: ingest_once(root, 1),
        2: lambda: ingest_once(root, 2),
    }
    rounds = [{name: fn() for name, fn in runners.items()} for _ in range(args.repeat)]
    every = [r for rnd in rounds for r in rnd.values()]

    def median_of(name):
        samples = sorted((rnd[name] for rnd in rounds), key=lambda r: r["seconds"])
        return samples[len(samples) // 2], [r["seconds"] for r in samples]

    def ratio(name, base):
        return statistics.median(rnd[base]["seconds"] / rnd[name]["seconds"] for rnd in rounds)

    raw, raw_all = median_of("raw")
    rawz, rawz_all = median_of("rawz")
    ingests = {w: median_of(w) for w in (1, 2)}
    ratios = {
        w: {"vs_raw_stored": ratio(w, "raw"), "vs_raw_contentless": ratio(w, "rawz")}
        for w in (1, 2)
    }

    rate = {
        "raw FTS5, stored content": source / raw["seconds"] / 1e6,
        "raw FTS5, contentless + zlib": source / rawz["seconds"] / 1e6,
    }
    for w, (best, _) in ingests.items():
        rate[f"memoryd, {w} worker{'s' if w > 1 else ''}"] = source / best["seconds"] / 1e6
    two = ingests[2][0]
    store = store_report(two["md"], source)
    project = root.name
    texts = docstring_queries([root / rel for rel, _ in files], args.queries * 2)
    # a tree without Python docstrings (``--root /usr/include``) has no queries
    latency = search_latency(two["md"].db, project, texts, args.queries) if texts else None

    results.update(
        {
            "raw_stored": {"mb_s": rate["raw FTS5, stored content"], "seconds": raw_all,
                           "cpu_seconds": raw["cpu_seconds"],
                           "store_ratio": raw["store_bytes"] / source},
            "raw_contentless_zlib": {"mb_s": rate["raw FTS5, contentless + zlib"],
                                     "seconds": rawz_all, "cpu_seconds": rawz["cpu_seconds"],
                                     "store_ratio": rawz["store_bytes"] / source},
            "memoryd": {
                str(w): {
                    "mb_s": source / best["seconds"] / 1e6,
                    "seconds": samples,
                    "cpu_seconds": best["cpu_seconds"],
                    "searchable_seconds": best["searchable_seconds"],
                    "scan_seconds": best["scan_seconds"],
                    "wall_seconds": best["wall_seconds"],
                    "wall_mb_s": source / best["wall_seconds"] / 1e6,
                    **ratios[w],
                }
                for w, (best, samples) in ingests.items()
            },
            "store": store,
            "search": latency,
            "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
    )  # fmt: skip
    for sample in every:
        if "md" in sample:
            sample["md"].close()
            shutil.rmtree(sample["home"], ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
        return 0
    report(results, rate, ingests, raw, rawz, source)
    return 0


def report(results, rate, ingests, raw, rawz, source) -> None:
    console = Console(width=110)
    raw_rate = rate["raw FTS5, stored content"]
    rawz_rate = rate["raw FTS5, contentless + zlib"]
    t = Table(
        title=f"Ingest: {results['files']} files, {source / 1e6:.2f} MB of source "
        f"(median of {results['runs']} interleaved rounds; {os.cpu_count()} CPUs, load "
        f"{results['load_avg_1m'][0]:.1f} -> {results['load_avg_1m'][1]:.1f})"
    )
    for col in ("runner", "seconds", "MB/s", "CPU s", "vs raw stored", "vs raw contentless",
                "searchable s", "scan s", "wall s"):  # fmt: skip
        t.add_column(col, justify="left" if col == "runner" else "right")
    for name, run, vs_stored, vs_contentless in (
        ("raw FTS5, stored content", raw, 1.0, raw_rate / rawz_rate),
        ("raw FTS5, contentless + zlib", rawz, rawz_rate / raw_rate, 1.0),
    ):
        t.add_row(name, f"{run['seconds']:.2f}", f"{source / run['seconds'] / 1e6:.1f}",
                  f"{run['cpu_seconds']:.2f}", f"{vs_stored:.2f}", f"{vs_contentless:.2f}",
                  "", "", "")  # fmt: skip
    for w, (best, _) in ingests.items():
        r = source / best["seconds"] / 1e6
        t.add_row(
            f"memoryd ingest, {w} worker{'s' if w > 1 else ''}",
            f"{best['seconds']:.2f}",
            f"{r:.1f}",
            f"{best['cpu_seconds']:.2f}",
            f"{results['memoryd'][str(w)]['vs_raw_stored']:.2f}",
            f"{results['memoryd'][str(w)]['vs_raw_contentless']:.2f}",
            f"{best['searchable_seconds']:.2f}",
            f"{best['scan_seconds']:.2f}",
            f"{best['wall_seconds']:.2f}",
        )
    console.print(t)

    store = results["store"]
    s = Table(title="Store after a TRUNCATE checkpoint (2-worker home: db + wal + shm)")
    s.add_column("what")
    s.add_column("bytes", justify="right")
    s.add_column("/ source", justify="right")
    s.add_row("[b]whole home[/b]", f"{store['bytes']:,}", f"[b]{store['ratio']:.3f}[/b]")
    s.add_row("raw stored-content db", f"{raw['store_bytes']:,}",
              f"{raw['store_bytes'] / source:.3f}")  # fmt: skip
    s.add_row("raw contentless + zlib db", f"{rawz['store_bytes']:,}",
              f"{rawz['store_bytes'] / source:.3f}")  # fmt: skip
    for name, size in store["tables"].items():
        s.add_row(f"  {name}", f"{size:,}", f"{size / source:.3f}")
    s.add_row(
        "  free pages", f"{store['freelist_bytes']:,}", f"{store['freelist_bytes'] / source:.3f}"
    )
    console.print(s)

    lat = results["search"]
    two = results["memoryd"]["2"]
    g = Table(title="Against issue 3's and 37's targets (end to end)")
    for col in ("measure", "value", "target", "met"):
        g.add_column(col, justify="left" if col == "measure" else "right")

    def row(name, value, target, ok):
        g.add_row(name, value, target, "[green]yes[/green]" if ok else "[red]no[/red]")

    row("2 workers / raw stored content", f"{two['vs_raw_stored']:.0%}",
        f">= {TARGET_RAW_SHARE:.0%}", two["vs_raw_stored"] >= TARGET_RAW_SHARE)  # fmt: skip
    row("2 workers / raw contentless + zlib", f"{two['vs_raw_contentless']:.0%}",
        f">= {TARGET_RAW_SHARE:.0%}", two["vs_raw_contentless"] >= TARGET_RAW_SHARE)  # fmt: skip
    row("store / source", f"{store['ratio']:.3f}", f"<= {TARGET_STORE_RATIO}",
        store["ratio"] <= TARGET_STORE_RATIO)  # fmt: skip
    if lat:
        row(f"search p50 ({lat['queries']} queries, {lat['abstained']} abstained)",
            f"{lat['p50_ms']:.2f} ms", "", True)  # fmt: skip
        row("search p95", f"{lat['p95_ms']:.2f} ms", f"<= {TARGET_P95_MS:g} ms",
            lat["p95_ms"] <= TARGET_P95_MS)  # fmt: skip
    console.print(g)


if __name__ == "__main__":
    raise SystemExit(main())
