"""Adjudicators: given a candidate and its non-empty shortlist, a verdict.

A verdict is ``{"verdict": "distinct"}`` or ``{"verdict": "duplicate"|"supersedes"|
"conflict", "target": ID}`` or ``{"verdict": "merge", "target": ID}`` /
``{"verdict": "merge", "targets": [ID, ...]}``, every target taken from the shortlist.
The adjudicator decides nothing else: ids, text, scope, triggers and pointers are
the host's.

- The default (``memory_adjudicator`` empty) is deterministic and never fails: each
  shortlisted record is compared with the candidate (:func:`memoryd.consolidation.compare.
  relate`); a record with the same normalized text, or one the candidate repeats,
  makes it a ``duplicate``; else one of the same kind whose value it changes is
  superseded; else one it may contradict (the words cannot tell) is in ``conflict``
  with it (for a lesson, which adds advice rather than correcting it: ``distinct``);
  else the candidate is ``distinct``.
- An external command (``memory_adjudicator = "cmd args"``) reads one JSON
  object ``{"candidate": {...}, "shortlist": [...]}`` on stdin and writes one
  verdict object on stdout within ``memory_adjudicator_timeout_seconds``. A
  hang, a crash, a non-zero exit or an invalid verdict is a :class:`VerdictError`:
  the candidate is parked and retried with backoff.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Callable

import orjson

from memoryd.base.config import Config
from memoryd.consolidation.candidates import normalize
from memoryd.consolidation.compare import Thresholds, relate

VERDICTS = ("distinct", "duplicate", "supersedes", "conflict", "merge")
MAX_VERDICT_BYTES = 64 * 1024
STDERR_TAIL = 300


class VerdictError(Exception):
    """No usable verdict this time (retry later)."""


Adjudicator = Callable[[dict, list[dict]], dict]


def check(verdict: object, shortlist: list[dict]) -> dict:
    """The verdict in canonical form ``{"verdict", "targets"}``, or VerdictError."""
    if not isinstance(verdict, dict) or verdict.get("verdict") not in VERDICTS:
        raise VerdictError(f"not a verdict object with verdict in {VERDICTS}: {verdict!r:.200}")
    name = verdict["verdict"]
    targets = verdict.get("targets", [verdict["target"]] if "target" in verdict else [])
    if name == "distinct":
        return {"verdict": name, "targets": []}
    if not isinstance(targets, list) or not targets:
        raise VerdictError(f"verdict {name} needs a target from the shortlist")
    if name != "merge" and len(targets) != 1:
        raise VerdictError(f"verdict {name} takes exactly one target, got {len(targets)}")
    allowed = {h["id"] for h in shortlist}
    if stray := [t for t in targets if t not in allowed]:
        raise VerdictError(f"target(s) not on the shortlist: {stray!r:.200}")
    return {"verdict": name, "targets": list(dict.fromkeys(targets))}


PREFERENCE = ("duplicate", "supersedes", "conflict")  # the first found wins, best hit first


def default_adjudicator(thresholds: Thresholds) -> Adjudicator:
    def decide(candidate: dict, shortlist: list[dict]) -> dict:
        mine = normalize(candidate["text"])
        found: dict[str, str] = {}
        for hit in shortlist:  # most similar first
            if normalize(hit["text"]) == mine:
                return {"verdict": "duplicate", "target": hit["id"]}
            verdict = relate(hit["text"], candidate["text"], thresholds)
            if verdict != "duplicate" and hit["kind"] != candidate["kind"]:
                continue  # a fact never corrects a lesson
            if verdict == "conflict" and candidate["kind"] == "lesson":
                continue
            found.setdefault(verdict, hit["id"])
        for verdict in PREFERENCE:
            if verdict in found:
                return {"verdict": verdict, "target": found[verdict]}
        return {"verdict": "distinct"}

    return decide


def command_adjudicator(command: str, timeout: float) -> Adjudicator:
    argv = shlex.split(command)

    def decide(candidate: dict, shortlist: list[dict]) -> dict:
        request = orjson.dumps({"candidate": candidate, "shortlist": shortlist})
        out = _run(argv, request, timeout)
        try:
            return orjson.loads(out)
        except orjson.JSONDecodeError:
            raise VerdictError(f"adjudicator printed no JSON verdict: {out[:200]!r}") from None

    return decide


def _run(argv: list[str], request: bytes, timeout: float) -> bytes:
    """stdout of the adjudicator; its whole process group dies on a timeout."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise VerdictError(f"cannot start adjudicator {argv[0]!r}: {exc}") from None
    try:
        out, err = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise VerdictError(f"adjudicator gave no verdict within {timeout:g}s") from None
    except BrokenPipeError:  # it exited without reading
        out, err = proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace")[-STDERR_TAIL:].strip()
        raise VerdictError(f"adjudicator exited with {proc.returncode}: {tail}")
    if len(out) > MAX_VERDICT_BYTES:
        raise VerdictError(f"adjudicator printed {len(out)} bytes; a verdict is one small object")
    return out


def from_config(config: Config) -> Adjudicator:
    command = config.memory_adjudicator.strip()
    if command:
        return command_adjudicator(command, config.memory_adjudicator_timeout_seconds)
    return default_adjudicator(
        Thresholds(
            duplicate=config.memory_duplicate_similarity,
            cover=config.memory_subject_cover,
            related=config.memory_subject_overlap,
            rephrased=config.memory_paraphrase_merge == "rephrased",
        )
    )
