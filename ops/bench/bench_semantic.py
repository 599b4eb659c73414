"""The semantic route against no route, in one run: quality and costs.

* **Quality**: LongMemEval (the tuning set: ``lme_data`` splits, one file per
  session, as ``bench_longmemeval.py``) and the repo development set of
  ``bench_devsets.py`` (``dev`` and ``untouched`` parts; answers in the top 3,
  absent questions must abstain). One store each; vectors computed once; the
  same questions are searched with ``encoder = "hashing"`` (no route, today's
  default) and with ``encoder = "wordllama"`` at each rescue floor of
  ``--floors`` (``dense_rescue_similarity``), so the calibration is visible.
* **Costs**: the standard library ingested by ``memoryd ingest --wait
  --workers 2`` on fresh homes, rounds alternating without and with the route
  (rate from the run's own clock, i.e. to searchable, median of ``--repeat``;
  with the route the codes come after, from ``vectors.encode`` jobs: the time
  until the last one commits and the command's wall clock, which waits for
  them, are reported too); the vector table's
  pages (dbstat) over the source bytes; stdlib search p50/p95 (in-process, gate
  included, docstring queries as ``bench_ingest.py``) on both homes.
* **Archive** (records of the route in the evidence archive): the conversations
  development set of ``bench_devsets.py --only conversations`` and LongMemEval
  through archive search (``bench_archive.py``), each archived once with
  ``encoder = "wordllama"`` (codes written with each version) and searched
  without the route (``hashing``) and with it at each floor, one archive owner
  at a time (the archive has one read-write owner).
* **Brute force limit**: one query's code similarity and top-k over N random
  256-bit codes, p95 over 30 queries, for growing N: the size at which brute
  force alone passes the 5 ms search budget, i.e. where an index (usearch,
  sqlite-vec) would be needed.
* **Encode** (the route's encoder alone): tokens/s (when it has a tokenizer),
  texts/s and CPU seconds over the conversations' exchanges (the texts the archive
  codes) and over the chunks of the costs tree (``--costs-root``).
* **Null** (the rescue floor's calibration on code): the standard library with
  the route, random two-word queries of general words (``data/general_words_en.txt``,
  a dictionary sample, and the lexicon's English words): the best similarity any
  chunk code reaches for each, and the queries search answers only with the route
  at each floor (false rescues: none of them has an answer there).

``--route`` names the encoder compared against none (``wordllama``, the default, or
``minilm``: the transformer of the ``semantic`` extra, ``make semantic``);
``--splits`` the development-set parts scored; ``--costs-root`` a smaller tree
than the standard library when the route is slow.

    .venv/bin/python ops/bench/bench_semantic.py [--quick] [--repeat N] [--floors 0.4,0.5]
        [--skip lme,devset,costs,brute,conversations,archive,null,encode] [--null-queries N]
        [--route wordllama|minilm] [--splits dev,untouched] [--costs-root PATH] [--workers N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

import bench_archive  # noqa: E402
import bench_devsets  # noqa: E402
from bench_ingest import EXCLUDES, ingest_once, queries_of  # noqa: E402
from bench_longmemeval import DEPTH, PROJECT, build, search_latency  # noqa: E402
from lme_data import DATA, evaluate, load, print_table, splits  # noqa: E402

from memoryd.archive.owner import ArchiveOwner  # noqa: E402
from memoryd.archive.query import search_archive  # noqa: E402
from memoryd.base.config import load_config  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.search import search  # noqa: E402
from memoryd.storage import open_authority  # noqa: E402
from memoryd.storage.archive.vectors import line_groups  # noqa: E402
from memoryd.storage.corpus import project_id  # noqa: E402
from memoryd.storage.vectors import ENCODE_TEXTS, rebuild_vectors  # noqa: E402
from memoryd.text.dense import code_similarity, load_encoder, pack, unpack  # noqa: E402

BUDGET_MS = 5.0
ON = "wordllama"  # the compared route's encoder (--route)
SPLITS = ("dev", "untouched")  # development-set parts scored (--splits)


def _on(floor: float) -> dict:
    return {"encoder": ON, "dense_rescue_similarity": floor}


def _general_words() -> list[str]:
    """English words of the lexicon's ES->EN list: general language, not of any corpus."""
    path = ROOT / "memoryd" / "text" / "lexicon" / "es_en.txt"
    rows = [line.split() for line in path.read_text().splitlines() if line and line[0] != "#"]
    return sorted({r[1] for r in rows if len(r) == 2 and len(r[1]) > 3})


