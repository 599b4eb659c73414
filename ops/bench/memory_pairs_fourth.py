"""A fourth generator of memory statement pairs, written apart from :mod:`memory_pairs`,
:mod:`memory_pairs_alt` and :mod:`memory_pairs_fresh` (their templates were not read),
and apart from the adjudicator and its word lists: an untouched held-out set, scored
once. Nothing here was fitted to the adjudicator's output.

What a pair is. Two statements a coding agent saves while working on a project, the
older one first. Each states one fact: a *subject* (the iOS app, the nightly ingest DAG,
Python files) has an *attribute* (staged rollout percentage, scheduled start time,
indentation width) with a *value* (20 %, 02:30 UTC, 4 spaces). The label says how the
two facts relate, and a careful reader of the two sentences alone can tell it:

* ``update``: the same subject and attribute, another value, the same sentence frame,
  subject and attribute worded alike. The newer statement supersedes the older one.
* ``reframed``: an update whose newer statement has another frame of the same kind,
  and possibly another wording of the subject, the attribute and the value style.
* ``distinct``: close facts that must both stay. Half the time another subject of the
  same domain with the same attribute; half the time (where the domain has one) the
  same subject with a *sibling* attribute: another attribute sharing words and value
  type (``training batch size`` / ``eval batch size``, ``warning threshold`` /
  ``critical threshold``). The value is the same half of the time; the frame is the
  older one's seven times in ten.
* ``paraphrase``: the same subject, attribute and value, reworded: another frame
  (three times in four), another wording of the subject or of the attribute
  (synonyms written so that no synonym names a sibling), or the value in another
  style of the same quantity (``2 hours`` / ``120 minutes``, ``3e-4`` / ``0.0003``,
  ``0.1`` / ``10%``, ``14:00 UTC`` / ``2 PM UTC``, ``2,000`` / ``2k``); sizes are
  never converted between units (``1 GB`` is 1000 or 1024 MB depending on the reader).

Domains (11): mobile app releases, data pipelines and schedulers, authentication
policy, frontend build tooling, cloud accounts and quotas, ML training runs,
documentation and process conventions, alerting, editor preferences per file type,
product tooling vendors, team process. Each lists subjects (with synonyms and a
config key), attributes (with synonyms, a config key, a value type and an optional
sibling group) and the memory kinds it is saved as.

Value types (18): counts (with a unit noun or bare; digits, words, ``2,000``, ``2k``),
durations (long, abbreviated, compact ``30m``, words, converted to another unit),
sizes, percentages, versions (``16.4`` / ``v16.4``), learning rates in scientific and
decimal notation, ratios (``0.1`` / ``0.10`` / ``10%``), dates (ISO, US, European,
abbreviated), times of day (24-hour, AM/PM), paths, URLs, people, tool and vendor
names, cloud regions, money per month, request rates, ports and booleans said in
words (enabled/disabled, on/off, turned/switched on and off, enable/disable, true/false,
and, in the newer statement only, "now enabled" / "no longer enabled").

Frames (67), per kind: facts (possessive, "of", notes ``S — A: V``, dotted config keys
``ios_app.rollout_percentage = 20%``, YAML-like keys, parenthetical, value-first, past
tense "was changed to", "is now", "we moved ... to", "S uses V as its A"), decisions
("we decided to set", "decision:", "we went with", "we decided to use X instead of Y",
"we picked X over Y", imperative "per the team's decision, set ..."), preferences ("the
user prefers", "the user wants", "user preference:", imperative "always use ...") and
lessons ("lesson learned:", "learned the hard way", "note to self", "remember that S
breaks unless ..."); booleans have their own frames in each kind (``S has A turned on``,
``we decided to disable A for S``). The alternative named by "instead of" / "over" is
one per pair, other than both values.

Surface noise, the same for every label: the newer statement gets a neutral trailing
remark three times in ten ("per the planning doc", "confirmed with the team"); each
statement ends with a full stop half of the time and is written all in lower case
one time in twelve. Pairs are unique per call and deterministic for a seed.

    .venv/bin/python ops/bench/memory_pairs_fourth.py --out pairs.jsonl [--pairs N] [--seed S]
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pair_splits import in_words, unique_per_label, write_pairs_cli

LABELS = ("update", "reframed", "distinct", "paraphrase")
DEFAULT_SEED = 4
DEFAULT_PAIRS = 200
REMARK_RATE = 0.3
FULL_STOP_RATE = 0.5
LOWER_RATE = 1 / 12
NOW_FORM_RATE = 0.5  # newer boolean statements in an "is {V}" frame: "now enabled" / "no longer"
SIBLING_RATE = 0.5
SAME_VALUE_RATE = 0.5
DISTINCT_SAME_FRAME_RATE = 0.7
PARAPHRASE_FRAME_RATE = 0.75
PARAPHRASE_WORDING_RATE = 0.4

Form = Callable[[object], str | None]  # a rendering of one value, or None where it does not fit

# ---------------------------------------------------------------------------- values


@dataclass(frozen=True)
class ValueType:
    """How one kind of value is drawn and said. ``forms`` maps a frame slot (``V``: the
    plain slot; ``Vc``: a config value; booleans also ``Vp`` particle, ``Vv`` verb,
    ``Vd`` past participle, ``Vnow``) to its renderings; a style is an index into them,
    so an update keeps its style when the value changes (``enabled`` -> ``disabled``)."""

    name: str
    draw: Callable[[random.Random], object]
    forms: dict[str, tuple[Form, ...]]
    alternatives: tuple[str, ...] = ()  # named values an "instead of" frame may cite

    def say(self, value: object, slot: str, style: int) -> str | None:
        forms = self.forms[slot]
        return forms[style % len(forms)](value)

    def styles(self, value: object) -> list[int]:
        """The styles of the plain slot that fit ``value``."""
        return [i for i, f in enumerate(self.forms["V"]) if f(value) is not None]


def _pick(choices: Sequence) -> Callable[[random.Random], object]:
    return lambda rng: rng.choice(choices)


def count(choices: Sequence[int], noun: str = "", grouping: bool = True) -> ValueType:
    """A whole number, with an optional plural unit noun (choices above one)."""
    tail = f" {noun}" if noun else ""

    def words(n: int) -> str | None:
        return f"{in_words(n)}{tail}" if n <= 20 else None

    def grouped(n: int) -> str | None:
        return f"{n:,}{tail}" if grouping and n >= 1000 else None

    def kilo(n: int) -> str | None:
        return f"{n // 1000}k{tail}" if grouping and n >= 1000 and n % 1000 == 0 else None

    forms = {"V": (lambda n: f"{n}{tail}", words, grouped, kilo), "Vc": (str,)}
    return ValueType("count", _pick(tuple(choices)), forms)


# unit: (milliseconds, long name, abbreviation singular, abbreviation plural, compact)
UNITS = {
    "ms": (1, "millisecond", "ms", "ms", "ms"),
    "s": (1000, "second", "sec", "sec", "s"),
    "min": (60_000, "minute", "min", "min", "m"),
    "h": (3_600_000, "hour", "hr", "hrs", "h"),
    "d": (86_400_000, "day", "day", "days", "d"),
    "w": (604_800_000, "week", "wk", "wks", "w"),
}


def duration(*choices: tuple[int, str]) -> ValueType:
    """A duration in milliseconds, said in the largest of the choices' units that divides
    it (``natural``) or, for the ``alt`` styles, the smallest other one that does."""
    units = sorted({u for _, u in choices}, key=lambda u: UNITS[u][0])

    def natural(ms: int) -> str:
        return next(u for u in reversed(units) if ms % UNITS[u][0] == 0)

    def alt(ms: int) -> str | None:
        n = natural(ms)
        fits = [u for u in units if u != n and ms % UNITS[u][0] == 0 and ms // UNITS[u][0] <= 1000]
        return fits[0] if fits else None

    def long(unit: str | None, ms: int) -> str | None:
        if unit is None:
            return None
        n = ms // UNITS[unit][0]
        return f"{n} {UNITS[unit][1]}{'' if n == 1 else 's'}"

    def abbr(unit: str | None, ms: int) -> str | None:
        if unit is None:
            return None
        n = ms // UNITS[unit][0]
        return f"{n} {UNITS[unit][2 if n == 1 else 3]}"

    def compact(ms: int) -> str:
        u = natural(ms)
        return f"{ms // UNITS[u][0]}{UNITS[u][4]}"

    def words(ms: int) -> str | None:
        u = natural(ms)
        n = ms // UNITS[u][0]
        return f"{in_words(n)} {UNITS[u][1]}{'' if n == 1 else 's'}" if n <= 20 else None

    forms = {
        "V": (
            lambda ms: long(natural(ms), ms),
            lambda ms: abbr(natural(ms), ms),
            compact,
            words,
            lambda ms: long(alt(ms), ms),
            lambda ms: abbr(alt(ms), ms),
        ),
        "Vc": (compact,),
    }
    values = tuple(sorted({n * UNITS[u][0] for n, u in choices}))
    return ValueType("duration", _pick(values), forms)


SIZE_UNITS = {"KB": "kilobytes", "MB": "megabytes", "GB": "gigabytes", "TB": "terabytes"}


def size(*choices: tuple[int, str]) -> ValueType:
    """A size, never converted between units (decimal or binary is the reader's guess)."""
    forms = {
        "V": (
            lambda q: f"{q[0]} {q[1]}",
            lambda q: f"{q[0]}{q[1]}",
            lambda q: f"{q[0]} {SIZE_UNITS[q[1]]}"[: -1 if q[0] == 1 else None],
        ),
        "Vc": (lambda q: f"{q[0]}{q[1]}",),
    }
    return ValueType("size", _pick(tuple(choices)), forms)


def percent(choices: Sequence[int]) -> ValueType:
    def words(n: int) -> str | None:
        return f"{in_words(n)} percent" if n <= 20 or n % 10 == 0 and n < 100 else None

    forms = {
        "V": (lambda n: f"{n}%", lambda n: f"{n} percent", words, lambda n: f"{n} per cent"),
        "Vc": (lambda n: f"{n}%",),
    }
    return ValueType("percent", _pick(tuple(choices)), forms)


def version(choices: Sequence[str]) -> ValueType:
    forms = {"V": (str, lambda v: f"v{v}"), "Vc": (str,)}
    return ValueType("version", _pick(tuple(choices)), forms)


def _decimal_places(mantissa: int, exponent: int) -> str:
    return "0." + "0" * (-exponent - 1) + str(mantissa)


def scientific(choices: Sequence[tuple[int, int]]) -> ValueType:
    """A small rate, a one-digit mantissa times a negative power of ten."""
    forms = {
        "V": (
            lambda q: f"{q[0]}e{q[1]}",
            lambda q: _decimal_places(*q),
            lambda q: f"{q[0]}e-{-q[1]:02d}",
        ),
        "Vc": (lambda q: f"{q[0]}e{q[1]}",),
    }
    return ValueType("scientific", _pick(tuple(choices)), forms)


def ratio(choices: Sequence[int]) -> ValueType:
    """A fraction given in hundredths: ``0.1``, ``0.10`` or ``10%``."""
    forms = {
        "V": (lambda c: f"{c / 100:g}", lambda c: f"{c / 100:.2f}", lambda c: f"{c}%"),
        "Vc": (lambda c: f"{c / 100:g}",),
    }
    return ValueType("ratio", _pick(tuple(choices)), forms)


MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def date(year: int) -> ValueType:
    def draw(rng: random.Random) -> tuple[int, int, int]:
        return (year, rng.randint(1, 12), rng.randint(1, 28))

    def iso(q: tuple[int, int, int]) -> str:
        return f"{q[0]}-{q[1]:02d}-{q[2]:02d}"

    forms = {
        "V": (
            iso,
            lambda q: f"{MONTHS[q[1] - 1]} {q[2]}, {q[0]}",
            lambda q: f"{q[2]} {MONTHS[q[1] - 1]} {q[0]}",
            lambda q: f"{MONTHS[q[1] - 1][:3]} {q[2]}, {q[0]}",
        ),
        "Vc": (iso,),
    }
    return ValueType("date", draw, forms)


def clock() -> ValueType:
    """A time of day in UTC; never in the hours where AM and PM are misread (0 and 12)."""
    hours = [h for h in range(1, 24) if h != 12]
    values = tuple((h, m) for h in hours for m in (0, 15, 30, 45))

    def twelve(q: tuple[int, int], sep: str) -> str:
        h, m = q
        return f"{h % 12}:{m:02d}{sep}{'AM' if h < 12 else 'PM'} UTC"

    def on_the_hour(q: tuple[int, int]) -> str | None:
        h, m = q
        return f"{h % 12} {'AM' if h < 12 else 'PM'} UTC" if m == 0 else None

    forms = {
        "V": (
            lambda q: f"{q[0]:02d}:{q[1]:02d} UTC",
            lambda q: twelve(q, " "),
            lambda q: twelve(q, "").replace("AM", "am").replace("PM", "pm"),
            on_the_hour,
        ),
        "Vc": (lambda q: f"{q[0]:02d}:{q[1]:02d} UTC",),
    }
    return ValueType("time", _pick(values), forms)


def named(
    kind: str, pool: Sequence[str], code: bool = False, alternatives: bool = True
) -> ValueType:
    """A name from a pool (tools, vendors, regions, people, channels); ``code`` names may
    be written in backticks; ``alternatives`` lets "instead of" frames cite another."""
    forms: tuple[Form, ...] = (str, lambda s: f"`{s}`") if code else (str,)
    alts = tuple(pool) if alternatives and len(pool) >= 3 else ()
    return ValueType(kind, _pick(tuple(pool)), {"V": forms, "Vc": (str,)}, alts)


def url(pool: Sequence[str]) -> ValueType:
    forms = {"V": (str, lambda s: f"`{s}`", lambda s: f"<{s}>"), "Vc": (str,)}
    return ValueType("url", _pick(tuple(pool)), forms)


def path(pool: Sequence[str]) -> ValueType:
    return ValueType("path", _pick(tuple(pool)), {"V": (str, lambda s: f"`{s}`"), "Vc": (str,)})


def money(choices: Sequence[int]) -> ValueType:
    """US dollars per month."""

    def kilo(n: int) -> str | None:
        return f"${n // 1000}k a month" if n % 1000 == 0 else None

    forms = {
        "V": (
            lambda n: f"${n:,} per month",
            lambda n: f"${n}/month",
            lambda n: f"{n:,} USD a month",
            kilo,
        ),
        "Vc": (lambda n: f"{n} USD/month",),
    }
    return ValueType("money", _pick(tuple(choices)), forms)


def rate(choices: Sequence[int]) -> ValueType:
    """Requests per minute."""
    forms = {
        "V": (
            lambda n: f"{n} requests per minute",
            lambda n: f"{n} req/min",
            lambda n: f"{n:,} requests a minute",
        ),
        "Vc": (lambda n: f"{n}/min",),
    }
    return ValueType("rate", _pick(tuple(choices)), forms)


def port(choices: Sequence[int]) -> ValueType:
    return ValueType("port", _pick(tuple(choices)), {"V": (str,), "Vc": (str,)})


def _said(on: Sequence[str], off: Sequence[str]) -> tuple[Form, ...]:
    return tuple(lambda b, t=t, f=f: t if b else f for t, f in zip(on, off, strict=True))


BOOLEAN = ValueType(
    "boolean",
    _pick((True, False)),
    {
        "V": _said(
            ("enabled", "turned on", "switched on", "on"),
            ("disabled", "turned off", "switched off", "off"),
        ),
        "Vp": _said(("on", "turned on", "switched on"), ("off", "turned off", "switched off")),
        "Vv": _said(("enable", "turn on", "switch on"), ("disable", "turn off", "switch off")),
        "Vd": _said(
            ("enabled", "turned on", "switched on"), ("disabled", "turned off", "switched off")
        ),
        "Vnow": _said(("now enabled", "now on"), ("no longer enabled", "no longer on")),
        "Vc": _said(("true", "on"), ("false", "off")),
    },
)

# ------------------------------------------------------------------------- domains


@dataclass(frozen=True)
class Subject:
    key: str  # the config-key part
    names: tuple[str, ...]


@dataclass(frozen=True)
class Attribute:
    key: str
    names: tuple[str, ...]
    vtype: ValueType
    group: str = ""  # attributes of one group are siblings: shared words, one value type


@dataclass(frozen=True)
class Domain:
    name: str
    kinds: tuple[str, ...]  # the memory kinds its statements are saved as (repeats weigh)
    subjects: tuple[Subject, ...]
    attributes: tuple[Attribute, ...]

    def siblings(self, attribute: Attribute) -> list[Attribute]:
        return [
            a for a in self.attributes if a.group and a.group == attribute.group and a != attribute
        ]


def S(key: str, *names: str) -> Subject:  # short: reads as a table row
    return Subject(key, names)


def A(key: str, names: str | tuple[str, ...], vtype: ValueType, group: str = "") -> Attribute:
    return Attribute(key, (names,) if isinstance(names, str) else names, vtype, group)


PEOPLE = (
    "Priya Raman", "Tomasz Nowak", "Aisha Bello", "Kenji Watanabe", "Lucía Ortega",
    "Marcus Lindqvist", "Grace Okafor", "Dmitri Volkov", "Hannah Schultz", "Rahul Mehta",
    "Sofia Conti", "Yusuf Demir", "Mei Chen", "Oliver Grant", "Nadia Haddad",
)  # fmt: skip
PERSON = named("person", PEOPLE, alternatives=False)

OS_VERSION = version(("14.0", "15.4", "16.0", "16.4", "17.0", "17.2", "18.1"))
ROLLOUT = percent((1, 2, 5, 10, 20, 25, 50, 75, 100))
RELEASE_DAY = date(2027)
MOBILE = Domain(
    "mobile releases",
    ("fact", "fact", "decision", "lesson", "preference"),
    (
        S("ios_app", "the iOS app", "our iPhone app"),
        S("android_app", "the Android app", "the Android client"),
        S("ipad_app", "the iPad app", "the tablet build for iPad"),
        S("watch_app", "the Wear OS companion app", "the watch companion app"),
    ),
    (
        A("min_os_version", ("minimum supported OS version", "lowest supported OS version"),
          OS_VERSION, "os"),
        A("target_os_version", "target OS version", OS_VERSION, "os"),
        A("rollout_percentage", ("staged rollout percentage", "phased rollout percentage"),
          ROLLOUT, "rollout"),
        A("beta_rollout_percentage", "beta rollout percentage", ROLLOUT, "rollout"),
        A("release_date", ("public release date", "store release date"), RELEASE_DAY, "dates"),
        A("rc_date", ("release candidate date", "release candidate cut date"), RELEASE_DAY,
          "dates"),
        A("release_manager", ("release manager", "release captain"), PERSON),
        A("build_number", ("build number", "current build number"),
          count(range(3100, 3999, 7), grouping=False)),
    ),
)  # fmt: skip

CLOCK = clock()
LIMIT = count((1, 2, 4, 6, 8, 12, 16, 32))
TASK_TIME = duration((10, "min"), (15, "min"), (30, "min"), (45, "min"), (1, "h"), (2, "h"),
                     (3, "h"), (6, "h"))  # fmt: skip
PIPE_PATHS = path((
    "s3://acme-lake/raw/ingest/", "s3://acme-lake/exports/billing/", "gs://acme-events/clicks/",
    "s3://acme-lake/features/", "/mnt/scratch/pipelines", "s3://acme-tmp/staging/",
    "gs://acme-tmp/backfill-staging/",
))  # fmt: skip
PIPELINES = Domain(
    "data pipelines",
    ("fact", "fact", "decision", "lesson"),
    (
        S("ingest_dag", "the nightly ingest DAG", "the nightly ingestion DAG"),
        S("billing_export", "the billing export job", "the billing export"),
        S("clickstream_backfill", "the clickstream backfill", "the clickstream backfill job"),
        S("feature_sync", "the feature store sync", "the feature-store sync job"),
    ),
    (
        A("start_time", ("scheduled start time", "daily start time"), CLOCK, "times"),
        A("finish_by", ("latest finish time", "SLA finish time"), CLOCK, "times"),
        A("task_timeout", ("task timeout", "per-task timeout"), TASK_TIME, "task"),
        A("task_retry_delay", ("task retry delay", "delay between task retries"), TASK_TIME,
          "task"),
        A("max_retries", ("max retries", "maximum retry count"), count((0, 1, 2, 3, 4, 5))),
        A("max_parallel_tasks", ("max parallel tasks", "max number of parallel tasks"),
          LIMIT, "limits"),
        A("max_active_runs", ("max active runs", "max number of active runs"),
          LIMIT, "limits"),
        A("output_path", ("output path", "output location"), PIPE_PATHS, "paths"),
        A("staging_path", ("staging path", "staging location"), PIPE_PATHS, "paths"),
        A("owner", ("owner", "on-call owner"), PERSON),
        A("orchestrator", ("orchestrator", "workflow scheduler"),
          named("tool", ("Airflow", "Dagster", "Prefect", "Argo Workflows", "Luigi"))),
    ),
)  # fmt: skip

RATE = rate((10, 30, 60, 120, 300, 600, 1200))
SESSION_TIME = duration((15, "min"), (30, "min"), (1, "h"), (2, "h"), (8, "h"), (12, "h"),
                        (1, "d"), (7, "d"))  # fmt: skip
TOKEN_TIME = duration((5, "min"), (15, "min"), (1, "h"), (1, "d"), (7, "d"), (14, "d"),
                      (30, "d"))  # fmt: skip
ROTATION = duration((30, "d"), (60, "d"), (90, "d"), (180, "d"), (365, "d"))
AUTH = Domain(
    "authentication policy",
    ("fact", "fact", "decision", "lesson"),
    (
        S("admin_console", "the admin console", "the internal admin console"),
        S("customer_portal", "the customer portal", "the self-service customer portal"),
        S("partner_api", "the partner API", "the partner-facing API"),
        S("support_dashboard", "the support dashboard", "the support team's dashboard"),
    ),
    (
        A("session_idle_timeout", ("session idle timeout", "idle session timeout"),
          SESSION_TIME, "session"),
        A("session_max_lifetime", ("maximum session lifetime", "absolute session lifetime"),
          SESSION_TIME, "session"),
        A("access_token_ttl", ("access token lifetime", "access token TTL"), TOKEN_TIME,
          "token"),
        A("refresh_token_ttl", ("refresh token lifetime", "refresh token TTL"), TOKEN_TIME,
          "token"),
        A("mfa_admins", ("MFA enforcement for administrators", "mandatory MFA for admins"),
          BOOLEAN, "mfa"),
        A("mfa_users", ("MFA enforcement for regular users", "mandatory MFA for regular users"),
          BOOLEAN, "mfa"),
        A("password_min_length", ("minimum password length", "password length minimum"),
          count((8, 10, 12, 14, 16, 20), "characters")),
        A("lockout_threshold", ("lockout threshold", "failed-login lockout threshold"),
          count((3, 5, 6, 8, 10), "failed attempts")),
        A("signing_key_rotation", ("signing key rotation interval",
          "signing-key rotation period"), ROTATION, "rotation"),
        A("api_key_rotation", ("API key rotation interval", "API-key rotation period"),
          ROTATION, "rotation"),
        A("api_rate_limit", ("API rate limit", "per-client API rate limit"),
          RATE, "rate"),
        A("login_rate_limit", ("login rate limit", "per-client login rate limit"),
          RATE, "rate"),
    ),
)  # fmt: skip

NODE = version(("16", "18", "20", "22"))
BUDGET = size((120, "KB"), (150, "KB"), (200, "KB"), (250, "KB"), (300, "KB"), (400, "KB"),
              (1, "MB"))  # fmt: skip
PORTS = port((3000, 4173, 5173, 6006, 8080, 8081, 9000))
FRONTEND = Domain(
    "frontend builds",
    ("fact", "decision", "decision", "preference", "lesson"),
    (
        S("marketing_site", "the marketing site", "the marketing website"),
        S("dashboard", "the dashboard SPA", "the dashboard single-page app"),
        S("component_lib", "the component library", "the shared component library"),
        S("docs_portal", "the docs portal", "the documentation portal"),
    ),
    (
        A("bundler", ("bundler", "build tool"),
          named("tool", ("Vite", "webpack", "esbuild", "Rollup", "Parcel", "Turbopack"))),
        A("package_manager", "package manager",
          named("tool", ("npm", "pnpm", "Yarn", "Bun"), code=True)),
        A("test_runner", ("test runner", "unit test runner"),
          named("tool", ("Vitest", "Jest", "Mocha", "node:test"))),
        A("node_version", ("Node.js version", "Node version"), NODE),
        A("typescript_version", "TypeScript version",
          version(("4.9", "5.0", "5.2", "5.4", "5.6"))),
        A("js_budget", ("JS bundle size budget", "JavaScript bundle size budget"), BUDGET,
          "budget"),
        A("css_budget", ("CSS bundle size budget", "stylesheet bundle size budget"), BUDGET,
          "budget"),
        A("prod_source_maps", ("source map generation in production builds",
          "production source map generation"), BOOLEAN, "maps"),
        A("preview_source_maps", ("source map generation in preview builds",
          "preview source map generation"), BOOLEAN, "maps"),
        A("dev_port", ("dev server port", "development server port"), PORTS, "ports"),
        A("preview_port", ("preview server port", "port of the preview server"), PORTS,
          "ports"),
    ),
)  # fmt: skip

QUOTA = count((8, 16, 32, 64, 96, 128, 256, 512, 1000, 2000))
MONTHLY = money((500, 1200, 2000, 2500, 5000, 8000, 10000, 15000))
REGION = named("region", ("eu-west-1", "eu-central-1", "us-east-2", "us-west-2",
                          "ap-southeast-1", "ca-central-1"), code=True)  # fmt: skip
CLOUD = Domain(
    "cloud accounts",
    ("fact", "fact", "decision", "lesson"),
    (
        S("staging", "the staging account", "our staging cloud account"),
        S("production", "the production project", "the prod project"),
        S("analytics_sandbox", "the analytics sandbox", "the analytics sandbox account"),
        S("eu_tenant", "the EU tenant", "the European tenant"),
    ),
    (
        A("vcpu_quota", ("vCPU quota", "regional vCPU quota"), QUOTA, "quota"),
        A("gpu_quota", ("GPU quota", "regional GPU quota"), QUOTA, "quota"),
        A("budget_cap", ("monthly budget cap", "monthly spend cap"), MONTHLY, "budget"),
        A("budget_alert", ("monthly budget alert level", "monthly spend alert level"), MONTHLY,
          "budget"),
        A("default_region", ("default region", "primary region"), REGION, "region"),
        A("failover_region", ("failover region", "disaster-recovery region"), REGION, "region"),
        A("object_storage_quota", ("object storage quota", "bucket storage quota"),
          size((5, "TB"), (10, "TB"), (20, "TB"), (50, "TB"), (500, "GB"), (800, "GB"))),
        A("public_ip_limit", ("public IP address limit", "limit on public IP addresses"),
          count((5, 8, 10, 16, 20, 32))),
    ),
)  # fmt: skip

LR = scientific(((1, -5), (3, -5), (5, -5), (1, -4), (2, -4), (3, -4), (5, -4), (1, -3)))
BATCH = count((8, 16, 32, 64, 128, 256, 512, 1024))
STEPS = count((100, 250, 500, 1000, 2000, 4000, 5000, 10000))
DROPOUT = ratio((0, 5, 10, 15, 20, 25, 30))
TRAINING = Domain(
    "ML training",
    ("fact", "fact", "decision", "lesson", "preference"),
    (
        S("ranker", "the ranking model", "the search ranking model"),
        S("summarizer", "the summarization fine-tune", "the summarizer fine-tuning run"),
        S("image_classifier", "the image classifier", "the product image classifier"),
        S("speech_model", "the speech recognizer", "the speech-to-text model"),
    ),
    (
        A("peak_lr", ("peak learning rate", "maximum learning rate"), LR, "lr"),
        A("min_lr", ("minimum learning rate", "final learning rate"), LR, "lr"),
        A("train_batch_size", ("training batch size", "train batch size"), BATCH, "batch"),
        A("eval_batch_size", ("eval batch size", "evaluation batch size"), BATCH, "batch"),
        A("warmup_steps", ("number of warmup steps", "warmup step count"), STEPS, "steps"),
        A("decay_steps", ("number of decay steps", "decay step count"), STEPS, "steps"),
        A("epochs", ("number of epochs", "epoch count"), count((1, 2, 3, 4, 5, 8, 10, 20))),
        A("accelerator", ("GPU type", "accelerator type"),
          named("tool", ("A100", "H100", "L4", "V100", "T4", "TPU v5e"))),
        A("hidden_dropout", ("hidden dropout", "hidden-layer dropout rate"), DROPOUT,
          "dropout"),
        A("attention_dropout", ("attention dropout", "attention dropout rate"), DROPOUT,
          "dropout"),
        A("mixed_precision", ("mixed precision", "mixed-precision training"), BOOLEAN),
        A("data_snapshot", ("dataset snapshot date", "training data snapshot date"),
          date(2026)),
    ),
)  # fmt: skip

DOC_DIRS = path(("docs/api", "docs/reference", "site/content", "handbook", "docs/src",
                 "docs/assets", "docs/img", "static/images"))  # fmt: skip
DOCS = Domain(
    "documentation and process conventions",
    ("fact", "fact", "decision", "preference", "lesson"),
    (
        S("api_reference", "the API reference", "the API reference docs"),
        S("changelog", "the changelog", "the CHANGELOG"),
        S("onboarding", "the onboarding guide", "the new-hire onboarding guide"),
        S("runbook", "the on-call runbook", "the incident runbook"),
        S("adrs", "the architecture decision records", "the ADRs"),
    ),
    (
        A("owner", ("primary owner", "main maintainer"), PERSON, "owner"),
        A("backup_owner", ("backup owner", "backup maintainer"), PERSON, "owner"),
        A("review_cadence", ("review cadence", "review interval"),
          duration((1, "w"), (2, "w"), (4, "w"), (6, "w"), (12, "w"), (3, "d"), (10, "d"))),
        A("source_dir", ("source directory", "source folder"), DOC_DIRS, "dirs"),
        A("assets_dir", ("assets directory", "assets folder"), DOC_DIRS, "dirs"),
        A("published_url", ("published URL", "public URL"), url((
            "https://docs.acme.dev/api", "https://acme.dev/changelog",
            "https://handbook.acme.dev/onboarding", "https://wiki.acme.internal/runbooks/oncall",
            "https://acme.github.io/adr", "https://docs.acme.dev/v2/reference",
        ))),
        A("markup_format", ("markup format", "markup language"),
          named("format", ("Markdown", "AsciiDoc", "reStructuredText", "MDX"))),
    ),
)  # fmt: skip

THRESHOLD = percent((60, 70, 75, 80, 85, 90, 95, 98))
CHANNEL = named("channel", ("#sre-pages", "#payments-oncall", "#infra-alerts",
                            "#platform-pager", "#storage-oncall"))  # fmt: skip
ALERT_TIME = duration((1, "min"), (2, "min"), (5, "min"), (10, "min"), (15, "min"),
                      (30, "min"), (1, "h"))  # fmt: skip
ALERTING = Domain(
    "alerting",
    ("fact", "fact", "decision", "lesson", "preference"),
    (
        S("cpu_alert", "the CPU saturation alert", "the high-CPU alert"),
        S("disk_alert", "the disk usage alert", "the disk-space alert"),
        S("error_rate_alert", "the 5xx error-rate alert", "the server error-rate alert"),
        S("memory_alert", "the memory pressure alert", "the memory-usage alert"),
    ),
    (
        A("warning_threshold", ("warning threshold", "warning level"), THRESHOLD, "threshold"),
        A("critical_threshold", ("critical threshold", "critical level"), THRESHOLD,
          "threshold"),
        A("eval_window", ("evaluation window", "lookback window"), ALERT_TIME),
        A("escalation_delay", ("escalation delay", "time before escalation"), ALERT_TIME),
        A("paging_channel", ("paging channel", "pager channel"), CHANNEL, "channel"),
        A("notify_channel", ("notification channel", "FYI channel"), CHANNEL, "channel"),
        A("escalation_contact", ("escalation contact", "second-line contact"), PERSON),
        A("dashboard_url", ("dashboard link", "linked dashboard URL"), url((
            "https://grafana.acme.internal/d/cpu", "https://grafana.acme.internal/d/disk",
            "https://grafana.acme.internal/d/http-errors", "https://grafana.acme.internal/d/mem",
            "https://acme.datadoghq.com/dashboard/xk2-9qa",
        ))),
        A("auto_resolve", ("auto-resolve", "automatic resolution"), BOOLEAN),
    ),
)  # fmt: skip

WIDTH = count((2, 3, 4, 8), "spaces")
EDITOR = Domain(
    "editor preferences",
    ("preference", "preference", "preference", "decision", "fact"),
    (
        S("python", "Python files", "Python code"),
        S("typescript", "TypeScript files", "TypeScript code"),
        S("yaml", "YAML configs", "YAML files"),
        S("shell", "shell scripts", "Bash scripts"),
        S("markdown", "Markdown docs", "Markdown files"),
    ),
    (
        A("indent_width", ("indentation width", "indent size"), WIDTH, "width"),
        A("tab_width", ("tab display width", "displayed tab width"), WIDTH, "width"),
        A("max_line_length", ("maximum line length", "line length limit"),
          count((72, 80, 88, 100, 120, 140), "characters")),
        A("formatter", ("formatter", "code formatter"),
          named("tool", ("Black", "Ruff", "Prettier", "Biome", "shfmt", "dprint"))),
        A("linter", "linter",
          named("tool", ("Ruff", "ESLint", "ShellCheck", "yamllint", "markdownlint", "Pylint"))),
        A("format_on_save", ("format-on-save", "save-time formatting"), BOOLEAN, "on_save"),
        A("lint_on_save", ("lint-on-save", "save-time linting"), BOOLEAN, "on_save"),
        A("quote_style", ("string quote style", "quote style"),
          named("style", ("single quotes", "double quotes"))),
    ),
)  # fmt: skip

VENDORS = Domain(
    "product tooling",
    ("decision", "decision", "fact", "preference"),
    (
        S("web", "the web frontend", "the web app"),
        S("mobile", "the mobile apps", "our mobile clients"),
        S("backend", "the backend services", "our backend"),
        S("cli", "the CLI", "the command-line tool"),
        S("desktop", "the desktop client", "the Electron desktop app"),
    ),
    (
        A("error_tracking", ("error tracking service", "error tracker"),
          named("vendor", ("Sentry", "Bugsnag", "Rollbar", "Honeybadger", "Raygun"))),
        A("analytics", ("product analytics provider", "analytics vendor"),
          named("vendor", ("PostHog", "Amplitude", "Mixpanel", "Heap"))),
        A("feature_flags", ("feature flag service", "feature-flag provider"),
          named("vendor", ("LaunchDarkly", "Unleash", "Flagsmith", "GrowthBook", "ConfigCat"))),
        A("log_sink", ("log shipping destination", "log sink"),
          named("vendor", ("Datadog", "Grafana Loki", "Elastic", "Papertrail"))),
    ),
)  # fmt: skip

TEAM_SPAN = duration((1, "w"), (2, "w"), (3, "w"), (4, "w"), (3, "d"), (10, "d"))
TEAMS = Domain(
    "team process",
    ("fact", "decision", "decision", "preference", "lesson"),
    (
        S("mobile_team", "the mobile team", "the mobile squad"),
        S("platform_team", "the platform team", "the platform group"),
        S("data_team", "the data team", "the data engineering team"),
        S("design_systems", "the design systems team", "the design-system group"),
    ),
    (
        A("sprint_length", ("sprint length", "sprint duration"), TEAM_SPAN, "span"),
        A("oncall_shift", ("on-call shift length", "on-call shift duration"), TEAM_SPAN,
          "span"),
        A("standup_time", ("daily standup time", "standup time"), CLOCK, "ceremony"),
        A("demo_time", ("weekly demo time", "demo time"), CLOCK, "ceremony"),
        A("required_approvals", ("required review approvals", "number of approving reviews"),
          count((1, 2, 3))),
        A("release_day", ("release day", "weekly release day"),
          named("weekday", ("Monday", "Tuesday", "Wednesday", "Thursday"))),
        A("issue_tracker", ("issue tracker", "ticket tracker"),
          named("tool", ("Jira", "Linear", "GitHub Issues", "Shortcut", "YouTrack"))),
    ),
)  # fmt: skip

DOMAINS = (MOBILE, PIPELINES, AUTH, FRONTEND, CLOUD, TRAINING, DOCS, ALERTING, EDITOR,
           VENDORS, TEAMS)  # fmt: skip

# -------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class Frame:
    """A sentence shape. Slots: ``{S}`` subject, ``{Sp}`` its possessive, ``{A}``
    attribute, ``{K}`` config key, value slots (see :class:`ValueType`), ``{ALT}`` a
    rejected alternative, and agreement with the subject: ``{s}`` (verb ending),
    ``{has}``, ``{its}``."""

    text: str
    kind: str
    boolean: bool = False

    @property
    def cites_alternative(self) -> bool:
        return "{ALT}" in self.text

    @property
    def takes_now(self) -> bool:
        """A boolean said after "is" can be "no longer enabled" in the newer statement."""
        return self.boolean and "is {V}" in self.text and "now" not in self.text


def _frames(kind: str, boolean: bool, *texts: str) -> tuple[Frame, ...]:
    return tuple(Frame(t, kind, boolean) for t in texts)


FRAMES = (
    *_frames(
        "fact", False,
        "{Sp} {A} is {V}",
        "The {A} of {S} is {V}",
        "The {A} for {S} is set to {V}",
        "{S} — {A}: {V}",
        "`{K}` = {Vc}",
        "{K}: {Vc}",
        "{S} ({A}): {V}",
        "{V} is the {A} for {S}",
        "{Sp} {A} was changed to {V}",
        "{Sp} {A} is now {V}",
        "We moved {Sp} {A} to {V}",
        "{S} use{s} {V} as {its} {A}",
        "For {S}, the {A} is {V}",
        "Current {A} for {S}: {V}",
        "{A} ({S}) = {V}",
    ),
    *_frames(
        "fact", True,
        "{A} is {V} for {S}",
        "{Sp} {A}: {Vp}",
        "`{K}` = {Vc}",
        "{S} {has} {A} {Vp}",
        "{A} for {S} is now {V}",
        "{S} — {A} {Vp}",
        "We {Vd} {A} for {S}",
        "For {S}, {A} is {V}",
    ),
    *_frames(
        "decision", False,
        "We decided to set {Sp} {A} to {V}",
        "Decision: the {A} for {S} will be {V}",
        "We went with {V} for the {A} of {S}",
        "Agreed in review: {S} use{s} {V} as {its} {A}",
        "Going forward, {Sp} {A} is {V}",
        "We chose {V} as the {A} for {S}",
        "We decided to use {V} instead of {ALT} as the {A} for {S}",
        "Team decision — {A} of {S}: {V}",
        "The team settled on {V} for {Sp} {A}",
        "Per the team's decision, set the {A} of {S} to {V}",
        "{V} it is for {Sp} {A}, we agreed",
        "We picked {V} over {ALT} for the {A} of {S}",
    ),
    *_frames(
        "decision", True,
        "We decided to {Vv} {A} for {S}",
        "Decision: {A} stays {V} for {S}",
        "Agreed: {A} is {V} for {S}",
        "The team chose to keep {A} {Vp} for {S}",
        "Going forward, {S} run{s} with {A} {Vp}",
    ),
    *_frames(
        "preference", False,
        "The user prefers {V} for the {A} of {S}",
        "The user wants {Sp} {A} set to {V}",
        "User preference: {A} for {S} = {V}",
        "The user likes the {A} of {S} to be {V}",
        "The user asked to keep {Sp} {A} at {V}",
        "Per the user, the {A} for {S} should be {V}",
        "Always use {V} as the {A} for {S} (user preference)",
        "{V} is what the user prefers as {Sp} {A}",
        "The user would rather have {V} as the {A} of {S}",
    ),
    *_frames(
        "preference", True,
        "The user prefers {A} {Vp} for {S}",
        "The user wants {A} {V} for {S}",
        "User preference: {A} {Vp} ({S})",
        "The user asked us to {Vv} {A} for {S}",
        "For {S}, the user likes to have {A} {Vp}",
    ),
    *_frames(
        "lesson", False,
        "Lesson learned: {Sp} {A} has to be {V}",
        "Learned the hard way that the {A} of {S} must be {V}",
        "Note to self: keep the {A} for {S} at {V}",
        "{S} only work{s} reliably with the {A} at {V}",
        "Don't forget: {Sp} {A} must stay at {V}",
        "Remember that {S} break{s} unless {its} {A} is {V}",
        "Retro note — {A} ({S}) needs to be {V}",
        "Takeaway from the last incident: set the {A} of {S} to {V}",
    ),
    *_frames(
        "lesson", True,
        "Lesson learned: keep {A} {V} for {S}",
        "Learned the hard way: {S} need{s} {A} {Vp}",
        "Don't forget to {Vv} {A} for {S}",
        "Remember: {A} must be {V} for {S}",
        "Retro note — {A} ({S}): {Vp}",
    ),
)  # fmt: skip

REMARKS = (
    " (per the planning doc)", " — noted in today's sync", ", confirmed with the team",
    " (see the runbook)", " — for the record", ", as discussed in standup",
    " (from the weekly review)", "; double-checked",
)  # fmt: skip
SLOT = re.compile(r"\{(\w+)\}")


def frames_for(kind: str, vtype: ValueType) -> list[Frame]:
    boolean = vtype is BOOLEAN
    return [
        f
        for f in FRAMES
        if f.kind == kind
        and f.boolean == boolean
        and (vtype.alternatives or not f.cites_alternative)
    ]


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Said:
    """One statement: what it says (subject, attribute, value) and how."""

    subject: Subject
    sname: str
    attribute: Attribute
    aname: str
    value: object
    frame: Frame
    style: int
    now: bool = False  # a boolean in its "now enabled" / "no longer enabled" form
    core: str = ""  # the sentence before remark, full stop and case
    text: str = ""


@dataclass(frozen=True)
class Pair:
    label: str
    kind: str
    domain: str
    old: Said
    new: Said
    alt: str = ""

    @property
    def vtype(self) -> ValueType:
        return self.old.attribute.vtype

    def row(self) -> dict:
        return {
            "label": self.label, "kind": self.kind, "old": self.old.text, "new": self.new.text,
            "domain": self.domain, "vtype": self.vtype.name,
        }  # fmt: skip


def _plural(name: str) -> bool:
    last = name.split()[-1]
    return last.endswith("s") and not last.endswith("ss")


def _capitalized(text: str) -> str:
    """The first letter up, unless the first word is cased inside (``vCPU``, ``iOS``)."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].upper() + text[1:]


def compose(said: Said, alt: str) -> str:
    """The sentence of ``said`` in its frame."""
    vtype, plural = said.attribute.vtype, _plural(said.sname)

    def slot(name: str) -> str:
        if name == "V" and said.now:
            name = "Vnow"
        rendered = vtype.say(said.value, name, said.style)
        return rendered if rendered is not None else vtype.say(said.value, name, 0)

    fill = {
        "S": lambda: said.sname,
        "Sp": lambda: said.sname + ("'" if plural else "'s"),
        "A": lambda: said.aname,
        "K": lambda: f"{said.subject.key}.{said.attribute.key}",
        "ALT": lambda: alt,
        "s": lambda: "" if plural else "s",
        "has": lambda: "have" if plural else "has",
        "its": lambda: "their" if plural else "its",
    }
    text = SLOT.sub(lambda m: fill[m[1]]() if m[1] in fill else slot(m[1]), said.frame.text)
    starts_with_value = said.frame.text.startswith(("{V", "{K", "`"))
    return text if starts_with_value else _capitalized(text)


def dress(rng: random.Random, core: str, newer: bool) -> str:
    """The surface noise every label gets alike."""
    text = core
    if newer and rng.random() < REMARK_RATE:
        text += rng.choice(REMARKS)
    if rng.random() < FULL_STOP_RATE:
        text += "."
    return text.lower() if rng.random() < LOWER_RATE else text


def other(rng: random.Random, pool: Sequence, item: object) -> object:
    return rng.choice([x for x in pool if x != item])


def other_value(rng: random.Random, vtype: ValueType, value: object) -> object:
    while (drawn := vtype.draw(rng)) == value:
        pass
    return drawn


def restyled(rng: random.Random, said: Said) -> int:
    """Another style that fits the value, or the same one when none does."""
    fits = [s for s in said.attribute.vtype.styles(said.value) if s != said.style]
    return rng.choice(fits) if fits else said.style


def start(rng: random.Random, domain: Domain, kind: str, attribute: Attribute) -> Said:
    subject = rng.choice(domain.subjects)
    vtype = attribute.vtype
    value = vtype.draw(rng)
    return Said(
        subject, rng.choice(subject.names), attribute, rng.choice(attribute.names), value,
        rng.choice(frames_for(kind, vtype)), rng.choice(vtype.styles(value)),
    )  # fmt: skip


def _now(rng: random.Random, frame: Frame) -> bool:
    return frame.takes_now and rng.random() < NOW_FORM_RATE


def _other_frame(rng: random.Random, said: Said) -> Frame:
    return other(rng, frames_for(said.frame.kind, said.attribute.vtype), said.frame)


def updated(rng: random.Random, old: Said) -> Said:
    """The same frame and wording, another value."""
    value = other_value(rng, old.attribute.vtype, old.value)
    return replace(old, value=value, now=_now(rng, old.frame))


def reframed(rng: random.Random, old: Said) -> Said:
    """Another value in another frame, the subject, attribute and style worded anew."""
    value = other_value(rng, old.attribute.vtype, old.value)
    frame = _other_frame(rng, old)
    return replace(
        old, value=value, frame=frame, now=_now(rng, frame),
        sname=rng.choice(old.subject.names), aname=rng.choice(old.attribute.names),
        style=rng.choice(old.attribute.vtype.styles(value)),
    )  # fmt: skip


def distinct(rng: random.Random, domain: Domain, old: Said, sibling: bool) -> Said:
    """A sibling attribute of the same subject, or the same attribute of another subject."""
    if sibling:
        attribute = rng.choice(domain.siblings(old.attribute))
        new = replace(old, attribute=attribute, aname=rng.choice(attribute.names))
    else:
        subject = other(rng, domain.subjects, old.subject)
        new = replace(old, subject=subject, sname=rng.choice(subject.names))
    if rng.random() >= SAME_VALUE_RATE:
        new = replace(new, value=other_value(rng, old.attribute.vtype, old.value))
    if rng.random() >= DISTINCT_SAME_FRAME_RATE:
        new = replace(new, frame=_other_frame(rng, old))
    return replace(new, now=_now(rng, new.frame))


def paraphrased(rng: random.Random, old: Said) -> Said:
    """The same fact and value, with some of frame, wording and value style changed."""
    new = old
    if rng.random() < PARAPHRASE_FRAME_RATE:
        new = replace(new, frame=_other_frame(rng, old))
    if rng.random() < PARAPHRASE_WORDING_RATE:
        new = replace(new, sname=other(rng, old.subject.names, old.sname))
    if rng.random() < PARAPHRASE_WORDING_RATE and len(old.attribute.names) > 1:
        new = replace(new, aname=other(rng, old.attribute.names, old.aname))
    if rng.random() < PARAPHRASE_WORDING_RATE:
        new = replace(new, style=restyled(rng, old))
    return replace(new, now=_now(rng, new.frame))


def _alternative(rng: random.Random, old: Said, new: Said) -> str:
    """The rejected alternative an "instead of" / "over" frame cites, one per pair."""
    if not (old.frame.cites_alternative or new.frame.cites_alternative):
        return ""
    return rng.choice(
        [a for a in old.attribute.vtype.alternatives if a not in (old.value, new.value)]
    )


def second(rng: random.Random, label: str, domain: Domain, old: Said, sibling: bool) -> Said:
    """The newer statement of a pair of ``label``."""
    if label == "update":
        return updated(rng, old)
    if label == "reframed":
        return reframed(rng, old)
    if label == "distinct":
        return distinct(rng, domain, old, sibling)
    return paraphrased(rng, old)


def draw(rng: random.Random, label: str) -> Pair:
    """One pair of ``label``; redrawn until the two sentences differ."""
    while True:
        domain = rng.choice(DOMAINS)
        kind = rng.choice(domain.kinds)
        with_siblings = [a for a in domain.attributes if domain.siblings(a)]
        sibling = label == "distinct" and bool(with_siblings) and rng.random() < SIBLING_RATE
        attribute = rng.choice(with_siblings if sibling else domain.attributes)
        old = start(rng, domain, kind, attribute)
        new = second(rng, label, domain, old, sibling)
        alt = _alternative(rng, old, new)
        old_core, new_core = compose(old, alt), compose(new, alt)
        if old_core != new_core:
            break
    old = replace(old, core=old_core, text=dress(rng, old_core, newer=False))
    new = replace(new, core=new_core, text=dress(rng, new_core, newer=True))
    return Pair(label, kind, domain.name, old, new, alt)


def facts(n: int, seed: int = DEFAULT_SEED) -> list[Pair]:
    """``n`` pairs of each label, unique by their two sentences, with the facts behind them."""
    rng = random.Random(f"{seed}:fourth")
    return unique_per_label(LABELS, n, lambda label: draw(rng, label), _texts)


def _texts(p: Pair) -> tuple[str, str]:
    return p.old.text, p.new.text


def pairs(n: int, seed: int = DEFAULT_SEED) -> list[dict]:
    """``n`` pairs of each label: ``{"label", "kind", "old", "new", "domain", "vtype"}``."""
    return [p.row() for p in facts(n, seed)]


def main() -> None:
    write_pairs_cli(__doc__.split("\n")[0], pairs, DEFAULT_PAIRS, DEFAULT_SEED)


if __name__ == "__main__":
    main()
