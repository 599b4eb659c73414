"""A changed typed value over the same subject supersedes, the same value however
written does not (:func:`memoryd.consolidation.compare.value_replaced`, through
:func:`relate` as the default adjudicator uses it)."""

from __future__ import annotations

import pytest

from memoryd.base.config import load_config
from memoryd.consolidation.compare import Thresholds, relate, value_replaced


@pytest.fixture(scope="module")
def thresholds(tmp_path_factory) -> Thresholds:
    cfg = load_config(tmp_path_factory.mktemp("home"))
    return Thresholds(
        cfg.memory_duplicate_similarity, cfg.memory_subject_cover, cfg.memory_subject_overlap
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The build cache is evicted after 6 hours.", "The build cache is evicted after 2 days."),
        (
            "Uploads to the media bucket are capped at 3 gigabytes.",
            "Uploads to the media bucket are capped at 700 MB.",
        ),
        (
            "The canary gets 5% of traffic.",
            "The canary gets 20% of traffic, per the release notes.",
        ),
        ("The mailer sends 90 emails per minute.", "The mailer sends 90 emails per hour."),
        ("The ferns are watered every 3 days.", "The ferns are watered every week, says Noor."),
        ("The tomatoes are watered twice a day.", "The tomatoes are watered once a day."),
        ("The ferry runs every 20 minutes.", "The ferry runs every half hour."),
        (
            "The museum stays open late on Thursdays until 9 pm.",
            "The museum stays open late on Fridays until 9 pm.",
        ),
        (
            "The code freeze of the mobile app begins 2030-11-02.",
            "The code freeze of the mobile app begins March 9, 2031.",
        ),
        (
            "The vacuum job of the ledger runs at 04:30.",
            "The vacuum job of the ledger runs at 7 pm (see the wiki).",
        ),
        (
            "Q: which JDK do the batch nodes run? A: Temurin 17.",
            "Q: which JDK do the batch nodes run? A: Corretto 21.",
        ),
        ("search_api.index_dir = /data/idx/", "search_api.index_dir = ./var/index/, as agreed."),
        (
            "The worker pool of the indexer has three threads.",
            "The worker pool of the indexer has nine threads.",
        ),
        (
            "Dark mode in the admin console is enabled.",
            "Dark mode in the admin console is not enabled.",
        ),
        (
            "We set the review policy of the docs repo to one approval.",
            "We set the review policy of the docs repo to two approvals.",
        ),
        (
            "The analytics team uses polars as its dataframe library.",
            "The analytics team uses pandas as its dataframe library.",
        ),
        ("docs_site.theme = solarized dark", "docs_site.theme = high contrast, as agreed"),
        # a state said with a switch verb's "on"/"off" inside the clause
        (
            "We turned off request tracing for the payments gateway.",
            "We turned on request tracing for the payments gateway, see the wiki.",
        ),
        (
            "The squad keeps nightly fuzzing on for the parser repo",
            "The squad keeps nightly fuzzing off for the parser repo",
        ),
        # an identifier phrase changed in one of its parts
        (
            "We set the home zone of the render fleet to sa-north-3",
            "We set the home zone of the render fleet to sa-south-3",
        ),
        # a note opened by an idiom whose first word may open a qualifier
        (
            "The nightly dump of the wiki is kept for 14 days",
            "The nightly dump of the wiki is kept for 21 days - for the record",
        ),
        # a location moved from a URL to a path
        (
            "Crash dumps of the render farm go to s3://dumps-bucket/render",
            "Crash dumps of the render farm go to /var/crash/render (see the wiki)",
        ),
        # "one" where a value stands
        (
            "The squad went with four for the shard count of the search cluster.",
            "The squad went with one for the shard count of the search cluster.",
        ),
    ],
)
def test_a_changed_value_of_the_same_subject_supersedes(old, new, thresholds):
    assert value_replaced(old, new) is True
    assert relate(old, new, thresholds) == "supersedes"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The build cache is evicted after 6 hours.",
            "The build cache is evicted after 360 minutes.",
        ),
        (
            "The build cache is evicted after 6 hours.",
            "The build cache is evicted after about 6 hours.",
        ),
        ("Uploads are capped at 1 GB.", "Uploads are capped at 1024 MB."),
        ("The bread dough rests 90 minutes.", "The bread dough rests 1h30m."),
        ("The bread dough rests 2 hours 15 minutes.", "The bread dough rests 135 min."),
        ("The canary gets 5% of traffic.", "The canary gets five percent of traffic."),
        ("The code freeze begins 2030-11-02.", "The code freeze begins 2 November 2030."),
        ("The code freeze begins 2 November.", "The code freeze begins 2 November 2030."),
    ],
)
def test_the_same_value_written_another_way_is_no_change(old, new, thresholds):
    assert value_replaced(old, new) is False
    assert relate(old, new, thresholds) == "duplicate"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another subject around the value
        ("The build cache is evicted after 6 hours.", "The test cache is evicted after 2 days."),
        (
            "We set the max heap of the indexer to 4 GB.",
            "We set the max stack of the indexer to 8 MB.",
        ),
        (
            "We set the retries of the mailer to 4.",
            "We set the retries of the billing worker to 4, per the wiki.",
        ),
        # a location of another subject
        (
            "Crash dumps of the render farm go to s3://dumps-bucket/render",
            "Crash dumps of the build farm go to /var/crash/build",
        ),
        # another subject right before the value is not a version's name
        ("We set the workers of the indexer to 4.", "We set the workers of the crawler to 6."),
        ("search_api.owner = Dana", "billing_api.owner = Dana"),
        # a name and a number not where a value stands: two parts, or one replaced?
        ("The auth service runs Postgres 15", "The auth service runs Redis 7"),
        # a rate of another thing counted
        ("The relay accepts 5 jobs per minute.", "The relay accepts 8 builds per minute."),
        # a name and another phrase replaced where stopwords were dropped between them
        (
            "Ops routed #ops-night for the queue backlog alert's target.",
            "Ops routed #ops-day for the cache-miss alert's target.",
        ),
    ],
)
def test_close_but_distinct_claims_are_never_superseded(old, new, thresholds):
    assert value_replaced(old, new) is not True
    assert relate(old, new, thresholds) not in ("supersedes", "duplicate")


