"""What became of candidates a face staged: searchable yet, or why not.

A face that staged candidates (the MCP server's ``remember``) asks before it
searches. Each candidate is *decided* once a consolidation run recorded it: a
record (new or reinforced, searchable) or a dead letter (never searchable until
``memory retry``); else it is *open*: not yet seen by a run, or parked for a
retry after a failed adjudication. :func:`pending` says, for the ones search
cannot see, how many, which and why, with what to do.
"""

from __future__ import annotations

from typing import Any

from memoryd.storage import records

UNSEEN = None  # no run has recorded the candidate yet
OPEN_STATES = (UNSEEN, "parked")


def states(conn: Any, ids: list[str]) -> dict[str, dict]:
    """Each id's recorded state (``state``, ``outcome``, ``reason``...); unseen ones absent."""
    return records.candidate_states(conn, ids)


def state_of(found: dict[str, dict], cid: str) -> str | None:
    return found.get(cid, {}).get("state")


def open_ids(found: dict[str, dict], ids: list[str]) -> list[str]:
    """The ids still to follow: unseen or parked."""
    return [c for c in ids if state_of(found, c) in OPEN_STATES]


def unseen_ids(found: dict[str, dict], ids: list[str]) -> list[str]:
    return [c for c in ids if state_of(found, c) is UNSEEN]


def pending(
    found: dict[str, dict], ids: list[str], supervisor: dict | None, failure: str | None
) -> dict | None:
    """``{"candidates", "ids", "why"}`` for the ids search cannot see (None: it sees all).

    ``supervisor``: the running one's state (``pid``, ``claims_paused``, ``pause_reason``)
    or None; ``failure``: why no supervisor could be started for the home, if known.
    """
    groups = [
        _unseen(unseen_ids(found, ids), supervisor, failure),
        _decided(
            found,
            ids,
            "parked",
            "parked for a retry after a backoff",
            "a supervisor retries them; see `memoryd memory status`",
        ),  # fmt: skip
        _decided(
            found,
            ids,
            "deadletter",
            "dead-lettered",
            "see `memoryd memory deadletter`, then `memoryd memory retry ID`",
        ),  # fmt: skip
    ]
    groups = [g for g in groups if g]
    if not groups:
        return None
    which = [cid for these, _ in groups for cid in these]
    return {"candidates": len(which), "ids": which, "why": "; ".join(w for _, w in groups)}


def _unseen(
    ids: list[str], supervisor: dict | None, failure: str | None
) -> tuple[list[str], str] | None:
    if not ids:
        return None
    head = f"{len(ids)} not consolidated yet"
    if supervisor is None:
        cause = failure or "no supervisor runs on this home"
        return ids, f"{head}: {cause}; run `memoryd run --drain` (or `memoryd run`) on this home"
    if supervisor.get("claims_paused"):
        paused = supervisor.get("pause_reason") or "paused"
        return ids, f"{head}: supervisor pid {supervisor['pid']} has paused claims ({paused})"
    return ids, f"{head}: supervisor pid {supervisor['pid']} is consolidating; search again shortly"


def _decided(
    found: dict[str, dict], ids: list[str], state: str, what: str, todo: str
) -> tuple[list[str], str] | None:
    these = [c for c in ids if state_of(found, c) == state]
    if not these:
        return None
    reasons = sorted({found[c]["reason"] for c in these if found[c].get("reason")})
    because = f" ({'; '.join(reasons)})" if reasons else ""
    return these, f"{len(these)} {what}{because}: {todo}"
