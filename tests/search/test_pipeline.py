"""The one search pipeline: project chunks and archive versions abstain in one
wording, rank fusion is normalized the same way for every source, and a page stays
in score order."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.archive.ops import run_op
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.base.config import load_config
from memoryd.base.errors import UsageError
from memoryd.operations.control_client import unwrap
from memoryd.search import engine, pipeline
from memoryd.search.engine import search
from memoryd.search.pipeline import GAP_PREFIX, Fusion

NOW = 1_800_000_000.0
SESSION = (
    "user: The staging cluster rebuilds its cache every night.\n"
    "assistant: Then schedule the migration after the nightly cache rebuild."
)


@pytest.fixture
def both(tmp_path: Path, store):
    """A project and an archive project holding the same conversation."""
    (tmp_path / "p").mkdir()
    (tmp_path / "a").mkdir()
    db = store(tmp_path / "p", "demo", {"notes/chat.md": SESSION})
    owner = ArchiveOwner(tmp_path / "a", load_config(tmp_path / "a"))
    args = {"project": "demo", "session": "s1", "created_at": NOW - 60, "now": NOW,
            "content": SESSION, "turns": 2}  # fmt: skip
    unwrap(run_op(owner, "add", args))
    yield db, owner
    owner.close()
    db.close()


def _both(both, query: str) -> tuple[dict, dict]:
    db, owner = both
    return search(db, "demo", query, 5), search_archive(owner, "demo", query, 5, NOW)


def test_both_sources_answer_and_abstain_in_one_wording(both) -> None:
    found = _both(both, "when does the staging cache rebuild?")
    assert [r["status"] for r in found] == ["ok", "ok"]
    absent = _both(both, "which kubernetes namespace hosts the payroll service?")
    for r in absent:
        assert r["status"] == "abstained" and r["items"] == []
        assert r["gap"].startswith(GAP_PREFIX)
    empty = _both(both, "what did I ask about it?")
    gaps = [r["gap"] for r in empty]
    assert all(g.startswith(f"{GAP_PREFIX}: the query has no searchable terms") for g in gaps)


def test_every_source_checks_its_arguments_the_same_way(both) -> None:
    db, owner = both
    for call in (lambda q, n: search(db, "demo", q, n),
                 lambda q, n: search_archive(owner, "demo", q, n, NOW)):  # fmt: skip
        with pytest.raises(UsageError, match="limit must be an integer"):
            call("cache", 0)
        with pytest.raises(UsageError, match="the query must be text"):
            call(b"cache", 5)


def test_fusion_scores_first_everywhere_as_one() -> None:
    a, b, c = object(), object(), object()
    fusion = Fusion()
    fusion.add([a, b, c])
    fusion.add([a, c, b], weight=0.5)
    fusion.add([], weight=3.0)  # an empty ranking does not dilute the others
    assert fusion.score(id(a)) == 1.0
    assert 0 < fusion.score(id(c)) < 1.0 and fusion.score(id(b)) < 1.0
    assert fusion.score(id(object())) == 0.0


def test_a_name_is_not_a_word_asked_in_lowercase_in_any_source(tmp_path: Path, store) -> None:
    text = (
        "user: Every Friday, Bill Paul runs the namespace cleanup.\n"
        "assistant: Noted, the cleanup runs on Fridays."
    )
    filler = {f"s{i}": f"user: chapter {i} of the novel\nassistant: a summary" for i in range(20)}
    (tmp_path / "p").mkdir()
    (tmp_path / "a").mkdir()
    files = {f"notes/{k}.md": v for k, v in {**filler, "chat": text}.items()}
    db = store(tmp_path / "p", "demo", files)
    owner = ArchiveOwner(tmp_path / "a", load_config(tmp_path / "a"))
    for name, content in {**filler, "chat": text}.items():
        args = {"project": "demo", "session": name, "created_at": NOW - 60, "now": NOW,
                "content": content, "turns": 2}  # fmt: skip
        unwrap(run_op(owner, "add", args))
    try:
        for query, status in (
            ("which kubernetes namespace runs the billing", "abstained"),
            ("which kubernetes namespace does Bill run", "ok"),
        ):
            found = [search(db, "demo", query, 5), search_archive(owner, "demo", query, 5, NOW)]
            assert [r["status"] for r in found] == [status, status], query
    finally:
        owner.close()
        db.close()


SPANISH_QUESTION = "¿Dónde guardo la configuración del servidor?"
FILLERS = {
    f"f{i}": f"user: Day {i} of the sprint went well.\nassistant: Backlog item {i} is done."
    for i in range(12)
}


@pytest.mark.parametrize(
    "evidence",
    [
        "user: La configuración del servidor se guarda en el archivo ajustes.toml.",
        "user: The server configuration is kept in the settings.toml file.",
    ],
)
def test_a_spanish_question_is_answered_by_spanish_and_english_evidence_in_every_source(
    tmp_path: Path, store, evidence: str
) -> None:
    """A Spanish word stays a term with its English alternative (never replaced by it),
    in project chunks and archived conversations alike; absent, both abstain."""
    (tmp_path / "p").mkdir()
    (tmp_path / "a").mkdir()
    sessions = {**FILLERS, "target": evidence}
    db = store(tmp_path / "p", "demo", {f"chats/{k}.txt": v for k, v in sessions.items()})
    owner = ArchiveOwner(tmp_path / "a", load_config(tmp_path / "a"))
    for name, content in sessions.items():
        args = {"project": "demo", "session": name, "created_at": NOW - 60, "now": NOW,
                "content": content, "turns": content.count("\n") + 1}  # fmt: skip
        unwrap(run_op(owner, "add", args))
    try:
        found = search(db, "demo", SPANISH_QUESTION, 3)
        assert found["status"] == "ok" and found["items"][0]["path"] == "chats/target.txt"
        found = search_archive(owner, "demo", SPANISH_QUESTION, 3, NOW)
        assert found["status"] == "ok" and found["items"][0]["path"] == "target"
        absent = "¿Qué contraseña usa la base de datos de facturación?"
        assert search(db, "demo", absent, 3)["status"] == "abstained"
        assert search_archive(owner, "demo", absent, 3, NOW)["status"] == "abstained"
    finally:
        owner.close()
        db.close()


def test_one_long_file_does_not_fill_the_page(tmp_path: Path, store) -> None:
    """Collapse by file: the best chunk of every matching file comes before a second
    chunk of any one file, so a long file matching everywhere cannot hide the others."""
    long_log = "\n\n".join(
        f"Day {n}: the greenhouse heater failed, the greenhouse heater was reset, the"
        f" seedlings on shelf {n} moved.\n" + "Notes without the words.\n" * 30
        for n in range(12)
    )
    supplier = ("The heater supplier ships on Fridays; orders for the greenhouse go through"
                " the office, with the invoice, the delivery note and the receipt.")  # fmt: skip
    files = {"log/heater.md": long_log, "notes/supplier.md": supplier}
    for n in range(40):  # other topics, so the asked words are specific
        files[f"notes/other{n}.md"] = f"Topic {n}: the bicycle chain and the kitchen tap {n}."
    db = store(tmp_path, "garden", files)
    r = search(db, "garden", "greenhouse heater seedlings", 8)
    paths = [it["path"] for it in r["items"]]
    assert r["status"] == "ok" and len(paths) == 8
    assert paths.index("notes/supplier.md") < 2, paths
    more = search(db, "garden", "greenhouse heater seedlings", 20)["items"]
    assert sum(it["path"] == "log/heater.md" for it in more) > 2  # moved down, not dropped
    db.close()


def test_a_project_page_has_excerpts_built_for_its_items_only(tmp_path: Path, store) -> None:
    """The pipeline asks the project source for half a page more than it returns; the
    excerpts (a scan of each chunk's text) are filled once the page is known, for its
    items only, and every returned item has one."""
    files = {f"notes/n{i}.md": f"The kiln fires glazed stoneware, batch {i}.\n" for i in range(9)}
    files |= {f"other/o{i}.md": f"Weekly meeting notes number {i}.\n" for i in range(40)}
    db = store(tmp_path, "p", files)
    built: list[str] = []
    real = engine._excerpt

    def counted(text, *args):
        built.append(text)
        return real(text, *args)

    engine._excerpt = counted
    try:
        r = search(db, "p", "kiln stoneware", 4)
    finally:
        engine._excerpt = real
    db.close()
    assert r["status"] == "ok" and len(r["items"]) == 4
    assert len(built) == 4  # six were ranked (4 + 2), four excerpted
    assert all("kiln" in item["excerpt"] and "stoneware" in item["excerpt"] for item in r["items"])


def test_recall_analyzes_its_question_once_for_project_and_archive(both) -> None:
    """Recall asks the project and then the archive the same question: the second
    source reuses the first's analysis, and a different question is analyzed anew."""
    calls: list[str] = []
    real = pipeline.analyze

    def counted(text: str):
        calls.append(text)
        return real(text)

    pipeline.analyze = counted
    try:
        project, archive = _both(both, "when does the staging cache rebuild?")
        other = _both(both, "which cluster rebuilds its cache?")
    finally:
        pipeline.analyze = real
    assert calls == ["when does the staging cache rebuild?", "which cluster rebuilds its cache?"]
    assert project["status"] == archive["status"] == "ok"
    assert [r["status"] for r in other] == ["ok", "ok"]
    assert project["items"][0]["excerpt"] and archive["items"][0]["excerpt"]


def test_crowded_chunks_keep_the_page_in_score_order(tmp_path: Path, store) -> None:
    """A file's further chunks move down after other files' best (crowding); their
    scores never rise above the items now before them."""
    doc = "    '''Rotate the signing key in the vault and audit the rotation.'''\n"
    body = "".join(f"    x{j} = {j}\n" for j in range(40))
    files = {
        "keys.py": "\n".join(f"def rotate_key_{i}(vault):\n{doc}{body}" for i in range(3)),
        "audit.md": "# Audit\n\nThe vault audit log records every signing key event.\n",
    }
    files.update(
        {f"mod{i}.py": f"def helper_{i}(value):\n    return value + {i}\n" for i in range(40)}
    )
    db = store(tmp_path, "p", files)
    try:
        items = search(db, "p", "rotate the signing key in the vault", 10)["items"]
    finally:
        db.close()
    paths = [i["path"] for i in items]
    assert paths[:2] == ["keys.py", "audit.md"] and paths.count("keys.py") > 1  # crowded
    scores = [i["score"] for i in items]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
