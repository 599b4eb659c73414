"""What a verdict does to the records, inside the supervisor's transaction.

Records are never deleted: ``add``/``distinct`` insert one; ``duplicate``
reinforces its target (count, last seen, sources; its history row keeps the
candidate's text when that differs from the record's: a paraphrase is not lost);
``supersedes`` inserts the new record and flips the target to ``superseded``
pointing at it; ``conflict`` inserts the new record beside its target, both
active, and marks both with a ``conflict`` history row naming the other (the mark
searches show while both are active: :func:`memoryd.storage.records.conflicts`);
``merge`` inserts a replacement that joins the targets and the candidate, and
flips every target to ``merged`` pointing at it. Every change writes a history row.
"""

from __future__ import annotations

import apsw

from memoryd.consolidation import anchors
from memoryd.consolidation.shortlist import index_terms
from memoryd.storage import records

OUTCOME = {  # verdict -> the run log's rate it counts in
    "add": "added",
    "distinct": "added",
    "duplicate": "duplicate",
    "supersedes": "superseded",
    "merge": "merged",
    "conflict": "conflict",
}
RATE = {"conflict": "added"}  # an outcome the run log counts under another rate
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
        return OUTCOME[verdict], _reinforce(tx, decision, now)
    rec = decision["record"]
    if verdict == "merge":
        rec = _merged(tx, rec, targets)
    records.insert_record_in(tx, rec, now)
    anchors.anchor_in(tx, rec, targets if verdict == "merge" else [])
    detail = ",".join(targets) or None
    records.add_history_in(tx, rec["id"], "added" if not targets else verdict, cid, detail, now)
    for tid in targets:
        if verdict == "conflict":
            records.add_history_in(tx, tid, "conflict", cid, rec["id"], now)
            continue
        records.set_status_in(tx, tid, FLIP[verdict], rec["id"], now)
        records.add_history_in(tx, tid, FLIP[verdict], cid, rec["id"], now)
    return OUTCOME[verdict], rec["id"]


def _reinforce(tx: apsw.Connection, decision: dict, now: float) -> str:
    """The target seen again; its history row's detail is the candidate's source, and
    its text when the worker found it not the record's (``paraphrase``):
    ``"SOURCE: TEXT"`` (or ``TEXT``)."""
    target, source = decision["targets"][0], decision["candidate"].get("source")
    records.reinforce_in(tx, target, source, now)
    detail = ": ".join(x for x in (source, decision.get("paraphrase")) if x) or None
    records.add_history_in(tx, target, "reinforced", decision["cid"], detail, now)
    return target