def null_similarity(db, project: str, pairs: int = 400) -> dict:
    """The calibration: the best code similarity any chunk reaches for two-word
    queries of random general words (a query the store has no particular answer
    to). The rescue floor must sit above nearly all of it."""
    from memoryd.search.semantic import _project_codes
    from memoryd.search.stats import term_stats
    from memoryd.storage.vectors import configured

    pid = project_id(db, project)
    _, codes, dim, _ = _project_codes(db, pid, term_stats(db, pid))
    return _null(codes, dim, configured(db.config), pairs)


def _null(codes: np.ndarray, dim: int, enc, pairs: int) -> dict:
    """Percentiles of the best similarity among ``codes`` of random two-word queries."""
    words = _general_words()
    rng = np.random.default_rng(15)
    queries = [" ".join(rng.choice(words, 2, replace=False)) for _ in range(pairs)]
    qcodes = unpack(pack(enc.encode(queries)), dim)
    best = np.sort([code_similarity(q, codes, dim).max() for q in qcodes])
    pct = {f"p{p}": round(float(np.percentile(best, p)), 3) for p in (50, 90, 95, 99)}
    return {"queries": pairs, "codes": len(codes), **pct, "max": round(float(best[-1]), 3)}


GENERAL_WORDS = ROOT / "ops" / "bench" / "data" / "general_words_en.txt"


def _dictionary_words() -> list[str]:
    """The general word list of ``GENERAL_WORDS`` (a random dictionary sample)."""
    lines = GENERAL_WORDS.read_text().splitlines()
    return [w for w in lines if w and not w.startswith("#")]


def _null_queries(words: list[str], pairs: int, seed: int = 15) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, 2, replace=False)) for _ in range(pairs)]


def stdlib_null(floors: list[float], pairs: int) -> dict:
    """The rescue floor against the null on real chunk codes: the standard library
    ingested with the route (codes written by its jobs), random two-word queries of
    each general word list (the dictionary sample, the lexicon's English words), the
    best code similarity any chunk reaches for each (percentiles), and through search
    at each floor the false rescues: queries that abstain without the route and are
    answered with it (no such query has an answer in the stdlib, so each is false)."""
    from memoryd.search.semantic import _project_codes
    from memoryd.search.stats import term_stats
    from memoryd.storage.vectors import configured

    lists = {"dictionary": _dictionary_words(), "lexicon": _general_words()}
    with tempfile.TemporaryDirectory(prefix="memoryd-sem-null-") as tmp:
        home = Path(tmp) / "home"
        md = Memoryd(home, _on(floors[0]))
        md.init()
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        # the draining supervisor (its own process) reads the encoder from the environment
        _coded(lambda: Projects(md).ingest(stdlib, "stdlib", wait=True, excludes=EXCLUDES))
        md.close()
        dbs = {
            name: open_authority(home, load_config(home, st))
            for name, st in _settings(floors).items()
        }
        on = dbs[f"with@{floors[0]:g}"]
        pid = project_id(on, "stdlib")
        _, codes, dim, _ = _project_codes(on, pid, term_stats(on, pid))
        enc = configured(on.config)
        out: dict = {"codes": len(codes), "dim": dim}
        for list_name, words in lists.items():
            queries = _null_queries(words, pairs)
            qcodes = unpack(pack(enc.encode(queries)), dim)
            best = np.sort([code_similarity(q, codes, dim).max() for q in qcodes])
            row: dict = {"words": len(words), "queries": pairs}
            pct = (50, 90, 95, 99, 99.9)
            row |= {f"p{p:g}": round(float(np.percentile(best, p)), 3) for p in pct}
            row |= {"max": round(float(best[-1]), 3)}
            row["share_at_or_above"] = {
                f"{f:g}": round(float(np.mean(best >= f)), 4) for f in floors
            }
            answered = {name: {q for q in queries if search(db, "stdlib", q)["status"] == "ok"}
                        for name, db in dbs.items()}  # fmt: skip
            row["answered_without"] = len(answered["without"])
            row["false_rescues"] = {
                name: len(got - answered["without"])
                for name, got in answered.items()
                if name != "without"
            }
            out[list_name] = row
        for db in dbs.values():
            db.close()
    return out


