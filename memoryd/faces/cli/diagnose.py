"""``memoryd diagnose``: a checkout's ingest, store and retrieval measured, offline."""

from __future__ import annotations

import click

from memoryd.base.errors import MemorydError
from memoryd.faces.cli.common import emit_json, human_rate, human_size, out, report_error, table_of


@click.command(
    "diagnose",
    help="Ingest CHECKOUT into a new workspace and report bytes by phase, time, oracle"
    " scores and the workload (facts saved by memory add, a contrary case, unanswerable"
    " questions; search and recall with and without the dense route, five warm repetitions)"
    " (offline; never reads or writes your home).\n\n\b\nExample:\n"
    "  memoryd diagnose ~/src/app --workspace /tmp/diag --oracles ops/oracles/app.json",
)
@click.argument("checkout", type=click.Path(exists=True, file_okay=False))
@click.option("--workspace", required=True, type=click.Path(), help="A directory to create.")
@click.option("--oracles", type=click.Path(exists=True, dir_okay=False), help="Oracle file.")
@click.option("--baseline", help="Another memoryd command to run the same diagnostic.")
@click.option("--workers", type=click.IntRange(1, 16), default=2, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine output.")
def diagnose_cmd(checkout, workspace, oracles, baseline, workers, as_json) -> None:
    from memoryd.faces import diagnose

    try:
        report = diagnose.diagnose(
            checkout, workspace, oracles=oracles, baseline=baseline, workers=workers
        )
    except MemorydError as exc:
        report_error(exc.code, str(exc), exc.retryable, exc.exit_code, as_json)
        return
    if as_json:
        emit_json(report)
    else:
        print_diagnosis(report)


def print_diagnosis(r: dict) -> None:
    out.print(
        f"{r['checkout']}: {r['files']:,} files, {human_size(r['source_bytes'])} of source"
        f" ingested (of {human_size(r['checkout_bytes'])} in the checkout)"
        f" in {r['ingest_seconds']:.1f}s end to end"
        f" ({human_rate(r['source_bytes'], r['ingest_seconds'])},"
        f" {r['ingest_cpu_seconds']:.1f} CPU s; searchable after {r['searchable_seconds']:.1f}s)",
        highlight=False,
    )
    b = r["bytes"]
    table = table_of("phase", "database", "WAL", "SHM", "archive", "other", "total", title="bytes")
    for phase in ("empty_authority", "peak_live", "live_after_drain", "quiescent", "closed",
                  "reopened"):  # fmt: skip
        row = b[phase]
        parts = ("database", "wal", "shm", "archive", "other", "total")
        table.add_row(phase.replace("_", " "), *(f"{row[p + '_bytes']:,}" for p in parts))
    out.print(table)
    out.print(
        f"largest WAL {b['largest_wal_bytes']:,} bytes ({b['samples']:,} commits sampled);"
        f" store after a checkpoint, less the empty authority: {r['marginal_ratio']}x the source",
        highlight=False,
    )
    t = r["time"]
    out.print(
        f"first query {t['first_query_ms']} ms; warm p50 {t['warm_p50_ms']} ms,"
        f" p95 {t['warm_p95_ms']} ms over {t['warm_queries']} queries",
        highlight=False,
    )
    if r["oracles"]:
        _print_oracles(r["oracles"])
    if r.get("workload"):
        _print_workload(r["workload"])
    if "baseline" in r:
        from memoryd.faces.diagnose import comparison

        table = table_of(
            "measure", "this memoryd", "baseline", "ratio", title="against the baseline"
        )
        for label, ours, theirs, ratio in comparison(r):
            table.add_row(label, f"{ours:,}", f"{theirs:,}", "-" if ratio is None else f"{ratio}x")
        out.print(table)


def _print_oracles(o: dict) -> None:
    a, u = o["answerable"], o["unanswerable"]
    out.print(
        f"answerable: {a['hits']}/{a['cases']} hit@{o['k']}, MRR {a['mrr']},"
        f" precision {a['precision']}; unanswerable: {u['abstained']}/{u['cases']} abstained",
        highlight=False,
    )
    table = table_of("case", "result", "detail", box=None)
    for case in o["cases"]:
        if "hit" in case:
            result = "hit" if case["hit"] else "miss"
            detail = f"rank {round(1 / case['reciprocal_rank'])}" if case["hit"] else _miss(case, o)
        else:
            result = "abstained" if case["passed"] else "FAIL"
            detail = case["failure"] or ""
        table.add_row(str(case["id"]), result, detail)
    out.print(table)


def _print_workload(w: dict) -> None:
    """The workload's facts, then one row per route: hits, the contrary case,
    abstentions and false positives, and the latency of its repetitions."""
    f = w["facts"]
    done = ", ".join(f"{n} {outcome}" for outcome, n in sorted(f["outcomes"].items())) or "none"
    const = f["contrary_constant"]
    cited = f"; contrary: {const['name']} ({const['path']}:{const['line']})" if const else ""
    out.print(f"workload: {f['staged']} facts by memory add ({done}){cited}", highlight=False)
    reps = next(iter(w["routes"].values()))["repetitions"]
    table = table_of(
        "route", f"hit@{w['k']}", "MRR", "contrary", "abstained", "FP", "first", "p50", "p95",
        box=None, title=f"by route (ms; {reps} warm repetitions a case; FP: false positives)",
    )  # fmt: skip
    for route, r in w["routes"].items():
        a, c, u = r["answerable"], r["contrary"], r["unanswerable"]
        stale = f" ({c['stale_returned']} stale)" if c["stale_returned"] else ""
        table.add_row(
            route, f"{a['hits']}/{a['cases']}", f"{a['mrr']}", f"{c['hits']}/{c['cases']}{stale}",
            f"{u['abstained']}/{u['cases']}", str(u["false_positives"]), f"{r['first_ask_p50_ms']}",
            f"{r['warm_p50_ms']}", f"{r['warm_p95_ms']}",
        )  # fmt: skip
    out.print(table)


def _miss(case: dict, o: dict) -> str:
    """Why an answerable case missed: its search abstained, or answered without an
    expected path among the first k items (never the search's bare status, 'ok')."""
    if case["status"] == "abstained":
        return "abstained"
    return f"answered; no expected path in the top {o['k']}"
