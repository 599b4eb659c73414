"""Memory record vectors: coded by a vectors job after consolidation, dropped
when a record leaves ``active``, rebuilt and verified, never mixed across encoders,
searched by the records source under the gate's dense rule."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from memoryd.base.errors import EncoderChanged
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from memoryd.operations.search import Search
from tests.conftest import query, wait_for
from tests.memory.conftest import lines

WORDLLAMA = {"encoder": "wordllama"}
PUPPY = "We adopted a puppy"
BREAD = "Grandmother bakes rye bread on Sundays"
LAMP = "The lighthouse keeper logs every storm"


def fact(text: str) -> dict:
    return {"kind": "fact", "text": text}


def coverage(home: Path) -> list[tuple]:
    """(text, status, code bytes or None) of every record, by text."""
    return query(
        home,
        "SELECT r.text, r.status, (SELECT length(code) FROM record_vectors v WHERE v.n = r.n)"
        " FROM memory_records r ORDER BY r.text",
    )


def test_records_get_codes_that_go_when_superseded_and_verify_equal(
    memoryd, judge, project_home
) -> None:
    md = memoryd(**WORDLLAMA, memory_adjudicator=judge({"night": {"verdict": "supersedes"}}))
    Home(md).rebuild()  # the fixture's ingest used the default encoder: its chunks get codes
    Memory(md).add(lines(fact(PUPPY), fact(BREAD), fact(LAMP)), "app", wait=True)
    assert coverage(project_home) == [(BREAD, "active", 32), (LAMP, "active", 32),
                                      (PUPPY, "active", 32)]  # fmt: skip
    encoder = query(project_home, "SELECT name FROM vector_encoder")
    assert encoder == [("wordllama:l2_supercat:256",)]
    jobs = query(project_home, "SELECT state FROM jobs WHERE kind = 'vectors.encode'")
    assert jobs == [("done",)]  # one job for the run's records, off the consolidation job

    night = LAMP + " at night"
    Memory(md).add(lines(fact(night)), "app", wait=True)
    cov = {t: (s, c) for t, s, c in coverage(project_home)}
    assert cov[LAMP] == ("superseded", None) and cov[night] == ("active", 32)

    out = Home(md).rebuild(verify=True)
    assert out["equal"], out["mismatches"]
    assert out["live"]["app"]["record_vectors"] == out["rebuilt"]["app"]["record_vectors"]
    assert out["pending"] == {"app": {"vectors": 0, "record_vectors": 0}}, "all coded"


def test_verify_sees_a_damaged_record_code_and_rebuild_repairs_it(memoryd, project_home):
    md = memoryd(**WORDLLAMA)
    Home(md).rebuild()
    Memory(md).add(lines(fact(PUPPY), fact(BREAD)), "app", wait=True)
    md.db.write(lambda tx: tx.execute("UPDATE record_vectors SET code = zeroblob(32)"))
    out = Home(md).rebuild(verify=True)
    assert not out["equal"] and out["mismatches"] == ["app/record_vectors"]
    md.db.write(lambda tx: tx.execute("DELETE FROM record_vectors"))
    Home(md).rebuild()
    assert [c for *_, c in coverage(project_home)] == [32, 32]
    assert Home(md).rebuild(verify=True)["equal"]


def test_a_short_query_finds_a_record_by_meaning_and_a_long_one_still_needs_words(memoryd):
    # the floor is lowered to this model's similarity of one word to a short sentence:
    # the rule under test is that only a short query may be answered on it (the gate's
    # rule: a similarity this low is no confident answer, so no answer threshold either)
    md = memoryd(**WORDLLAMA, dense_rescue_similarity=0.25, answer_threshold=0.0)
    Memory(md).add(lines(fact(PUPPY), fact(BREAD), fact(LAMP)), "app", wait=True)
    res = Search(md).search("dog", project="app")
    assert res["status"] == "ok"
    assert [(i["source"], i["text"]) for i in res["items"]] == [("memory", PUPPY)]

    off = Search(memoryd(dense_rescue_similarity=1.0, **WORDLLAMA)).search("dog", project="app")
    assert off["status"] == "abstained"
    lexical = Search(md).search("dog", project="app", dense=False)  # no codes looked at
    assert lexical["status"] == "abstained"
    long = Search(md).search(
        "which dog breed did the neighbours across the street buy", project="app"
    )
    assert long["status"] == "abstained"


def _other_encoder(tmp_path: Path) -> str:
    script = tmp_path / "enc.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        for line in sys.stdin:
            texts = json.loads(line)["texts"]
            print(json.dumps({"vectors": [[len(t) % 7 - 3.0] * 16 for t in texts]}), flush=True)
    """))  # fmt: skip
    return f"command:{sys.executable} {script}"


