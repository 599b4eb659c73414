"""Validation of candidate lines and deterministic trigger derivation."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from memoryd.consolidation.candidates import candidate_id, derive_triggers, normalize, parse_lines

MAX = 16 * 1024


def one(line: bytes) -> str:
    valid, dropped = parse_lines(line, "app", MAX)
    assert not valid
    assert [d.line for d in dropped] == [1]
    return dropped[0].reason


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"kind": "rumour", "text": "x"}', "kind must be one of"),
        (b'{"kind": null, "text": "x"}', "kind must be one of"),
        (b'{"kind": "fact", "text": "   "}', "text must be a non-empty string"),
        (b'{"kind": "fact"}', "text must be a non-empty string"),
        (b'{"kind": "fact", "text": 7}', "text must be a non-empty string"),
        (b'{"kind": "lesson", "text": "x", "triggers": [1, 2]}', "triggers must hold"),
        (b'{"kind": "lesson", "text": "x", "triggers": "fsync"}', "triggers must be a list"),
        (b'{"kind": "fact", "text": "x", "refs": [""]}', "refs must hold"),
        (b'{"kind": "fact", "text": "x", "scope": 3}', "scope must be a non-empty string"),
        (b'{"kind": "fact", "text": "x", "colour": "red"}', "unknown field(s) colour"),
        (b'["kind", "fact"]', "must be a JSON object"),
        (b'{"kind": "fact", "text": "caf\xe9"}', "not UTF-8"),
    ],
)
def test_a_bad_line_is_dropped_with_its_reason(line: bytes, reason: str) -> None:
    assert reason in one(line)


def test_a_megabyte_text_is_refused() -> None:
    line = orjson.dumps({"kind": "fact", "text": "a" * (1024 * 1024)})
    assert "at most 16384" in one(line)


def test_line_numbers_count_every_line_and_good_lines_survive() -> None:
    data = b'{"kind": "fact", "text": "one"}\n\nnope\n{"kind": "decision", "text": "two"}\n'
    valid, dropped = parse_lines(data, "app", MAX)
    assert [c["text"] for c in valid] == ["one", "two"]
    assert [(d.line, d.reason[:14]) for d in dropped] == [(3, "not valid JSON")]


def test_a_candidate_naming_no_kind_is_a_fact() -> None:
    (cand,), dropped = parse_lines(b'{"text": "We use apsw, not sqlite3."}', "app", MAX)
    assert not dropped
    assert cand == {"kind": "fact", "text": "We use apsw, not sqlite3.", "triggers": [],
                    "scope": "app", "refs": []}  # fmt: skip


def test_scope_defaults_to_the_project_and_lessons_get_triggers() -> None:
    data = b'{"kind": "lesson", "text": "Rotate the signing keys before the release branch"}'
    (cand,), _ = parse_lines(data, "app", MAX)
    assert cand["scope"] == "app"
    # the five longest content words, in text order ("the", "before" are stopwords)
    assert cand["triggers"] == ["rotate", "signing", "keys", "release", "branch"]
    assert set(cand["triggers"]) <= set(normalize(cand["text"]).split())
    facts, _ = parse_lines(b'{"kind": "fact", "text": "Rotate keys"}', "app", MAX)
    assert facts[0]["triggers"] == []  # only lessons get derived triggers


def test_trigger_derivation_is_deterministic_across_processes() -> None:
    text = "Never rename the authority database while a supervisor holds its write lock"
    here = derive_triggers(text)
    assert here == derive_triggers(text)
    assert 0 < len(here) <= 5
    assert "the" not in here and "a" not in here  # stopwords never become triggers
    code = (
        "from memoryd.consolidation.candidates import derive_triggers; import sys, json;"
        f"print(json.dumps(derive_triggers({text!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert orjson.loads(out.stdout) == here


def test_empty_triggers_are_derived_but_given_ones_are_kept() -> None:
    data = (
        b'{"kind": "lesson", "text": "Pin the compiler version in CI", "triggers": []}\n'
        b'{"kind": "lesson", "text": "Pin the compiler version in CI", "triggers": ["ci"]}\n'
    )
    (derived, given), _ = parse_lines(data, "app", MAX)
    assert derived["triggers"] == derive_triggers("Pin the compiler version in CI")
    assert given["triggers"] == ["ci"]


def test_candidate_ids_are_stable_per_staging_and_distinct_across_adds() -> None:
    cand = {"kind": "fact", "text": "x"}
    assert candidate_id("app", cand, "n1") == candidate_id("app", cand, "n1")
    assert candidate_id("app", cand, "n1") != candidate_id("app", cand, "n2")
    assert candidate_id("app", cand, "n1") != candidate_id("other", cand, "n1")
