"""Chunk vectors as a derived table: written with their chunks at ingest,
kept in step with file changes, rebuilt and verified, never mixed across encoders."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import apsw
import orjson
import pytest

from tests.conftest import query, status, wait_for

WORDLLAMA = {"MEMORYD_ENCODER": "wordllama"}


def _repo(root: Path, files: int = 12) -> Path:
    for i in range(files):
        d = root / f"pkg{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        body = "\n".join(
            f"def handler_{i}_{j}(request):\n    '''Answer request {j} of batch {i}.'''\n"
            f"    return request.reply({j})\n"
            for j in range(40)
        )
        (d / f"mod{i}.py").write_text(body)
    (root / "notes.md").write_text("The lighthouse keeper writes down every storm.\n")
    return root


def _ingest(cli, root: Path, env: dict, **kw):
    return cli("ingest", str(root), "--project", "repo", "--wait", "--json", env=env, **kw)


def _coverage(home: Path) -> list[tuple]:
    """(path, chunks, code bytes) of every live file; code bytes None when it has none."""
    return query(
        home,
        "SELECT f.path, (SELECT count(*) FROM chunks c WHERE c.file_id = f.id),"
        " (SELECT length(codes) FROM chunk_vectors v WHERE v.file_id = f.id)"
        " FROM files f WHERE f.live = 1 ORDER BY f.path",
    )


def _verify(cli, env: dict, **kw) -> dict:
    res = cli("rebuild", "--verify", "--json", env=env, **kw)
    out = orjson.loads(res.stdout)
    assert res.code == (0 if out["equal"] else 1), res.stderr
    return out


def test_every_chunk_gets_a_code_that_follows_file_changes(cli, home, tmp_path):
    repo = _repo(tmp_path / "repo")
    res = _ingest(cli, repo, WORDLLAMA)
    assert res.code == 0
    summary = orjson.loads(res.stdout.splitlines()[-1])
    assert summary["complete"] and summary["vectors_pending"] == 0  # --wait saw the codes
    cov = _coverage(home)
    assert len(cov) == 13 and all(codes == 32 * chunks for _, chunks, codes in cov)
    assert query(home, "SELECT name, dim FROM vector_encoder") == [
        ("wordllama:l2_supercat:256", 256)
    ]

    (repo / "pkg0" / "mod0.py").write_text("def only_one():\n    return 1\n")
    (repo / "pkg1" / "mod1.py").unlink()
    assert _ingest(cli, repo, WORDLLAMA).code == 0
    cov = _coverage(home)
    assert [p for p, *_ in cov].count("pkg1/mod1.py") == 0
    assert dict((p, (n, c)) for p, n, c in cov)["pkg0/mod0.py"] == (1, 32)
    assert all(codes == 32 * chunks for _, chunks, codes in cov)
    retired = query(home, "SELECT count(*) FROM chunk_vectors v JOIN files f ON f.id = v.file_id"
                          " WHERE f.live = 0")  # fmt: skip
    assert retired == [(0,)]

    out = _verify(cli, WORDLLAMA)
    assert out["equal"] and out["live"]["repo"]["vectors"] == out["rebuilt"]["repo"]["vectors"]


def test_verify_sees_a_damaged_code(cli, home, tmp_path):
    assert _ingest(cli, _repo(tmp_path / "repo", 3), WORDLLAMA).code == 0
    conn = apsw.Connection(str(home / "authority.db"))
    conn.execute("UPDATE chunk_vectors SET codes = zeroblob(length(codes)) WHERE rowid = "
                 "(SELECT min(rowid) FROM chunk_vectors)")  # fmt: skip
    conn.close()
    out = _verify(cli, WORDLLAMA)
    assert not out["equal"] and out["mismatches"] == ["repo/vectors"]
    assert cli("rebuild", "--json", env=WORDLLAMA).code == 0
    assert _verify(cli, WORDLLAMA)["equal"]


def test_an_encoder_change_without_a_rebuild_is_refused(cli, home, tmp_path):
    repo = _repo(tmp_path / "repo", 4)
    assert _ingest(cli, repo, WORDLLAMA).code == 0
    script = tmp_path / "enc.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        for line in sys.stdin:
            texts = json.loads(line)["texts"]
            print(json.dumps({"vectors": [[len(t) % 7 - 3.0] * 16 for t in texts]}), flush=True)
    """))  # fmt: skip
    other = {"MEMORYD_ENCODER": f"command:{sys.executable} {script}"}

    for env in (other, {"MEMORYD_ENCODER": "hashing"}):
        res = _ingest(cli, repo, env)
        assert res.code != 0 and "ENCODER_CHANGED" in res.stdout + res.stderr
        assert "memoryd rebuild" in res.stdout + res.stderr
    res = cli("search", "lighthouse storm", "--project", "repo", "--json", env=other)
    assert res.code != 0 and "ENCODER_CHANGED" in res.stdout + res.stderr

    assert cli("rebuild", "--json", env=other).code == 0
    assert query(home, "SELECT name, dim FROM vector_encoder") == [
        (f"command:{sys.executable} {script}", 16)
    ]
    assert all(codes == 2 * chunks for _, chunks, codes in _coverage(home))
    assert cli("search", "lighthouse storm", "--project", "repo", "--json", env=other).code == 0
    assert _ingest(cli, repo, other).code == 0

    assert cli("rebuild", "--json", env={"MEMORYD_ENCODER": "hashing"}).code == 0
    assert query(home, "SELECT count(*) FROM chunk_vectors") == [(0,)]
    assert query(home, "SELECT count(*) FROM vector_encoder") == [(0,)]


