"""Archive search: a LongMemEval subset with floors the full
run (ops/bench/bench_archive.py, make bench-archive) comfortably exceeds, and query
safety: arbitrary text and FTS-like syntax never raise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.archive.ops import run_op
from memoryd.archive.owner import ArchiveOwner
from memoryd.archive.query import search_archive
from memoryd.base.config import load_config
from memoryd.operations.control_client import unwrap
from memoryd.storage.corpus import UnknownProject

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "ops" / "bench" / "bench_archive.py"
NOW = 1_800_000_000.0


def _session(owner: ArchiveOwner, name: str, turns: list[tuple[str, str]]) -> None:
    content = "\n".join(f"{role}: {text}" for role, text in turns)
    args = {"project": "demo", "session": name, "created_at": NOW - 3600, "now": NOW,
            "content": content, "turns": len(turns)}  # fmt: skip
    unwrap(run_op(owner, "add", args))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    home = tmp_path_factory.mktemp("arch")
    owner = ArchiveOwner(home, load_config(home))
    _session(owner, "port", [
        ("user", "Which port should the dev server use? 8080 collides with the proxy."),
        ("assistant", "Use port 5173 for the dev server and keep 8080 for the proxy."),
    ])  # fmt: skip
    _session(owner, "garden", [
        ("user", "My tomato plants have yellow leaves since I moved them to the balcony."),
        ("assistant", "Yellow leaves often mean overwatering; let the soil dry between waterings."),
        ("user", "I also bought a basil plant at the farmers market on Saturday."),
        ("assistant", "Basil likes full sun and regular pinching of its flower buds."),
    ])  # fmt: skip
    for i in range(6):
        _session(owner, f"filler{i}", [
            ("user", f"Can you summarize chapter {i} of the novel for my book club?"),
            ("assistant", "Here is a short summary of the chapter's main events and themes."),
        ])  # fmt: skip
    yield owner
    owner.close()


def test_answers_and_abstains(small):
    hit = search_archive(small, "demo", "which port did we pick for the dev server?", 5, NOW)
    assert hit["status"] == "ok" and hit["items"][0]["path"] == "port"
    item = hit["items"][0]
    assert {"path", "start_line", "end_line", "score", "excerpt", "locator", "class",
            "created_at"} <= item.keys()  # fmt: skip
    assert item["class"] == "conversation" and "5173" in item["excerpt"]
    plant = search_archive(small, "demo", "where did I buy the basil plant?", 5, NOW)
    assert plant["items"] and plant["items"][0]["path"] == "garden"
    miss = search_archive(small, "demo", "what database does the billing service use?", 5, NOW)
    assert miss == {"status": "abstained", "items": [], "gap": miss["gap"]} and miss["gap"]


def test_named_entity_must_be_evidenced(small):
    # the garden session matches "basil plant", but nothing mentions Seattle
    r = search_archive(small, "demo", "where did I buy the basil plant in Seattle?", 5, NOW)
    assert r["status"] == "abstained" and "seattle" in r["gap"]


ODD = [
    "", "   ", "\n", '"', '""', "'", "*", "^", ":", "-", "+", "()", "(", ")", "NEAR",
    "NEAR(port server, 2)", "port NEAR/2 server", '"dev server" OR port', "port AND NOT proxy",
    "col:port", "{port server}", "port*", "^port", "port -proxy", "\\", "%", "_", "\x00",
    "端口 服务器", "порт сервера", "ميناء", "🚀 port", "a" * 5000, "port " * 500,
    "user: which port?", "assistant:", "s-port-abc@1", "../../etc/passwd",
]  # fmt: skip


@pytest.mark.parametrize("query", ODD)
def test_odd_syntax_is_safe(small, query):
    r = search_archive(small, "demo", query, 10, NOW)
    assert r["status"] in ("ok", "abstained")
    assert (r["status"] == "ok") == bool(r["items"])


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(small, query):
    r = search_archive(small, "demo", query, 10, NOW)
    assert r["status"] in ("ok", "abstained")
    assert set(r) == {"status", "items", "gap"}


def test_unknown_project_is_an_error_not_an_abstention(small):
    """As project search does, an unknown project is named (exit 1)."""
    with pytest.raises(UnknownProject, match="no project named 'nobody-here'"):
        search_archive(small, "nobody-here", "which port for the dev server?", 10, NOW)


@pytest.mark.slow
def test_longmemeval_subset_recall_and_abstention(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_archive", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    if not bench.DATA.exists():
        pytest.skip(f"LongMemEval data not present at {bench.DATA}: {bench.DATA_SOURCE}")
    lme = sys.modules["lme_data"]
    data = lme.load_questions(bench.DATA)
    owner, digest, sid_digest = bench.build(tmp_path, data)
    try:
        assert owner.store.postings.corpus_stats(bench.PROJECT).versions == 940
        answerable = [i for i, q in enumerate(data) if not q["question_id"].endswith("_abs")]
        absent = [i for i, q in enumerate(data) if q["question_id"].endswith("_abs")]
        runners = {
            "archive": lambda t: search_archive(owner, bench.PROJECT, t, bench.DEPTH, bench.NOW),
            "bm25": lambda t: bench.bm25_plain(owner, t, bench.DEPTH),
        }
        res = lme.evaluate(data, runners, digest, sid_digest, answerable[::10] + absent)
    finally:
        owner.close()
    gated, plain = res["archive"], res["bm25"]
    assert gated["answerable"] == 47 and gated["abs_questions"] == 30
    assert plain["abstained"] == 0
    assert gated["recall@10"] >= 0.72, gated
    assert gated["abstained"] >= 6, gated
