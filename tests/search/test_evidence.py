"""A name matched by a common word's other sense is not the asked subject:
"Bill Paul" in a licence header does not answer a question about billing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.search.engine import search
from memoryd.search.gate import plan
from memoryd.text.evidence import other_sense
from memoryd.text.terms import analyze
from tests.search.conftest import FakeStats

HEADER = """/*
 * Copyright (c) 1997, 1998
 *\tBill Paul <wpaul@example.org>.  All rights reserved.
 *
 * One service per namespace of the bus.
 */
int xl_attach(void) { return 0; }
"""
BILLING = "The billing service runs in the payments namespace of the cluster.\n"
ABSENT = "which kubernetes namespace hosts the billing service"


def _senses(question: str, text: str) -> set[str]:
    p = plan(analyze(question), FakeStats(1000, 5))
    return other_sense(text, p, set(p.focus_stems))


def test_a_name_in_another_form_is_another_sense() -> None:
    assert _senses("how is billing computed", "written by Bill Paul in 1998") == {"bill"}
    # the same word as asked, or the word also written in lowercase, keeps its sense
    assert _senses("who pays the bill", "written by Bill Paul in 1998") == set()
    assert _senses("how is billing computed", "Bill Paul wrote the billing code") == set()
    # a capital that opens a sentence, a paragraph or a title is no name
    assert _senses("how is billing computed", "Done. Billed monthly.") == set()
    assert _senses("how is billing computed", "intro\n\n# Billed monthly") == set()
    assert _senses("how is billing computed", "Monthly Bill Summary\nrows") == set()
    # only a person's given name (a surname follows) is the other sense: the last word
    # of a name, a list item's or a quoted title's first word are the word itself
    assert _senses("which museums did I visit", "we saw the Natural History Museum") == set()
    assert _senses("which museums did I visit", "see the Museum Guide for hours") == set()
    assert _senses("how is billing computed", "ideas: * Bill Payments first") == set()
    assert _senses("how is billing computed", 'a list named "Bill Payments" here') == set()
    assert _senses("how is billing computed", "written by Bill in 1998") == set()
    # a name the question writes as a name is asked as one
    assert _senses("what did Bill Paul write", "written by Bill Paul in 1998") == set()


def _files() -> dict[str, str]:
    files = {"drivers/if_xl.c": HEADER}
    for i in range(30):
        files[f"src/m{i}.py"] = f"def handler_{i}(request):\n    return request.value + {i}\n"
    return files


def test_a_licence_header_name_does_not_answer_an_absent_subject(tmp_path: Path, store) -> None:
    db = store(tmp_path, "mono", _files())
    res = search(db, "mono", ABSENT, 5)
    assert res["status"] == "abstained" and "'billing'" in res["gap"].split("but not")[1]
    # asked as a name, the header answers
    named = search(db, "mono", "which namespace did Bill Paul describe", 5)
    assert named["status"] == "ok" and named["items"][0]["path"] == "drivers/if_xl.c"


def test_evidence_about_the_asked_subject_still_answers(tmp_path: Path, store) -> None:
    db = store(tmp_path, "mono", {**_files(), "deploy/billing.md": BILLING})
    res = search(db, "mono", "which namespace runs the billing service", 5)
    assert res["status"] == "ok"
    assert [i["path"] for i in res["items"]] == ["deploy/billing.md"]


@pytest.mark.parametrize("limit", [1, 3])
def test_the_header_never_fills_an_answer_place(tmp_path: Path, store, limit: int) -> None:
    db = store(tmp_path, "mono", {**_files(), "deploy/billing.md": BILLING})
    res = search(db, "mono", ABSENT, limit)
    assert "drivers/if_xl.c" not in [i["path"] for i in res["items"]]