def _vector_jobs(home: Path) -> dict[str, int]:
    return dict(query(home, "SELECT state, count(*) FROM jobs WHERE kind = 'vectors.encode'"
                            " GROUP BY state"))  # fmt: skip


@pytest.mark.slow
def test_codes_survive_sigkill_mid_encoding_and_verify_is_equal(cli, home, tmp_path, background):
    """Codes come from their own low-priority jobs once the run is searchable; a SIGKILL
    of the supervisor (and its workers) while those jobs run loses nothing: the
    codes written are whole, the jobs in flight are claimed again, and the store
    ends equal to a rebuild."""
    repo = _repo(tmp_path / "repo", 240)
    env = {**WORDLLAMA, "MEMORYD_VECTORS_JOB_BYTES": "16384"}  # about 60 vectors jobs
    assert cli("init").code == 0
    assert cli("ingest", str(repo), "--project", "repo", env=env).code == 0  # enqueue only
    sup = background("run", "--workers", "2", env=env)

    def mid_encoding() -> bool:
        jobs = _vector_jobs(home)
        return jobs.get("done", 0) > 0 and jobs.get("queued", 0) + jobs.get("claimed", 0) > 0

    wait_for(mid_encoding, interval=0.01, what="some vectors jobs done, others not")
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait()
    assert query(home, "SELECT finished_at IS NOT NULL FROM ingest_runs") == [(1,)]
    cov = _coverage(home)
    coded = [c for _, _, c in cov if c is not None]
    assert 0 < len(coded) < 241  # searchable before every code exists
    assert all(codes == 32 * chunks for _, chunks, codes in cov if codes is not None)

    assert cli("run", "--drain", "--workers", "2", env=env).code == 0
    assert set(_vector_jobs(home)) == {"done"}
    cov = _coverage(home)
    assert len(cov) == 241 and all(codes == 32 * chunks for _, chunks, codes in cov)
    assert _verify(cli, env)["equal"]
    assert query(home, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.slow
def test_ingest_wait_beside_a_running_supervisor_returns_with_every_code(
    cli, home, tmp_path, background
):
    """With a supervisor already running, `ingest --wait` follows it past the run's
    end until the codes of its chunks are written (its promise: done)."""
    repo = _repo(tmp_path / "repo", 30)
    env = {**WORDLLAMA, "MEMORYD_VECTORS_JOB_BYTES": "16384"}
    assert cli("init").code == 0
    background("run", "--workers", "2", env=env)
    wait_for(lambda: status(home)["supervisor"], what="the running supervisor")
    res = _ingest(cli, repo, env)
    assert res.code == 0, res.stderr
    summary = orjson.loads(res.stdout.splitlines()[-1])
    assert summary["complete"] and summary["vectors_pending"] == 0
    assert set(_vector_jobs(home)) == {"done"}
    cov = _coverage(home)
    assert len(cov) == 31 and all(codes == 32 * chunks for _, chunks, codes in cov)
