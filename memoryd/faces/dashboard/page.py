"""The dashboard page: one self-contained HTML document from a snapshot (no script).

Every number that ``memoryd status --json`` also reports sits in an element
carrying ``data-key="<its path in that JSON>"``, so a test (or a person) can
check the page against the status taken at the same moment (``taken_at``).
"""

from __future__ import annotations

from html import escape
from typing import Any

from memoryd.base.times import iso_time
from memoryd.faces.dashboard.svg import Chart
from memoryd.storage.records import RATES

STATES = ("queued", "claimed", "failed", "dead", "done")
MiB = 1024 * 1024
GAP_PERIODS = 3  # a supervisor samples every period: three missed ones are a gap
EFFECT_LABELS = {"effects": "job effects applied", "jobs_with_effects": "jobs that applied effects"}
TICK_HEAD = ["last ticks", "state", "waves", "expired", "purged", "keys deleted", "refused"]

STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#111;background:#fafafa}
h1{font-size:18px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px;border-bottom:1px solid #ddd}
section{display:inline-block;vertical-align:top;margin:0 18px 8px 0}
table{border-collapse:collapse;background:#fff} td,th{border:1px solid #e5e7eb;padding:2px 6px}
th{background:#f3f4f6;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
.paused{color:#b91c1c;font-weight:bold} .ok{color:#15803d} .muted{color:#6b7280}
.bar{display:inline-block;width:120px;height:9px;background:#e5e7eb;vertical-align:middle}
.bar>i{display:block;height:9px;background:#2563eb}
"""


def show(value: Any) -> str:
    """How a value reads on the page (integers with thousands separators)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def cell(value: Any, key: str | None = None, cls: str = "n") -> str:
    attr = f' data-key="{escape(key)}"' if key else ""
    return f'<td class="{cls}"{attr}>{escape(show(value))}</td>'


def table(head: list[str], rows: list[str]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(f"<tr>{r}</tr>" for r in rows) or f'<tr><td colspan="{len(head)}">none</td></tr>'
    return f"<table><tr>{th}</tr>{body}</table>"


def mib(n: float) -> str:
    return f"{n / MiB:,.1f} MiB"


def render(snap: dict, *, refresh_seconds: float, window_seconds: float) -> str:
    st = snap["status"]
    t1 = snap["taken_ts"]
    first = snap["samples"][0]["at"] if snap["samples"] else t1 - 60.0
    t0 = max(t1 - window_seconds, min(first, t1 - 60.0))  # no empty stretch before the first
    body = [
        _header(snap),
        _now(st),
        _queue(snap, t0, t1),
        _wal(snap, t0, t1),
        _workers(snap, t0, t1),
        _runs(snap["runs"]),
        _retention(snap["retention"]),
        _memory(snap["memory"]),
        _dead(snap["dead"]),
    ]
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{refresh_seconds:g}">'
        f"<title>memoryd dashboard: {escape(st['home'])}</title><style>{STYLE}</style>"
        f"</head><body>{''.join(body)}</body></html>"
    )


def _header(snap: dict) -> str:
    st = snap["status"]
    sup = st["supervisor"]
    state = (
        f'supervisor pid <span data-key="supervisor.pid">{sup["pid"]}</span>'
        if sup
        else '<span class="paused">no supervisor running</span>'
    )
    if st["claims_paused"]:
        paused = f'<div class="paused">claims paused: {escape(st["pause_reason"] or "")}</div>'
    elif sup:
        paused = '<div class="ok">claims running</div>'
    else:  # nothing claims: "running" would say the opposite of the line above
        paused = '<div class="paused">no claims: start `memoryd run`</div>'

    return (
        f"<h1>memoryd — {escape(st['home'])}</h1>"
        f'<div>snapshot taken <span id="taken_at">{escape(snap["taken_at"])}</span> · {state}'
        f" · samples kept {snap['samples_kept']:,} (one per"
        f" {snap['sample_period_seconds']:g} s)</div>{paused}"
    )


def _now(st: dict) -> str:
    """The numbers of `memoryd status --json`, each under its JSON path."""
    q = [f"<th>{s}</th>{cell(st['queue'][s], f'queue.{s}')}" for s in STATES]
    misc = [
        f"<th>schema</th>{cell(st['schema'], 'schema')}",
        f"<th>done jobs kept</th>{cell(st['done_jobs']['kept'], 'done_jobs.kept')}",
        "<th>waiting without supervisor</th>"
        + cell(st["waiting_without_supervisor"], "waiting_without_supervisor"),
        f"<th>WAL bytes</th>{cell(st['wal_bytes'], 'wal_bytes')}",
        f"<th>WAL reader pids</th>{cell(st['wal_reader_pids'], 'wal_reader_pids')}",
        f"<th>claims paused</th>{cell(st['claims_paused'], 'claims_paused')}",
        *(
            f"<th>{EFFECT_LABELS.get(k, k)}</th>{cell(v, f'effects.{k}')}"
            for k, v in st["effects"].items()
        ),
    ]
    projects = [
        cell(p["project"], f"projects.{i}.project", "")
        + cell(p["files"], f"projects.{i}.files")
        + cell(p["chunks"], f"projects.{i}.chunks")
        + cell(p["source_bytes"], f"projects.{i}.source_bytes")
        + cell(p["last_ingest_at"], f"projects.{i}.last_ingest_at", "")
        for i, p in enumerate(st["projects"])
    ]
    return (
        "<h2>Now</h2>"
        f"<section>{table(['state', 'jobs'], q)}</section>"
        f"<section>{table(['', ''], misc)}</section>"
        f"<section>{table(['project', 'files', 'chunks', 'bytes', 'last ingest'], projects)}"
        "</section>"
    )


def _gap(snap: dict) -> float:
    """Samples farther apart than this were not taken by one running supervisor."""
    return GAP_PERIODS * snap["sample_period_seconds"]


def _series(samples: list[dict], fn) -> list[tuple[float, float]]:
    return [(s["at"], v) for s in samples if (v := fn(s)) is not None]


def _queue(snap: dict, t0: float, t1: float) -> str:
    ss = snap["samples"]
    rate = Chart("jobs done per second", t0, t1, fmt=lambda v: f"{v:,.1f}/s", gap=_gap(snap))
    rate.lines["done/s"] = _series(ss, lambda s: s.get("done_per_second"))
    depth = Chart("queue depth", t0, t1, gap=_gap(snap))
    for state in ("waiting", "claimed", "dead"):  # waiting: queued or failed (to retry)
        depth.lines[state] = _series(ss, lambda s, st=state: s["queue"].get(st, 0))
    kinds = [
        f"<td>{escape(k)}</td>" + "".join(cell(states.get(s, 0)) for s in STATES)
        for k, states in sorted(snap["kinds"].items())
    ]
    return (
        "<h2>Queue</h2>"
        f"<section>{table(['kind', *STATES], kinds)}</section>"
        f"<section>{rate.render()}<br>{depth.render()}</section>"
    )


def _wal(snap: dict, t0: float, t1: float) -> str:
    ss = snap["samples"]
    chart = Chart(
        "WAL bytes (red bands: claims paused; dots: checkpoints)", t0, t1, mib, gap=_gap(snap)
    )
    chart.lines["WAL"] = _series(ss, lambda s: s["wal_bytes"])
    for p in snap["pauses"]:
        chart.bands.append((p["start"], p["end"] or t1, f"paused; pids {p['pids']}"))
    for cp in snap["checkpoints"]:
        label = "ok" if cp["ok"] else f"gave way: {cp['blocked_by']} (pids {cp['reader_pids']})"
        chart.marks.append((cp["at"], cp["wal_bytes_after"], cp["ok"], label))
    pauses = [
        cell(_utc(p["start"]), cls="")
        + cell(_utc(p["end"]) if p["end"] else "ongoing", cls="")
        + cell(p["pids"], cls="")
        + cell(p["reason"], cls="")
        for p in reversed(snap["pauses"][-10:])
    ]
    cps = [
        cell(_utc(c["at"]), cls="")
        + cell("ok" if c["ok"] else "gave way", cls="")
        + cell(c["wal_bytes_before"])
        + cell(c["wal_bytes_after"])
        + cell(c["reader_pids"], cls="")
        for c in reversed(snap["checkpoints"][-8:])
    ]
    return (
        "<h2>WAL and claim pauses</h2>"
        f"<section>{chart.render()}</section>"
        f"<section>{table(['paused at', 'until', 'pinning pids', 'reason'], pauses)}<br>"
        f"{table(['checkpoint', 'result', 'before', 'after', 'reader pids'], cps)}</section>"
    )


def _workers(snap: dict, t0: float, t1: float) -> str:
    ss = snap["samples"]
    last = ss[-1] if ss else {"workers": [], "respawned": 0, "archive_bytes": 0}
    rows = [
        cell(w["pool"], cls="") + cell(w["index"]) + cell(w["pid"]) + cell(mib(w["rss_bytes"] or 0))
        for w in last["workers"]
    ]
    rss = Chart("worker RSS", t0, t1, mib, gap=_gap(snap))
    for w in last["workers"]:
        rss.lines[f"{w['pool']} {w['index']}"] = _series(
            ss,
            lambda s, w=w: next(
                (x["rss_bytes"] for x in s["workers"] if x["pid"] == w["pid"]), None
            ),
        )
    return (
        "<h2>Workers</h2>"
        f"<section>{table(['pool', 'index', 'pid', 'RSS'], rows)}"
        f"<div>respawned this run: {last['respawned']:,} · archive on disk:"
        f" {mib(last['archive_bytes'])}</div></section><section>{rss.render()}</section>"
    )


def _runs(runs: list[dict]) -> str:
    rows = []
    for r in runs:
        share = r["bytes_done"] / r["bytes_total"] if r["bytes_total"] else 1.0
        state = "finished" if r["finished_at"] else "scanning" if not r["scanned_at"] else "running"
        rows.append(
            cell(r["id"])
            + cell(r["project"], cls="")
            + cell(state, cls="")
            + f'<td><span class="bar"><i style="width:{share * 100:.0f}%"></i></span>'
            f" {share * 100:.0f}%</td>"
            + cell(f"{r['files_done']:,} / {r['files_total']:,}")
            + cell(f"{r['batches_done']:,} / {r['batches']:,}")
            + cell(r["unchanged"])
            + cell(r["retired"] if r["finalized"] else "—")
            + cell(_utc(r["started_at"]), cls="")
        )
    head = ["run", "project", "state", "progress", "files", "batches", "unchanged", "retired",
            "started"]  # fmt: skip
    return f"<h2>Ingest runs</h2><section>{table(head, rows)}</section>"


def _retention(ret: dict) -> str:
    pol = ret["policy"]
    classes = [
        cell(c, cls="") + cell(p["age_days"] or "never") + cell(p["recall_days"] or "never")
        for c, p in pol.items()
    ]
    disk = ret["disk"]
    low = disk["low_bytes"] and disk["free_bytes"] < disk["low_bytes"]
    ticks = [
        cell(t["finished_at"], cls="")
        + cell(t["state"], cls="")
        + "".join(
            cell(((t["answer"] or {}).get("result") or {}).get(k))
            for k in ("waves", "expired", "purged_versions", "keys_deleted")
        )
        + cell(((t["answer"] or {}).get("result") or {}).get("refused") or t["error"], cls="")
        for t in ret["ticks"]
    ]
    parts = [
        "<h2>Retention</h2>",
        f"<section>{table(['class', 'age days', 'recall days'], classes)}",
        f'<div class="{"paused" if low else "ok"}">disk guard: {mib(disk["free_bytes"])} free,'
        f" low mode below {mib(disk['low_bytes'])}, reserve {mib(disk['reserve_bytes'])}</div>",
        "</section>",
        f"<section>{table(TICK_HEAD, ticks)}</section>",
    ]
    arc = ret["archive"]
    if arc is None:
        parts.append('<section class="muted">no evidence archive yet</section>')
        return "".join(parts)
    due = [cell(day, cls="") + cell(n) for day, n in sorted(arc["due_by_day"].items())]
    comp = arc["compaction"] or {}
    versions = [cell(s, cls="") + cell(n) for s, n in arc["counts"]["versions"].items()]
    degraded = arc["degraded"]
    parts += [
        f"<section>{table(['due', 'entries'], due)}</section>",
        f"<section>{table(['versions', 'count'], versions)}</section>",
        "<section>"
        + table(
            ["compaction", ""],
            [
                f"<th>flushes</th>{cell(comp.get('flushes'))}",
                f"<th>reclaimed</th>{cell(comp.get('reclaimed_bytes'))}",
                f"<th>armed</th>{cell(comp.get('armed'))}",
                f"<th>deleted keys total</th>{cell(arc['deleted_keys_total'])}",
                f"<th>SST bytes</th>{cell(arc['properties'].get('sst_bytes'))}",
                f"<th>live data bytes</th>{cell(arc['properties'].get('live_data_bytes'))}",
            ],
        )
        + (
            f'<div class="paused">degraded: {escape(str(degraded))}</div>'
            if degraded
            else '<div class="ok">not degraded</div>'
        )
        + "</section>",
    ]
    return "".join(parts)


def _memory(mem: dict) -> str:
    backlog = [f"<th>{escape(k)}</th>{cell(v)}" for k, v in mem["backlog"].items()]
    records = [f"<th>{escape(k)}</th>{cell(v)}" for k, v in mem["records"].items()]
    rates = [
        f"<th>duplicate rate</th>{cell(mem['duplicate_rate'])}",
        f"<th>discard rate</th>{cell(mem['discard_rate'])}",
        *(f"<th>{escape(k)}</th>{cell(v)}" for k, v in mem["totals"].items()),
    ]
    runs = [
        cell(r["at"], cls="") + "".join(cell(r.get(k)) for k in RATES) for r in mem["last_runs"]
    ]
    return (
        "<h2>Memory consolidation</h2>"
        f"<section>{table(['backlog', ''], backlog)}</section>"
        f"<section>{table(['records', ''], records)}</section>"
        f"<section>{table(['rates (run log)', ''], rates)}</section>"
        f"<section>{table(['last runs', *RATES], runs)}</section>"
    )


def _dead(dead: list[dict]) -> str:
    rows = [
        cell(j["id"])
        + cell(j["kind"], cls="")
        + cell(j["attempts"])
        + cell(j["finished_at"] or j["updated_at"], cls="")
        + cell((j["last_error"] or "")[:300], cls="")
        for j in dead
    ]
    return (
        "<h2>Dead jobs</h2>"
        f"<section>{table(['job', 'kind', 'attempts', 'at', 'last error'], rows)}</section>"
    )


def _utc(t: float | None) -> str:
    return iso_time(t) or "—"
