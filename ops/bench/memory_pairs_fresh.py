"""A third generator of memory statement pairs, written apart from :mod:`memory_pairs`
and :mod:`memory_pairs_alt` and kept out of reach of the adjudicator's authors: the
untouched held-out set for the final report. Nothing was fitted to these pairs.

Statements are facts a coding agent saves while working, in nine domains (CI/CD, database
and cache settings, dependency versions, team conventions, file locations, feature flags,
API endpoints and limits, on-call and ownership, OS and toolchain). Each says that one
*attribute* of one *subject* has one *value*: ("the session cache", "idle timeout",
"90 s"). A domain lists its subjects and its attribute groups; the attributes of a group
are siblings sharing a value type ("state in staging", "state in production").

Values are typed and the type decides how a value is said: durations in milliseconds to
weeks, sizes, percentages, dates, times of day, versions with or without a ``v``, on/off
switches said in words (enabled/disabled, on/off, yes/no, true/false), counts in digits
or words, request rates, paths, URLs, people, tools and other names. A value is drawn as
a quantity and then spelt in one of its type's *styles* ("90s", "90 sec", "90 seconds");
two values differ only if their quantities do (so "60 s" never updates "1 min").

Frames are sentence shapes: possessive, imperative ("Always set ..."), "We switched ...",
a ``- key (subject): value`` bullet, "X now uses V as its ...", value first, passive, a
parenthetical, a dotted config key, a question and answer. The newer statement of any
pair sometimes carries a trailing remark or is all lower case (every label alike, so
neither is a tell). From a seeded RNG:

* **update**: the same subject and attribute, a new value in the same style, the same
  frame. Truth: supersedes.
* **reframed**: the same, the newer statement in another frame. Truth: an update;
  reported beside, no goal.
* **distinct**: another subject of the domain (same attribute), or the same subject and
  a sibling attribute; the same value half of the time, the same frame half of the time.
  Truth: two records.
* **paraphrase**: the same triple in another frame, a third of the time with the value
  spelt in another style of its type. Truth: one record.

    python ops/bench/memory_pairs_fresh.py --out FILE [--pairs N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

LABELS = ("update", "reframed", "distinct", "paraphrase")
DEFAULT_SEED = 47
DEFAULT_PAIRS = 200
NOTE_RATE = 0.25
LOWER_RATE = 0.1
RESTYLE_RATE = 1 / 3

Quantity = tuple  # a value's meaning: what two values are compared on


@dataclass(frozen=True)
class ValueType:
    """A value type: how to draw a quantity, and the styles it can be spelt in."""

    draw: Callable[[random.Random], Quantity]
    styles: tuple[Callable[[Quantity], str], ...]
    measure: Callable[[Quantity], object] = tuple

    def say(self, q: Quantity, style: int) -> str:
        return self.styles[style](q)


# --- value types -------------------------------------------------------------------

# unit: (seconds, compact, abbreviation, its plural, word, amounts drawn)
TIME_UNITS = {
    "ms": (0.001, "ms", "ms", "ms", "millisecond", (50, 100, 150, 200, 250, 400, 500, 750, 800)),
    "s": (1, "s", "sec", "sec", "second", (5, 10, 15, 20, 30, 45, 60, 90, 120)),
    "min": (60, "m", "min", "min", "minute", (1, 2, 3, 5, 10, 15, 20, 30, 45, 90)),
    "h": (3600, "h", "hr", "hrs", "hour", (1, 2, 4, 6, 8, 12, 24, 36, 48)),
    "d": (86400, "d", "day", "days", "day", (1, 3, 7, 14, 30, 60, 90)),
    "wk": (604800, "w", "wk", "wks", "week", (1, 2, 4, 6)),
}  # fmt: skip
# unit: (bytes, compact, word, amounts drawn)
SIZE_UNITS = {
    "MB": (2**20, "MB", "megabytes", (64, 128, 256, 512, 768)),
    "GB": (2**30, "GB", "gigabytes", (1, 2, 4, 8, 16, 32, 64)),
    "TB": (2**40, "TB", "terabytes", (1, 2, 4)),
}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten", "eleven", "twelve"]  # fmt: skip
SWITCH_WORDS = (("enabled", "disabled"), ("on", "off"), ("yes", "no"), ("true", "false"))
# period: (abbreviation, seconds)
RATE_PERIODS = {"second": ("s", 1), "minute": ("min", 60), "hour": ("h", 3600)}


def duration(*units: str) -> ValueType:
    """Durations in the given units, said "30s", "30 sec" or "30 seconds"."""

    def draw(rng: random.Random) -> Quantity:
        unit = rng.choice(units)
        return (rng.choice(TIME_UNITS[unit][5]), unit)

    def compact(q: Quantity) -> str:
        return f"{q[0]}{TIME_UNITS[q[1]][1]}"

    def abbreviated(q: Quantity) -> str:
        return f"{q[0]} {TIME_UNITS[q[1]][2 if q[0] == 1 else 3]}"

    def worded(q: Quantity) -> str:
        return f"{q[0]} {TIME_UNITS[q[1]][4]}{'' if q[0] == 1 else 's'}"

    return ValueType(draw, (compact, abbreviated, worded), lambda q: q[0] * TIME_UNITS[q[1]][0])


def size(*units: str) -> ValueType:
    """Sizes, said "512MB", "512 MB" or "512 megabytes"."""

    def draw(rng: random.Random) -> Quantity:
        unit = rng.choice(units)
        return (rng.choice(SIZE_UNITS[unit][3]), unit)

    styles = (
        lambda q: f"{q[0]}{SIZE_UNITS[q[1]][1]}",
        lambda q: f"{q[0]} {SIZE_UNITS[q[1]][1]}",
        lambda q: f"{q[0]} {SIZE_UNITS[q[1]][2]}",
    )
    return ValueType(draw, styles, lambda q: q[0] * SIZE_UNITS[q[1]][0])


def percent(choices: Sequence[int]) -> ValueType:
    """Percentages, said "25%", "25 %" or "25 percent"."""
    styles = (lambda q: f"{q[0]}%", lambda q: f"{q[0]} %", lambda q: f"{q[0]} percent")
    return ValueType(lambda rng: (rng.choice(choices),), styles)


def count(choices: Sequence[int]) -> ValueType:
    """Whole numbers: digits, or words up to twelve and thousands separators above."""

    def other(q: Quantity) -> str:
        n = q[0]
        return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else f"{n:,}"

    return ValueType(lambda rng: (rng.choice(choices),), (lambda q: str(q[0]), other))


def _date(rng: random.Random) -> Quantity:
    return (rng.randint(2026, 2028), rng.randint(1, 12), rng.randint(1, 28))


DATE = ValueType(
    _date,
    (
        lambda q: f"{q[0]}-{q[1]:02d}-{q[2]:02d}",
        lambda q: f"{q[2]} {MONTHS[q[1] - 1]} {q[0]}",
        lambda q: f"{MONTHS[q[1] - 1]} {q[2]}, {q[0]}",
    ),
)
CLOCK = ValueType(
    lambda rng: (rng.choice([0, 1, 2, 3, 4, 5, 22, 23]), rng.choice([0, 30])),
    (
        lambda q: f"{q[0]:02d}:{q[1]:02d} UTC",
        lambda q: f"{q[0]:02d}:{q[1]:02d}Z",
        lambda q: f"{(q[0] - 1) % 12 + 1}{':30' if q[1] else ''} {'am' if q[0] < 12 else 'pm'} UTC",
    ),
)
SWITCH = ValueType(
    lambda rng: (rng.random() < 0.5,),
    tuple((lambda q, w=words: w[0] if q[0] else w[1]) for words in SWITCH_WORDS),
)


def version(parts: int, majors: tuple[int, int]) -> ValueType:
    """Versions of ``parts`` numbers, said with a ``v``, bare, or after "version"."""

    def draw(rng: random.Random) -> Quantity:
        return (rng.randint(*majors), *(rng.randint(0, 14) for _ in range(parts - 1)))

    def dotted(q: Quantity) -> str:
        return ".".join(map(str, q))

    return ValueType(draw, (lambda q: f"v{dotted(q)}", dotted, lambda q: f"version {dotted(q)}"))


def rate(choices: Sequence[int]) -> ValueType:
    """Request rates, said "100 requests per minute", "100 req/min" or "100/min"."""

    def draw(rng: random.Random) -> Quantity:
        return (rng.choice(choices), rng.choice(list(RATE_PERIODS)))

    styles = (
        lambda q: f"{q[0]} requests per {q[1]}",
        lambda q: f"{q[0]} req/{RATE_PERIODS[q[1]][0]}",
        lambda q: f"{q[0]}/{RATE_PERIODS[q[1]][0]}",
    )
    return ValueType(draw, styles, lambda q: q[0] / RATE_PERIODS[q[1]][1])


def named(pool: Sequence[str]) -> ValueType:
    """A value from a pool of names, said one way."""
    return ValueType(lambda rng: (rng.choice(pool),), (lambda q: q[0],))


def composed(*parts: Sequence[str]) -> ValueType:
    """A value joined from one choice per part (paths, URLs, hosts), said one way."""
    return ValueType(lambda rng: tuple(rng.choice(p) for p in parts), (lambda q: "".join(q),))


PEOPLE = ["Ngozi", "Tomasz", "Priya", "Henrik", "Lucía", "Kwame", "Yuki", "Olga", "Rafael",
          "Aisha", "Mateo", "Ingrid"]  # fmt: skip
BRANCHES = ["main", "master", "release", "prod", "deploy/stable", "hotfix", "rc"]
PATH = composed(
    ["src/", "config/", "deploy/", "/etc/acme/", "/var/lib/acme/", "~/.config/acme/", "infra/",
     "tools/", "/opt/acme/", "./"],
    ["", "core/", "k8s/", "shared/", "app/", "runtime/"],
    ["settings.yaml", "logs/", "cache/", "out/", "build/", "flags.toml", "tmp/", "config.json",
     "data/"],
)  # fmt: skip
URL = composed(
    ["https://"],
    ["api.", "sandbox.", "edge.", "internal.", ""],
    ["acme.io", "acme-corp.net", "payments.example.com", "svc.cluster.local"],
    ["", "/v1", "/v2", "/v3", "/api", "/healthz"],
)
HOST = composed(
    ["db-", "pg-", "cache-", "redis-"],
    ["01", "02", "03", "a", "b"],
    [".prod.internal", ".staging.internal", ".eu-west-1.rds.amazonaws.com"],
)


# --- domains -----------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """Sibling attributes sharing a value type, and the memory kind of their facts."""

    kind: str
    attributes: tuple[str, ...]
    value: ValueType


@dataclass(frozen=True)
class Domain:
    subjects: tuple[str, ...]
    groups: tuple[Group, ...]


DOMAINS = (
    Domain(  # CI/CD
        ("the nightly pipeline", "the release workflow", "the PR checks", "the deploy job",
         "the integration suite", "the docs build job"),
        (
            Group("fact", ("job timeout", "step timeout", "queue timeout"), duration("min", "h")),
            Group("fact", ("runner image", "service container image"),
                  named(["ubuntu-22.04", "ubuntu-24.04", "node:20-alpine", "python:3.12-slim",
                         "macos-14", "windows-2022", "debian:bookworm"])),
            Group("fact", ("artifact retention", "log retention"), duration("d", "wk")),
            Group("decision", ("trigger branch", "deploy branch"), named(BRANCHES)),
            Group("fact", ("max parallel jobs", "retry count"), count([1, 2, 3, 4, 6, 8, 12, 16])),
        ),
    ),
    Domain(  # databases and caches
        ("the orders database", "the session cache", "the analytics replica",
         "the users DB", "the rate-limit Redis instance", "the search Elasticsearch cluster"),
        (
            Group("fact", ("connection pool size", "max connections"),
                  count([10, 20, 25, 40, 50, 100, 200, 500, 1000, 2000])),
            Group("fact", ("statement timeout", "idle timeout", "lock timeout"),
                  duration("ms", "s", "min")),
            Group("fact", ("max memory", "disk quota"), size("MB", "GB", "TB")),
            Group("fact", ("backup window", "maintenance window"), CLOCK),
            Group("fact", ("primary host", "replica host"), HOST),
        ),
    ),
    Domain(  # dependency versions
        ("the backend service", "the web frontend", "the CLI", "the worker image",
         "the mobile app", "the SDK"),
        (
            Group("decision", ("Python version", "Node version", "Go version"),
                  version(2, (1, 22))),
            Group("decision", ("pinned protobuf version", "pinned grpcio version",
                               "pinned pydantic version"), version(3, (1, 6))),
            Group("decision", ("package manager", "lockfile tool"),
                  named(["pip", "poetry", "uv", "pnpm", "yarn", "npm", "pip-tools", "bun"])),
        ),
    ),
    Domain(  # team conventions
        ("the backend team", "the data team", "the platform squad", "the mobile team",
         "the payments team"),
        (
            Group("preference", ("commit message style", "PR title style"),
                  named(["Conventional Commits", "gitmoji", "imperative mood with no prefix",
                         "ticket ID first", "lowercase summaries"])),
            Group("preference", ("required review approvals", "max open PRs per person"),
                  count([1, 2, 3, 4, 5])),
            Group("preference", ("merge strategy", "release branching model"),
                  named(["squash and merge", "rebase and merge", "merge commits",
                         "trunk-based", "git-flow"])),
            Group("preference", ("Python formatter", "JavaScript formatter", "Python linter"),
                  named(["black", "ruff", "prettier", "biome", "eslint", "flake8", "yapf"])),
        ),
    ),
    Domain(  # file locations
        ("the API server", "the build script", "the test runner", "the doc generator",
         "the migration tool", "the scheduler"),
        (
            Group("fact", ("config file path", "log directory", "cache directory",
                           "output directory"), PATH),
        ),
    ),
    Domain(  # feature flags
        ("the new checkout flow", "the dark mode flag", "the beta search flag",
         "the v2 billing page", "the bulk export flag", "the AI summaries flag"),
        (
            Group("decision", ("state in staging", "state in production",
                               "state for internal users"), SWITCH),
            Group("decision", ("rollout percentage", "holdout percentage"),
                  percent([1, 5, 10, 20, 25, 33, 50, 75, 90, 100])),
            Group("fact", ("removal date", "review date"), DATE),
        ),
    ),
    Domain(  # API endpoints and limits
        ("the payments API", "the geocoding API", "the internal auth API",
         "the webhooks endpoint", "the partner API", "the metrics ingest API"),
        (
            Group("fact", ("base URL", "sandbox URL", "health check URL"), URL),
            Group("fact", ("rate limit", "burst limit"), rate([10, 50, 100, 300, 600, 1000, 5000])),
            Group("fact", ("request timeout", "connect timeout"), duration("ms", "s")),
            Group("fact", ("max payload size", "max upload size"), size("MB", "GB")),
            Group("fact", ("deprecation date", "sunset date"), DATE),
        ),
    ),
    Domain(  # on-call and ownership
        ("the billing service", "the data pipeline", "the edge proxy", "the mobile backend",
         "the auth service", "the search cluster"),
        (
            Group("decision", ("owner", "on-call primary", "on-call secondary",
                               "escalation contact"), named(PEOPLE)),
            Group("fact", ("pager rotation length", "incident review deadline"),
                  duration("d", "wk")),
            Group("fact", ("Slack channel", "alert channel"),
                  composed(["#"], ["billing", "data", "edge", "mobile", "auth", "search", "ops"],
                           ["-alerts", "-oncall", "-incidents", "-eng"])),
        ),
    ),
    Domain(  # OS and toolchain
        ("the CI runners", "the build machines", "the dev containers", "the staging hosts",
         "the laptop images", "the production nodes"),
        (
            Group("fact", ("base OS", "fallback OS image"),
                  named(["Ubuntu 22.04", "Ubuntu 24.04", "Debian 12", "Alpine 3.19", "macOS 14",
                         "Amazon Linux 2023", "Rocky Linux 9", "Fedora 40"])),
            Group("fact", ("default shell", "login shell"),
                  named(["bash", "zsh", "fish", "sh", "dash"])),
            Group("fact", ("C compiler", "C++ compiler"),
                  named(["gcc 12", "gcc 13", "gcc 14", "clang 16", "clang 17", "clang 18"])),
            Group("fact", ("JDK version", "Rust toolchain version"), version(3, (1, 21))),
            Group("fact", ("swap size", "root disk size"), size("GB", "TB")),
        ),
    ),
)  # fmt: skip


# --- frames ------------------------------------------------------------------------

FRAMES = (
    "{sp} {a} is {v}.",
    "Always set the {a} of {s} to {v}.",
    "We switched the {a} of {s} to {v}.",
    "- {a} ({s}): {v}",
    "{s} now {uses} {v} as {its} {a}.",
    "{v} is the {a} for {s}.",
    "The {a} of {s} has been set to {v}.",
    "For {s}, the {a} is {v} (per the runbook).",
    "{ks}.{ka} = {v}",
    "Q: what is the {a} of {s}? A: {v}.",
    "Remember that {s} {has} {its} {a} set to {v}.",
)
NOTES = ("confirmed in standup", "see the infra channel", "as noted in the wiki",
         "per Tuesday's sync")  # fmt: skip


def _key(words: str) -> str:
    """A config-key spelling: "the session cache" -> "session_cache"."""
    words = words.removeprefix("the ")
    return "".join(c if c.isalnum() else "_" for c in words.lower()).strip("_")


def _agreement(subject: str) -> dict[str, str]:
    """The words that agree with the subject ("the CI runners have their ...")."""
    if subject.endswith("s"):
        return {"sp": f"{subject}'", "uses": "use", "has": "have", "its": "their"}
    return {"sp": f"{subject}'s", "uses": "uses", "has": "has", "its": "its"}


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def say(frame: str, subject: str, attribute: str, value: str) -> str:
    """One statement of a triple in a frame. A sentence that opens on the subject opens
    with "The"; one that opens on a value or a key keeps its case."""
    words = _agreement(subject)
    if frame.startswith(("{s}", "{sp}")):
        subject, words["sp"] = _upper_first(subject), _upper_first(words["sp"])
    return frame.format(s=subject, a=attribute, v=value, ks=_key(subject), ka=_key(attribute),
                        **words)  # fmt: skip


def _dressed(rng: random.Random, text: str) -> str:
    """The newer statement as people write it: sometimes a trailing remark, sometimes
    all lower case (drawn alike for every label)."""
    if rng.random() < NOTE_RATE:
        text = f"{text.rstrip('.')}, {rng.choice(NOTES)}."
    return text.lower() if rng.random() < LOWER_RATE else text


# --- pairs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    subject: str
    attribute: str
    value: Quantity


@dataclass(frozen=True)
class Pair:
    """One labelled pair with the facts behind its two statements."""

    label: str
    kind: str
    old: Fact
    new: Fact
    old_text: str
    new_text: str
    value_type: ValueType

    def row(self) -> dict:
        return {"label": self.label, "kind": self.kind, "old": self.old_text, "new": self.new_text}


def _other_value(rng: random.Random, vtype: ValueType, q: Quantity) -> Quantity:
    """A value of the same type with another meaning."""
    while True:
        other = vtype.draw(rng)
        if vtype.measure(other) != vtype.measure(q):
            return other


def _other(rng: random.Random, pool: Sequence[str], item: str) -> str:
    return rng.choice([x for x in pool if x != item])


def draw(rng: random.Random, label: str) -> Pair:
    """One labelled pair drawn from ``rng``."""
    domain = rng.choice(DOMAINS)
    group = rng.choice(domain.groups)
    vtype = group.value
    old = Fact(rng.choice(domain.subjects), rng.choice(group.attributes), vtype.draw(rng))
    frame, style = rng.choice(FRAMES), rng.randrange(len(vtype.styles))
    new_frame, new_style, new = _other(rng, FRAMES, frame), style, old
    if label in ("update", "reframed"):
        new = Fact(old.subject, old.attribute, _other_value(rng, vtype, old.value))
        new_frame = frame if label == "update" else new_frame
    elif label == "distinct":
        new = _distinct(rng, domain, group, old)
        new_frame = frame if rng.random() < 0.5 else new_frame
    elif rng.random() < RESTYLE_RATE and len(vtype.styles) > 1:
        new_style = rng.choice([i for i in range(len(vtype.styles)) if i != style])
    old_text = say(frame, old.subject, old.attribute, vtype.say(old.value, style))
    new_text = say(new_frame, new.subject, new.attribute, vtype.say(new.value, new_style))
    return Pair(label, group.kind, old, new, old_text, _dressed(rng, new_text), vtype)


def _distinct(rng: random.Random, domain: Domain, group: Group, old: Fact) -> Fact:
    """Another subject with the same attribute, or the same subject and a sibling
    attribute; the same value half of the time."""
    subject, attribute = old.subject, old.attribute
    if rng.random() < 0.5:
        subject = _other(rng, domain.subjects, subject)
    else:
        attribute = _other(rng, group.attributes, attribute)
    value = old.value if rng.random() < 0.5 else _other_value(rng, group.value, old.value)
    return Fact(subject, attribute, value)


def facts(n: int, seed: int = DEFAULT_SEED) -> list[Pair]:
    """``n`` pairs of each label, with the facts behind them."""
    rng = random.Random(f"{seed}:fresh")
    return [draw(rng, label) for label in LABELS for _ in range(n)]


def pairs(n: int, seed: int = DEFAULT_SEED) -> list[dict]:
    """``n`` pairs of each label: ``{"label", "vtype", "old", "new"}``."""
    return [p.row() for p in facts(n, seed)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help="pairs of each label")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args()
    args.out.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in pairs(args.pairs, args.seed)))


if __name__ == "__main__":
    main()
