"""The sixth generator of memory statement pairs: an untouched evaluation split for the
memory adjudicator (does a newer statement supersede an older one, merge with it, or sit
beside it). Written apart from the adjudicator and from the five other generators (none
of them read), from the label meanings alone; it is scored once, later, by someone else.

A pair is two notes a coding agent keeps about a software project, each a *fact*: a
subject (the staging gateway, the orders database, the nightly pipeline ...), one of its
attributes (upstream read timeout, lock timeout, artifact retention ...) and a value,
said by a sentence frame of one memory kind, with one wording of the subject, one of the
attribute and one spelling style of the value.

* Twelve domains: API gateways, Postgres databases, CI pipelines, frontend builds,
  observability and alerting, package publishing, auth sessions, mobile release trains,
  data pipelines, infrastructure as code, test suites, Redis caches. Each has two or three
  subjects, every attribute applying to each of them, and sibling groups of attributes
  sharing a value type (read / connect / send timeout; min / max node count; primary /
  disaster-recovery region; p95 / p99 alert threshold ...). Every subject and attribute
  has several wordings naming one and the same thing (and some a config key, used by
  key = value frames); no wording is shared by two subjects or two attributes.
* Thirty-three value types, each a pool of quantities with spelling styles, a style
  fitting only some quantities at times: seconds (``30s``, ``30 seconds``, ``half a
  minute``), minutes, milliseconds, days (``14 days``, ``two weeks``, ``a fortnight``),
  ports, semantic versions, Node / Python / Postgres majors, sizes in MiB, kB and GB,
  percentages, sampling ratios (``0.1``, ``10%``, ``1 in 10``), request rates (``100
  req/s``, ``6,000 requests per minute``), small and large counts (``4``, ``four``;
  ``10,000``, ``10k``), on/off states (``on``, ``enabled``, ``true``, ``turned on``),
  paths, URLs, log levels, named tools (bundlers, package managers, migration tools, test
  runners), Redis eviction policies, instance types, AWS regions (``eu-west-1``, ``EU
  (Ireland)``), owners (``@mara``, ``Mara Quist``), weekdays, clock times (``17:00 UTC``,
  ``5pm UTC``), dates and schedules (``every 5 minutes``, ``*/5 * * * *``). Spellings of
  two different quantities never coincide. A domain's attributes are drawn weighed
  down by how common their value type is, for rare types to come up.
* Frames per memory kind, each with the grammatical role its value slot takes (``is``,
  ``to``, ``at``, ``of``, ``as``, bare ``key: value``, or ``has ... enabled`` for states)
  so a value type is only said by frames it fits: facts (prose, possessive, table rows,
  bullets, ``[subject] key = value``), decisions ("we decided", "Decision:", "ADR:",
  "going with", with an optional reason), preferences ("prefer", "please keep", "our
  preference:", with an optional why), lessons ("Gotcha:", "turns out", "learned the hard
  way", "if ... acts up, check", with an optional "otherwise <symptom>"). Verbs agree
  with plural subjects. A few frames are newer-only ("is now", "changed to", "these
  days", "Correction:"): never an older statement, never an ``update``.
* Noise: an unrelated trailing remark (a PR or ticket, a cc), a missing final period,
  a statement in lower case.

Labels:

* ``update``: same subject and attribute, another value; the same frame, wordings,
  style, reason, case and final period (only an unrelated remark may differ).
* ``reframed``: same subject and attribute, another value, said otherwise: another frame
  of the kind (a third of the time a newer-only one), or the same frame with another
  wording of the subject or attribute; the style is drawn afresh.
* ``distinct``: a sibling attribute of the same subject, or the same attribute of
  another subject of the domain (about half each); the value is the same about 40 % of
  the time; the frame kept half the time (the newer side may use an "is now" frame).
* ``paraphrase``: the same subject, attribute and quantity, with one or more of frame,
  subject wording, attribute wording and spelling style changed; the older reason is
  kept or left out, never replaced by another.

``pairs(n, seed)`` gives ``n`` pairs of each label as dicts (``label``, ``kind``,
``old``, ``new``, ``domain``, ``vtype``); ``facts(n, seed)`` the same pairs with their
structure (:class:`Pair` of two :class:`Said`) for tests. Standard library and orjson.

    python ops/bench/memory_pairs_sixth.py --out pairs.jsonl [--pairs N] [--seed S]
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pair_splits import in_words as words
from pair_splits import unique_per_label, write_pairs_cli

DEFAULT_SEED = 61_706
LABELS = ("update", "reframed", "distinct", "paraphrase")
KINDS = ("fact", "decision", "preference", "lesson")

QUANTITY_ROLES = frozenset({"is", "to", "bare", "of", "at", "as"})
NAMED_ROLES = frozenset({"is", "to", "bare", "as"})
STATE_ROLES = frozenset({"is", "to", "bare", "has"})
SCHEDULE_ROLES = frozenset({"is", "to", "bare"})

# ---------------------------------------------------------------------------- numbers


def grouped(n: int) -> str | None:
    """10000 -> 10,000 (None below ten thousand, where nobody writes the comma)."""
    return f"{n:,}" if n >= 10_000 else None


def num(x: float) -> str:
    """A number without a trailing .0: 1.5 -> 1.5, 2.0 -> 2."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def plural(n: float, unit: str) -> str:
    return f"{num(n)} {unit}" + ("" if n == 1 else "s")


# ------------------------------------------------------------------------ value types


@dataclass(frozen=True)
class Style:
    """One way of spelling a value: ``spell(q)`` is the text, or None when the style
    does not fit that quantity; ``roles`` the frame roles it can fill (None: all the
    type's roles)."""

    name: str
    spell: Callable
    roles: frozenset | None = None


@dataclass(frozen=True, eq=False)
class VType:
    """A value type: a pool of quantities and the styles spelling them."""

    name: str
    pool: tuple
    styles: tuple[Style, ...]
    roles: frozenset = QUANTITY_ROLES
    text: bool = False  # paths and URLs: a sentence ending in one takes no period

    def fitting(self, q, role: str) -> list[int]:
        """The styles spelling ``q`` in a frame slot of ``role``."""
        if role not in self.roles:
            return []
        return [
            i
            for i, s in enumerate(self.styles)
            if (s.roles is None or role in s.roles) and s.spell(q) is not None
        ]

    def say(self, q, style: int) -> str:
        text = self.styles[style].spell(q)
        assert text is not None, (self.name, q, style)
        return text

    def spellings(self, q) -> set[str]:
        return {t for s in self.styles if (t := s.spell(q)) is not None}


def st(name: str, spell: Callable, roles=None) -> Style:
    return Style(name, spell, frozenset(roles) if roles else None)


def only(table: dict) -> Callable:
    return table.get


