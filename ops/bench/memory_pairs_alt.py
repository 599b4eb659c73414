"""A second generator of memory statement pairs, written apart from :mod:`memory_pairs`
(other subjects, attributes and sentence frames): a further held-out set for the
default adjudicator. Nothing in the adjudicator was tuned on these pairs; they show
whether what was learnt on ``memory_pairs``'s ``dev`` families carries over to
statements built another way.

Each statement says one *attribute* of one *subject* has one *value*: ("the docs
site", "read timeout", "300 ms"). Attributes come in sibling groups that share a
head word ("read timeout", "write timeout"), so two statements can differ in the
attribute alone. Frames are the ways one triple is written ("{s}'s {a} is {v}",
"set the {a} of {s} to {v}", "- {s}: {a} = {v}"...), several of them with the value
before the subject. From a seeded RNG:

* **update**: the same subject and attribute, a new value, in the same frame
  (sometimes all lower case, or with a trailing note). Truth: supersedes.
* **reframed**: the same, the newer statement in another frame. Truth: an update;
  reported beside, no goal.
* **distinct**: another subject (same attribute), or the same subject and a sibling
  attribute; the same value half of the time; any frame. Truth: two records.
* **paraphrase**: the same triple in another frame. Truth: one record.

    python ops/bench/memory_pairs_alt.py --out FILE [--pairs N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

SUBJECTS = [
    "the docs site", "the mobile app", "the ETL pipeline", "the admin dashboard",
    "the notification service", "the search indexer", "the public API", "the data warehouse",
    "the build farm", "the Android client", "the iOS client", "the analytics job",
    "the Grafana instance", "the Jenkins agents", "the Kubernetes cluster", "the ledger service",
    "the thumbnail worker", "the SSO proxy",
]  # fmt: skip
PEOPLE = ["Amara", "Bogdan", "Chen", "Dalia", "Emeka", "Farah", "Gustavo", "Hana", "Ivo", "Jun"]
LEVELS = ["debug", "info", "warning", "error"]
BRANCHES = ["main", "develop", "trunk", "release-4.2", "stable", "next"]


def _int(lo: int, hi: int) -> Callable[[random.Random], str]:
    return lambda rng: str(rng.randint(lo, hi))


def _with(unit: str, choices: list[int]) -> Callable[[random.Random], str]:
    return lambda rng: f"{rng.choice(choices)} {unit}"


def _semver(rng: random.Random) -> str:
    return f"{rng.randint(8, 22)}.{rng.randint(0, 19)}.{rng.randint(0, 9)}"


def _one_of(pool: list[str]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(pool)


@dataclass(frozen=True)
class Group:
    """Sibling attributes sharing a value type (and a head word)."""

    kind: str
    attributes: tuple[str, ...]
    value: Callable[[random.Random], str]


GROUPS = [
    Group("fact", ("read timeout", "write timeout", "connect timeout"),
          _with("ms", [150, 300, 800, 1500, 3000, 9000])),
    Group("fact", ("minimum replica count", "maximum replica count"), _int(1, 40)),
    Group("fact", ("min SDK level", "target SDK level"), _int(21, 35)),
    Group("fact", ("memory limit", "memory request"), _with("MiB", [256, 512, 768, 1024, 2048])),
    Group("fact", ("log retention", "backup retention"), _with("days", [3, 7, 14, 30, 90])),
    Group("fact", ("Node release", "npm release"), _semver),
    Group("decision", ("on-call owner", "release owner"), _one_of(PEOPLE)),
    Group("preference", ("log level", "trace level"), _one_of(LEVELS)),
    Group("decision", ("deploy branch", "hotfix branch"), _one_of(BRANCHES)),
]  # fmt: skip

FRAMES = (
    "{s}'s {a} is {v}",
    "{a} for {s}: {v}",
    "set the {a} of {s} to {v}",
    "{s} has a {a} of {v}",
    "- {s}: {a} = {v}",
    "{v} is the {a} we use for {s}",
    "for {s} the {a} is {v}",
    "keep {s} at a {a} of {v}",
)
NOTES = ["(see the wiki)", "since the last incident", "until further notice", "— agreed in review"]
LABELS = ("update", "reframed", "distinct", "paraphrase")


def _say(frame: str, s: str, a: str, v: str) -> str:
    text = frame.format(s=s, a=a, v=v)
    return text[0].upper() + text[1:] if text[0].isalpha() else text


def _varied(rng: random.Random, text: str) -> str:
    """All lower case, a trailing note, or as written."""
    how = rng.choice(["lower", "note", "plain"])
    if how == "lower":
        return text.lower()
    return f"{text} {rng.choice(NOTES)}" if how == "note" else text


def _other(rng: random.Random, make: Callable[[random.Random], str], value: str) -> str:
    for _ in range(100):
        if (new := make(rng)) != value:
            return new
    raise ValueError("a value generator with a single value")


def pair(rng: random.Random, label: str) -> dict:
    """One labelled pair: ``{"label", "kind", "old", "new"}``."""
    group = rng.choice(GROUPS)
    subject, attribute = rng.choice(SUBJECTS), rng.choice(group.attributes)
    value, frame = group.value(rng), rng.choice(FRAMES)
    old = _say(frame, subject, attribute, value)
    other_frame = rng.choice([f for f in FRAMES if f != frame])
    if label == "update":
        new = _varied(rng, _say(frame, subject, attribute, _other(rng, group.value, value)))
    elif label == "reframed":
        new = _say(other_frame, subject, attribute, _other(rng, group.value, value))
    elif label == "distinct":
        if rng.random() < 0.5:
            subject = rng.choice([s for s in SUBJECTS if s != subject])
        else:
            attribute = rng.choice([a for a in group.attributes if a != attribute])
        if rng.random() < 0.5:
            value = _other(rng, group.value, value)
        new = _say(rng.choice(FRAMES), subject, attribute, value)
    else:
        new = _varied(rng, _say(other_frame, subject, attribute, value))
    return {"label": label, "kind": group.kind, "old": old, "new": new}


def pairs(n: int, seed: int = 31) -> list[dict]:
    """``n`` pairs of each label."""
    rng = random.Random(f"{seed}:alt")
    return [pair(rng, label) for label in LABELS for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=200, help="pairs of each label")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    args.out.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in pairs(args.pairs, args.seed)))


if __name__ == "__main__":
    main()
