"""`memoryd diagnose`: a fresh workspace, bytes by phase, strict oracle scoring."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from memoryd.faces.diagnose import score_unanswerable
from tests.conftest import run_cli

GAP = "insufficient evidence in project 'x': no chunk holds enough of the asked terms"
CASE = {"id": "u1", "q": "which queue broker do they run?"}


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    for i in range(6):
        (root / "pkg" / f"part_{i}.py").write_text(
            f'"""Part {i}: the lighthouse keeper logs tide heights."""\n\n'
            f"def tide_height_{i}(hour):\n    return {i} * hour\n"
        )
    (root / "README.md").write_text("# Lighthouse\n\nTide tables for the keeper.\n")
    return root


def _oracles(tmp_path: Path) -> Path:
    path = tmp_path / "oracles.json"
    path.write_bytes(
        orjson.dumps(
            {
                "answerable": [
                    {"id": "a1", "q": "tide_height_3", "expect_paths": ["pkg/part_3.py"]}
                ],
                "unanswerable": [{"id": "u1", "q": "which kubernetes namespace hosts billing?"}],
            }
        )
    )
    return path


@pytest.mark.parametrize(
    ("result", "failure"),
    [
        ({"status": "ok", "items": [{"path": "a.py"}], "gap": None}, "returned 1 items"),
        ({"error": "STORE_BUSY", "message": "busy"}, "error STORE_BUSY"),
        ({"status": "ok", "items": [], "gap": None}, "status 'ok' without items"),
        ({"status": "abstained", "items": [], "gap": "nothing"}, "the gap does not state"),
    ],
)
def test_each_wrong_answer_to_an_unanswerable_question_fails(result, failure) -> None:
    case = score_unanswerable(CASE, result)
    assert not case["passed"] and case["failure"].startswith(failure)


def test_an_abstention_stating_insufficient_evidence_passes() -> None:
    assert score_unanswerable(CASE, {"status": "abstained", "items": [], "gap": GAP})["passed"]


def test_an_existing_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("mine")
    src = _tree(tmp_path / "src")
    res = run_cli("diagnose", str(src), "--workspace", str(ws), "--json", home=None)
    assert res.code == 2 and res.json()["error"] == "WORKSPACE_EXISTS"
    assert sorted(p.name for p in ws.iterdir()) == ["keep.txt"]


@pytest.mark.slow
def test_a_diagnosis_reports_bytes_by_phase_scores_and_a_baseline(tmp_path: Path) -> None:
    src, ws = _tree(tmp_path / "src"), tmp_path / "ws"
    baseline = f"{sys.executable} -m memoryd.faces.cli.main"
    args = ("diagnose", str(src), "--workspace", str(ws), "--oracles", str(_oracles(tmp_path)))
    res = run_cli(*args, "--baseline", baseline, "--json", home=tmp_path / "untouched")
    assert res.code == 0, res.stderr
    r = res.json()
    assert not (tmp_path / "untouched").exists()  # the user's home is never made or read
    b = r["bytes"]
    assert b["samples"] >= 1 and b["peak_live"]["total_bytes"] >= b["quiescent"]["total_bytes"]
    assert b["quiescent"]["wal_bytes"] == 0 and b["closed"]["shm_bytes"] == 0
    assert b["largest_wal_bytes"] > 0 and r["source_bytes"] > 0 and r["files"] == 7
    assert r["oracles"]["answerable"]["hits"] == 1
    assert r["oracles"]["unanswerable"]["abstained"] == 1
    assert "tide" not in res.stdout.replace("tide_height_3", "")  # no checkout text
    assert r["baseline"]["files"] == 7

    run = run_cli(*args[:3], str(tmp_path / "ws2"), "--baseline", baseline, home=None)
    assert run.code == 0, run.stderr
    human = run.stdout
    assert "against the baseline" in human and "ingest MB/s" in human and "x" in human


@pytest.mark.slow
def test_the_callers_settings_never_reach_the_diagnosis(tmp_path: Path) -> None:
    """Offline and isolated as it claims: an encoder command (or any setting) in the
    caller's environment is set aside, never run, and named in the report."""
    src, ws = _tree(tmp_path / "src"), tmp_path / "ws"
    ran = tmp_path / "encoder-ran"
    encoder = tmp_path / "encoder.sh"
    encoder.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    encoder.chmod(0o755)
    env = {"MEMORYD_ENCODER": f"command:{encoder}", "MEMORYD_BODY_PACK_LEVEL": "1"}
    res = run_cli("diagnose", str(src), "--workspace", str(ws), "--json", home=None, env=env)
    assert res.code == 0, res.stderr
    assert not ran.exists(), "the caller's encoder command ran"
    assert res.json()["ignored_settings"] == ["MEMORYD_BODY_PACK_LEVEL", "MEMORYD_ENCODER"]


