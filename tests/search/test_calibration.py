"""Calibrated scores: more evidence never lowers a score, scores are probabilities
in the source's order, and the answer threshold abstains (library, environment,
command line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.base.config import load_config
from memoryd.base.errors import ConfigError
from memoryd.search import calibration, pipeline
from memoryd.search.engine import ProjectSource
from tests.retention.test_run_cli import archive

QUESTION = "how long is the upload retry backoff"
FILES = {
    "upload.py": "def retry_backoff():\n    # the upload retry backoff doubles, from one second\n"
    "    return 1.0\n",
    "download.py": "def fetch():\n    # the download has no retry, only a timeout\n    return 5\n",
    "notes.md": "# Uploads\n\nThe upload path streams the body in parts.\n",
    "cache.py": "def evict(cache, size):\n    cache.clear()\n",
}
unit = st.floats(0.0, 1.0)
signals = st.fixed_dictionaries(
    {
        "evidence": unit,
        "strength": unit,
        "first": unit,
        "margin": unit,
        "focus": st.floats(0.0, 3.0),
        "archive": st.sampled_from([0.0, 1.0]),
        "records": st.just(0.0),
    }
)


@given(signals, st.sampled_from(calibration.MONOTONE), st.floats(0.0, 1.0))
def test_more_evidence_never_lowers_a_score(x: dict, feature: str, more: float) -> None:
    model = calibration.load()
    before = model.probability(x)
    after = model.probability({**x, feature: x[feature] + more})
    assert 0.0 <= before <= after <= 1.0


def test_a_model_lowering_scores_on_more_evidence_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "calibration.json"
    bad.write_text(json.dumps({"intercept": 0.0, "weights": {"evidence": -1.0}}))
    with pytest.raises(ValueError, match="evidence"):
        calibration.load(bad)


@pytest.fixture
def source(tmp_path: Path, store):
    db = store(tmp_path, "demo", FILES)
    yield ProjectSource(db, "demo")
    db.close()


def _places(result: dict) -> list[tuple[str, int]]:
    return [(i["path"], i["start_line"]) for i in result["items"]]


def test_scores_are_probabilities_in_the_order_of_the_raw_scores(source) -> None:
    calibrated = pipeline.run(QUESTION, 10, [source])
    with calibration.using(None):
        raw = pipeline.run(QUESTION, 10, [source])
    scores = [i["score"] for i in calibrated["items"]]
    assert scores and all(0.0 <= s < 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True)
    assert _places(calibrated) == _places(raw)
    assert scores != [i["score"] for i in raw["items"]]  # the model, not the raw product
    assert not any("_signals" in i or "signals" in i for i in calibrated["items"])


def test_the_answer_threshold_abstains_below_the_best_score(source) -> None:
    best = pipeline.run(QUESTION, 10, [source])["items"][0]["score"]
    assert pipeline.run(QUESTION, 10, [source], threshold=best)["status"] == "ok"
    above = pipeline.run(QUESTION, 10, [source], threshold=min(1.0, best + 0.01))
    assert above["status"] == "abstained" and not above["items"]
    assert above["gap"].startswith(pipeline.GAP_PREFIX) and "answer threshold" in above["gap"]


def test_the_threshold_setting_reads_the_environment(tmp_path: Path, monkeypatch) -> None:
    assert load_config(tmp_path).answer_threshold == 0.25
    monkeypatch.setenv("MEMORYD_ANSWER_THRESHOLD", "0.9")
    assert load_config(tmp_path).answer_threshold == 0.9
    monkeypatch.setenv("MEMORYD_ANSWER_THRESHOLD", "1.5")
    with pytest.raises(ConfigError):
        load_config(tmp_path)


def test_archive_search_answer_threshold_from_flag_and_environment(cli, tmp_path: Path) -> None:
    archive(cli, tmp_path, "s1", "the upload retry backoff doubles from one second", 1)
    archive(cli, tmp_path, "s2", "we talked about the login page colours", 1)
    query = ("archive", "search", "upload retry backoff", "--project", "demo", "--json")
    assert cli(*query).json()["status"] == "ok"
    flag = cli(*query, "--answer-threshold", "1").json()
    assert flag["status"] == "abstained" and "answer threshold 1" in flag["gap"]
    strict = {"MEMORYD_ANSWER_THRESHOLD": "1"}
    assert cli(*query, env=strict).json()["status"] == "abstained"
    assert cli(*query, "--answer-threshold", "0", env=strict).json()["status"] == "ok"
    assert cli(*query, "--answer-threshold", "1.5").code == 2


@pytest.mark.slow
def test_search_and_recall_answer_threshold_flag(cli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for path, text in FILES.items():
        (src / path).write_text(text)
    assert cli("ingest", str(src), "--project", "app", "--wait").code == 0
    for command in ("search", "recall"):
        query = (command, QUESTION, "--project", "app", "--json")
        assert cli(*query).json()["status"] == "ok"
        res = cli(*query, "--answer-threshold", "1").json()
        assert res["status"] == "abstained" and "answer threshold" in res["gap"]
        strict = {"MEMORYD_ANSWER_THRESHOLD": "1"}
        assert cli(*query, env=strict).json()["status"] == "abstained"