def longmemeval(floors: list[float], quick: bool) -> dict:
    data, sessions = load(DATA)
    with tempfile.TemporaryDirectory(prefix="memoryd-sem-lme-") as tmp:
        home = Path(tmp)
        _, digest, sid_digest = build(home, sessions)
        db_off = open_authority(home, load_config(home, _settings(floors)["without"]))
        pid = project_id(db_off, PROJECT)
        cfg = load_config(home, _on(floors[0]))
        writer = open_authority(home, cfg)
        t0 = time.perf_counter()
        chunks = writer.write(lambda tx: rebuild_vectors(tx, pid, cfg))
        encode_s = time.perf_counter() - t0
        runners = {"without": lambda t: search(db_off, PROJECT, t, DEPTH)}
        for f in floors:
            db_on = open_authority(home, load_config(home, _on(f)))
            runners[f"with@{f:g}"] = lambda t, db=db_on: search(db, PROJECT, t, DEPTH)
        parts = splits(len(data), quick)
        out = {name: evaluate(data, runners, digest, sid_digest, ii) for name, ii in parts.items()}
        null = null_similarity(writer, PROJECT)
    return {"chunks": chunks, "encode_seconds": round(encode_s, 2), "null": null, "splits": out}


def devset(floors: list[float]) -> dict:
    with tempfile.TemporaryDirectory(prefix="memoryd-sem-dev-") as tmp:
        os.environ["MEMORYD_ENCODER"] = ON  # the ingest (its workers) computes the vectors
        try:
            md = bench_devsets.build_repo(Path(tmp))
        finally:
            del os.environ["MEMORYD_ENCODER"]
        home = md.home
        mds = {"without": Memoryd(home, {"encoder": "hashing"})}
        mds |= {f"with@{f:g}": Memoryd(home, _on(f)) for f in floors}
        out = {}
        for split in SPLITS:
            out[split] = {
                name: bench_devsets.run_repo(m, split, False)["memoryd"] for name, m in mds.items()
            }
    return out


def _settings(floors: list[float]) -> dict[str, dict]:
    """Each compared configuration by its report name: no route, then each floor."""
    return {"without": {"encoder": "hashing"}} | {f"with@{f:g}": _on(f) for f in floors}


def _coded(build):
    """``build()`` with the route's encoder in the environment: the archive's owner
    writes each version's codes with it."""
    os.environ["MEMORYD_ENCODER"] = ON
    try:
        return build()
    finally:
        del os.environ["MEMORYD_ENCODER"]


def conversations(floors: list[float]) -> dict:
    """Each conversations development set through archive search, per configuration."""
    out: dict = {}
    for set_name, (transcripts, questions) in bench_devsets.CONVERSATION_SETS.items():
        convs = bench_devsets.parse_conversations((bench_devsets.DATA / transcripts).read_text())
        with tempfile.TemporaryDirectory(prefix="memoryd-sem-conv-") as tmp:
            owner = _coded(functools.partial(bench_devsets.build_conversations, Path(tmp), convs))
            codes = sum(len(c) for p in convs for _, c in owner.store.vectors.version_codes(p))
            payload = owner.store.ledgers.counts()["live_payload_bytes"]
            owner.close()
            out[set_name] = {split: {} for split in SPLITS}
            out[set_name]["code_bytes"] = {"codes": codes, "payloads": payload}
            for name, settings in _settings(floors).items():
                with ArchiveOwner(Path(tmp), load_config(Path(tmp), settings)) as owner:
                    for split in out[set_name]:
                        run = bench_devsets.run_conversations(owner, convs, questions, split, False)
                        out[set_name][split][name] = run["memoryd"]
    return out


