"""``memoryd status``: the queue, the supervisor, the authority and the projects."""

from __future__ import annotations

from memoryd.faces.cli.common import command, emit_json, human_duration, human_size, out, table_of
from memoryd.operations.api import Memoryd
from memoryd.operations.home import Home


@command(None, "status", "memoryd status --json")
def status_cmd(md: Memoryd, as_json: bool) -> None:
    """Show the queue, the supervisor and the authority."""
    st = Home(md).status(full=as_json)  # what the lines below print, and no more
    if as_json:
        emit_json(st)
        return
    sup = st["supervisor"]
    out.print(f"home {st['home']}  schema {st['schema']}  WAL {st['wal_bytes']:,} bytes")
    if st["claims_paused"]:
        out.print(f"[bold yellow]claims paused[/]: {st['pause_reason']}")
    out.print(
        f"supervisor: pid {sup['pid']}, {len(sup.get('workers', []))} workers"
        if sup
        else "supervisor: not running"
    )
    if st["waiting_without_supervisor"]:
        out.print(
            f"[bold yellow]{st['waiting_without_supervisor']:,} jobs wait and no supervisor is "
            "running[/]: process them with `memoryd run --drain` (or keep `memoryd run` going)",
            highlight=False,
        )
    table = table_of("state", "jobs", title="queue")
    for state, jobs in st["queue"].items():  # every state, in the queue's order
        table.add_row(state, f"{jobs:,}")
    out.print(table)
    kept = st["done_jobs"]
    age = human_duration(kept["keep_seconds"])
    out.print(f"done jobs kept: {kept['kept']:,} (purged after {age})", highlight=False)
    if st["projects"]:
        table = table_of("project", "files", "chunks", "source", "root", title="projects")
        for p in st["projects"]:
            table.add_row(
                p["project"],
                f"{p['files']:,}",
                f"{p['chunks']:,}",
                human_size(p["source_bytes"]),
                p["root"] or "",
            )
        out.print(table)
