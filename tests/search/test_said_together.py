"""The gate's "said together" rule: focus terms close together in a chunk's text,
too rare together to meet there by chance, admit a chunk the half rule refuses."""

from __future__ import annotations

from memoryd.search import search
from memoryd.search.gate import admit, may_be_said_together, plan, said_together
from memoryd.text.terms import analyze, stems
from tests.search.conftest import FakeStats

QUESTION = "spill the ledger when the tenant quota runs out"
# no term of the question is rare (1% of the chunks): the two-rare-terms rule is out
DF = {"spill": 30, "ledger": 40, "tenant": 20, "quota": 20, "run": 100}
FILLER = "return the accumulated value of helper number {i} after parsing its arguments"


def _plan(chunks: int, df: dict[str, int], avg_len: float = 200.0):
    return plan(analyze(QUESTION), FakeStats(chunks, df, avg_len))


def test_terms_close_together_admit_what_the_half_rule_refuses():
    p = _plan(1000, DF)
    held = {"spill", "ledger"}
    assert not admit(p, held).admitted  # two of five terms: less than half
    close = stems("we spill the ledger first; " + "other words here " * 20 + "then run")
    apart = stems("we spill " + "other words here " * 20 + "the ledger")
    assert said_together(p, close)
    assert not said_together(p, apart)
    assert admit(p, held, together=True).rule == "said together"


def test_terms_common_enough_to_meet_by_chance_are_not_said_together():
    text = stems("spill the ledger")
    assert said_together(_plan(1000, DF), text)
    # the same shares (and weights) in a corpus 100x larger: such windows are many
    big = {k: v * 100 for k, v in DF.items()}
    assert not said_together(_plan(100_000, big), text)


def test_terms_together_need_a_third_of_the_specificity():
    # every other focus term is held nowhere: the pair is a small part of the question
    p = _plan(1000, {"spill": 300, "ledger": 200, "run": 100})
    assert not said_together(p, stems("spill the ledger"))


def test_only_texts_whose_terms_may_be_said_together_are_read():
    assert may_be_said_together(_plan(1000, DF), {"spill", "ledger", "run"})
    assert not may_be_said_together(_plan(1000, DF), {"spill"})  # one term is no pair
    # even all the held terms together are common enough to meet by chance
    big = {k: v * 100 for k, v in DF.items()}
    assert not may_be_said_together(_plan(100_000, big), {"spill", "ledger"})


def test_no_chunk_length_no_windows():
    p = _plan(1000, DF, 0.0)
    assert not said_together(p, stems("spill the ledger"))


def _said_together_tree() -> dict[str, str]:
    """60 filler modules, 12 that hold a common term, one that says the question's
    specific terms in one sentence and one that holds them far apart."""
    files = {f"pkg/helper_{i}.py": f'"""{FILLER.format(i=i)}"""\n' for i in range(60)}
    for i in range(12):
        files[f"pkg/io_{i}.py"] = f'"""run the writer of block {i} of the cache"""\n'
    files["pkg/journal.py"] = '"""Spill the ledger before the process exits."""\n'
    gap = " ".join(f"step{i}" for i in range(40))
    files["pkg/scattered.py"] = f'"""Spill nothing.\n\n{gap}\n\nThe ledger is kept."""\n'
    return files


def test_search_answers_with_the_chunk_that_says_the_terms_together(tmp_path, store):
    db = store(tmp_path, "p", _said_together_tree())
    result = search(db, "p", QUESTION)
    assert result["status"] == "ok"
    paths = [item["path"] for item in result["items"]]
    assert paths[0] == "pkg/journal.py"
    assert "pkg/scattered.py" not in paths


def test_the_cli_search_of_a_new_user_answers_with_it(cli, tmp_path):
    """The same through ``memoryd ingest --wait`` and ``memoryd search --json`` with the
    defaults a new user has."""
    tree = tmp_path / "tree"
    for path, text in _said_together_tree().items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    assert cli("ingest", str(tree), "--project", "p", "--wait").code == 0
    found = cli("search", QUESTION, "--project", "p", "--json")
    assert found.code == 0, found.stderr
    paths = [item["path"] for item in found.json()["items"]]
    assert paths[0] == "pkg/journal.py"
    assert "pkg/scattered.py" not in paths
