"""Adjudicators: given a candidate and its non-empty shortlist, a verdict.

A verdict is ``{"verdict": "distinct"}`` or ``{"verdict": "duplicate"|"supersedes",
"target": ID}`` or ``{"verdict": "merge", "target": ID}`` / ``{"verdict": "merge",
"targets": [ID, ...]}``, every target taken from the shortlist. The adjudicator
decides nothing else: ids, text, scope, triggers and pointers are the host's.

- The default (``memory_adjudicator`` empty) is deterministic: the most similar
  shortlisted record whose normalized text equals the candidate's, or whose
  content-stem Jaccard similarity is at least ``memory_duplicate_similarity``, makes
  the candidate a ``duplicate``; otherwise a lesson is ``distinct``, and any
  other kind cannot be decided without a judge (:class:`Undecidable`, the
  candidate is dead-lettered with reason ``needs_adjudicator``).
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

from memoryd.config import Config
from memoryd.memory.candidates import normalize

VERDICTS = ("distinct", "duplicate", "supersedes", "merge")
MAX_VERDICT_BYTES = 64 * 1024
STDERR_TAIL = 300


class VerdictError(Exception):
    """No usable verdict this time (retry later)."""


class Undecidable(Exception):
    """The adjudicator in use can never decide this candidate (dead-letter it)."""


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


def default_adjudicator(threshold: float) -> Adjudicator:
    def decide(candidate: dict, shortlist: list[dict]) -> dict:
        mine = normalize(candidate["text"])
        for hit in shortlist:  # most similar first
            if hit["similarity"] >= threshold or normalize(hit["text"]) == mine:
                return {"verdict": "duplicate", "target": hit["id"]}
        if candidate["kind"] == "lesson":
            return {"verdict": "distinct"}
        raise Undecidable("needs_adjudicator")

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
    command = str(config.memory_adjudicator).strip()
    if command:
        return command_adjudicator(command, float(config.memory_adjudicator_timeout_seconds))
    return default_adjudicator(float(config.memory_duplicate_similarity))
