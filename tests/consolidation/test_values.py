"""Typed values read out of a claim: kinds, units normalised, rough values, lists."""

from __future__ import annotations

import pytest

from memoryd.consolidation.values import masked, parse


def _one(text: str) -> tuple[str, tuple, str]:
    (value,) = parse(text)
    return value.kind, value.key, text[value.start : value.end]


@pytest.mark.parametrize(
    ("text", "kind", "key", "span"),
    [
        ("Sessions expire after 90s", "duration", (90.0,), "90s"),
        ("Sessions expire after 3 minutes", "duration", (180.0,), "3 minutes"),
        ("Sessions expire after three hours", "duration", (10800.0,), "three hours"),
        ("Sessions expire after an hour", "duration", (3600.0,), "an hour"),
        ("Sessions expire after half an hour", "duration", (1800.0,), "half an hour"),
        # a duration said in parts, larger units first
        ("Sessions expire after 1h30m", "duration", (5400.0,), "1h30m"),
        ("Sessions expire after 2 hours 15 minutes", "duration", (8100.0,), "2 hours 15 minutes"),
        # a period: "every" marks it, and before a unit alone says one
        ("Water the ferns every 3 days", "duration", ("period", 259200.0), "3 days"),
        ("Water the ferns every week", "duration", ("period", 604800.0), "week"),
        ("The heap is capped at 768 MB", "size", (768 * 1024**2,), "768 MB"),
        ("The heap is capped at 2 GiB", "size", (2 * 1024**3,), "2 GiB"),
        ("The heap is capped at one gigabyte", "size", (1024**3,), "one gigabyte"),
        ("Sample 25% of traces", "percent", (25.0,), "25%"),
        ("Sample twelve percent of traces", "percent", (12.0,), "twelve percent"),
        (
            "The relay accepts 240 messages per minute",
            "rate",
            ("", "messag", 4.0),
            "240 messages per minute",
        ),
        ("The relay accepts 4/s", "rate", ("", "", 4.0), "4/s"),
        ("The freeze starts 2031-02-17", "date", (2031, 2, 17), "2031-02-17"),
        ("The freeze starts 17 February 2031", "date", (2031, 2, 17), "17 February 2031"),
        ("The freeze starts Feb 17, 2031", "date", (2031, 2, 17), "Feb 17, 2031"),
        ("Compaction runs at 23:10", "time", (1390.0,), "23:10"),
        ("Compaction runs at 11 pm", "time", (1380.0,), "11 pm"),
        ("Compaction runs at midnight", "time", (0.0,), "midnight"),
        # a dot between hours and minutes, the half of the day after
        ("The kiln cools by 4.45pm", "time", (1005.0,), "4.45pm"),
        ("The kiln cools by 9.05 a.m.", "time", (545.0,), "9.05 a.m."),
        ("The client needs v4.0.2", "number", (4, 0, 2), "v4.0.2"),
        ("The client needs Ruby 3.3", "number", (3, 3), "3.3"),
        ("Keep seventeen snapshots", "number", (17,), "seventeen"),
        ("Books can be renewed twice", "number", (2,), "twice"),
        ("The pool opens late on Thursdays", "weekday", (4,), "Thursdays"),
        (
            "Docs live at https://docs.example.org/guide/.",
            "url",
            ("https://docs.example.org/guide",),
            "https://docs.example.org/guide/",
        ),
        ("Dumps go to ./var/dumps/", "path", ("var/dumps",), "./var/dumps/"),
        ("Dumps go to /srv/dumps.", "path", ("/srv/dumps",), "/srv/dumps"),
        ("Dumps go to s3://dumps/nightly", "url", ("s3://dumps/nightly",), "s3://dumps/nightly"),
        ("Telemetry is disabled", "state", (False,), "disabled"),
        ("Telemetry is no longer enabled", "state", (False,), "no longer enabled"),
        ("Turn telemetry on.", "state", (True,), "on"),
        # "on"/"off" inside a clause: after a switch verb, or before a scope word
        ("We switched off tracing in the worker", "state", (False,), "switched off"),
        ("Leave tracing turned on for the worker", "state", (True,), "on"),
        ("Keep tracing off for the worker", "state", (False,), "off"),
        ("Tracing is switched off (the worker)", "state", (False,), "switched off"),
        # "one" after a word that introduces a value
        ("The crew went with one for the night shift", "number", (1,), "one"),
        ("The crew prefers one for the night shift", "number", (1,), "one"),
    ],
)
def test_a_value_is_read_with_its_kind_and_normalised_key(text, kind, key, span):
    assert _one(text) == (kind, key, span)


def test_units_are_normalised_so_one_amount_is_one_value():
    a, b, c = (parse(t)[0] for t in ("wait 2 minutes", "wait 120 seconds", "wait 3 minutes"))
    assert a.same(b) and not a.same(c)
    kb, mb = parse("a 2048 KB buffer")[0], parse("a 2 MB buffer")[0]
    assert kb.same(mb)


def test_a_rough_value_is_the_same_as_the_exact_one_near_it():
    rough, exact, far = (parse(t)[0] for t in ("about 8 hours", "8 hours", "11 hours"))
    assert rough.approx and rough.same(exact) and not rough.same(far)
    assert not exact.same(parse("8.5 hours")[0])  # neither said roughly: a change


def test_versions_compare_by_component():
    assert parse("3.10")[0].key != parse("3.1")[0].key
    assert parse("v5.0")[0].same(parse("5")[0])


def test_values_joined_by_a_coordinator_are_one_list():
    (both,) = parse("open ports 22 and 8443")
    assert both.kind == "number" and both.key == ("list", ((22,), (8443,)))
    assert both.same(parse("open ports 8443, 22")[0])


@pytest.mark.parametrize(
    "text",
    [
        "the staging one is faster",  # "one" as a pronoun
        "the v3 checkout page is slow",  # a number naming a thing
        "e2e tests and s3 buckets",  # digits inside identifiers
        "read and/or write",
        "use node:22-slim",
        "the logs on the server",  # "on" as a preposition
        "keep the on-call rota short",
        "the staging one for the night shift",  # a pronoun before a preposition
        "the Monday standup is short",  # a weekday naming a kind of thing
        "as agreed in Tuesday's sync",
        "water the beds once the frost is gone",  # "once" as a conjunction
    ],
)
def test_no_value_where_a_number_is_part_of_a_name(text):
    assert parse(text) == ()


def test_a_bare_phrase_where_a_value_stands_is_a_value():
    kinds = [
        v.kind
        for t in (
            "theme = solarized dark",
            "We set the theme to solarized dark.",
            "It uses zsh as its shell",
        )
        for v in parse(t)
    ]
    assert kinds == ["phrase", "phrase", "phrase"]
    assert parse("Set up the bot to format the code") == ()  # a determiner: no value


def test_masked_replaces_each_value_by_its_kind():
    text = "Rotate logs every 6 hours, keep 40 GB"
    assert masked(text, parse(text)).split() == [
        "Rotate",
        "logs",
        "every",
        "`<duration>`",
        ",",
        "keep",
        "`<size>`",
    ]


def test_a_phrase_value_keeps_every_part_of_an_identifier():
    east, west = (
        parse(f"Set the home zone of the fleet to {z}")[0] for z in ("ca-east-4", "ca-west-4")
    )
    assert east.kind == west.kind == "phrase"
    assert not east.same(west)
