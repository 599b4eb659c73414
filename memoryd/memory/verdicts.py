"""What a verdict does to the records, inside the supervisor's transaction.

Records are never deleted: ``add``/``distinct`` insert one; ``duplicate``
reinforces its target (count, last seen, sources); ``supersedes`` inserts the
new record and flips the target to ``superseded`` pointing at it; ``merge``
inserts a replacement that joins the targets and the candidate, and flips every
target to ``merged`` pointing at it. Every change writes a history row.
"""

from __future__ import annotations

import apsw

from memoryd.memory.shortlist import index_terms
from memoryd.storage import records

OUTCOME = {  # verdict -> the run log's rate it counts in
    "add": "added",
    "distinct": "added",
    "duplicate": "duplicate",
    "supersedes": "superseded",
    "merge": "merged",
}
FLIP = {"supersedes": "superseded", "merge": "merged"}


class StaleTarget(Exception):
    """A target the worker saw active is no longer active (a sweep, a retry): decide again."""


def _check_targets(tx: apsw.Connection, targets: list[str]) -> None:
    found = records.statuses(tx, targets)
    if stale := [t for t in targets if found.get(t) != "active"]:
        raise StaleTarget(f"target(s) no longer active: {', '.join(stale)}")


def _merged(tx: apsw.Connection, rec: dict, targets: list[str]) -> dict:
    """The replacement's lists and count join the targets' (the worker joined the text)."""
    out = dict(rec)
    for tid in targets:
        old = records.get_record(tx, tid)
        for name in ("triggers", "refs", "sources"):
            out[name] = list(dict.fromkeys([*old[name], *out[name]]))
        out["count"] = out.get("count", 1) + old["count"]
    out["sources"] = out["sources"][: records.MAX_SOURCES]
    out["terms"] = index_terms(out["text"], out["triggers"])
    return out


def apply(tx: apsw.Connection, decision: dict, now: float) -> tuple[str, str]:
    """Apply one decided verdict. Returns (outcome, record id)."""
    verdict, targets, cid = decision["verdict"], decision["targets"], decision["cid"]
    _check_targets(tx, targets)
    if verdict == "duplicate":
        source = decision["candidate"].get("source")
        records.reinforce_in(tx, targets[0], source, now)
        records.add_history_in(tx, targets[0], "reinforced", cid, source, now)
        return OUTCOME[verdict], targets[0]
    rec = decision["record"]
    if verdict == "merge":
        rec = _merged(tx, rec, targets)
    records.insert_record_in(tx, rec, now)
    detail = ",".join(targets) or None
    records.add_history_in(tx, rec["id"], "added" if not targets else verdict, cid, detail, now)
    for tid in targets:
        records.set_status_in(tx, tid, FLIP[verdict], rec["id"], now)
        records.add_history_in(tx, tid, FLIP[verdict], cid, rec["id"], now)
    return OUTCOME[verdict], rec["id"]
