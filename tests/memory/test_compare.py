"""How the default adjudicator reads a pair of statements, one class of change each
(the records' side, through a supervisor, is tests/memory/test_adjudicate.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memoryd.base.config import load_config
from memoryd.consolidation.adjudicate import from_config
from memoryd.consolidation.compare import Thresholds, read, relate


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
        ("We use apsw, not sqlite3.", "We use sqlite3, not apsw.", "supersedes"),
        ('The default branch is "main"', 'The default branch is "trunk"', "supersedes"),
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
        # the same value of another subject, or another subject altogether
        ("The web tier listens on port 8080", "The admin tier listens on port 8080", "distinct"),
        ("Staging backups run at 02:00", "Production backups run at 03:00", "distinct"),
        # two names replaced: another subject with another value
        ("The staging Redis is built on Envoy", "The staging Postgres is built on Kafka",
         "distinct"),
        # an identifier both hold: the subject, or the value? shown both, marked
        ("Our eu-west-1 hosts run auth-api", "Our eu-west-1 hosts run billing-api", "conflict"),
        # names first in both, another name both hold: another subject, the same value
        ("The QA Redis code is formatted with Black", "The CI Redis code is formatted with Black",
         "distinct"),
        ("The EU shard answers on port 7001", "The staging shard answers on port 7002",
         "distinct"),
        ("The cache is shared between workers", "Deploys need two approvals", "distinct"),
        # one more value said: not a repeat, not a correction
        ("Retry uploads 3 times", "Retry uploads 3 times with a 5 s pause", "distinct"),
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
        # ... and two words both last stand where a value often does
        ("Set the log level of the mailer to debug", "The mailer's log level: info",
         "conflict"),
    ],
)  # fmt: skip
def test_rephrased_merge(thresholds: Thresholds, old: str, new: str, verdict: str) -> None:
    """With ``memory_paraphrase_merge = "rephrased"``; the default merges contained
    paraphrases only."""
    assert relate(old, new, replace(thresholds, rephrased=True)) == verdict
    assert relate(old, new, thresholds) != "duplicate"


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
