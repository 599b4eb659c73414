"""A fifth generator of memory statement pairs, written apart from :mod:`memory_pairs`,
:mod:`memory_pairs_alt`, :mod:`memory_pairs_fresh` and :mod:`memory_pairs_fourth` (only
the fourth's output shape was read) and apart from the adjudicator and its word lists:
an untouched evaluation split, scored once. Nothing here was fitted to any adjudicator.

A statement is a note a coding agent keeps while working: one *subject* (rig A, the
kiosk fleet, the weekly digest) has one *attribute* (soak temperature, heartbeat
interval, send window start) with one *value* (-40 °C, 90 seconds, 06:30). Subjects and
attributes have several wordings; a value is a quantity spelt in one of its type's
styles, and two values differ only when their quantities differ. Labels:

* ``update``: the same subject and attribute, another value in the same style, the same
  frame and wordings. The newer statement supersedes the older one.
* ``reframed``: an update whose newer statement uses another frame of the same memory
  kind, and half the time another wording of the subject or attribute or another
  style of the value.
* ``distinct``: close but about something else, both must stay: the same subject with
  a sibling attribute of the same value type (``supply voltage`` / ``logic voltage``,
  ``send window start`` / ``send window end``) or another subject of the domain with
  the same attribute, half and half where siblings exist; the value is kept half of
  the time, the frame two times in three.
* ``paraphrase``: the same subject, attribute and value, said otherwise: another frame
  seven times in ten (half of those with a rewording too), else only a rewording:
  another wording of the subject or the attribute, or another style of the same quantity
  (``90 minutes`` / ``1h30m``, ``fortnightly`` / ``every 14 days``, ``3V3`` / ``3.3
  volts``, ``en-GB`` / ``British English``).

Domains (10): hardware test rigs, device fleets and firmware rollout, finance operations
per legal entity, localization of product surfaces, transactional and bulk email,
support desk queues, backups and disaster recovery, compliance and licensing of shipped
artifacts, search relevance tuning, product experiments.

Value types (20): counts with a unit noun (digits, words), durations (largest unit,
smaller unit, compact ``1h30m``, words), repeat intervals (``every 14 days``, ``every
2 weeks``, ``fortnightly``), binary sizes (``512 MiB``, ``512MiB``, ``512 mebibytes``),
percentages (``5%``, ``5 percent``, ``five percent``, ``5 pct``), versions (``3.2.0``,
``v3.2.0``, ``release 3.2.0``), dates (ISO, ``14 March 2027``, ``March 14th, 2027``,
``Mar 14 2027``), clock times (``17:30``, ``5:30 pm``, ``5.30pm``), weekdays, days of the
month (``the 5th``, ``day 5 of the month``, ``the fifth``), money (``$2,500``, ``2500
USD``, ``US$2.5k``), payment terms (``net 30``, ``net-30``, ``30-day terms``), voltages
(``3.3 V``, ``3.3 volts``, ``3V3``), temperatures (``-40 °C``, ``-40C``, ``minus 40
degrees Celsius``), weights (``1.5``, ``1.50``, ``x1.5``), people (full name, handle,
initial), paths (with and without a trailing slash), URLs (with and without the
scheme), on/off states (enabled/disabled, on/off, switched on/off, active/inactive) and
enum words with their spellings (locales, licenses, currencies, tiers, storage classes,
models, metrics, vendors).

Frames (per memory kind: fact, decision, preference, lesson): ``For S, the A is V``,
``A on S: V``, value first (``V is the A used for S``), a parenthetical, a table row
``S | A | V``, an arrow ``[S] A -> V``, passive (``V has been configured as the A of S``,
``the A for S was settled at V``), "we agreed", "agreed in review:", "we switched S to
V", "going forward", imperatives ("please keep", "set the A to V whenever"), "I'd
like", "gotcha:", "found out the hard way", "don't forget:", "takeaway —"; on/off
attributes have their own frames (``S has A switched off``, ``we agreed to keep A on``).
Some frames are for a newer statement only ("S is now on V for the A", "from now on",
and for on/off attributes "S no longer has A enabled", meaning disabled); they can open
the newer statement of any label but an update (which keeps the older frame).

Surface noise, alike for every label: the newer statement carries a neutral trailing
remark one time in four; each statement ends with a full stop six times in ten and is
written all in lower case one time in ten. Pairs are unique per call and deterministic
for a seed.

    .venv/bin/python ops/bench/memory_pairs_fifth.py --out pairs.jsonl [--pairs N] [--seed S]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from pair_splits import in_words as words
from pair_splits import unique_per_label, write_pairs_cli

LABELS = ("update", "reframed", "distinct", "paraphrase")
KINDS = ("fact", "decision", "preference", "lesson")
DEFAULT_SEED = 5
DEFAULT_PAIRS = 200
REMARK_RATE = 0.25
FULL_STOP_RATE = 0.6
LOWER_RATE = 0.1
SIBLING_RATE = 0.5
DISTINCT_SAME_VALUE_RATE = 0.5
DISTINCT_SAME_FRAME_RATE = 2 / 3
PARAPHRASE_FRAME_RATE = 0.7
REWORD_BESIDE_FRAME_RATE = 0.5  # a paraphrase or reframed update in another frame is also reworded
NEWER_FRAME_RATE = 0.25  # a newer statement (not an update) opens with a newer-only frame

Style = Callable[[Hashable], str | None]  # one spelling of a quantity, None where unfit

# ---------------------------------------------------------------------------- values

_ORDINALS = {
    1: "first",
    2: "second",
    3: "third",
    5: "fifth",
    8: "eighth",
    9: "ninth",
    12: "twelfth",
    20: "twentieth",
}


def in_words(n: int) -> str | None:
    """``n`` in English words, for 0 to 99."""
    return words(n) if 0 <= n < 100 else None


def ordinal_suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


@dataclass(frozen=True)
class ValueType:
    """How a quantity of one kind is drawn and spelt; ``styles`` are the spellings."""

    name: str
    choices: tuple[Hashable, ...]
    styles: tuple[Style, ...]
    boolean: bool = False

    def say(self, quantity: Hashable, style: int) -> str | None:
        return self.styles[style](quantity)

    def fitting(self, quantity: Hashable) -> list[int]:
        return [i for i, s in enumerate(self.styles) if s(quantity) is not None]


def counted(noun: str, *choices: int) -> ValueType:
    """A count said with its noun (``12 boards``, ``twelve boards``)."""

    def digits(n: int) -> str:
        return f"{n:,} {noun}"

    def words(n: int) -> str | None:
        w = in_words(n) if n <= 20 else None
        return f"{w} {noun}" if w else None

    return ValueType("count", choices, (digits, words))


def _split_seconds(s: int) -> list[tuple[int, str]]:
    parts = []
    for size, unit in ((86_400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if s >= size:
            parts.append((s // size, unit))
            s %= size
    return parts


_DURATION_NAMES = {"d": "day", "h": "hour", "m": "minute", "s": "second"}
_DURATION_SIZES = {"d": 86_400, "h": 3600, "m": 60, "s": 1}


def _in_unit(s: int, unit: str, spell: Callable[[int], str | None] = str) -> str | None:
    size = _DURATION_SIZES[unit]
    if s % size:
        return None
    n = s // size
    said = spell(n)
    return f"{said} {_DURATION_NAMES[unit]}{'' if n == 1 else 's'}" if said else None


def duration(*seconds: int) -> ValueType:
    """A span in seconds: its largest whole unit, the next unit down, compact, words."""

    def largest(s: int) -> str | None:
        return _in_unit(s, next(u for u in _DURATION_SIZES if s % _DURATION_SIZES[u] == 0))

    def smaller(s: int) -> str | None:
        units = list(_DURATION_SIZES)
        top = next(u for u in units if s % _DURATION_SIZES[u] == 0)
        below = units[units.index(top) + 1] if top != "s" else None
        return _in_unit(s, below) if below and s // _DURATION_SIZES[below] <= 180 else None

    def compact(s: int) -> str:
        return "".join(f"{n}{u}" for n, u in _split_seconds(s))

    def words(s: int) -> str | None:
        top = next(u for u in _DURATION_SIZES if s % _DURATION_SIZES[u] == 0)
        return _in_unit(s, top, lambda n: in_words(n) if n <= 20 else None)

    return ValueType("duration", seconds, (largest, compact, smaller, words))


_NAMED_INTERVALS = {1: "daily", 7: "weekly", 14: "fortnightly"}


def interval(*days: int) -> ValueType:
    """How often something repeats, in days: ``every 14 days``, ``every 2 weeks``,
    ``fortnightly``."""

    def in_days(d: int) -> str:
        return "every day" if d == 1 else f"every {d} days"

    def in_weeks(d: int) -> str | None:
        if d % 7:
            return None
        return "every week" if d == 7 else f"every {d // 7} weeks"

    return ValueType("interval", days, (in_days, in_weeks, _NAMED_INTERVALS.get))


def binary_size(*sizes: tuple[int, str]) -> ValueType:
    longs = {"KiB": "kibibytes", "MiB": "mebibytes", "GiB": "gibibytes", "TiB": "tebibytes"}
    return ValueType(
        "size",
        sizes,
        (
            lambda q: f"{q[0]} {q[1]}",
            lambda q: f"{q[0]}{q[1]}",
            lambda q: f"{q[0]} {longs[q[1]]}",
        ),
    )


def percent(*choices: int) -> ValueType:
    def words(n: int) -> str | None:
        w = in_words(n) if n <= 20 or n % 10 == 0 else None
        return f"{w} percent" if w else None

    return ValueType(
        "percent",
        choices,
        (lambda n: f"{n}%", lambda n: f"{n} percent", words, lambda n: f"{n} pct"),
    )


def version(*choices: str) -> ValueType:
    return ValueType("version", choices, (str, lambda v: f"v{v}", lambda v: f"release {v}"))


_MONTHS = [
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
    """A day of ``year``: ISO, day month year, month day-th, abbreviated."""
    choices = tuple((year, m, d) for m in range(1, 13) for d in (3, 9, 14, 21, 27))

    def iso(q: tuple[int, int, int]) -> str:
        return f"{q[0]}-{q[1]:02d}-{q[2]:02d}"

    return ValueType(
        "date",
        choices,
        (
            iso,
            lambda q: f"{q[2]} {_MONTHS[q[1] - 1]} {q[0]}",
            lambda q: f"{_MONTHS[q[1] - 1]} {q[2]}{ordinal_suffix(q[2])}, {q[0]}",
            lambda q: f"{_MONTHS[q[1] - 1][:3]} {q[2]} {q[0]}",
        ),
    )


def clock(*times: tuple[int, int]) -> ValueType:
    """A time of day: 24-hour, ``5:30 pm``, ``5.30pm``."""

    def twelve(q: tuple[int, int], sep: str, space: str) -> str:
        h, m = q
        return f"{(h - 1) % 12 + 1}{sep}{m:02d}{space}{'am' if h < 12 else 'pm'}"

    return ValueType(
        "time",
        times,
        (
            lambda q: f"{q[0]:02d}:{q[1]:02d}",
            lambda q: twelve(q, ":", " "),
            lambda q: twelve(q, ".", ""),
        ),
    )


_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def weekday() -> ValueType:
    return ValueType(
        "weekday",
        tuple(range(7)),
        (lambda d: _WEEKDAYS[d], lambda d: _WEEKDAYS[d][:3], lambda d: f"{_WEEKDAYS[d]}s"),
    )


def day_of_month(*days: int) -> ValueType:
    return ValueType(
        "day_of_month",
        days,
        (
            lambda d: f"the {d}{ordinal_suffix(d)}",
            lambda d: f"day {d} of the month",
            lambda d: f"the {_ORDINALS[d]}" if d in _ORDINALS else None,
        ),
    )


def money(*dollars: int) -> ValueType:
    def kilo(n: int) -> str | None:
        return f"US${n / 1000:g}k" if n >= 1000 and n % 100 == 0 else None

    return ValueType("money", dollars, (lambda n: f"${n:,}", lambda n: f"{n} USD", kilo))


def terms(*days: int) -> ValueType:
    return ValueType(
        "terms",
        days,
        (lambda d: f"net {d}", lambda d: f"net-{d}", lambda d: f"{d}-day terms"),
    )


def voltage(*tenths: int) -> ValueType:
    """A voltage in tenths of a volt: ``3.3 V``, ``3.3 volts``, ``3V3``."""

    def volts(t: int) -> str:
        return f"{t // 10}" if t % 10 == 0 else f"{t / 10:g}"

    return ValueType(
        "voltage",
        tenths,
        (
            lambda t: f"{volts(t)} V",
            lambda t: f"{volts(t)} volts",
            lambda t: f"{t // 10}V{t % 10}",
        ),
    )


def temperature(*celsius: int) -> ValueType:
    def words(c: int) -> str | None:
        w = in_words(abs(c))
        return f"{'minus ' if c < 0 else ''}{w} degrees Celsius" if w else None

    return ValueType("temperature", celsius, (lambda c: f"{c} °C", lambda c: f"{c}C", words))


def weight(*hundredths: int) -> ValueType:
    return ValueType(
        "weight",
        hundredths,
        (
            lambda h: f"{h / 100:g}",
            lambda h: f"{h / 100:.2f}",
            lambda h: f"x{h / 100:g}",
        ),
    )


def people() -> ValueType:
    """A person: full name, chat handle, first name and initial."""
    names = (
        ("Priya", "Nair"),
        ("Tomás", "Lindqvist"),
        ("Okonkwo", "Adeyemi"),
        ("Mei", "Tanaka"),
        ("Rafael", "Duarte"),
        ("Ingrid", "Holm"),
        ("Samir", "Haddad"),
        ("Lena", "Fischer"),
        ("Yusuf", "Demir"),
        ("Claire", "Dubois"),
    )
    return ValueType(
        "person",
        names,
        (
            lambda p: f"{p[0]} {p[1]}",
            lambda p: f"@{p[0][0].lower()}{p[1].lower()}",
            lambda p: f"{p[0]} {p[1][0]}.",
        ),
    )


def path(*paths: str) -> ValueType:
    return ValueType("path", paths, (str, lambda p: f"{p}/"))


def url(*hosts_paths: str) -> ValueType:
    return ValueType("url", hosts_paths, (lambda u: f"https://{u}", str))


_STATE_WORDS = (
    ("enabled", "disabled"),
    ("on", "off"),
    ("switched on", "switched off"),
    ("active", "inactive"),
)


def state() -> ValueType:
    """On or off, said as an adjective (enabled, on, switched on, active, and opposites)."""
    return ValueType(
        "state",
        (True, False),
        tuple(lambda v, w=w: w[0] if v else w[1] for w in _STATE_WORDS),
        boolean=True,
    )


def enum(name: str, *spellings: tuple[str, ...]) -> ValueType:
    """One of a few named things, each spelt in as many ways as it has (the first word
    of each tuple is its identity)."""
    table = {s[0]: s for s in spellings}
    width = max(len(s) for s in spellings)
    return ValueType(
        name,
        tuple(table),
        tuple((lambda k, i=i: table[k][i] if i < len(table[k]) else None) for i in range(width)),
    )


# ---------------------------------------------------------------------------- domains

PEOPLE = people()
STATE = state()  # one on/off type, so on/off siblings share it


@dataclass(frozen=True)
class Subject:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Attribute:
    names: tuple[str, ...]
    vtype: ValueType
    group: str = ""  # attributes sharing a group (and so a value type) are siblings


@dataclass(frozen=True)
class Domain:
    name: str
    subjects: tuple[Subject, ...]
    attributes: tuple[Attribute, ...]
    kinds: tuple[str, ...] = KINDS

    def siblings(self, attribute: Attribute) -> list[Attribute]:
        if not attribute.group:
            return []
        return [a for a in self.attributes if a.group == attribute.group and a != attribute]


def subjects(*names: tuple[str, ...]) -> tuple[Subject, ...]:
    return tuple(Subject(n) for n in names)


VOLTS = voltage(12, 18, 25, 33, 50, 120)
SOAK = temperature(-40, -20, -10, 0, 25, 55, 70, 85)
RIGS = Domain(
    "hardware test rigs",
    subjects(
        ("rig A", "test rig A", "the rig A bench"),
        ("rig B", "test rig B", "the rig B bench"),
        ("the HIL rig", "the hardware-in-the-loop rig"),
        ("the burn-in rack", "the burn-in station"),
    ),
    (
        Attribute(("supply voltage", "input rail voltage"), VOLTS, "volts"),
        Attribute(("logic voltage", "IO logic level"), VOLTS, "volts"),
        Attribute(("soak temperature", "hot soak setpoint"), SOAK, "temp"),
        Attribute(("cold-start temperature", "cold boot setpoint"), SOAK, "temp"),
        Attribute(
            ("calibration interval", "recalibration cadence"), interval(7, 14, 28, 30, 60, 90)
        ),
        Attribute(("bench owner", "person responsible for the bench"), PEOPLE),
        Attribute(
            ("capture directory", "trace output folder"),
            path(
                "/srv/lab/captures",
                "/data/hil/traces",
                "/mnt/scope/dumps",
                "/home/lab/logic-traces",
            ),
        ),
        Attribute(
            ("board limit", "maximum boards under test"), counted("boards", 2, 4, 6, 8, 12, 16, 24)
        ),
    ),
    ("fact", "decision", "lesson"),
)

HEARTBEAT = duration(15, 30, 60, 90, 120, 300, 600, 900, 3600)
FLEET = Domain(
    "device fleets",
    subjects(
        ("the warehouse sensors", "the warehouse sensor fleet"),
        ("the kiosks", "the kiosk fleet"),
        ("the smart locks", "the smart-lock cohort"),
        ("the beta gateways", "the beta gateway group"),
    ),
    (
        Attribute(("heartbeat interval", "keep-alive period"), HEARTBEAT, "period"),
        Attribute(("telemetry upload interval", "metrics push period"), HEARTBEAT, "period"),
        Attribute(("watchdog timeout", "watchdog reset window"), HEARTBEAT, "period"),
        Attribute(
            ("OTA batch size", "devices per OTA wave"),
            counted("devices", 5, 10, 20, 50, 100, 250, 1000),
        ),
        Attribute(
            ("pinned firmware", "firmware pin"),
            version("2.4.1", "2.5.0", "2.5.3", "3.0.0", "3.1.2", "3.2.0"),
        ),
        Attribute(("automatic OTA", "auto-update over the air"), STATE, "toggle"),
        Attribute(("verbose logging", "debug log output"), STATE, "toggle"),
        Attribute(
            ("log partition size", "on-device log partition"),
            binary_size(
                (64, "MiB"), (128, "MiB"), (256, "MiB"), (512, "MiB"), (1, "GiB"), (2, "GiB")
            ),
        ),
    ),
)

RUN_DAY = day_of_month(1, 2, 3, 5, 8, 9, 12, 15, 20, 25, 28)
APPROVAL = money(500, 1000, 2500, 5000, 10_000, 25_000, 50_000)
FINANCE = Domain(
    "finance operations",
    subjects(
        ("the EU entity", "our EU subsidiary"),
        ("the US entity", "the US company"),
        ("the APAC entity", "our Singapore company"),
        ("the UK entity", "the London company"),
    ),
    (
        Attribute(
            ("invoice run day", "billing run date"),
            RUN_DAY,
            "days",
        ),
        Attribute(("payroll day", "pay date"), RUN_DAY, "days"),
        Attribute(("supplier payment terms", "vendor terms"), terms(14, 30, 45, 60, 90)),
        Attribute(("purchase approval limit", "purchase sign-off threshold"), APPROVAL, "limit"),
        Attribute(("corporate card limit", "company card ceiling"), APPROVAL, "limit"),
        Attribute(
            ("reporting currency", "book-keeping currency"),
            enum(
                "currency",
                ("EUR", "euro", "€"),
                ("USD", "US dollar", "$"),
                ("GBP", "pound sterling", "£"),
                ("SGD", "Singapore dollar", "S$"),
            ),
        ),
        Attribute(("financial controller", "controller in charge"), PEOPLE),
        Attribute(
            ("month-end close cutoff", "close deadline time"),
            clock((12, 0), (15, 0), (16, 30), (17, 0), (17, 30), (18, 0)),
        ),
    ),
    ("fact", "decision", "lesson"),
)

LOCALE = enum(
    "locale",
    ("en-GB", "en_GB", "British English"),
    ("en-US", "en_US", "American English"),
    ("de-DE", "de_DE", "German (Germany)"),
    ("fr-CA", "fr_CA", "Canadian French"),
    ("pt-BR", "pt_BR", "Brazilian Portuguese"),
    ("es-419", "es_419", "Latin American Spanish"),
)
L10N_DATE = date(2027)
LOCALIZATION = Domain(
    "localization",
    subjects(
        ("the checkout strings", "checkout copy"),
        ("the onboarding screens", "onboarding copy"),
        ("the help centre articles", "help center content"),
        ("the marketing pages", "marketing site copy"),
    ),
    (
        Attribute(("fallback locale", "locale to fall back to"), LOCALE, "locale"),
        Attribute(("source locale", "authoring locale"), LOCALE, "locale"),
        Attribute(("string freeze date", "copy freeze"), L10N_DATE, "dates"),
        Attribute(("translation deadline", "translation due date"), L10N_DATE, "dates"),
        Attribute(
            ("maximum string length", "character limit per string"),
            counted("characters", 40, 60, 80, 120, 160, 200),
        ),
        Attribute(("pseudo-localization", "pseudo-locale testing"), STATE),
        Attribute(
            ("translation vendor", "localization agency"),
            enum(
                "vendor",
                ("Polyglot Partners", "PolyglotPartners", "Polyglot"),
                ("Wordbridge", "WordBridge Ltd", "Wordbridge Ltd."),
                ("LinguaFlow", "Lingua Flow", "LinguaFlow Inc."),
            ),
        ),
    ),
    ("fact", "decision", "preference", "lesson"),
)

SEND_TIME = clock((5, 0), (6, 30), (7, 0), (8, 15), (9, 0), (18, 0), (20, 30), (22, 0))
BOUNCE = percent(1, 2, 3, 5, 8, 10)
EMAIL = Domain(
    "email",
    subjects(
        ("the weekly digest", "digest emails"),
        ("password-reset mail", "the reset emails"),
        ("the product newsletter", "newsletter sends"),
        ("order receipts", "receipt emails"),
    ),
    (
        Attribute(("send window start", "earliest send time"), SEND_TIME, "window"),
        Attribute(("send window end", "latest send time"), SEND_TIME, "window"),
        Attribute(
            ("daily send cap", "maximum messages per day"),
            counted("messages", 500, 1000, 5000, 20_000, 50_000, 100_000),
        ),
        Attribute(("bounce-rate threshold", "bounce limit"), BOUNCE, "rates"),
        Attribute(("complaint-rate threshold", "spam complaint limit"), BOUNCE, "rates"),
        Attribute(("click tracking", "link tracking"), STATE),
        Attribute(
            ("sending domain", "from-address domain"),
            url(
                "mail.acme-widgets.example",
                "news.acme-widgets.example",
                "notify.acme-widgets.example",
                "mx2.acme-widgets.example",
            ),
        ),
    ),
    ("fact", "decision", "preference"),
)

RESPONSE = duration(900, 1800, 3600, 7200, 14_400, 28_800, 86_400, 172_800)
SUPPORT = Domain(
    "support desk",
    subjects(
        ("enterprise tickets", "enterprise-tier tickets"),
        ("free-tier tickets", "tickets from free users"),
        ("billing tickets", "billing questions"),
        ("in-app bug reports", "widget bug reports"),
    ),
    (
        Attribute(("first-response target", "time to first reply"), RESPONSE, "sla"),
        Attribute(("resolution target", "time to resolution"), RESPONSE, "sla"),
        Attribute(
            ("auto-close delay", "idle time before auto-closing"), interval(3, 5, 7, 10, 14, 21, 30)
        ),
        Attribute(
            ("escalation tier", "escalation level"),
            enum(
                "tier",
                ("tier 1", "T1", "first-line support"),
                ("tier 2", "T2", "second-line support"),
                ("tier 3", "T3", "third-line support"),
                ("engineering", "the engineering queue", "eng on-duty"),
            ),
        ),
        Attribute(("queue owner", "person owning the queue"), PEOPLE),
        Attribute(("satisfaction survey", "CSAT survey"), STATE),
    ),
    ("fact", "decision", "preference", "lesson"),
)

RETENTION = interval(7, 14, 21, 30, 35, 60, 90, 365)
OBJECTIVE = duration(300, 900, 1800, 3600, 14_400, 86_400)
BACKUPS = Domain(
    "backups",
    subjects(
        ("the orders database backups", "order DB backups"),
        ("the bucket snapshots", "object store snapshots"),
        ("the wiki backups", "the wiki's nightly backups"),
        ("the ledger replicas", "ledger replica dumps"),
    ),
    (
        Attribute(("snapshot rotation", "full snapshot cadence"), RETENTION, "rotation"),
        Attribute(("archive rotation", "archive copy cadence"), RETENTION, "rotation"),
        Attribute(("recovery point objective", "RPO"), OBJECTIVE, "objectives"),
        Attribute(("recovery time objective", "RTO"), OBJECTIVE, "objectives"),
        Attribute(
            ("backup target path", "dump location"),
            path("/backups/orders", "/vault/nightly", "/mnt/dr/cold", "/srv/archive/weekly"),
        ),
        Attribute(("restore drill day", "weekday of the restore drill"), weekday()),
        Attribute(("encryption at rest", "at-rest encryption"), STATE),
        Attribute(
            ("storage class", "storage tier"),
            enum(
                "class",
                ("cold", "cold storage", "the cold tier"),
                ("archive", "archive storage", "the archive tier"),
                ("standard", "standard storage", "the standard tier"),
                ("infrequent access", "IA", "the infrequent-access tier"),
            ),
        ),
    ),
    ("fact", "decision", "lesson"),
)

AUDIT_DATE = date(2027)
COMPLIANCE = Domain(
    "compliance",
    subjects(
        ("the mobile SDK", "our SDK"),
        ("the desktop client", "the desktop app"),
        ("the public CLI", "the open-source CLI"),
        ("the admin tools", "internal admin tooling"),
    ),
    (
        Attribute(("next audit date", "upcoming audit"), AUDIT_DATE, "reviews"),
        Attribute(("penetration test date", "pentest date"), AUDIT_DATE, "reviews"),
        Attribute(
            ("license", "distribution license"),
            enum(
                "license",
                ("Apache-2.0", "Apache License 2.0", "ASL 2.0"),
                ("MIT", "the MIT license", "MIT License"),
                ("MPL-2.0", "Mozilla Public License 2.0", "MPL 2"),
                ("BSD-3-Clause", "3-clause BSD", "BSD 3-Clause"),
            ),
        ),
        Attribute(("privacy reviewer", "person signing off privacy"), PEOPLE),
        Attribute(("SBOM generation", "software bill of materials output"), STATE),
        Attribute(
            ("crash log retention", "retention period for crash logs"),
            duration(86_400 * 7, 86_400 * 14, 86_400 * 30, 86_400 * 90),
        ),
    ),
    ("fact", "decision", "lesson"),
)

BOOST = weight(50, 75, 120, 150, 200, 250, 300)
SEARCH = Domain(
    "search relevance",
    subjects(
        ("product search", "the product search index"),
        ("docs search", "the docs search index"),
        ("people search", "the directory search"),
        ("the autocomplete", "type-ahead suggestions"),
    ),
    (
        Attribute(("title boost", "title field weight"), BOOST, "boosts"),
        Attribute(("description boost", "description field weight"), BOOST, "boosts"),
        Attribute(("results per page", "page size"), counted("results", 5, 10, 20, 25, 50, 100)),
        Attribute(
            ("reranker", "reranking model"),
            enum(
                "model",
                ("minilm-rerank", "the MiniLM reranker", "MiniLM rerank"),
                ("bge-reranker-base", "the BGE base reranker", "BGE reranker"),
                ("bm25-only", "plain BM25", "no reranker"),
            ),
        ),
        Attribute(
            ("synonyms file", "synonym list"),
            path(
                "config/search/synonyms.txt", "relevance/syn_en.txt", "etc/search/synonyms-v2.txt"
            ),
        ),
        Attribute(("fuzzy matching", "typo tolerance"), STATE),
        Attribute(("index refresh interval", "reindex period"), duration(1, 5, 30, 60, 300, 900)),
    ),
    ("fact", "decision", "preference", "lesson"),
)

SHARE = percent(5, 10, 20, 25, 30, 50)
EXPERIMENT_DATE = date(2027)
EXPERIMENTS = Domain(
    "experiments",
    subjects(
        ("the pricing-page test", "the pricing page experiment"),
        ("the onboarding test", "the new onboarding experiment"),
        ("the ranking test", "the search ranking experiment"),
        ("the checkout button test", "the checkout CTA experiment"),
    ),
    (
        Attribute(("treatment share", "traffic in the treatment arm"), SHARE, "shares"),
        Attribute(("holdout share", "traffic held out"), SHARE, "shares"),
        Attribute(("start date", "launch date"), EXPERIMENT_DATE, "dates"),
        Attribute(("end date", "stop date"), EXPERIMENT_DATE, "dates"),
        Attribute(
            ("minimum sample size", "sample size per arm"),
            counted("users", 1000, 2000, 5000, 10_000, 20_000),
        ),
        Attribute(("experiment owner", "analyst on the test"), PEOPLE),
        Attribute(
            ("results dashboard", "readout dashboard"),
            url(
                "dash.example.org/exp/17",
                "dash.example.org/exp/23",
                "metrics.example.org/ab/q3-review",
                "metrics.example.org/ab/board-2",
            ),
        ),
        Attribute(
            ("primary metric", "north-star metric for the test"),
            enum(
                "metric",
                ("conversion rate", "conversion", "CVR"),
                ("revenue per visitor", "RPV", "revenue per visit"),
                ("retention at day 7", "D7 retention", "7-day retention"),
            ),
        ),
    ),
    ("fact", "decision", "preference", "lesson"),
)

DOMAINS = (
    RIGS,
    FLEET,
    FINANCE,
    LOCALIZATION,
    EMAIL,
    SUPPORT,
    BACKUPS,
    COMPLIANCE,
    SEARCH,
    EXPERIMENTS,
)

# ---------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class Frame:
    """A sentence shape with ``{s}``, ``{a}`` and ``{v}`` slots. ``newer``: said only in
    the newer statement; ``negated``: the slot holds the opposite state (``no longer has
    A enabled`` means disabled)."""

    kind: str
    text: str
    boolean: bool = False
    newer: bool = False
    negated: bool = False


def _frames(kind: str, boolean: bool, newer: bool, *texts: str) -> tuple[Frame, ...]:
    return tuple(Frame(kind, t, boolean, newer, "no longer" in t) for t in texts)


FRAMES = (
    *_frames(
        "fact",
        False,
        False,
        "For {s}, the {a} {a_is} {v}",
        "{a} on {s}: {v}",
        "{v} is the {a} used for {s}",
        "The {a} ({s}) {a_is} set to {v}",
        "{s} | {a} | {v}",
        "[{s}] {a} -> {v}",
        "{v} has been configured as the {a} of {s}",
        "Per the config, the {a} of {s} reads {v}",
    ),
    *_frames(
        "fact", False, True, "{s} {s_is} now on {v} for the {a}", "The {a} for {s} {a_is} {v} now"
    ),
    *_frames(
        "fact",
        True,
        False,
        "For {s}, {a} {a_is} {v}",
        "{a} on {s}: {v}",
        "{s} {s_has} {a} {v}",
        "[{s}] {a} -> {v}",
        "{s} | {a} | {v}",
    ),
    *_frames("fact", True, True, "{s} now {s_has} {a} {v}", "{s} no longer {s_has} {a} {v}"),
    *_frames(
        "decision",
        False,
        False,
        "We agreed the {a} for {s} will be {v}",
        "Agreed in review: {a} of {s} = {v}",
        "We switched {s} to {v} for the {a}",
        "Going forward, {s} {gets} {v} as the {a}",
        "Call made in the sync: {v} for the {a} of {s}",
        "The {a} for {s} {a_was} settled at {v}",
    ),
    *_frames("decision", False, True, "From now on the {a} for {s} {a_is} {v}"),
    *_frames(
        "decision",
        True,
        False,
        "We agreed to keep {a} {v} for {s}",
        "Agreed in review: {a} {v} for {s}",
        "Decision from the sync: keep {a} {v} for {s}",
    ),
    *_frames(
        "decision",
        True,
        True,
        "From now on {a} {a_is} {v} for {s}",
        "We no longer keep {a} {v} for {s}",
    ),
    *_frames(
        "preference",
        False,
        False,
        "I'd like the {a} for {s} kept at {v}",
        "Please keep {s} at {v} ({a})",
        "My preference for the {a} of {s}: {v}",
        "Set the {a} to {v} whenever touching {s}",
        "{v}, please, for the {a} on {s}",
    ),
    *_frames("preference", False, True, "These days I want {v} as the {a} for {s}"),
    *_frames(
        "preference",
        True,
        False,
        "I'd like {a} kept {v} for {s}",
        "Please leave {a} {v} for {s}",
        "My preference for {s}: {a} {v}",
    ),
    *_frames("preference", True, True, "These days I want {a} {v} for {s}"),
    *_frames(
        "lesson",
        False,
        False,
        "Gotcha: {s} {misbehaves} unless the {a} {a_is} {v}",
        "Found out the hard way that {s} {needs} {v} as {its} {a}",
        "Don't forget: the {a} for {s} {a_has} to be {v}",
        "Takeaway — {s} only {works} reliably with the {a} at {v}",
        "Things go wrong for {s} if the {a} {a_is} anything but {v}",
    ),
    *_frames("lesson", False, True, "Turns out {s} now {needs} the {a} at {v}"),
    *_frames(
        "lesson",
        True,
        False,
        "Gotcha: {s} {misbehaves} unless {a} {a_is} {v}",
        "Takeaway — {s} only {works} reliably with {a} {v}",
        "Don't forget: {a} {a_has} to be {v} for {s}",
    ),
    *_frames("lesson", True, True, "Turns out {s} no longer {copes} with {a} {v}"),
)

REMARKS = (
    "fyi",
    "from the team channel",
    "see the runbook",
    "jotting this down",
    "per the wiki page",
    "checked twice",
)


def frames_for(kind: str, boolean: bool, newer: bool) -> list[Frame]:
    """The frames of a memory kind for a value type; with ``newer`` the newer-only ones."""
    return [f for f in FRAMES if f.kind == kind and f.boolean == boolean and f.newer == newer]


# ---------------------------------------------------------------------------- statements


VERBS = ("gets", "needs", "works", "copes", "misbehaves")


def plural(name: str) -> bool:
    """Whether a wording reads as plural: its last word ends in a single ``s``."""
    last = name.split()[-1]
    return last.endswith("s") and not last.endswith("ss")


def agreement(name: str, slot: str) -> dict[str, str]:
    """Verb forms agreeing with a subject (``{s_has}``, ``{s_is}``, ``{its}``) or an
    attribute (``{a_is}``, ``{a_was}``, ``{a_has}``) worded as ``name``."""
    many = plural(name)
    forms = {
        f"{slot}_is": "are" if many else "is",
        f"{slot}_was": "were" if many else "was",
        f"{slot}_has": "have" if many else "has",
    }
    if slot == "s":
        forms["its"] = "their" if many else "its"
        forms.update({v: v.removesuffix("s") if many else v for v in VERBS})
    return forms


@dataclass(frozen=True)
class Said:
    """One statement: the fact (subject, attribute, value) and how it is worded."""

    subject: Subject
    attribute: Attribute
    value: Hashable
    frame: Frame
    sname: int
    aname: int
    style: int
    core: str = ""
    text: str = ""

    def render(self) -> str:
        vtype = self.attribute.vtype
        value = (not self.value) if self.frame.negated else self.value
        subject, attribute = self.subject.names[self.sname], self.attribute.names[self.aname]
        said = self.frame.text.format(
            s=subject,
            a=attribute,
            v=vtype.say(value, self.style),
            **agreement(subject, "s"),
            **agreement(attribute, "a"),
        )
        head = said.split(" ", 1)[0]
        return said[0].upper() + said[1:] if head.isalpha() and head.islower() else said


@dataclass(frozen=True)
class Pair:
    label: str
    kind: str
    domain: str
    old: Said
    new: Said

    def row(self) -> dict:
        return {
            "label": self.label,
            "kind": self.kind,
            "old": self.old.text,
            "new": self.new.text,
            "domain": self.domain,
            "vtype": self.old.attribute.vtype.name,
        }


def fit_style(rng: random.Random, said: Said, keep: bool) -> Said:
    """``said`` with a style its value can be spelt in: its own where ``keep`` and it
    fits, else one drawn from the fitting ones."""
    fitting = said.attribute.vtype.fitting(said.value)
    if keep and said.style in fitting:
        return said
    return replace(said, style=rng.choice(fitting))


def start(rng: random.Random, domain: Domain, kind: str, attribute: Attribute) -> Said:
    """The older statement: any subject and wording, any older frame and fitting style."""
    subject = rng.choice(domain.subjects)
    frame = rng.choice(frames_for(kind, attribute.vtype.boolean, newer=False))
    said = Said(
        subject,
        attribute,
        rng.choice(attribute.vtype.choices),
        frame,
        rng.randrange(len(subject.names)),
        rng.randrange(len(attribute.names)),
        0,
    )
    return fit_style(rng, said, keep=False)


def other(rng: random.Random, pool: tuple | list, item: object) -> object:
    return rng.choice([x for x in pool if x != item])


def newer_frame(rng: random.Random, old: Said, same_allowed: bool) -> Frame:
    """A frame for a newer statement other than the older one's (unless
    ``same_allowed``), sometimes a newer-only frame."""
    boolean = old.attribute.vtype.boolean
    if rng.random() < NEWER_FRAME_RATE:
        return rng.choice(frames_for(old.frame.kind, boolean, newer=True))
    pool = frames_for(old.frame.kind, boolean, newer=False)
    return rng.choice(pool) if same_allowed else other(rng, pool, old.frame)


def reworded(rng: random.Random, said: Said) -> Said:
    """``said`` with another wording of its subject or attribute, or another value style."""
    choice = rng.randrange(3)
    if choice == 0:
        return replace(said, sname=(said.sname + 1) % len(said.subject.names))
    if choice == 1:
        return replace(said, aname=(said.aname + 1) % len(said.attribute.names))
    styles = said.attribute.vtype.fitting(said.value)
    return replace(said, style=other(rng, styles, said.style)) if len(styles) > 1 else said


def updated(rng: random.Random, old: Said) -> Said:
    """``old`` with another value, spelt in the same style where another value fits it."""
    vtype = old.attribute.vtype
    others = [v for v in vtype.choices if v != old.value]
    same_style = [v for v in others if vtype.say(v, old.style) is not None]
    return fit_style(rng, replace(old, value=rng.choice(same_style or others)), keep=True)


def reframed(rng: random.Random, old: Said) -> Said:
    new = replace(updated(rng, old), frame=newer_frame(rng, old, same_allowed=False))
    return reworded(rng, new) if rng.random() < REWORD_BESIDE_FRAME_RATE else new


def distinct(rng: random.Random, domain: Domain, old: Said, sibling: bool) -> Said:
    if sibling:
        attribute = rng.choice(domain.siblings(old.attribute))
        new = replace(old, attribute=attribute, aname=min(old.aname, len(attribute.names) - 1))
    else:
        subject = other(rng, domain.subjects, old.subject)
        new = replace(old, subject=subject, sname=min(old.sname, len(subject.names) - 1))
    if rng.random() >= DISTINCT_SAME_VALUE_RATE:
        new = replace(new, value=other(rng, old.attribute.vtype.choices, old.value))
    if rng.random() >= DISTINCT_SAME_FRAME_RATE:
        new = replace(new, frame=newer_frame(rng, old, same_allowed=False))
    return fit_style(rng, new, keep=True)


def paraphrased(rng: random.Random, old: Said) -> Said:
    if rng.random() < PARAPHRASE_FRAME_RATE:
        new = replace(old, frame=newer_frame(rng, old, same_allowed=False))
        return reworded(rng, new) if rng.random() < REWORD_BESIDE_FRAME_RATE else new
    return reworded(rng, old)


def second(rng: random.Random, label: str, domain: Domain, old: Said, sibling: bool) -> Said:
    if label == "update":
        return updated(rng, old)
    if label == "reframed":
        return reframed(rng, old)
    if label == "distinct":
        return distinct(rng, domain, old, sibling)
    return paraphrased(rng, old)


def dress(rng: random.Random, core: str, newer: bool) -> str:
    """The surface noise, drawn alike for every label."""
    text = f"{core}, {rng.choice(REMARKS)}" if newer and rng.random() < REMARK_RATE else core
    text += "." if rng.random() < FULL_STOP_RATE else ""
    return text.lower() if rng.random() < LOWER_RATE else text


def draw(rng: random.Random, label: str) -> Pair:
    """One pair of ``label``; redrawn until the two statements read differently."""
    while True:
        domain = rng.choice(DOMAINS)
        kind = rng.choice(domain.kinds)
        with_siblings = [a for a in domain.attributes if domain.siblings(a)]
        sibling = label == "distinct" and bool(with_siblings) and rng.random() < SIBLING_RATE
        attribute = rng.choice(with_siblings if sibling else domain.attributes)
        old = start(rng, domain, kind, attribute)
        new = second(rng, label, domain, old, sibling)
        old_core, new_core = old.render(), new.render()
        if old_core != new_core:
            break
    old = replace(old, core=old_core, text=dress(rng, old_core, newer=False))
    new = replace(new, core=new_core, text=dress(rng, new_core, newer=True))
    return Pair(label, kind, domain.name, old, new)


def facts(n: int, seed: int = DEFAULT_SEED) -> list[Pair]:
    """``n`` pairs of each label, unique by their two statements, with the facts behind them."""
    rng = random.Random(f"{seed}:fifth")
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