def test_an_encoder_change_is_refused_until_a_rebuild(memoryd, project_home, tmp_path):
    md = memoryd(**WORDLLAMA)
    Memory(md).add(lines(fact(PUPPY)), "app", wait=True)
    other = memoryd(encoder=_other_encoder(tmp_path))
    with pytest.raises(EncoderChanged, match="memoryd rebuild"):
        Search(other).search("dog", project="app")
    Memory(other).add(lines(fact(BREAD)), "app", wait=True)  # consolidation goes on, uncoded
    assert [c for *_, c in coverage(project_home)] == [None, 32]
    Home(other).rebuild()
    assert [c for *_, c in coverage(project_home)] == [2, 2]
    assert query(project_home, "SELECT dim FROM vector_encoder") == [(16,)]
    assert Search(other).search("dog", project="app")["status"] in ("ok", "abstained")


BLOCKING = """
import json, os, sys, time
block, pidfile = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    texts = json.loads(line)["texts"]
    if texts != ["dimension probe"] and os.path.exists(block):
        with open(pidfile, "w") as f:
            f.write(str(os.getppid()))  # the worker encoding these texts
        while os.path.exists(block):
            time.sleep(0.02)
    print(json.dumps({"vectors": [[(len(t) + i) % 5 - 2.0 for i in range(16)] for t in texts]}),
          flush=True)
"""


@pytest.mark.slow
def test_sigkill_of_the_worker_coding_records_leaves_no_partial_codes_and_resumes(
    memoryd, project_home, tmp_path, background
):
    """The worker of a records vectors job is SIGKILLed while it encodes: no code of
    that job is written, the supervisor claims the job again, every active record
    ends with a whole code, and a rebuild computes the same codes."""
    script, block, pidfile = tmp_path / "enc.py", tmp_path / "block", tmp_path / "pid"
    script.write_text(BLOCKING)
    encoder = f"command:{sys.executable} {script} {block} {pidfile}"
    md = memoryd(encoder=encoder)
    Home(md).rebuild()  # chunk codes of this encoder, before the supervisor starts
    block.touch()
    Memory(md).add(lines(fact(PUPPY), fact(BREAD), fact(LAMP)), "app")
    env = {"MEMORYD_ENCODER": encoder, "MEMORYD_RETRY_BACKOFF_BASE": "0.01"}
    background("run", "--workers", "1", env=env, home=project_home)
    worker = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), what="encoding"))
    assert query(project_home, "SELECT count(*) FROM memory_records") == [(3,)]
    os.kill(worker, signal.SIGKILL)
    assert query(project_home, "SELECT count(*) FROM record_vectors") == [(0,)]
    block.unlink()

    def coded() -> bool:
        return all(c is not None for *_, c in coverage(project_home))

    wait_for(coded, what="every record coded after the worker's death")
    assert [c for *_, c in coverage(project_home)] == [2, 2, 2]
    out = Home(md).rebuild(verify=True)
    assert out["equal"], out["mismatches"]


def test_a_search_encodes_its_query_once_for_chunks_and_records(memoryd, tmp_path):
    """Both sources on the semantic route (the project's chunks, its records) score the
    query by its code: the encoder is asked for it once."""
    script, log = tmp_path / "enc.py", tmp_path / "asked"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        for line in sys.stdin:
            texts = json.loads(line)["texts"]
            with open({str(log)!r}, "a") as f:
                f.writelines(t.replace("\\n", " ") + "\\n" for t in texts)
            print(json.dumps({{"vectors": [[len(t) % 7 - 3.0] * 16 for t in texts]}}),
                  flush=True)
    """))  # fmt: skip
    md = memoryd(encoder=f"command:{sys.executable} {script}")
    Home(md).rebuild()  # the chunks get codes
    Memory(md).add(lines(fact(PUPPY), fact(BREAD)), "app", wait=True)
    assert query(md.home, "SELECT count(*) FROM record_vectors") == [(2,)]
    log.write_text("")
    Search(md).search("puppy handler", project="app")
    assert log.read_text().splitlines() == ["puppy handler"]