def archive_lme(floors: list[float], quick: bool) -> dict:
    """LongMemEval through archive search, per configuration (codes written at archiving)."""
    data = bench_archive.load_questions(bench_archive.DATA)
    with tempfile.TemporaryDirectory(prefix="memoryd-sem-arch-") as tmp:
        t0 = time.perf_counter()
        bench_archive.build(Path(tmp) / "plain", data)[0].close()
        plain = time.perf_counter() - t0
        home = Path(tmp) / "coded"
        t0 = time.perf_counter()
        owner, digest, sid_digest = _coded(lambda: bench_archive.build(home, data))
        built = time.perf_counter() - t0
        versions = owner.store.postings.corpus_stats(bench_archive.PROJECT).versions
        blob = b"".join(c for _, c in owner.store.vectors.version_codes(bench_archive.PROJECT))
        code_bytes = len(blob)
        dim = owner.store.vectors.vectors_meta()["dim"]
        null = _null(unpack(blob, dim), dim, load_encoder(ON), 400)  # exchanges' calibration
        payload_bytes = owner.store.ledgers.counts()["live_payload_bytes"]
        owner.close()
        parts = splits(len(data), quick)
        out: dict = {split: {} for split in parts}
        for name, settings in _settings(floors).items():
            with ArchiveOwner(home, load_config(home, settings)) as owner:
                run = {name: lambda t, o=owner: search_archive(o, bench_archive.PROJECT, t,
                                                               bench_archive.DEPTH,
                                                               bench_archive.NOW)}  # fmt: skip
                for split, ii in parts.items():
                    out[split] |= evaluate(data, run, digest, sid_digest, ii)
    return {
        "versions": versions,
        "archive_seconds": {"without": round(plain, 1), "with": round(built, 1)},
        "code_bytes": code_bytes,
        "code_share_of_payload": round(code_bytes / payload_bytes, 4),
        "null": null,
        "splits": out,
    }


def _vector_bytes(md: Memoryd) -> int:
    rows = md.db.query(
        "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN"
        " ('chunk_vectors', 'chunk_vectors_project', 'vector_encoder')"
    )
    return rows[0][0]


def _codes_after(md: Memoryd) -> float:
    """Seconds from the run's end (searchable) to its last vectors job's commit."""
    rows = md.db.query(
        "SELECT (SELECT max(finished_at) FROM jobs WHERE kind = 'vectors.encode')"
        " - (SELECT max(finished_at) FROM ingest_runs)"
    )
    return max(0.0, rows[0][0] or 0.0)


def costs(repeat: int, queries: int, root: Path, workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="memoryd-sem-costs-") as tmp:
        rounds = []
        try:
            for i in range(repeat):
                rounds.append(_cost_round(root, Path(tmp) / str(i), workers))
            report = _cost_report(root, rounds, queries)
            report["encode_chunks"] = encode_rate(_chunk_texts(rounds[-1]["without"]["md"]))
            return report
        finally:
            for rnd in rounds:
                for side in rnd.values():
                    side["md"].close()


def _cost_round(root: Path, tmp: Path, workers: int) -> dict:
    """One ingest of ``root`` without the route and one with it, homes under ``tmp``."""
    rnd = {}
    for name, enc in (("without", "hashing"), ("with", ON)):
        os.environ["MEMORYD_ENCODER"] = enc
        try:
            rnd[name] = ingest_once(root, workers, tmp / name)
        finally:
            del os.environ["MEMORYD_ENCODER"]
    return rnd


def _cost_report(root: Path, rounds: list[dict], queries: int) -> dict:
    source = rounds[0]["with"]["bytes"]
    rate = {n: statistics.median(r[n]["bytes"] / r[n]["seconds"] / 1e6 for r in rounds)
            for n in ("without", "with")}  # fmt: skip
    share = statistics.median(r["without"]["seconds"] / r["with"]["seconds"] for r in rounds)
    wall = statistics.median(
        r["without"]["wall_seconds"] / r["with"]["wall_seconds"] for r in rounds
    )
    coded = statistics.median(_codes_after(r["with"]["md"]) for r in rounds)
    last = rounds[-1]
    texts = queries_of(root, queries)  # the files ingest sees (memoryd's scan)
    latency = {}
    for name in ("without", "with"):
        md = last[name]["md"]
        project = Projects(md).listing()[0]["project"]
        latency[name] = search_latency(md.reader, project, texts, queries)
    vec = _vector_bytes(last["with"]["md"])
    return {
        "source_bytes": source,
        "rate_mb_s": {k: round(v, 2) for k, v in rate.items()},
        "with_share_of_without": round(share, 3),
        "wall_with_share_of_without": round(wall, 3),
        "codes_after_searchable_s": round(coded, 2),
        "vector_bytes": vec,
        "vector_share_of_source": round(vec / source, 4),
        "search": latency,
        "excludes": EXCLUDES,
    }


