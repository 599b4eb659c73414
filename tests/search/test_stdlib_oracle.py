"""Oracle questions over the interpreter's standard library: a question finds its module
in the top three (a Spanish one too), a path or identifier its file, and a question
the library does not answer abstains.

The index is built once per session (conftest.stdlib_db). Questions are
phrased as a user would ask, not as module names.
"""

from __future__ import annotations

import pytest

from memoryd.search import search

pytestmark = pytest.mark.slow

ANSWERED = [
    ("which module parses command line options and arguments", {"argparse.py", "optparse.py"}),
    ("heap queue priority algorithm", {"heapq.py"}),
    ("send email over SMTP", {"smtplib.py"}),
    ("read and write ZIP archives", {"zipfile.py"}),
    ("deep copy of compound objects", {"copy.py"}),
    ("unified diff between two sequences of lines", {"difflib.py"}),
    ("create temporary files and directories", {"tempfile.py"}),
    ("convert between RGB and HSV color systems", {"colorsys.py"}),
    ("pretty-print data structures", {"pprint.py"}),
    ("what does the sched module do? a general purpose event scheduler", {"sched.py"}),
    ("shell-style wildcard matching of file names", {"fnmatch.py", "glob.py"}),
]

ABSENT = [
    "Which Azure blob storage client uploads files?",
    "How do I upload a file to Amazon S3 with boto3?",
    "How do I connect to a PostgreSQL database?",
    "Which MongoDB collection stores the users?",
    "Kubernetes pod autoscaling",
    "What is Linus Torvalds' favourite text editor?",
    # people the corpus does name (author lines), asked about what it never says
    "Who is Guido van Rossum's wife?",
    "What is Raymond Hettinger's favourite editor?",
]

SPANISH = [
    ("¿Qué módulo comprime archivos zip?", {"zipfile.py"}),
    ("¿Cómo envío un correo electrónico con SMTP?", {"smtplib.py"}),
    ("¿cómo crear un archivo temporal?", {"tempfile.py"}),
]


def _top_paths(result: dict, k: int) -> list[str]:
    return [item["path"] for item in result["items"][:k]]


@pytest.mark.parametrize(("question", "modules"), ANSWERED)
def test_module_in_top_three(stdlib_db, question, modules):
    result = search(stdlib_db, "stdlib", question)
    assert result["status"] == "ok", result["gap"]
    assert modules & set(_top_paths(result, 3)), _top_paths(result, 5)


@pytest.mark.parametrize("question", ABSENT)
def test_absent_subject_abstains(stdlib_db, question):
    result = search(stdlib_db, "stdlib", question)
    assert result["status"] == "abstained"
    assert result["items"] == []
    assert result["gap"]


@pytest.mark.parametrize(("question", "modules"), SPANISH)
def test_spanish_reaches_english_evidence(stdlib_db, question, modules):
    result = search(stdlib_db, "stdlib", question)
    assert result["status"] == "ok", result["gap"]
    assert modules & set(_top_paths(result, 3)), _top_paths(result, 5)


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("json/decoder.py", "json/decoder.py"),
        ("JSONDecodeError", "json/decoder.py"),
        ("where is JSONDecodeError raised", "json/decoder.py"),
        ("http/cookiejar.py", "http/cookiejar.py"),
    ],
)
def test_path_or_identifier_returns_its_file(stdlib_db, query, path):
    result = search(stdlib_db, "stdlib", query)
    assert result["status"] == "ok"
    assert result["items"][0]["path"] == path