def test_a_missed_case_says_why_not_the_searchs_status(capsys) -> None:
    """The oracle table's detail for a miss says it abstained or answered without an
    expected path in the top k; never the search's bare status ('ok')."""
    from memoryd.faces.cli import diagnose as cli_mod

    oracles = {
        "k": 3,
        "answerable": {"hits": 1, "cases": 3, "mrr": 0.5, "precision": 0.5},
        "unanswerable": {"abstained": 0, "cases": 0},
        "cases": [
            {"id": 1, "hit": True, "reciprocal_rank": 0.5, "status": "ok"},
            {"id": 2, "hit": False, "reciprocal_rank": 0.0, "status": "ok"},
            {"id": 3, "hit": False, "reciprocal_rank": 0.0, "status": "abstained"},
        ],
    }
    cli_mod._print_oracles(oracles)
    table = capsys.readouterr().out
    assert "rank 2" in table and "no expected path in the top 3" in table
    assert "abstained" in table and " ok" not in table


NAMES = ("tide_table", "lamp_house", "fog_signal", "keeper_log", "harbor_chart", "beacon_timer")


def _named_tree(root: Path) -> Path:
    """Files with distinct names (the workload's subjects), each defining a constant."""
    root.mkdir(parents=True)
    for i, name in enumerate(NAMES):
        (root / f"{name}.py").write_text(
            f'"""The {name.replace("_", " ")} of the lighthouse."""\n\n'
            f"{name.upper()}_LIMIT = {10 + i}\n\n\ndef {name}(hour):\n    return {i} * hour\n"
        )
    return root


@pytest.mark.slow
def test_a_diagnosis_runs_the_workload_on_every_route(tmp_path: Path, capsys) -> None:
    """Facts staged by memory add (one superseded by a newer, contrary one), answerable,
    contrary and unanswerable cases on search and recall with and without the dense
    route, five warm repetitions each; in JSON and in the human report."""
    from memoryd.faces.cli import diagnose as cli_mod

    src, ws = _named_tree(tmp_path / "src"), tmp_path / "ws"
    res = run_cli("diagnose", str(src), "--workspace", str(ws), "--json", home=None)
    assert res.code == 0, res.stderr
    r = res.json()
    assert {"bytes", "time", "oracles"} <= r.keys()  # the report before it, unchanged
    w = r["workload"]
    facts = w["facts"]
    assert facts["staged"] == len(NAMES) + 2 and facts["outcomes"] == {"added": 7, "superseded": 1}
    const = facts["contrary_constant"]
    assert const["name"].endswith("_LIMIT") and const["newer"] != const["value"]
    kinds = [c["kind"] for c in w["cases"]]
    assert kinds.count("answerable") == len(NAMES) and kinds.count("contrary") == 1
    assert kinds.count("unanswerable") == 5
    assert set(w["routes"]) == {"search/dense", "search/lexical", "recall/dense", "recall/lexical"}
    assert w["false_positives"] == {route: 0 for route in w["routes"]}
    for route in w["routes"].values():
        assert route["repetitions"] == 5 and route["warm_queries"] == 5 * len(kinds)
        assert 0 < route["warm_p50_ms"] <= route["warm_p95_ms"]
        assert route["answerable"]["cases"] == len(NAMES) and route["answerable"]["hits"] > 0
        assert route["contrary"] == {"cases": 1, "hits": 1, "stale_returned": 0}
        assert route["unanswerable"] == {"cases": 5, "abstained": 5, "false_positives": 0}

    listed = run_cli("memory", "list", "--project", "diagnosed", "--json", home=ws / "home")
    statuses = sorted(rec["status"] for rec in listed.json())
    assert statuses == ["active"] * 7 + ["superseded"]  # through memory add, consolidated

    cli_mod.print_diagnosis(r)
    human = capsys.readouterr().out
    assert "7 added, 1 superseded" in human and "false positives" in human
    assert all(route in human for route in w["routes"])


def test_subjects_are_file_names_no_other_file_shares() -> None:
    from memoryd.faces.diagnose_workload import subjects

    paths = ["a/iso8859_1.py", "a/iso8859_2.py", "b/tide_table.py", "c/x.py", "d/fog_signal.rs"]
    wanted = [("b/tide_table.py", "tide table"), ("d/fog_signal.rs", "fog signal")]
    assert sorted(subjects(paths, 5)) == wanted
    assert len(subjects(paths, 1)) == 1


def test_the_contrary_constant_is_read_where_the_code_defines_it(tmp_path: Path) -> None:
    from memoryd.faces.diagnose_workload import code_constant

    (tmp_path / "a.py").write_text('"""MAX_SIZE 10 in prose is no definition."""\n')
    (tmp_path / "b.ts").write_text("import x from 'y';\n\nexport const RETRY_LIMIT = 7;\n")
    found = code_constant(tmp_path, ["a.py", "b.ts"])
    assert (found.path, found.line, found.name, found.value) == ("b.ts", 3, "RETRY_LIMIT", 7)
    assert code_constant(tmp_path, ["a.py"]) is None


def test_a_case_whose_fact_made_no_record_never_matches_a_chunk() -> None:
    """Chunks carry no record id: a case without its record misses, it does not match
    the first chunk; a superseded record returned fails the contrary case."""
    from memoryd.faces.diagnose_workload import Case, score_case

    answer = {"status": "ok", "items": [{"path": "a.py"}, {"id": "m-new"}, {"id": "m-old"}]}
    assert score_case(Case("f", "answerable", "q?", None), answer, 10)["rank"] is None
    contrary = score_case(Case("c", "contrary", "q?", "m-new", "m-old"), answer, 10)
    assert contrary["rank"] == 2 and contrary["stale_returned"] and not contrary["hit"]