def encode_rate(texts: list[str]) -> dict:
    """The route's encoder over ``texts`` in the vectors jobs' batches: texts/s,
    tokens/s (an encoder with a tokenizer) and the CPU seconds of this process."""
    enc = load_encoder(ON)
    enc.encode(texts[:1])  # loaded and warm
    tokens = sum(map(len, enc.token_ids(texts))) if hasattr(enc, "token_ids") else None
    cpu, t0 = time.process_time(), time.perf_counter()
    for i in range(0, len(texts), ENCODE_TEXTS):
        enc.encode(texts[i : i + ENCODE_TEXTS])
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu
    out = {"texts": len(texts), "chars": sum(map(len, texts)), "wall_s": round(wall, 2),
           "cpu_s": round(cpu, 2), "texts_per_s": round(len(texts) / wall, 1),
           "load_avg_1m": round(os.getloadavg()[0], 2)}  # fmt: skip
    if tokens is not None:
        out |= {"tokens": tokens, "tokens_per_s": round(tokens / wall),
                "tokens_per_cpu_s": round(tokens / cpu)}  # fmt: skip
    return out


def _chunk_texts(md: Memoryd) -> list[str]:
    """Every chunk text of the home's one project, as a vectors job reads them."""
    from memoryd.storage.corpus import file_texts
    from memoryd.storage.vectors import _chunk_texts as chunk_texts

    fids = [r[0] for r in md.db.query("SELECT id FROM files WHERE live = 1 ORDER BY id")]
    texts = file_texts(md.db, fids)
    return [t for fid in fids for t in chunk_texts(md.db, fid, texts[fid])]


def exchange_texts() -> list[str]:
    """The conversations development sets' exchanges, as the archive codes them."""
    texts = []
    for transcripts, _ in bench_devsets.CONVERSATION_SETS.values():
        convs = bench_devsets.parse_conversations((bench_devsets.DATA / transcripts).read_text())
        for conv in convs.values():
            for _, turns in conv["sessions"]:
                lines = bench_devsets.session_jsonl(turns).decode().splitlines()
                content = "\n".join(
                    f"{json.loads(m)['role']}: {json.loads(m)['content']}" for m in lines
                )
                texts += line_groups(content)
    return texts