_SEC_WORDS = {30: "half a minute", 60: "a minute", 90: "a minute and a half", 120: "two minutes"}
SECONDS = VType(
    "seconds",
    (1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600),
    (
        st("short", lambda n: f"{n}s"),
        st("long", lambda n: plural(n, "second")),
        st("sec", lambda n: f"{n} sec"),
        st("millis", lambda n: f"{n * 1000}ms" if n <= 10 else None),
        st("minutes", lambda n: plural(n // 60, "minute") if n % 60 == 0 else None),
        st("short-min", lambda n: f"{n // 60}m" if n % 60 == 0 else None),
        st("words", lambda n: f"{words(n)} seconds" if 1 < n <= 20 else None),
        st("phrase", only(_SEC_WORDS)),
    ),
)

_MIN_WORDS = {
    15: "a quarter of an hour",
    30: "half an hour",
    45: "three quarters of an hour",
    60: "an hour",
    90: "an hour and a half",
    120: "two hours",
    240: "four hours",
    480: "eight hours",
    720: "half a day",
    1440: "a day",
}
MINUTES = VType(
    "minutes",
    (5, 10, 15, 20, 30, 45, 60, 90, 120, 240, 480, 720, 1440),
    (
        st("short", lambda n: f"{n}m"),
        st("long", lambda n: plural(n, "minute")),
        st("min", lambda n: f"{n} min"),
        st("hours", lambda n: f"{n // 60}h" if n % 60 == 0 else None),
        st("long-hours", lambda n: plural(n // 60, "hour") if n % 60 == 0 else None),
        st("seconds", lambda n: f"{n * 60}s" if n <= 30 else None),
        st("words", lambda n: f"{words(n)} minutes" if n < 60 else None),
        st("phrase", only(_MIN_WORDS)),
    ),
)

_MS_WORDS = {250: "a quarter of a second", 500: "half a second", 1000: "one second"}
MILLIS = VType(
    "milliseconds",
    (100, 150, 200, 250, 300, 400, 500, 750, 800, 1000, 1500, 2000, 3000, 5000),
    (
        st("short", lambda n: f"{n}ms"),
        st("spaced", lambda n: f"{n} ms"),
        st("long", lambda n: f"{n} milliseconds"),
        st("seconds", lambda n: f"{num(n / 1000)}s"),
        st("long-seconds", lambda n: plural(n / 1000, "second") if n >= 1000 else None),
        st("phrase", only(_MS_WORDS)),
    ),
)

_DAY_WORDS = {7: "a week", 14: "two weeks", 21: "three weeks", 28: "four weeks"}
DAYS = VType(
    "days",
    (1, 3, 7, 14, 21, 28, 30, 60, 90, 180, 365),
    (
        st("long", lambda n: plural(n, "day")),
        st("short", lambda n: f"{n}d"),
        st("words", lambda n: f"{words(n)} day" + ("s" if n > 1 else "") if n <= 30 else None),
        st("weeks", only(_DAY_WORDS)),
        st("fortnight", only({14: "a fortnight"})),
        st("hours", lambda n: f"{n * 24} hours" if n <= 3 else None),
    ),
)

CADENCE = VType("days", (7, 14, 21, 28), DAYS.styles)
RETENTION = VType("days", (3, 7, 14, 30, 60, 90, 180, 365), DAYS.styles)
TOKEN_DAYS = VType("days", (1, 7, 14, 30, 60, 90), DAYS.styles)

PORT = VType(
    "port",
    (3000, 3001, 4000, 4173, 5000, 5173, 5432, 5433, 6379, 6380, 8000, 8080, 8081, 8443, 9090),
    (
        st("bare", str),
        st("word", lambda n: f"port {n}", ("is", "to", "as", "at")),
        st("colon", lambda n: f":{n}"),
        st("tcp", lambda n: f"tcp/{n}"),
    ),
)
GATEWAY_PORT = VType("port", (443, 8000, 8001, 8080, 8443, 9000, 9080, 9443), PORT.styles)
DEV_PORT = VType("port", (3000, 3001, 4000, 4173, 5173, 5174, 8080, 8081), PORT.styles)
PG_PORT = VType("port", (5432, 5433, 5434, 6432, 15432), PORT.styles)
REDIS_PORT = VType("port", (6379, 6380, 6381, 16379), PORT.styles)


def semver(v: tuple) -> str:
    return ".".join(map(str, v))


def semvers(*vs: str) -> tuple:
    return tuple(tuple(int(p) for p in v.split(".")) for v in vs)


SEMVER_STYLES = (
    st("v", lambda v: "v" + semver(v)),
    st("bare", semver),
    st("word", lambda v: "version " + semver(v)),
    st("release", lambda v: "release " + semver(v)),
)
SDK_VERSION = VType(
    "semver",
    semvers("0.9.4", "1.0.0", "1.2.3", "1.4.0", "2.0.0", "2.1.0", "2.3.1", "3.0.2", "3.1.0"),
    SEMVER_STYLES,
)
TF_VERSION = VType(
    "semver", semvers("1.5.7", "1.6.6", "1.7.5", "1.8.2", "1.9.8", "1.10.1"), SEMVER_STYLES
)

NODE = VType(
    "node-version",
    (18, 20, 22, 24),
    (
        st("name", lambda n: f"Node {n}"),
        st("dotjs", lambda n: f"Node.js {n}"),
        st("nvm", lambda n: f"node{n}"),
        st("v", lambda n: f"Node v{n}"),
    ),
    roles=NAMED_ROLES | {"at"},
)
PYTHON = VType(
    "python-version",
    ("3.10", "3.11", "3.12", "3.13"),
    (
        st("name", lambda v: f"Python {v}"),
        st("exe", lambda v: f"python{v}"),
        st("cpython", lambda v: f"CPython {v}"),
        st("py", lambda v: "py" + v.replace(".", "")),
    ),
    roles=NAMED_ROLES | {"at"},
)
POSTGRES = VType(
    "postgres-version",
    (13, 14, 15, 16, 17),
    (
        st("short", lambda n: f"Postgres {n}"),
        st("long", lambda n: f"PostgreSQL {n}"),
        st("pg", lambda n: f"PG {n}"),
        st("tag", lambda n: f"pg{n}"),
    ),
    roles=NAMED_ROLES | {"at"},
)


def gib(n: int) -> str | None:
    return num(n / 1024) if n % 512 == 0 and n >= 1024 else None


def mib_type(pool: tuple) -> VType:
    return VType(
        "size-mib",
        pool,
        (
            st("k8s", lambda n: f"{n}Mi"),
            st("spaced", lambda n: f"{n} MiB"),
            st("joined", lambda n: f"{n}MiB"),
            st("k8s-gi", lambda n: f"{g}Gi" if (g := gib(n)) else None),
            st("gib", lambda n: f"{g} GiB" if (g := gib(n)) else None),
            st("half", only({512: "half a GiB"})),
        ),
    )


MEMORY = mib_type((256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192))
BODY = mib_type((1, 2, 5, 8, 10, 16, 25, 32, 50, 64, 100))

KB = VType(
    "size-kb",
    (120, 150, 170, 200, 250, 300, 350, 400, 500, 1000),
    (
        st("spaced", lambda n: f"{n} kB"),
        st("joined", lambda n: f"{n}KB"),
        st("long", lambda n: f"{n} kilobytes"),
        st("mb", lambda n: f"{num(n / 1000)} MB" if n in (250, 500, 1000) else None),
    ),
)
GB = VType(
    "size-gb",
    (20, 50, 100, 200, 250, 500, 1000, 2000),
    (
        st("spaced", lambda n: f"{n} GB"),
        st("joined", lambda n: f"{n}GB"),
        st("long", lambda n: f"{n} gigabytes"),
        st("tb", lambda n: f"{n // 1000} TB" if n % 1000 == 0 else None),
    ),
)

PERCENT = VType(
    "percent",
    (1, 2, 5, 10, 20, 25, 50, 60, 70, 75, 80, 85, 90, 95),
    (
        st("sign", lambda n: f"{n}%"),
        st("word", lambda n: f"{n} percent"),
        st("per-cent", lambda n: f"{n} per cent"),
        st("words", lambda n: f"{words(n)} percent"),
        st("pct", lambda n: f"{n} pct"),
    ),
)
ROLLOUT = VType("percent", (1, 2, 5, 10, 20, 25, 50), PERCENT.styles)
COVERAGE = VType("percent", (50, 60, 70, 75, 80, 85, 90, 95), PERCENT.styles)
ERROR_RATE = VType("percent", (1, 2, 3, 5, 10, 15, 20), PERCENT.styles)
HIGH_PERCENT = VType(
    "percent",
    (97.0, 98.0, 98.5, 99.0, 99.5, 99.8, 99.9),
    (
        st("sign", lambda x: f"{num(x)}%"),
        st("word", lambda x: f"{num(x)} percent"),
        st("decimal", lambda x: f"{x:.1f}%" if x.is_integer() else None),
        st("words", lambda x: f"{words(int(x))} percent" if x.is_integer() else None),
    ),
)


def one_in(x: float) -> int | None:
    n = round(1 / x)
    return n if abs(n * x - 1) < 1e-9 and n > 1 else None


RATIO = VType(
    "ratio",
    (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0),
    (
        st("decimal", lambda x: f"{x:g}" if x < 1 else "1.0"),
        st("percent", lambda x: f"{num(round(x * 100, 6))}%"),
        st("one-in", lambda x: f"1 in {n}" if (n := one_in(x)) else None),
        st("one-in-words", lambda x: f"one in {words(n)}" if (n := one_in(x)) else None),
    ),
)

RATE = VType(
    "rate",
    (10, 20, 50, 100, 150, 200, 250, 500, 1000, 2000),
    (
        st("short", lambda n: f"{n} req/s"),
        st("long", lambda n: f"{n} requests per second"),
        st("rps", lambda n: f"{n} rps"),
        st("minute", lambda n: f"{n * 60:,} requests per minute"),
        st("min", lambda n: f"{n * 60} req/min"),
    ),
)

COUNT = VType(
    "count",
    (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32),
    (
        st("digits", str),
        st("words", words),
        st("dozen", only({6: "half a dozen", 12: "a dozen"})),
    ),
)
POOL_COUNT = VType("count", (50, 100, 150, 200, 250, 300, 400, 500), COUNT.styles[:2])


def thousands(n: int) -> str | None:
    return f"{n // 1000}k" if n % 1000 == 0 else None


BIG_COUNT = VType(
    "large-count",
    (500, 1000, 2000, 5000, 10_000, 20_000, 25_000, 50_000, 100_000),
    (
        st("digits", str),
        st("grouped", grouped),
        st("k", thousands),
        st("words", words),
    ),
)

ON = ("on", "enabled", "true", "turned on", "switched on")
OFF = ("off", "disabled", "false", "turned off", "switched off")
STATE = VType(
    "state",
    (True, False),
    (
        st("on", lambda b: ON[0] if b else OFF[0], ("is", "to", "bare")),
        st("enabled", lambda b: ON[1] if b else OFF[1], ("is", "to", "bare", "has")),
        st("true", lambda b: ON[2] if b else OFF[2], ("is", "to", "bare")),
        st("turned", lambda b: ON[3] if b else OFF[3], ("is", "has")),
        st("switched", lambda b: ON[4] if b else OFF[4], ("is", "has")),
    ),
    roles=STATE_ROLES,
)


def named(name: str, *options: tuple[str, ...], roles=NAMED_ROLES) -> VType:
    """A choice between named things; style ``k`` is each option's ``k``-th spelling
    (the name as written, in backticks, then its aliases)."""
    table = {o[0]: o for o in options}

    def style(k: int) -> Callable:
        return lambda q: table[q][k] if k < len(table[q]) else None

    width = max(len(o) for o in options)
    return VType(name, tuple(table), tuple(st(f"s{k}", style(k)) for k in range(width)), roles)


def tool(*names: str) -> tuple[str, ...]:
    """A tool's spellings: as written, its command in backticks, its bare command."""
    cmd = names[0].lower()
    return (names[0], f"`{cmd}`", *names[1:]) + ((cmd,) if cmd != names[0] else ())


BUNDLER = named("bundler", tool("Vite"), tool("webpack"), tool("esbuild"), tool("Rollup"))
PACKAGE_MANAGER = named("package-manager", tool("pnpm"), tool("npm"), tool("Yarn"), tool("Bun"))
MIGRATOR = named(
    "migration-tool", tool("Alembic"), tool("Flyway"), tool("Liquibase"), tool("sqitch")
)
TEST_RUNNER = named(
    "test-runner", tool("pytest", "py.test"), tool("Vitest"), tool("Jest"), tool("Playwright")
)
LOG_LEVEL = named(
    "log-level",
    ("debug", "`debug`", "DEBUG"),
    ("info", "`info`", "INFO"),
    ("warn", "`warn`", "WARN", "warning"),
    ("error", "`error`", "ERROR"),
)
EVICTION = named(
    "eviction-policy",
    ("allkeys-lru", "`allkeys-lru`", "LRU over all keys"),
    ("volatile-lru", "`volatile-lru`", "LRU over keys with a TTL"),
    ("allkeys-lfu", "`allkeys-lfu`", "LFU over all keys"),
    ("noeviction", "`noeviction`", "no eviction at all"),
)
INSTANCE = named(
    "instance-type",
    ("t3.large", "`t3.large`"),
    ("m6i.xlarge", "`m6i.xlarge`"),
    ("m7g.2xlarge", "`m7g.2xlarge`"),
    ("c6i.4xlarge", "`c6i.4xlarge`"),
)
REGION = named(
    "aws-region",
    ("eu-west-1", "`eu-west-1`", "EU (Ireland)", "EU (Ireland), eu-west-1"),
    ("eu-central-1", "`eu-central-1`", "EU (Frankfurt)", "EU (Frankfurt), eu-central-1"),
    ("us-east-1", "`us-east-1`", "US East (N. Virginia)", "US East (N. Virginia), us-east-1"),
    ("us-west-2", "`us-west-2`", "US West (Oregon)", "US West (Oregon), us-west-2"),
    ("ap-southeast-2", "`ap-southeast-2`", "Asia Pacific (Sydney)"),
)
PEOPLE = (
    ("mara", "Mara Quist"),
    ("dkim", "Daniel Kim"),
    ("priya", "Priya Natarajan"),
    ("tomasz", "Tomasz Wrona"),
    ("lfischer", "Lena Fischer"),
    ("abe", "Abe Okafor"),
    ("ruthie", "Ruth Adeyemi"),
    ("jcosta", "Joana Costa"),
)
OWNER = named("owner", *((f"@{h}", full, f"{full} (@{h})") for h, full in PEOPLE))
WEEKDAY = named(
    "weekday",
    *((d, d[:3], d.lower()) for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")),
)


def clock12(hm: tuple) -> str:
    h, m = hm
    suffix = "am" if h < 12 else "pm"
    h12 = h % 12 or 12
    return (f"{h12}{suffix}" if m == 0 else f"{h12}:{m:02d}{suffix}") + " UTC"


CLOCK = VType(
    "clock",
    ((2, 0), (3, 30), (6, 0), (9, 0), (12, 0), (14, 0), (16, 30), (17, 0), (18, 0), (22, 0)),
    (
        st("24h", lambda hm: f"{hm[0]:02d}:{hm[1]:02d} UTC"),
        st("12h", clock12),
        st("zulu", lambda hm: f"{hm[0]:02d}:{hm[1]:02d}Z"),
        st("noon", only({(12, 0): "noon UTC"})),
    ),
    roles=NAMED_ROLES | {"at"},
)

_MONTHS = "January February March April May June July August September October November "
_MONTHS += "December"
MONTHS = _MONTHS.split()
DATE = VType(
    "date",
    ((2027, 1, 31), (2027, 3, 14), (2027, 4, 30), (2027, 6, 30), (2027, 9, 1), (2027, 12, 15)),
    (
        st("iso", lambda d: f"{d[0]}-{d[1]:02d}-{d[2]:02d}"),
        st("day-month", lambda d: f"{d[2]} {MONTHS[d[1] - 1]} {d[0]}"),
        st("month-day", lambda d: f"{MONTHS[d[1] - 1]} {d[2]}, {d[0]}"),
        st("short", lambda d: f"{MONTHS[d[1] - 1][:3]} {d[2]} {d[0]}"),
    ),
    roles=NAMED_ROLES,
)


def cron(n: int) -> str:
    if n < 60:
        return "* * * * *" if n == 1 else f"*/{n} * * * *"
    return "0 * * * *" if n == 60 else f"0 */{n // 60} * * *"


def every(n: int, spell: Callable[[int], str]) -> str:
    if n < 60:
        return "every minute" if n == 1 else f"every {spell(n)} minutes"
    return "every hour" if n == 60 else f"every {spell(n // 60)} hours"


SCHEDULE = VType(
    "schedule",
    (1, 5, 10, 15, 30, 60, 120, 360),
    (
        st("every", lambda n: every(n, str)),
        st("every-words", lambda n: every(n, words) if n not in (1, 60) else None),
        st("cron", cron),
        st("hourly", only({60: "hourly", 1: "once a minute"})),
        st("min", lambda n: f"every {n} min" if 1 < n < 60 else None),
    ),
    roles=SCHEDULE_ROLES,
)


def path_type(*paths: str) -> VType:
    return VType(
        "path",
        paths,
        (
            st("plain", str),
            st("ticks", lambda p: f"`{p}`"),
            st("slash", lambda p: None if "." in p.rsplit("/", 1)[-1] else p + "/"),
        ),
        NAMED_ROLES,
        text=True,
    )


def url_type(*urls: str) -> VType:
    return VType(
        "url",
        urls,
        (st("plain", str), st("ticks", lambda u: f"`{u}`"), st("angle", lambda u: f"<{u}>")),
        NAMED_ROLES,
        text=True,
    )


# ----------------------------------------------------------------- subjects, domains


@dataclass(frozen=True, eq=False)
class Subject:
    """Wordings naming one subject; a wording starting with ``+`` is plural."""

    names: tuple[str, ...]

    def name(self, i: int) -> str:
        return self.names[i].lstrip("+")

    def plural(self, i: int) -> bool:
        return self.names[i].startswith("+")


@dataclass(frozen=True, eq=False)
class Attribute:
    """Wordings naming one attribute, its value type, its sibling group (attributes of
    one group are different things of one type), its config key if it has one, and its
    rank among ranked siblings (a minimum before its maximum, p95 before p99: a lower
    rank never holds the larger value)."""

    names: tuple[str, ...]
    vtype: VType
    group: str | None = None
    key: str | None = None
    rank: int | None = None


@dataclass(frozen=True, eq=False)
class Domain:
    name: str
    subjects: tuple[Subject, ...]
    attributes: tuple[Attribute, ...]

    def siblings(self, a: Attribute) -> list[Attribute]:
        return [b for b in self.attributes if b is not a and a.group and b.group == a.group]


def S(*names: str) -> Subject:
    return Subject(names)


def A(names: str, vtype: VType, group=None, key=None, rank=None) -> Attribute:
    return Attribute(tuple(names.split(" / ")), vtype, group, key, rank)


DOMAINS = (
    Domain(
        "api-gateway",
        (
            S("the staging gateway", "the gateway in staging", "the staging API gateway"),
            S("the production gateway", "the prod gateway", "the gateway in production"),
            S("the partner gateway", "the partner-facing gateway", "the partner API gateway"),
        ),
        (
            A("upstream read timeout / proxy read timeout", SECONDS, "t", "proxy_read_timeout"),
            A(
                "upstream connect timeout / proxy connect timeout",
                SECONDS,
                "t",
                "proxy_connect_timeout",
            ),
            A("upstream send timeout / proxy send timeout", SECONDS, "t", "proxy_send_timeout"),
            A("per-client rate limit / rate limit per API key", RATE, "rate"),
            A("global rate limit / gateway-wide rate limit", RATE, "rate"),
            A("request buffering / buffering of request bodies", STATE, "b", "proxy_buffering"),
            A("gzip compression / gzip for responses", STATE, "b", "gzip"),
            A("max request body size / request body limit", BODY, None, "client_max_body_size"),
            A("HTTPS listen port / TLS port", GATEWAY_PORT, "port", "listen"),
            A("admin API port / port of the admin API", GATEWAY_PORT, "port"),
        ),
    ),
    Domain(
        "postgres",
        (
            S("the orders database", "the orders DB", "orders-db"),
            S("the billing database", "the billing DB", "billing-db"),
            S("the analytics replica", "the read replica for analytics", "analytics-replica"),
        ),
        (
            A("statement timeout / per-statement timeout", SECONDS, "t", "statement_timeout"),
            A("lock timeout / lock wait timeout", SECONDS, "t", "lock_timeout"),
            A(
                "idle-in-transaction timeout / timeout for idle transactions",
                SECONDS,
                "t",
                "idle_in_transaction_session_timeout",
            ),
            A("connection limit / maximum connection count", POOL_COUNT, None, "max_connections"),
            A("minimum pool size / pool min size", COUNT, "pool", "pool_min", 0),
            A("maximum pool size / pool max size", COUNT, "pool", "pool_max", 1),
            A("Postgres major version / server major version", POSTGRES),
            A("schema migration tool / migration tool", MIGRATOR),
            A("listen port / Postgres port", PG_PORT, None, "port"),
            A("disk size / allocated storage", GB),
        ),
    ),
    Domain(
        "ci",
        (
            S("the main-branch pipeline", "the pipeline on main", "CI on main"),
            S("the nightly pipeline", "the nightly build", "nightly CI"),
            S("the pull-request pipeline", "the PR pipeline", "PR CI"),
        ),
        (
            A("job timeout / per-job timeout / timeout for each job", MINUTES, "t"),
            A("queue timeout / timeout waiting for a runner", MINUTES, "t"),
            A("test shard count / number of test shards", COUNT, "n"),
            A("parallel job limit / cap on parallel jobs", COUNT, "n"),
            A("retry count for flaky jobs / automatic retry limit for jobs", COUNT, "n"),
            A("artifact retention / retention for build artifacts", RETENTION, "keep"),
            A("log retention / retention for job logs", RETENTION, "keep"),
            A("runner Python version / Python version of the CI image", PYTHON),
            A("dependency caching / caching of dependencies", STATE, "cache"),
            A("Docker layer caching / layer caching for image builds", STATE, "cache"),
            A(
                "build webhook / webhook for build results",
                url_type(
                    "https://hooks.slack.com/services/T01/B07/ci-main",
                    "https://ci.internal.example.dev/hooks/builds",
                    "https://chat.example.dev/hooks/ci-results",
                ),
            ),
        ),
    ),
    Domain(
        "frontend-build",
        (
            S("the customer web app", "the storefront app", "the customer-facing web app"),
            S("the admin dashboard", "the admin UI", "the back-office dashboard"),
            S("the marketing site", "the landing site", "the marketing website"),
        ),
        (
            A("bundler / JS bundler / build tool", BUNDLER),
            A("package manager / JS package manager", PACKAGE_MANAGER),
            A("Node version / Node.js version / Node runtime", NODE),
            A("dev server port / local dev port", DEV_PORT, "port"),
            A("preview server port / preview port", DEV_PORT, "port"),
            A("JS bundle budget / size budget for the main bundle", KB, "budget"),
            A("CSS budget / stylesheet size budget", KB, "budget"),
            A(
                "production source-map generation / source-map generation in production",
                STATE,
                "b",
                "GENERATE_SOURCEMAP",
            ),
            A("TypeScript strict mode / strict type checking", STATE, "b", "strict"),
        ),
    ),
    Domain(
        "observability",
        (
            S("the checkout service", "checkout-svc", "the checkout backend"),
            S("the search service", "search-svc", "the search backend"),
            S("the payments service", "payments-svc", "the payments backend"),
        ),
        (
            A("p99 latency alert threshold / p99 alert threshold", MILLIS, "lat", rank=1),
            A("p95 latency alert threshold / p95 alert threshold", MILLIS, "lat", rank=0),
            A("error-rate alert threshold / error rate that pages on-call", ERROR_RATE),
            A("trace sampling rate / sampling ratio for traces", RATIO, "sample"),
            A("log sampling rate / sampling ratio for logs", RATIO, "sample"),
            A("log level / logging level", LOG_LEVEL, None, "LOG_LEVEL"),
            A(
                "metrics scrape interval / Prometheus scrape interval",
                SECONDS,
                "every",
                "scrape_interval",
            ),
            A(
                "alert evaluation interval / rule evaluation interval",
                SECONDS,
                "every",
                "evaluation_interval",
            ),
            A("on-call owner / owner of the pager", OWNER),
            A(
                "alert webhook / webhook for alerts",
                url_type(
                    "https://alerts.example.dev/hooks/pager",
                    "https://events.pagerduty.com/integration/abc123/enqueue",
                    "https://hooks.example.dev/alertmanager",
                ),
            ),
        ),
    ),
    Domain(
        "package-publishing",
        (
            S("the Python SDK", "the PyPI package", "our Python client library"),
            S("the CLI", "the command-line tool", "the CLI package"),
            S("the TypeScript client", "the npm package", "the TS SDK"),
        ),
        (
            A("latest published version / current release", SDK_VERSION, "ver"),
            A("oldest supported version / minimum supported release", SDK_VERSION, "ver"),
            A("release owner / release manager", OWNER),
            A(
                "publish registry / registry URL",
                url_type(
                    "https://upload.pypi.org/legacy/",
                    "https://registry.npmjs.org",
                    "https://pkgs.example.dev/simple",
                    "https://npm.pkg.github.com",
                ),
                None,
                "registry",
            ),
            A("release day / weekly release day", WEEKDAY, "day"),
            A("docs publishing day / day the docs are republished", WEEKDAY, "day"),
            A("artifact signing / signing of release artifacts", STATE, "b"),
            A("provenance attestation / build provenance", STATE, "b"),
            A("v1 sunset date / end-of-life date for v1", DATE),
        ),
    ),
    Domain(
        "auth-sessions",
        (
            S("+web sessions", "+browser sessions", "+sessions on the web"),
            S("+mobile sessions", "+sessions in the mobile apps", "+app sessions"),
            S("+admin console sessions", "+admin sessions", "+sessions in the admin console"),
        ),
        (
            A("idle timeout / inactivity timeout", MINUTES, "life", rank=0),
            A("absolute lifetime / maximum session lifetime", MINUTES, "life", rank=1),
            A("lockout duration / account lockout period", MINUTES, "life"),
            A("refresh token lifetime / refresh-token TTL", TOKEN_DAYS, "days"),
            A("remember-me duration / remember-me period", TOKEN_DAYS, "days"),
            A("mandatory MFA / MFA enforcement", STATE, "b"),
            A("device binding / binding to the device fingerprint", STATE, "b"),
            A("failed-login limit before lockout / lockout threshold", COUNT),
        ),
    ),
    Domain(
        "mobile-release",
        (
            S("the iOS app", "the iPhone app", "the App Store build"),
            S("the Android app", "the Android build", "the Play Store build"),
        ),
        (
            A("release branch cut day / branch-cut day", WEEKDAY, "day"),
            A("store submission day / submission day", WEEKDAY, "day"),
            A("first staged rollout step / starting rollout percentage", ROLLOUT, "pct", rank=0),
            A("second staged rollout step / second rollout percentage", ROLLOUT, "pct", rank=1),
            A(
                "crash-free threshold for halting the rollout / rollout halt threshold",
                HIGH_PERCENT,
            ),
            A("release captain / release driver", OWNER),
            A("code freeze time / feature freeze cutoff", CLOCK),
            A("release cadence / release train interval", CADENCE),
        ),
    ),
    Domain(
        "data-pipelines",
        (
            S("the events ingestion job", "the event ingest job", "events-ingest"),
            S("the revenue rollup", "the daily revenue rollup job", "revenue-rollup"),
            S("the user dedup job", "the dedup pipeline for users", "user-dedup"),
        ),
        (
            A("batch size / batch size in rows", BIG_COUNT, "rows", rank=0),
            A("buffered-row limit / buffer limit in rows", BIG_COUNT, "rows", rank=1),
            A("allowed lateness / late-data allowance", MINUTES, "win"),
            A("aggregation window / window length", MINUTES, "win"),
            A("retry limit / maximum retry count", COUNT),
            A(
                "output path / sink location",
                path_type(
                    "s3://acme-data/out/v2",
                    "s3://acme-warehouse/exports",
                    "gs://acme-lake/curated",
                    "/mnt/pipelines/out",
                ),
            ),
            A(
                "checkpoint path / checkpoint location",
                path_type(
                    "s3://acme-data/checkpoints",
                    "s3://acme-ops/chk",
                    "/var/lib/pipelines/checkpoints",
                ),
            ),
            A("run schedule / cron schedule", SCHEDULE),
            A("worker memory / memory per worker / executor memory", MEMORY, "mem"),
            A("driver memory / memory for the driver", MEMORY, "mem"),
        ),
    ),
    Domain(
        "infra-as-code",
        (
            S("the staging environment", "the staging stack", "the staging infra"),
            S("the production environment", "the production stack", "the production infra"),
            S("the sandbox environment", "the sandbox stack", "the sandbox infra"),
        ),
        (
            A("primary region / main AWS region", REGION, "region"),
            A("disaster-recovery region / DR region / failover region", REGION, "region"),
            A("required Terraform version / pinned Terraform version", TF_VERSION),
            A("minimum node count / node group minimum", COUNT, "nodes", "min_size", 0),
            A("maximum node count / node group maximum", COUNT, "nodes", "max_size", 1),
            A("worker instance type / instance type for worker nodes", INSTANCE),
            A(
                "remote state path / state backend location",
                path_type(
                    "s3://acme-tfstate/live/terraform.tfstate",
                    "s3://acme-tfstate/env/main.tfstate",
                    "s3://acme-infra-state/stacks/core.tfstate",
                ),
                None,
                "backend_key",
            ),
            A(
                "deletion protection / delete protection on databases",
                STATE,
                None,
                "deletion_protection",
            ),
        ),
    ),
    Domain(
        "test-suites",
        (
            S("the unit suite", "+the unit tests", "the unit test suite"),
            S("the integration suite", "+the integration tests", "the integration test suite"),
            S("the end-to-end suite", "+the e2e tests", "the E2E suite"),
        ),
        (
            A("per-test timeout / timeout per test", SECONDS, "t", "timeout"),
            A("slow-test warning threshold / slow test threshold", SECONDS, "t"),
            A("coverage floor / minimum line coverage", COVERAGE, "cov", "fail_under"),
            A("branch coverage floor / minimum branch coverage", COVERAGE, "cov"),
            A("worker count / number of parallel workers", COUNT, "n", "workers"),
            A("rerun count for flaky tests / flaky-test rerun count", COUNT, "n", "reruns"),
            A("test runner / test framework", TEST_RUNNER),
            A(
                "fixtures directory / fixture path",
                path_type("tests/fixtures", "tests/data", "testdata/fixtures", "e2e/fixtures"),
            ),
            A(
                "snapshot directory / snapshots path",
                path_type("tests/__snapshots__", "tests/snapshots", "e2e/snapshots"),
            ),
            A("random test ordering / test order randomisation", STATE),
        ),
    ),
    Domain(
        "redis-caching",
        (
            S("the session cache", "session-cache", "the Redis behind sessions"),
            S("the rate-limit store", "ratelimit-redis", "the Redis behind rate limiting"),
            S("the feature-flag cache", "flags-redis", "the Redis behind feature flags"),
        ),
        (
            A("default TTL / default key expiry", MINUTES, "ttl"),
            A("negative-cache TTL / TTL for cached misses", MINUTES, "ttl"),
            A("maxmemory / memory limit", MEMORY, None, "maxmemory"),
            A("eviction policy / maxmemory policy", EVICTION, None, "maxmemory-policy"),
            A("port / Redis port", REDIS_PORT, None, "port"),
            A("AOF persistence / append-only persistence", STATE, "persist", "appendonly"),
            A("RDB snapshotting / snapshotting to disk", STATE, "persist"),
            A("replica count / number of replicas", COUNT),
        ),
    ),
)

# ------------------------------------------------------------------------------ frames


@dataclass(frozen=True)
class Frame:
    """A sentence of one memory kind: ``{S}`` the subject (``{s}`` without "the",
    ``{P}`` possessive), ``{A}`` the attribute, ``{K}`` its config key, ``{V}`` the
    value in the frame's ``role``; ``[x|y]`` singular or plural by the subject.
    ``newer``: only said of a newer statement; ``corrective``: it says a previous note
    was wrong; ``tail``: a reason, why or symptom may follow."""

    kind: str
    text: str
    role: str
    newer: bool = False
    corrective: bool = False
    tail: bool = True

    @property
    def keyed(self) -> bool:
        return "{K}" in self.text


def F(kind: str, role: str, *texts: str, newer=False, corrective=False, tail=True):
    return [Frame(kind, t, role, newer, corrective, tail) for t in texts]


FRAMES = (
    # facts
    *F(
        "fact",
        "is",
        "The {A} of {S} is {V}",
        "{P} {A} is {V}",
        "For {S}, the {A} is {V}",
        "Currently the {A} on {S} is {V}",
    ),
    *F(
        "fact",
        "bare",
        "{A} for {s}: {V}",
        "{s} | {A} | {V}",
        "- {s} {A} = {V}",
        "{A} ({s}): {V}",
        tail=False,
    ),
    *F("fact", "bare", "[{s}] {K} = {V}", "{s}: {K}={V}", tail=False),
    *F("fact", "of", "{S} [runs|run] with {an} {A} of {V}"),
    *F("fact", "to", "{S} [is|are] configured with the {A} set to {V}"),
    *F("fact", "as", "FYI: {S} [uses|use] {V} as the {A}"),
    *F("fact", "has", "{S} [has|have] {A} {V}", "FYI: {S} [has|have] {A} {V}"),
    *F("fact", "is", "The {A} of {S} is now {V}", newer=True),
    *F("fact", "to", "{s}: {A} changed to {V}", newer=True, tail=False),
    *F("fact", "has", "{S} now [has|have] {A} {V}", newer=True),
    # decisions
    *F(
        "decision",
        "to",
        "We decided to set the {A} of {S} to {V}",
        "Decided in review: {K} goes to {V} on {S}",
    ),
    *F("decision", "bare", "Decision: {A} for {s} = {V}", "Decided: {s} {A} -> {V}"),
    *F("decision", "of", "Agreed in review that {S} [gets|get] {an} {A} of {V}"),
    *F(
        "decision",
        "as",
        "Going with {V} as the {A} for {S}",
        "We settled on {V} for the {A} of {S}",
    ),
    *F("decision", "is", "ADR: the {A} of {S} will be {V}"),
    *F("decision", "at", "Team call: {S} [keeps|keep] [its|their] {A} at {V}"),
    *F("decision", "has", "We keep {A} {V} for {S}"),
    *F("decision", "to", "We changed the {A} for {S} to {V}", newer=True),
    *F("decision", "as", "New decision: {S} [goes|go] with {V} as the {A}", newer=True),
    # preferences
    *F(
        "preference",
        "as",
        "Prefer {V} for the {A} of {S}",
        "Default to {V} as the {A} on {S}",
        "Stick with {V} for {S} ({A})",
    ),
    *F(
        "preference",
        "at",
        "Please keep the {A} of {S} at {V}",
        "I'd rather run {S} with the {A} at {V}",
    ),
    *F("preference", "to", "The team prefers {S} with the {A} set to {V}"),
    *F("preference", "bare", "Preferred {A} for {s}: {V}", "pref: {s} {K} = {V}"),
    *F("preference", "is", "Our preference: the {A} of {S} is {V}"),
    *F("preference", "has", "Prefer {S} with {A} {V}"),
    *F("preference", "as", "We now prefer {V} for the {A} of {S}", newer=True),
    *F("preference", "at", "These days, keep the {A} of {S} at {V}", newer=True),
    # lessons
    *F(
        "lesson",
        "is",
        "Gotcha: {S} [breaks|break] unless the {A} is {V}",
        "If {S} [acts|act] up, check that the {A} is {V}",
        tail=False,
    ),
    *F(
        "lesson",
        "is",
        "Don't forget that the {A} for {S} must be {V}",
        "Note to self: the {A} on {S} has to be {V}",
    ),
    *F("lesson", "at", "Turns out {S} [needs|need] the {A} at {V}"),
    *F("lesson", "to", "Lesson learned: set the {A} of {S} to {V}", "Always set {K} to {V} on {S}"),
    *F("lesson", "bare", "Learned the hard way: {S} only [behaves|behave] with {A} = {V}"),
    *F("lesson", "of", "Remember: {S} [wants|want] {an} {A} of {V}"),
    *F("lesson", "as", "Pitfall: anything but {V} as the {A} of {S} causes trouble", tail=False),
    *F("lesson", "has", "Turns out {S} [needs|need] {A} {V}"),
    *F(
        "lesson",
        "is",
        "Correction to the earlier note: {S} actually [needs|need] the {A} to be {V}",
        newer=True,
        corrective=True,
    ),
    *F("lesson", "is", "Update: the {A} on {S} has to be {V} now", newer=True),
)

TAILS = {
    "fact": (
        " per the runbook",
        " according to the config repo",
        " (checked in the dashboard)",
        " as of the last audit",
    ),
    "decision": (
        ", after the capacity review",
        " (per the vendor docs)",
        " after a long thread in #platform",
        ", to keep the runbook simple",
        " (after the March incident)",
        ", as agreed with the SRE team",
        " for now, until we have better data",
    ),
    "preference": (
        " - it is easier to reason about",
        " (fewer surprises in review)",
        "; it matches what people expect locally",
        " (less to explain to new joiners)",
    ),
    "lesson": (
        ", otherwise the health checks flap",
        " or deploys hang halfway",
        ", otherwise requests pile up",
        " (else CI goes red for no obvious reason)",
        ", otherwise on-call gets paged at night",
    ),
}
REMARKS = (
    "(see PR #{n})",
    "cc @{h}",
    "[ticket OPS-{n}]",
    "TODO: mention it in the README",
    "(from the incident channel)",
    "-- noted in standup",
)

# ------------------------------------------------------------------- saying a fact


def frames_for(kind: str, vtype: VType, attribute: Attribute, newer: bool | None = False):
    """The frames of ``kind`` able to say ``attribute`` (``newer``: only newer-only
    ones, False none of them, None both)."""
    return [
        f
        for f in FRAMES
        if f.kind == kind
        and (newer is None or f.newer == newer)
        and f.role in vtype.roles
        and (attribute.key or not f.keyed)
        and any(s.roles is None or f.role in s.roles for s in vtype.styles)
    ]


_TOKEN = re.compile(r"\[([^|\]]*)\|([^\]]*)\]")


def possessive(name: str, many: bool) -> str:
    return name + ("'" if many and name.endswith("s") else "'s")


def article(noun: str) -> str:
    """``a`` or ``an`` before ``noun`` (as said: an upstream, an HTTPS port, a CSS budget)."""
    first = noun.split(" ", 1)[0].split("-", 1)[0]
    if first.isupper():
        return "an" if first[0] in "AEFHILMNORSX" else "a"
    return "an" if first[0] in "aeiou" else "a"


def capitalised(text: str) -> str:
    first = text.split(" ", 1)[0]
    return text[0].upper() + text[1:] if first.isalpha() and first.islower() else text


@dataclass(frozen=True)
class Said:
    """One statement: a fact and how it is said (wording indices, style, tail, noise)."""

    subject: Subject
    attribute: Attribute
    value: object
    frame: Frame
    sname: int
    aname: int
    style: int
    tail: str = ""
    remark: str = ""
    lower: bool = False
    period: bool = True

    @property
    def value_text(self) -> str:
        return self.attribute.vtype.say(self.value, self.style)

    @property
    def core(self) -> str:
        """The frame filled in, without tail or noise."""
        many = self.subject.plural(self.sname)
        name = self.subject.name(self.sname)
        text = _TOKEN.sub(lambda m: m.group(2 if many else 1), self.frame.text)
        attribute = self.attribute.names[self.aname]
        text = text.format(
            S=name,
            an=article(attribute),
            s=name.removeprefix("the "),
            P=possessive(name, many),
            A=attribute,
            K=self.attribute.key or "",
            V=self.value_text,
        )
        return capitalised(text)

    def render(self) -> str:
        text = self.core + self.tail
        ends_in_text = self.attribute.vtype.text and text.endswith(self.value_text)
        if self.period and not ends_in_text:
            text += "."
        if self.remark:
            text += " " + self.remark
        return text.lower() if self.lower else text


@dataclass(frozen=True)
class Pair:
    label: str
    kind: str
    domain: Domain
    old: Said
    new: Said

    def row(self) -> dict:
        return {
            "label": self.label,
            "kind": self.kind,
            "old": self.old.render(),
            "new": self.new.render(),
            "domain": self.domain.name,
            "vtype": self.old.attribute.vtype.name,
        }


# ----------------------------------------------------------------------- drawing


class Redraw(Exception):
    """The draw cannot be completed as chosen (no fitting frame or style)."""


def pick(rng: random.Random, items):
    if not items:
        raise Redraw
    return rng.choice(list(items))


def other_value(rng: random.Random, vtype: VType, q):
    return pick(rng, [x for x in vtype.pool if x != q])


def noise(rng: random.Random) -> dict:
    remark = ""
    if rng.random() < 0.12:
        remark = rng.choice(REMARKS).format(n=rng.randint(120, 9800), h=rng.choice(PEOPLE)[0])
    return {"remark": remark, "lower": rng.random() < 0.07, "period": rng.random() > 0.2}


def tail(rng: random.Random, frame: Frame) -> str:
    return rng.choice(TAILS[frame.kind]) if frame.tail and rng.random() < 0.3 else ""


def say(rng, subject, attribute, value, frame, *, sname=None, aname=None, style=None, **kw):
    """A statement of the fact in ``frame``, with drawn wordings, style and noise unless
    given."""
    vtype = attribute.vtype
    fits = vtype.fitting(value, frame.role)
    if style is None:
        style = pick(rng, fits)
    elif style not in fits:
        raise Redraw
    return Said(
        subject,
        attribute,
        value,
        frame,
        rng.randrange(len(subject.names)) if sname is None else sname,
        rng.randrange(len(attribute.names)) if aname is None else aname,
        style,
        **{"tail": tail(rng, frame), **noise(rng), **kw},
    )


def draw_update(rng, kind, domain, subject, attribute) -> tuple[Said, Said]:
    vtype = attribute.vtype
    q_old = pick(rng, vtype.pool)
    q_new = other_value(rng, vtype, q_old)
    frame = pick(rng, frames_for(kind, vtype, attribute))
    both = set(vtype.fitting(q_old, frame.role)) & set(vtype.fitting(q_new, frame.role))
    old = say(rng, subject, attribute, q_old, frame, style=pick(rng, sorted(both)))
    case = {"lower": old.lower, "period": old.period, "tail": old.tail}
    new = say(
        rng,
        subject,
        attribute,
        q_new,
        frame,
        sname=old.sname,
        aname=old.aname,
        style=old.style,
        **case,
    )
    return old, new


def draw_reframed(rng, kind, domain, subject, attribute) -> tuple[Said, Said]:
    vtype = attribute.vtype
    q_old = pick(rng, vtype.pool)
    q_new = other_value(rng, vtype, q_old)
    old = say(rng, subject, attribute, q_old, pick(rng, frames_for(kind, vtype, attribute)))
    wordings = len(subject.names) > 1 or len(attribute.names) > 1
    if wordings and rng.random() < 0.2:  # the same frame, another wording
        sname, aname = old.sname, old.aname
        while (sname, aname) == (old.sname, old.aname):
            sname = rng.randrange(len(subject.names))
            aname = rng.randrange(len(attribute.names))
        return old, say(rng, subject, attribute, q_new, old.frame, sname=sname, aname=aname)
    newer = rng.random() < 0.35  # when no newer-only frame fits, another frame does
    frames = frames_for(kind, vtype, attribute, newer) if newer else []
    frames = frames or [f for f in frames_for(kind, vtype, attribute) if f != old.frame]
    keep = rng.random() < 0.5  # otherwise the wordings are drawn afresh too
    kw = {"sname": old.sname, "aname": old.aname} if keep else {}
    return old, say(rng, subject, attribute, q_new, pick(rng, frames), **kw)


def draw_paraphrase(rng, kind, domain, subject, attribute) -> tuple[Said, Said]:
    vtype = attribute.vtype
    q = pick(rng, vtype.pool)
    old = say(rng, subject, attribute, q, pick(rng, frames_for(kind, vtype, attribute)))
    change = set(rng.sample(["frame", "sname", "aname", "style"], rng.randint(1, 3)))
    frame = old.frame
    if "frame" in change:
        frame = pick(rng, [f for f in frames_for(kind, vtype, attribute) if f != old.frame])
    sname = rng.randrange(len(subject.names)) if "sname" in change else old.sname
    aname = rng.randrange(len(attribute.names)) if "aname" in change else old.aname
    styles = vtype.fitting(q, frame.role)
    if "style" in change:
        styles = [s for s in styles if s != old.style] or styles
    elif old.style in styles:
        styles = [old.style]
    reason = old.tail if frame.tail and rng.random() < 0.5 else ""  # kept or left out
    new = say(
        rng,
        subject,
        attribute,
        q,
        frame,
        sname=sname,
        aname=aname,
        style=pick(rng, styles),
        tail=reason,
    )
    if new.core == old.core:
        raise Redraw
    return old, new


def draw_distinct(rng, kind, domain, subject, attribute) -> tuple[Said, Said]:
    if rng.random() < 0.5:  # a sibling (among the attributes having some)
        if not domain.siblings(attribute):
            attribute = pick(rng, [a for a in domain.attributes if domain.siblings(a)])
        subject2, attribute2 = subject, pick(rng, domain.siblings(attribute))
    else:
        subject2 = pick(rng, [s for s in domain.subjects if s is not subject])
        attribute2 = attribute
    vtype = attribute.vtype
    q_old = pick(rng, vtype.pool)
    q_new = q_old if rng.random() < 0.4 else other_value(rng, vtype, q_old)
    if None not in (attribute.rank, attribute2.rank) and attribute is not attribute2:
        low, high = sorted((q_old, q_new))  # a minimum never above its maximum
        q_old, q_new = (low, high) if attribute.rank < attribute2.rank else (high, low)
    old = say(rng, subject, attribute, q_old, pick(rng, frames_for(kind, vtype, attribute)))
    frames2 = frames_for(kind, vtype, attribute2)
    if old.frame in frames2 and rng.random() < 0.5:
        frame = old.frame
    else:
        newer = rng.random() < 0.2
        frames2 = [f for f in frames_for(kind, vtype, attribute2, newer) if not f.corrective]
        frame = pick(rng, frames2)
    kw = {}
    if rng.random() < 0.7:  # the shared side keeps its wording
        kw = {"sname": old.sname} if subject2 is subject else {"aname": old.aname}
    new = say(rng, subject2, attribute2, q_new, frame, **kw)
    return old, new


def _weights() -> dict[str, list[float]]:
    """Per domain, each attribute weighed down by how common its value type is over all
    domains (one over the square root of that count), for rarer types to be drawn."""
    common = Counter(a.vtype.name for d in DOMAINS for a in d.attributes)
    return {d.name: [common[a.vtype.name] ** -0.5 for a in d.attributes] for d in DOMAINS}


WEIGHTS = _weights()

DRAW = {
    "update": draw_update,
    "reframed": draw_reframed,
    "distinct": draw_distinct,
    "paraphrase": draw_paraphrase,
}


def draw(rng: random.Random, label: str) -> Pair:
    while True:
        kind = rng.choice(KINDS)
        domain = rng.choice(DOMAINS)
        subject = rng.choice(domain.subjects)
        attribute = rng.choices(domain.attributes, WEIGHTS[domain.name])[0]
        try:
            old, new = DRAW[label](rng, kind, domain, subject, attribute)
        except Redraw:
            continue
        if old.render() != new.render():
            return Pair(label, kind, domain, old, new)


def facts(n: int, seed: int = DEFAULT_SEED) -> list[Pair]:
    """``n`` pairs of each label, in label order, with their structure."""
    rng = random.Random(seed)
    return unique_per_label(
        LABELS, n, lambda label: draw(rng, label), lambda p: (p.old.render(), p.new.render())
    )


def pairs(n: int, seed: int = DEFAULT_SEED) -> list[dict]:
    """``n`` pairs of each label, in label order, as benchmark rows."""
    return [p.row() for p in facts(n, seed)]


def main() -> None:
    write_pairs_cli(
        "Write the sixth split of memory statement pairs as JSON lines.",
        pairs,
        200,
        DEFAULT_SEED,
    )


if __name__ == "__main__":
    main()
