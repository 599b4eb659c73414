"""Configuration and markdown files are chunked by their structure, and each chunk's
index text carries the words of its key paths or headings that its lines lack: one
rule per format, tested here on files written for it. A chunk stays a line range of
its file, and the index is made again alike from the stored bodies."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.storage.authority import open_authority
from memoryd.storage.corpus import _chunk_rows, _index, drop_index_rows, project_id
from memoryd.storage.rebuild import verify
from memoryd.storage.unsearched import GAP
from memoryd.text.structure import format_of, parse, words_of
from tests.conftest import run_cli
from tests.ingest.test_ingest import index_query

GAP_SEP = f" {GAP} "


def _paths(path: str, text: str) -> list[tuple[str, ...]]:
    return [line.path for line in parse(path, text.splitlines())]


def test_each_format_is_known_by_its_name_not_by_a_list_of_files():
    known = {
        "package.json": "json", "tsconfig.base.json": "json", "pyproject.toml": "toml",
        "Cargo.toml": "toml", "setup.cfg": "ini", "tox.ini": "ini", ".github/workflows/ci.yml":
        "yaml", "deploy/chart/values.yaml": "yaml", "Makefile": "makefile", "rules.mk":
        "makefile", "Dockerfile": "dockerfile", "Dockerfile.dev": "dockerfile", "go.mod":
        "gomod", "README.md": "markdown", "docs/guide.markdown": "markdown",
    }  # fmt: skip
    assert {p: format_of(p) for p in known} == known
    assert format_of("src/app.py") is None and format_of("include/stdio.h") is None


def test_json_lines_sit_under_their_keys():
    text = '{\n  "engines": {\n    "npm": ">=9.1"\n  },\n  "files": ["dist"],\n  "x": 1\n}\n'
    lines = parse("package.json", text.splitlines())
    assert [ln.path for ln in lines] == [
        (), ("engines",), ("engines", "npm"), ("engines",), ("files",), ("x",), (),
    ]  # fmt: skip
    assert [ln.start for ln in lines] == [False, True, False, False, True, True, False]
    assert lines[2].spoken[0] == "minimum" and lines[2].spoken[-1] == "version"


def test_toml_ini_yaml_makefile_dockerfile_gomod_and_markdown_paths():
    toml = '[tool.lint]\nselect = [\n  "E",\n]\n[[bin]]\nname = "x"\nserver.port = 80\n'
    assert _paths("Cargo.toml", toml) == [
        ("tool", "lint"), ("tool", "lint", "select"), ("tool", "lint", "select"),
        ("tool", "lint", "select"), ("bin",), ("bin", "name"), ("bin", "server", "port"),
    ]  # fmt: skip
    ini = "[options]\ninstall_requires =\n    click\n; note\n"
    assert _paths("setup.cfg", ini) == [
        ("options",), ("options", "install_requires"), ("options", "install_requires"),
        ("options",),
    ]  # fmt: skip
    yaml = "jobs:\n  check:\n    steps:\n      - name: Lint\n        run: |\n          a: b\n"
    assert _paths("ci.yaml", yaml)[-1] == ("jobs", "check", "steps", "run")  # a scalar's line
    assert _paths("ci.yaml", yaml)[3] == ("jobs", "check", "steps", "name")
    make = "FLAGS = -O2\nbench: build\n\t./run --iterations 5\n"
    assert _paths("Makefile", make)[2][0] == "bench"
    docker = "FROM base AS app\nRUN a && \\\n    b\n"
    assert _paths("Dockerfile", docker)[2][:2] == ("app", "run")  # a continued instruction
    gomod = "module m\n\nrequire (\n\tx v1\n)\n"
    assert _paths("go.mod", gomod)[3][0] == "require"
    md = "# Guide\n\n```sh\n# not a heading\n```\n\nSetup\n-----\n\ntext\n"
    assert _paths("GUIDE.md", md)[3] == ("Guide",)  # inside a code fence
    assert _paths("GUIDE.md", md)[-1] == ("Guide", "Setup")  # an underlined heading


def test_key_words_are_spoken_as_words():
    assert words_of("devDependencies") == ["dev", "dependencies"]
    assert words_of("requires-python") == ["requires", "python"]
    assert words_of("ini_options") == ["ini", "options"]


def _ranges_cover(rows, total: int) -> bool:
    spans = [(c.start_line, c.end_line) for c in rows.chunks]
    return (
        spans[0][0] == 1
        and spans[-1][1] == total
        and all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:], strict=False))
    )


def test_a_long_section_keeps_its_heading_on_every_chunk():
    body = "".join(f"Paragraph {i} says something ordinary.\n" for i in range(150))
    text = f"# Handbook\n\nIntro.\n\n## Release checklist\n\n{body}## Other\n\nEnd.\n"
    rows = prepare_file("HANDBOOK.md", text.encode())
    assert _ranges_cover(rows, len(text.splitlines()))
    section = [c for c in rows.chunks if 6 < c.start_line < 150]
    assert len(section) >= 2
    for c in section:
        own, _, context = c.text.partition(GAP_SEP)
        assert own == "\n".join(text.splitlines()[c.start_line - 1 : c.end_line])  # its lines
        assert {"release", "checklist", "handbook"} <= set(context.split()) and c.left_out == -1
    starts = {c.start_line for c in rows.chunks}
    assert {5, 5 + 2 + 150} <= starts  # a chunk starts at each heading


def test_a_long_json_object_keeps_its_key_path_on_every_chunk():
    deps = ",\n".join(f'    "package-{i:03d}": "^1.{i}.0"' for i in range(120))
    text = f'{{\n  "name": "app",\n  "devDependencies": {{\n{deps}\n  }}\n}}\n'
    rows = prepare_file("package.json", text.encode())
    assert _ranges_cover(rows, len(text.splitlines()))
    inner = [c for c in rows.chunks if c.start_line > 3 and "package-1" in c.text]
    assert inner and all("dev dependencies" in c.text.partition(GAP_SEP)[2] for c in inner)


def _repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    for i in range(6):
        (root / "src" / f"mod{i}.py").write_text(f"def handler_{i}(request):\n    return {i}\n")
    deps = ",\n".join(f'    "lib-{i:03d}": "^2.{i}.0"' for i in range(90))
    (root / "package.json").write_text(
        '{\n  "name": "tool",\n  "devDependencies": {\n'
        f'{deps},\n    "vitest": "^1.6.0"\n  }},\n  "engines": {{\n    "npm": ">=9.1"\n  }}\n}}\n'
    )
    (root / "pyproject.toml").write_text('[project]\nname = "tool"\nrequires-python = ">=3.10"\n')
    filler = "".join(f"Background sentence number {i} about the project.\n" for i in range(100))
    (root / "CONTRIBUTING.md").write_text(
        f"# Contributing\n\n## Running the suite\n\n{filler}Each case gets 20 s before it fails.\n"
    )
    return root


def _both(home: Path, pid: int, a: str, b: str) -> list[tuple]:
    return index_query(home, pid, f"SELECT rowid FROM fts_{pid} WHERE fts_{pid} MATCH ?",
                       (f"{a} AND {b}",))  # fmt: skip


@pytest.mark.slow
def test_key_paths_and_headings_are_found_with_the_lines_under_them(home, tmp_path):
    repo = _repo(tmp_path / "repo")
    env = {"MEMORYD_COMPACT_MAX_BYTES": "0"}  # the project's index stored from the start
    res = run_cli("ingest", str(repo), "--wait", "--json", home=home, env=env)
    assert res.code == 0, res.stderr
    with open_authority(home, load_config(home), readonly=True) as db:
        pid = project_id(db, "repo")
    assert _both(home, pid, "dependencies", "vitest")  # under "devDependencies", 90 lines up
    assert _both(home, pid, "suite", "fails")  # under "## Running the suite", 100 lines up
    assert _both(home, pid, "minimum", "python")  # requires-python = ">=3.10"
    hits = run_cli("search", "lowest npm version", "--project", "repo", "--json", home=home)
    top = hits.json()["items"][0]
    assert top["path"] == "package.json" and top["start_line"] <= 97 <= top["end_line"]
    check = run_cli("rebuild", "--verify", "--json", home=home)
    assert check.json()["equal"], check.stdout  # made again alike from the bodies


def test_an_older_home_is_indexed_again_by_its_migration(home, tmp_path):
    """A home whose structured chunks were indexed before context words (simulated:
    their index rows written without them, schema 18) is indexed as a rebuild would."""
    repo = _repo(tmp_path / "repo")
    env = {"MEMORYD_COMPACT_MAX_BYTES": "0"}
    assert run_cli("ingest", str(repo), "--wait", home=home, env=env).code == 0
    config = load_config(home)
    with open_authority(home, config) as db:
        pid = project_id(db, "repo")

        def older(tx) -> None:
            for fid, path in tx.execute("SELECT id, path FROM files WHERE live = 1").fetchall():
                if not path.endswith((".json", ".toml", ".md")):
                    continue
                from memoryd.storage.corpus import file_texts

                rows = _chunk_rows(tx, fid, path, file_texts(tx, [fid])[fid], True)
                bare = [(r, t.partition(GAP_SEP)[0], n + 1 if GAP_SEP in t else n, p)
                        for r, t, n, p in rows]  # fmt: skip
                drop_index_rows(tx, pid, [r[0] for r in rows])
                _index(tx, f"main.fts_{pid}", bare)
            tx.execute("DELETE FROM schema_history WHERE version >= 19")
            tx.execute("PRAGMA user_version=18")

        db.write(older)
        assert not _both(home, pid, "dependencies", "vitest")
        assert not verify(db)["equal"]
    with open_authority(home, config) as db:  # migrates
        assert db.user_version() >= 19 and verify(db)["equal"]
    assert _both(home, pid, "dependencies", "vitest")