def brute_force(sizes: list[int], dim: int = 256, k: int = 20) -> list[dict]:
    rng = np.random.default_rng(15)
    out = []
    for n in sizes:
        codes = rng.integers(0, 256, (n, dim // 8), dtype=np.uint8)
        lat = []
        for _ in range(30):
            q = rng.integers(0, 256, dim // 8, dtype=np.uint8)
            t0 = time.perf_counter()
            sims = code_similarity(q, codes, dim)
            np.argpartition(-sims, k - 1)[:k]
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        out.append({"codes": n, "p50_ms": round(lat[15], 3), "p95_ms": round(lat[28], 3)})
    return out


def main(argv=None) -> int:
    global ON, SPLITS  # one route and one set of parts for every part of the run
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="LongMemEval every 5th question")
    ap.add_argument("--repeat", type=int, default=3, help="ingest rounds (median)")
    ap.add_argument("--queries", type=int, default=300, help="stdlib search queries")
    ap.add_argument("--floors", default="0.5", help="rescue floors compared (comma-separated)")
    ap.add_argument(
        "--skip",
        default="",
        help="parts left out: lme,devset,costs,brute,conversations,archive,null,encode",
    )
    ap.add_argument("--route", default=ON, help="the compared encoder: wordllama or minilm")
    ap.add_argument("--splits", default=",".join(SPLITS), help="development-set parts")
    ap.add_argument("--costs-root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    ap.add_argument("--workers", type=int, default=2, help="ingest workers of the costs")
    ap.add_argument("--null-queries", type=int, default=1000, help="random queries of the null")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    ON, SPLITS = args.route, tuple(args.splits.split(","))
    floors = [float(f) for f in args.floors.split(",")]
    skip = set(args.skip.split(","))
    report: dict = {"load_avg_1m_start": round(os.getloadavg()[0], 2), "floors": floors,
                    "route": ON}  # fmt: skip
    if "encode" not in skip:
        report["encode_exchanges"] = encode_rate(exchange_texts())
    if "brute" not in skip:
        report["brute_force"] = brute_force([10_000, 50_000, 100_000, 250_000, 500_000, 1_000_000])
    if "costs" not in skip:
        report["costs"] = costs(args.repeat, args.queries, args.costs_root.resolve(), args.workers)
    if "devset" not in skip:
        report["devset_repo"] = devset(floors)
    if "lme" not in skip:
        report["longmemeval"] = longmemeval(floors, args.quick)
    if "conversations" not in skip:
        report["conversations"] = conversations(floors)
    if "archive" not in skip:
        report["archive_lme"] = archive_lme(floors, args.quick)
    if "null" not in skip:
        report["stdlib_null"] = stdlib_null(floors, args.null_queries)
    report["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    _print(report)
    return 0


def _print(report: dict) -> None:
    print(f"route {report['route']}; load average at start {report['load_avg_1m_start']},"
          f" end {report['load_avg_1m_end']}")  # fmt: skip
    if enc := report.get("encode_exchanges"):
        print(f"encode conversation exchanges: {enc}")
    if enc := report.get("costs", {}).get("encode_chunks"):
        print(f"encode the costs tree's chunks: {enc}")
    for row in report.get("brute_force", []):
        over = " (over the 5 ms budget)" if row["p95_ms"] > BUDGET_MS else ""
        print(f"brute force {row['codes']:>9,} codes: p50 {row['p50_ms']} ms,"
              f" p95 {row['p95_ms']} ms{over}")  # fmt: skip
    if c := report.get("costs"):
        rate, share = c["rate_mb_s"], c["vector_share_of_source"]
        print(f"ingest of {c['source_bytes']:,} bytes, MB/s to searchable (run clock)"
              f" without {rate['without']},"
              f" with {rate['with']} (with/without {c['with_share_of_without']:.0%});"
              f" codes all written {c['codes_after_searchable_s']} s later;"
              f" command wall with/without {c['wall_with_share_of_without']:.0%};"
              f" vectors {c['vector_bytes']:,} bytes = {share:.3f}x source")  # fmt: skip
        for name, lat in c["search"].items():
            print(f"search of the costs tree {name}: p50 {lat['p50_ms']} ms, p95 {lat['p95_ms']} ms"
                  f" (CPU p95 {lat['p95_cpu_ms']} ms), abstained {lat['abstained']}"
                  f"/{lat['queries']}")  # fmt: skip
    for split, per in report.get("devset_repo", {}).items():
        for name, s in per.items():
            print(f"repo devset {split} {name}: {s}")
    if lme := report.get("longmemeval"):
        print(f"LongMemEval: {lme['chunks']} chunks encoded in {lme['encode_seconds']} s")
        print_table(lme["splits"])
    for set_name, by_split in report.get("conversations", {}).items():
        size = by_split.pop("code_bytes")
        print(f"{set_name}: codes {size['codes']:,} bytes beside {size['payloads']:,} bytes"
              " of compressed payloads")  # fmt: skip
        for split, per in by_split.items():
            for name, s in per.items():
                print(f"{set_name} devset {split} {name}: {s}")
    if arch := report.get("archive_lme"):
        took = arch["archive_seconds"]
        print(f"LongMemEval through the archive: {arch['versions']} versions archived in"
              f" {took['without']} s without codes, {took['with']} s with them;"
              f" codes {arch['code_bytes']:,} bytes = {arch['code_share_of_payload']:.3f}x"
              " the compressed payloads")  # fmt: skip
        print(f"  null similarity over exchanges (best of random two-word queries): {arch['null']}")
        print_table(arch["splits"])
    if null := report.get("stdlib_null"):
        print(f"null on the stdlib's {null['codes']:,} chunk codes ({null['dim']} bits):")
        for name in ("dictionary", "lexicon"):
            print(f"  {name}: {null[name]}")


if __name__ == "__main__":
    raise SystemExit(main())