def test_a_qualifier_after_a_comma_is_no_note_to_leave_out():
    old, new = "The build timeout is 30s.", "The build timeout is 60s, for the arm64 runners."
    assert value_replaced(old, new) is None


def test_no_typed_value_or_another_frame_leaves_the_decision_to_the_words():
    assert value_replaced("We deploy with Helm", "We deploy with Kustomize") is None
    frames = ("The build cache is evicted after 6 hours.", "Evicting the build cache takes 2 days.")
    assert value_replaced(*frames) is None
    # a phrase with no subject around it is all value: nothing says what it sets
    assert value_replaced("Lesson: pin flaky suites", "Lesson: shard flaky suites") is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the same value, said of another named setting
        ("ingest_job.log_level = verbose", "export_job.log_level = verbose"),
        # "C++" and "C" are two languages, not one word
        (
            "We switched the C++ compiler of the build farm to clang 15.",
            "The build farm's C compiler is clang 15.",
        ),
    ],
)
def test_another_subject_with_the_same_value_is_distinct(old, new, thresholds):
    assert relate(old, new, thresholds) == "distinct"


def test_a_value_the_words_do_not_read_changed_is_no_repeat(thresholds):
    """The words repeat each other (a note the typed values cannot cut), but a state
    said with "on"/"off" changed."""
    old = "Operator preference: build caching switched off (Rust crates)"
    changed = (
        "operator preference: build caching switched on (rust crates) (from the sprint review)"
    )
    same = "operator preference: build caching switched off (rust crates) (from the sprint review)"
    assert relate(old, changed, thresholds) == "supersedes"
    assert relate(old, same, thresholds) == "duplicate"
