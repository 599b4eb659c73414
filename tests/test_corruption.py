"""Damaged store bytes are found by ``doctor --deep``, answered as a
typed ``CORRUPT`` naming the file on every path (embedded CLI, a supervisor's control
socket), and ``rebuild`` rebuilds what it can and lists what it cannot. Real stores,
bytes flipped or files deleted on disk."""

from __future__ import annotations

import time
from pathlib import Path

import apsw
import orjson
import pytest

from tests.conftest import FAST_RETRY, Result, status, wait_for

STORED_INDEX = {"MEMORYD_COMPACT_MAX_BYTES": "0"}  # an FTS5 index on disk to damage


def project(root: Path, files: int = 40) -> Path:
    """Files of varied words: the index spans many FTS5 leaf blocks."""
    root.mkdir()
    for i in range(files):
        lines = [f"def handler_{i}_{n}(request_{n * 7 + i}):\n    return {n}" for n in range(60)]
        (root / f"mod_{i:03}.py").write_text("\n".join(lines) + "\n")
    return root


def chat(path: Path) -> Path:
    stamp = time.time() - 3600
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "timestamp": stamp + i,
         "content": f"turn {i}: the deploy pipeline retries step {i * 13} before paging"}
        for i in range(200)
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(t) + b"\n" for t in turns))
    return path


def flip_fts_leaf(db: Path) -> str:
    """Invert 64 bytes inside one leaf block of the project's FTS5 index, in the
    database file (the process that wrote it has stopped). Returns the table."""
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as conn:
        (table,) = conn.execute(
            "SELECT name FROM sqlite_schema WHERE name GLOB 'fts_*_data'"
        ).fetchone()
        leaves = conn.execute(f"SELECT block FROM {table} WHERE id > 1000 ORDER BY id").fetchall()
    (block,) = leaves[len(leaves) // 2]
    raw = bytearray(db.read_bytes())
    # the block's first 100 bytes sit in its cell whole (a leaf larger than a 1 KiB
    # page keeps only those before its overflow page)
    at = raw.find(block[:96])
    assert at > 0 and len(block) > 320, "precondition: the leaf is found in the file"
    raw[at + 32 : at + 96] = bytes(b ^ 0xFF for b in raw[at + 32 : at + 96])
    db.write_bytes(bytes(raw))
    return table.removesuffix("_data")


def flip_ssts(archive: Path) -> list[Path]:
    """Invert 64 bytes at the start (the first data block) of every SST file."""
    ssts = sorted(archive.glob("*.sst"))
    assert ssts, "precondition: the archive has table files"
    for sst in ssts:
        raw = bytearray(sst.read_bytes())
        raw[16:80] = bytes(b ^ 0xFF for b in raw[16:80])
        sst.write_bytes(bytes(raw))
    return ssts


def typed(res: Result, code: str = "CORRUPT") -> dict:
    """A --json error answer of ``code`` (never a traceback)."""
    assert "Traceback" not in res.stderr, res.stderr
    assert res.code == 1, (res.stdout, res.stderr)
    answer = res.json()
    assert answer["error"] == code, answer
    return answer


def deep(cli) -> dict[str, list[dict]]:
    res = cli("doctor", "--deep", "--json")
    assert "Traceback" not in res.stderr, res.stderr
    found: dict[str, list[dict]] = {}
    for f in res.json()["findings"]:
        found.setdefault(f["check"], []).append(f)
    return found


def test_a_damaged_full_text_index_is_found_typed_and_rebuilt(cli, home, tmp_path) -> None:
    res = cli(
        "ingest", str(project(tmp_path / "repo")), "--project", "app", "--wait", env=STORED_INDEX
    )
    assert res.code == 0, res.stderr
    assert [f["status"] for f in deep(cli)["authority integrity"]] == ["ok"]
    table = flip_fts_leaf(home / "authority.db")

    [finding] = deep(cli)["authority integrity"]
    assert finding["status"] == "action" and "project app" in finding["message"]
    assert table in finding["message"] and "memoryd rebuild" in finding["action"]
    answer = cli("rebuild", "--verify", "--json")
    assert "Traceback" not in answer.stderr and answer.code == 1, answer.stderr
    [failed] = answer.json()["not_verified"]
    assert (failed["part"], failed["error"]) == ("authority", "CORRUPT")
    assert "authority.db" in failed["message"]

    assert cli("rebuild", "--json").code == 0
    assert [f["status"] for f in deep(cli)["authority integrity"]] == ["ok"]
    assert cli("rebuild", "--verify", "--json").json()["equal"] is True
    hits = cli("search", "handler_7_3", "--project", "app", "--json").json()["items"]
    assert hits[0]["path"] == "mod_007.py"


@pytest.fixture
def archived(cli, home, tmp_path) -> str:
    """A home with an ingested project and one archived session (embedded, closed)."""
    repo = project(tmp_path / "repo", 3)
    res = cli("ingest", str(repo), "--project", "app", "--wait", env=STORED_INDEX)
    assert res.code == 0, res.stderr
    res = cli(
        "archive",
        "add",
        str(chat(tmp_path / "chat.jsonl")),
        "--project",
        "app",
        "--new-project",
        "--json",
    )
    assert res.code == 0, res.stderr
    [locator] = res.json()["locators"]
    assert [f["status"] for f in deep(cli)["archive integrity"]] == ["ok"]
    return locator


def test_a_flipped_sst_block_answers_corrupt_on_every_path(
    cli, home, archived, background, tmp_path
) -> None:
    [sst] = flip_ssts(home / "archive")

    [finding] = deep(cli)["archive integrity"]
    assert finding["status"] == "action" and str(sst) in finding["message"]
    assert "backup" in finding["action"]
    assert str(sst) in typed(cli("archive", "get", archived, "--json"))["message"]
    search = ["archive", "search", "deploy pipeline", "--project", "app", "--json"]
    assert str(sst) in typed(cli(*search))["message"]
    human = cli("archive", "get", archived)
    assert human.code == 1 and "Traceback" not in human.stderr and str(sst) in human.message

    # through a running supervisor: its control socket answers the same
    env = {"MEMORYD_RETENTION_TICK_SECONDS": "3600", **FAST_RETRY}
    sup = background("run", "--workers", "1", env=env)
    wait_for(lambda: (status(home)["supervisor"] or {}).get("pid") == sup.pid, what="supervisor")
    assert typed(cli("archive", "get", archived, "--json"))["error"] == "CORRUPT"
    assert typed(cli(*search))["error"] == "CORRUPT"
    add = [
        "archive",
        "add",
        str(tmp_path / "chat.jsonl"),
        "--project",
        "app",
        "--new-project",
        "--session",
        "b",
    ]
    assert str(sst) in typed(cli(*add, "--json"))["message"]  # the retention worker's


def test_rebuild_rebuilds_the_authority_and_reports_a_lost_sst(cli, home, archived) -> None:
    [sst] = sorted((home / "archive").glob("*.sst"))
    sst.unlink()

    [finding] = deep(cli)["archive integrity"]
    assert finding["status"] == "action" and str(sst) in finding["message"]
    res = cli("rebuild", "--json")
    assert res.code == 1 and "Traceback" not in res.stderr, res.stderr
    answer = res.json()
    assert answer["rebuilt"]["app"]["fts"] > 0, "the authority is rebuilt all the same"
    [failed] = answer["not_rebuilt"]
    assert (failed["part"], failed["error"]) == ("archive", "CORRUPT")
    assert str(sst) in failed["message"]
    assert str(sst) in typed(cli("archive", "get", archived, "--json"))["message"]
