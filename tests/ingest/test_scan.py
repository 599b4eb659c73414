"""The scan's ignore rules: a spec without negations, matched as one joined regex,
decides every path as pathspec's own matching does."""

from __future__ import annotations

import itertools

from pathspec import GitIgnoreSpec

from memoryd.ingest.scan import DEFAULT_IGNORES, SECRET_FILES, _Matcher

SPECS = [
    list(DEFAULT_IGNORES),
    list(SECRET_FILES),
    ["*.log", "/out", "docs/**/draft*", "a/**/b/", "# a comment", "", "\\#hash", "x?z.c"],
    ["*.log", "!keep.log", "build/", "!build/keep/"],  # negations: pathspec decides
    [],
]
NAMES = ["keep.log", "app.log", "out", "draft1.md", "b", "build", "x1z.c", "#hash", ".env",
         "id_rsa", "main.py", "mod.pyc", "node_modules", "lib.so", "server.pem"]  # fmt: skip
DIRS = ["", "out/", "src/", "docs/", "docs/v1/", "a/", "a/q/", "build/", "build/keep/"]


def test_a_joined_spec_decides_as_pathspec_does() -> None:
    for lines in SPECS:
        ours, theirs = _Matcher(lines), GitIgnoreSpec.from_lines(lines)
        for d, name, slash in itertools.product(DIRS, NAMES, ("", "/")):
            path = f"{d}{name}{slash}"
            assert ours.check(path) == theirs.check_file(path).include, (lines, path)
    assert _Matcher(DEFAULT_IGNORES).joined is not None
    assert _Matcher(SPECS[3]).joined is None
