"""How the default adjudicator reads a pair of statements, one class of change each
(the records' side, through a supervisor, is tests/memory/test_adjudicate.py)."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

import pytest

from memoryd.base.config import load_config
from memoryd.consolidation.adjudicate import from_config
from memoryd.consolidation.compare import _CURRENCY, Thresholds, read, relate


@pytest.fixture(scope="module")
def thresholds(tmp_path_factory) -> Thresholds:
    cfg = load_config(tmp_path_factory.mktemp("home"))
    return Thresholds(
        cfg.memory_duplicate_similarity,
        cfg.memory_subject_cover,
        cfg.memory_subject_overlap,
    )


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        # a value replaced over the same subject
        ("The e2e suite needs Python 3.11", "The e2e suite needs Python 3.12 now", "supersedes"),
        ("Uploads are capped at 20 MB", "Uploads are capped at 20 GB", "supersedes"),
        ("The cache is shared between workers", "The cache is not shared between workers",
         "supersedes"),
        ("Strict mode is enabled in CI", "Strict mode is disabled in CI", "supersedes"),
        ("We keep the frost alarm active for the lower greenhouse",
         "We keep the frost alarm inactive for the lower greenhouse, noted by Sam.", "supersedes"),
        ("Sprinklers have the night cycle activated", "Sprinklers have the night cycle deactivated",
         "supersedes"),
        # a word with a negating prefix is that word negated
        ("The shed stays locked at night", "The shed stays unlocked at night, says Jo",
         "supersedes"),
        ("The pump driver's calls are blocking", "The pump driver's calls are non-blocking",
         "supersedes"),
        ("We use apsw, not sqlite3.", "We use sqlite3, not apsw.", "supersedes"),
        ('The default branch is "main"', 'The default branch is "trunk"', "supersedes"),
        # a value of several words (a date) changed is one value changed, whatever a
        # note after it adds
        ("Caveat: the orchard survey stalls unless the cutoff date is March 3rd, 2028",
         "Caveat: the orchard survey stalls unless the cutoff date is June 3rd, 2028, from the"
         " ops chat", "supersedes"),
        # a currency written as its sign is a name (not punctuation dropped)
        ("The market stall prices its jam in £",
         "The market stall prices its jam in €, per the market rules", "supersedes"),
        ("Decided at the meeting: ¥ for the ledger of the Osaka branch",
         "Decided at the meeting: A$ for the ledger of the Osaka branch", "supersedes"),
        # a number written as a word is that number
        ("Keep two replicas of the ledger", "Keep four replicas of the ledger", "supersedes"),
        ("Retry ledger uploads three times", "Retry ledger uploads 3 times", "duplicate"),
        # ... and a count of times said in one word is that count
        ("Library books can be renewed twice.", "Library books can be renewed three times.",
         "supersedes"),
        # two words written as one hyphenated word are that word
        ("Agreed: the release notes sync of the docs site runs hourly.",
         "Agreed: the release-notes sync of the docs site runs hourly.", "duplicate"),
        # a name chosen instead of another
        ("We deploy with Helm", "We deploy with Kustomize instead", "supersedes"),
        # ... written all in lower case, where case cannot tell a name from a word
        ("Builds of the API are cached in Artifactory", "builds of the api are cached in Nexus",
         "supersedes"),
        # a text lower case because its words are says nothing of names
        ("The QA auth service code is formatted with gofmt",
         "the dev auth service code is formatted with gofmt", "distinct"),
        # the same statement said again, reordered or with a clause added
        ("Uploads fail after a 30 s timeout", "Uploads fail when they time out after 30 s",
         "duplicate"),
        ("Lint with ruff before every commit", "before every commit, lint with ruff", "duplicate"),
        ("The cache is not shared between workers", "The cache isn't shared between workers",
         "duplicate"),
        ("Strict mode is disabled in CI", "Strict mode is not enabled in CI", "duplicate"),
        ("The frost alarm is not active for the lower greenhouse",
         "The frost alarm is inactive for the lower greenhouse", "duplicate"),
        ("The compost heap is not covered in winter", "The compost heap is uncovered in winter",
         "duplicate"),
        # the same value of another subject, or another subject altogether
        ("The web tier listens on port 8080", "The admin tier listens on port 8080", "distinct"),
        ("Staging backups run at 02:00", "Production backups run at 03:00", "distinct"),
        # two names replaced: another subject with another value
        ("The staging Redis is built on Envoy", "The staging Postgres is built on Kafka",
         "distinct"),
        # an identifier both hold: the subject, or the value? shown both, marked
        ("Our eu-west-1 hosts run auth-api", "Our eu-west-1 hosts run billing-api", "conflict"),
        # names placed as a value ("went with X for the Y"), an identifier both hold in
        # the role after them: the newer value of that role
        ("We went with Ana Lima for the lead reviewer of the billing-api docs.",
         "We went with Rui Costa for the lead reviewer of the billing-api docs", "supersedes"),
        # names first in both, another name both hold: another subject, the same value
        ("The QA Redis code is formatted with Black", "The CI Redis code is formatted with Black",
         "distinct"),
        ("The EU shard answers on port 7001", "The staging shard answers on port 7002",
         "distinct"),
        ("The cache is shared between workers", "Deploys need two approvals", "distinct"),
        # one more value said: not a repeat, not a correction
        ("Retry uploads 3 times", "Retry uploads 3 times with a 5 s pause", "distinct"),
        # a value of several words replaced where a value stands: first with its role
        # after it, after a word that introduces it, as a verb's object in its role
        ("Ada Nunes is the treasurer of the boat club",
         "Rui Melo is the treasurer of the boat club", "supersedes"),
        ("Lime mortar has been chosen as the binder of the chapel repair",
         "Clay mortar has been chosen as the binder of the chapel repair", "supersedes"),
        ("Night shift: Carla Gomes for the loading dock",
         "Night shift: Pedro Alves for the loading dock", "supersedes"),
        ("Gotcha: the kiln cracks pots unless the glaze is matte white",
         "Gotcha: the kiln cracks pots unless the glaze is glossy blue, see the notes",
         "supersedes"),
        ("The orchard gets copper spray as its fungicide",
         "The orchard gets sulfur dust as its fungicide", "supersedes"),
        ("I prefer aisle seats on long flights", "I prefer window seats on long flights",
         "supersedes"),
        # ... the subject both share measured without the note one appends
        ("Reminder: the paint for the fence has to be sage green",
         "Reminder: the paint for the fence has to be slate grey, per Omar", "supersedes"),
        # ... whatever determiners either text writes around the rest
        ("Compost tea is brewed with nettle leaves",
         "The compost tea is now brewed with comfrey leaves", "supersedes"),
        # ... but not a phrase inside a noun phrase, another object of a verb, a phrase
        # holding a value and a subject, nor a phrase beside a value both hold
        ("The farm shop sells goat cheese as a side line",
         "The farm stall sells goat cheese as a side line", "conflict"),
        ("Mia handles billing for the Lisbon office", "Mia handles payroll for the Lisbon office",
         "conflict"),
        ("Dock lights are disabled for the east quay", "Dock lights are enabled for the west quay",
         "conflict"),
        ("Cold room setpoint on the dairy line: ten degrees",
         "Freezer setpoint on the dairy line: ten degrees", "distinct"),
        ("Rinse cycle for the dairy line = eco mode", "Wash cycle for the dairy line = eco mode",
         "distinct"),
        # ... nor two phrases holding one number (the value written another way?)
        ("The pump's supply must be 12V0", "The pump's supply must be 12 volts, per the manual",
         "conflict"),
        # a word replaced in the middle: a correction or another statement?
        ("Releases are tagged by the platform team", "Releases are tagged by the infra team",
         "conflict"),
    ],
)  # fmt: skip
def test_relate(thresholds: Thresholds, old: str, new: str, verdict: str) -> None:
    assert relate(old, new, thresholds) == verdict


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        # the same subject and value in another frame: no word stands where the other
        # text has another
        ("Connect to the ledger replica on port 7433",
         "The ledger replica is reachable on port 7433", "duplicate"),
        # ... but a word in another's place may be another subject, or another verb
        ("Connect to the staging ledger on port 7433",
         "The production ledger is reachable on port 7433", "distinct"),
        ("The ledger replica listens on port 7433", "The ledger replica answers on port 7433",
         "distinct"),
        # ... and two words both last stand where a value often does (here, each a value
        # written on its own: the newer value)
        ("Set the log level of the mailer to debug", "The mailer's log level: info",
         "supersedes"),
    ],
)  # fmt: skip
def test_rephrased_merge(thresholds: Thresholds, old: str, new: str, verdict: str) -> None:
    """With ``memory_paraphrase_merge = "rephrased"``; the default merges contained
    paraphrases only."""
    assert relate(old, new, replace(thresholds, rephrased=True)) == verdict
    assert relate(old, new, thresholds) != "duplicate"


def test_every_currency_sign_of_the_basic_plane_is_one() -> None:
    signs = {c for c in map(chr, range(0x10000)) if unicodedata.category(c) == "Sc"}
    assert signs == set(_CURRENCY)


def test_a_number_and_its_unit_are_read_apart() -> None:
    assert [(t.key, t.cls) for t in read("a 20000ms timeout").tokens] == [
        ("20000", "value"),
        ("ms", "unit"),
        ("timeout", "word"),
    ]


def test_the_default_never_corrects_across_kinds_and_lessons_never_conflict(tmp_path) -> None:
    judge = from_config(load_config(tmp_path))
    hit = {"id": "m-1", "kind": "fact", "text": "Releases are tagged by the platform team"}
    lesson = {"kind": "lesson", "text": "Releases are tagged by the infra team"}
    fact = {"kind": "fact", "text": "Releases are tagged by the infra team"}
    assert judge(lesson, [hit]) == {"verdict": "distinct"}
    assert judge({**lesson, "kind": "fact"}, [{**hit, "kind": "lesson"}]) == {"verdict": "distinct"}
    assert judge(fact, [hit]) == {"verdict": "conflict", "target": "m-1"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a word or name written as a value, a phrase of its own, replaced in its slot
        ("Hotfixes for the billing backend are merged into stable",
         "hotfixes for the billing backend are merged into develop"),
        ("Set the verbosity of the linter to quiet",
         "Set the verbosity of the linter to loud (agreed in standup)"),
        ("- mailer: retry policy = eager", "- mailer: retry policy = lazy"),
        ("Use tabs to indent the billing scripts", "use spaces to indent the billing scripts"),
        # ... a name in a text whose case cannot tell it, a note appended after it
        ("The nightly export's owner is Ana", "the nightly export's owner is bruno"),
        ("The docs wiki for the mobile team is hosted on Netlify",
         "The docs wiki for the mobile team is hosted on vercel since the outage"),
        # ... first, in a sentence saying which value the attribute has
        ("Quiet is the verbosity we want for the linter",
         "Loud is the verbosity we want for the linter"),
        # ... the object of a verb that takes a value, in a text whose case cannot tell
        ("Decision: the nightly thumbnailer uses Celery",
         "decision: the nightly thumbnailer uses dramatiq"),
        ("Helix is what the user prefers as the Rust crate's editor.",
         "Zed is what the user prefers as the Rust crate's editor (see the wiki)"),
        # ... after a lead-in clause, which is no value both texts say
        ("As agreed, the build agents' home zone is ca-east-4",
         "As agreed, the build agents' home zone is ca-west-4"),
    ],
)  # fmt: skip
def test_a_value_written_on_its_own_replaced_supersedes(
    thresholds: Thresholds, old: str, new: str
) -> None:
    assert relate(old, new, thresholds) == "supersedes"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a word of a noun phrase replaced: another subject or attribute, the same value
        ("Set the retry policy of the mailer to eager",
         "Set the retry policy of the scheduler to eager"),
        ("Set the read policy of the mailer to eager",
         "Set the write policy of the mailer to eager"),
        ("Eager is the retry policy we want for the mailer",
         "Eager is the retry policy we want for the scheduler"),
        # ... or another value too
        ("Set the read policy of the mailer to eager",
         "Set the write policy of the mailer to lazy"),
        ("The mailer's retry policy is eager", "The mailer's backoff policy is lazy"),
        # another subject in another frame, a name in the value's place
        ("Owner of the billing export: Ana", "The payroll export has an owner of Bruno"),
        # a statement's first word, of which something is said
        ("Caching of the billing pages is slow", "Compression of the billing pages is slow"),
        # a word alone in its phrase replaced beside a value both hold (the slot is then
        # the subject), in lower case where no name can be told
        ("for billing, the owner is ana", "for payroll, the owner is ana"),
        ("on weekdays, request logging is verbose", "on weekends, request logging is verbose"),
        ("Set retries to three for uploads", "Set retries to three for downloads"),
        ("As agreed, the billing worker's zone is ca-east-4",
         "As agreed, the search worker's zone is ca-east-4"),
        ("Helix is what the user prefers as the Rust crate's editor.",
         "Helix is what the user prefers as the Go module's editor."),
    ],
)  # fmt: skip
def test_a_close_but_distinct_statement_is_neither_superseded_nor_merged(
    thresholds: Thresholds, old: str, new: str
) -> None:
    assert relate(old, new, thresholds) in ("distinct", "conflict")


def test_a_word_is_read_alone_only_outside_a_noun_phrase() -> None:
    """A value stands alone in its phrase; a word after a determiner or beside another
    content word names a thing, and a word before a determiner takes an object."""
    tokens = read("Set the log level of the mailer to debug").tokens
    alone = {t.key: t.opens and t.then is None for t in tokens}
    assert alone == {"set": False, "log": False, "level": False, "mailer": False, "debug": True}
