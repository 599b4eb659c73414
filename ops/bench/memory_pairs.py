"""Generated pairs of memory statements for the adjudicator's figures (``make bench-memory``).

Each template family is one kind of statement about a *subject* (an environment
and a component: "the staging Redis") holding one *value* (a port, a version, a
duration, a name, a yes/no...), written in several phrasings. From a seeded RNG:

* **update** pairs: the same subject, a new value, the newer statement in the
  older one's phrasing reworded (a qualifier added, case or punctuation changed,
  or nothing) and sometimes with a change marker ("now", "Correction:"). Truth:
  the newer supersedes the older.
* **reframed update** pairs: the same, the newer statement in another phrasing
  of the family ("the gateway timeout is 500 ms" -> "requests to the gateway
  time out after 250 ms"). Truth: an update; words replaced on both sides are
  what a different subject looks like too, so the default adjudicator is
  expected to keep both in ``conflict`` rather than guess.
* **distinct** pairs: the same family and phrasing pool, another subject (the
  environment, the component or both differ), the same value half of the time.
  Truth: two records; never a supersession, never a merge.
* **paraphrase** pairs: the same subject and value in two different phrasings,
  the second sometimes with an added qualifier or changed case and punctuation.
  Truth: one record, reinforced.

The families are split into two disjoint pools, ``dev`` and ``heldout``: the
adjudicator is developed against the first; the second is reported beside it and
never tuned on. Nothing here is hand-written pairs; every pair comes from these
rules.

    python ops/bench/memory_pairs.py --out DIR [--pairs N] [--seed S]
    (writes DIR/dev.jsonl and DIR/heldout.jsonl: one pair per line)
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

ENVIRONMENTS = [
    "staging", "production", "dev", "QA", "CI", "canary", "sandbox", "preview",
    "nightly", "demo", "integration", "perf",
]  # fmt: skip
COMPONENTS = [
    "Redis", "Postgres database", "API gateway", "billing service", "search cluster",
    "auth service", "job queue", "metrics exporter", "web frontend", "payment worker",
    "session cache", "mail relay", "image resizer", "report builder", "webhook dispatcher",
]  # fmt: skip
TOOLS = [
    "Postgres", "MySQL", "Redis", "RabbitMQ", "Kafka", "Celery", "Sidekiq", "Nginx",
    "Envoy", "Traefik", "MongoDB", "Cassandra", "ClickHouse", "Elasticsearch", "NATS",
    "Memcached", "HAProxy", "Temporal", "Airflow", "MinIO",
]  # fmt: skip
FORMATTERS = ["Black", "Ruff", "Prettier", "gofmt", "rustfmt", "clang-format", "Biome", "YAPF"]
LANGS = ["Python", "Node", "Go", "Java", "Ruby", "PHP", "Rust", "Elixir"]
FEATURES = [
    "request tracing", "debug logging", "response compression", "rate limiting",
    "query caching", "TLS verification", "auto scaling", "read replicas",
]  # fmt: skip
REGIONS = [
    "eu-west-1", "us-east-1", "us-west-2", "ap-south-1", "eu-central-1", "ca-central-1",
    "sa-east-1", "ap-northeast-1",
]  # fmt: skip
QUALIFIERS = [
    "as of this week", "for every deploy", "on all hosts", "according to the runbook",
    "per the ops team", "in every region",
]  # fmt: skip
MARKERS = [("", " now"), ("Correction: ", ""), ("", " (changed)"), ("Update: ", ""), ("", "")]


def _port(rng: random.Random) -> str:
    return str(rng.randint(1025, 65000))


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 20)}.{rng.randint(0, 30)}"


def _millis(rng: random.Random) -> str:
    return f"{rng.choice([100, 250, 500, 1000, 2000, 5000, 10000, 20000, 30000])} ms"


def _hour(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.choice(['00', '15', '30', '45'])}"


def _count(rng: random.Random) -> str:
    return str(rng.randint(2, 64))


def _gigabytes(rng: random.Random) -> str:
    return f"{rng.choice([1, 2, 4, 8, 16, 32, 64, 128])} GB"


def _seconds(rng: random.Random) -> str:
    return f"{rng.randint(5, 600)} seconds"


def _pick(pool: list[str]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(pool)


def _state(rng: random.Random) -> str:
    return rng.choice(["enabled", "disabled"])


@dataclass(frozen=True)
class Family:
    kind: str
    value: Callable[[random.Random], str]
    phrasings: tuple[str, ...]  # {s}: the subject, {v}: the value, {x}: a family extra
    extra: Callable[[random.Random], str] | None = None


DEV = [
    Family("fact", _port, (
        "the {s} listens on port {v}",
        "{s} listens on port {v}",
        "the {s} server listens on port {v}",
        "the {s} is reachable on port {v}",
        "connect to the {s} on port {v}",
    )),
    Family("fact", _version, (
        "the {s} runs {x} {v}",
        "the {s} is on {x} version {v}",
        "{s} uses {x} {v}",
        "{x} {v} is what the {s} runs",
    ), _pick(LANGS)),
    Family("fact", _millis, (
        "the {s} timeout is {v}",
        "requests to the {s} time out after {v}",
        "{s} requests time out after {v}",
        "the {s} gives up on a request after {v}",
    )),
    Family("decision", _pick(TOOLS), (
        "we chose {v} for the {s}",
        "decision: the {s} uses {v}",
        "the {s} is built on {v}",
        "we decided to use {v} for the {s}",
    )),
    Family("fact", _state, (
        "{x} is {v} on the {s}",
        "the {s} has {x} {v}",
        "on the {s}, {x} is {v}",
    ), _pick(FEATURES)),
    Family("fact", _hour, (
        "the {s} backup runs at {v} UTC",
        "backups of the {s} run daily at {v} UTC",
        "the nightly backup of the {s} starts at {v} UTC",
    )),
    Family("lesson", _millis, (
        "run the {s} tests with a {v} timeout or they fail",
        "the {s} tests need a {v} timeout or they fail",
        "give the {s} tests a {v} timeout, otherwise they fail",
    )),
]  # fmt: skip

HELDOUT = [
    Family("fact", _count, (
        "the {s} runs {v} workers",
        "{s} uses {v} worker processes",
        "we run the {s} with {v} workers",
        "the {s} worker pool has {v} processes",
    )),
    Family("fact", _gigabytes, (
        "the {s} cache is capped at {v}",
        "the cache of the {s} holds at most {v}",
        "{s} cache limit: {v}",
    )),
    Family("fact", _pick(REGIONS), (
        "the {s} is deployed in {v}",
        "{s} deploys go to {v}",
        "we host the {s} in {v}",
    )),
    Family("preference", _pick(FORMATTERS), (
        "format the {s} code with {v}",
        "use {v} to format the {s} code",
        "the {s} code is formatted with {v}",
    )),
    Family("fact", _seconds, (
        "the {s} health check runs every {v}",
        "health checks of the {s} run every {v}",
        "the {s} is health-checked every {v}",
    )),
    Family("decision", _pick(TOOLS), (
        "the {s} will move to {v}",
        "we picked {v} as the store of the {s}",
        "{v} is the store we picked for the {s}",
    )),
    Family("lesson", _count, (
        "retry {s} calls at most {v} times",
        "calls to the {s} should be retried up to {v} times",
        "never retry a {s} call more than {v} times",
    )),
]  # fmt: skip

POOLS = {"dev": DEV, "heldout": HELDOUT}


def _subject(rng: random.Random) -> tuple[str, str]:
    return rng.choice(ENVIRONMENTS), rng.choice(COMPONENTS)


def _other_subject(rng: random.Random, subject: tuple[str, str]) -> tuple[str, str]:
    env, comp = subject
    change = rng.choice(["env", "component", "both"])
    if change in ("env", "both"):
        env = rng.choice([e for e in ENVIRONMENTS if e != env])
    if change in ("component", "both"):
        comp = rng.choice([c for c in COMPONENTS if c != comp])
    return env, comp


def _other_value(rng: random.Random, fam: Family, value: str) -> str:
    for _ in range(100):
        if (new := fam.value(rng)) != value:
            return new
    raise ValueError("a value generator with a single value")


def _say(phrasing: str, subject: tuple[str, str], value: str, extra: str) -> str:
    text = phrasing.format(s=" ".join(subject), v=value, x=extra)
    return text[0].upper() + text[1:]


def _marked(rng: random.Random, text: str) -> str:
    before, after = rng.choice(MARKERS)
    return before + (text[0].lower() + text[1:] if before else text) + after


def _reworded(rng: random.Random, text: str) -> str:
    """A qualifier, a case or punctuation change, or none."""
    how = rng.choice(["qualifier", "case", "punct", "none"])
    if how == "qualifier":
        return f"{text} {rng.choice(QUALIFIERS)}"
    if how == "case":
        return text.lower()
    if how == "punct":
        return text + rng.choice([".", "!", " ."])
    return text


def pair(rng: random.Random, pool: list[Family], label: str) -> dict:
    """One labelled pair: ``{"label", "kind", "old", "new"}``."""
    fam = rng.choice(pool)
    subject, value = _subject(rng), fam.value(rng)
    extra = fam.extra(rng) if fam.extra else ""
    first, second = rng.choice(fam.phrasings), rng.choice(fam.phrasings)
    old = _say(first, subject, value, extra)
    if label in ("update", "reframed"):
        if label == "update":
            second = first
        else:
            second = rng.choice([p for p in fam.phrasings if p != first])
        said = _say(second, subject, _other_value(rng, fam, value), extra)
        new = _marked(rng, _reworded(rng, said) if label == "update" else said)
    elif label == "distinct":
        same = rng.random() < 0.5
        new_value = value if same else _other_value(rng, fam, value)
        new = _say(second, _other_subject(rng, subject), new_value, extra)
    else:
        second = rng.choice([p for p in fam.phrasings if p != first])
        new = _reworded(rng, _say(second, subject, value, extra))
    return {"label": label, "kind": fam.kind, "old": old, "new": new}


LABELS = ("update", "reframed", "distinct", "paraphrase")


def pairs(split: str, n: int, seed: int = 29) -> list[dict]:
    """``n`` pairs of each label from the split's template pool."""
    rng = random.Random(f"{seed}:{split}")
    return [pair(rng, POOLS[split], label) for label in LABELS for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=200, help="pairs of each label per split")
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for split in POOLS:
        lines = b"".join(orjson.dumps(p) + b"\n" for p in pairs(split, args.pairs, args.seed))
        (args.out / f"{split}.jsonl").write_bytes(lines)


if __name__ == "__main__":
    main()
