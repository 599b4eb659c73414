"""The query path's shortcuts give the answers of the plain computations they replace:
the hashing encoder's batched counting, its trigram cache, and file coverage on bit
masks of focus terms; and a query does no work it does not need (one encoding of the
query, no postings of stems held nowhere)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from memoryd.base.config import load_config
from memoryd.ingest.chunking import prepare_file
from memoryd.search import gate as gate_mod
from memoryd.search.engine import (
    Candidate,
    _file_coverage,
    _Weighted,
    search,
)
from memoryd.search.stats import term_stats
from memoryd.storage import open_authority, vectors
from memoryd.storage.corpus import ensure_project, project_id, put_files
from memoryd.storage.fts import prepare
from memoryd.text.dense import DEFAULT_ENCODER, HashingEncoder, code_similarity
from memoryd.text.terms import STOPWORDS, analyze, stems

TEXTS = [
    "The scheduler retries a failed upload before the lease runs out; retries back off.",
    "upload upload upload lease",
    "the and of to",  # stopwords only: a zero vector
    "",
    "Antidisestablishmentarianismically_long_identifier_name is longer than the table",
    "La configuración del servidor se guarda en el archivo config.toml",
]


def _reference(text: str, dim: int = 256, trigram_weight: float = 0.5) -> np.ndarray:
    """The encoder's definition, written out plainly: every distinct non-stopword stem,
    weighted 1 + ln(tf), adds its word feature and its trigrams' features (CRC-32
    bucket and sign), then the vector is L2-normalized."""
    out = np.zeros(dim)
    counts: dict[str, int] = {}
    for s in stems(text):
        counts[s] = counts.get(s, 0) + 1
    for s, tf in counts.items():
        if s in STOPWORDS:
            continue
        w = 1.0 + math.log(tf)
        padded = f"<{s}>"
        feats = [("w:" + s, 1.0)]
        if len(padded) > 4:
            feats += [("c:" + padded[i : i + 3], trigram_weight / (len(padded) - 2))
                      for i in range(len(padded) - 2)]  # fmt: skip
        for feature, value in feats:
            h = zlib.crc32(feature.encode("utf-8"))
            out[h % dim] += (1.0 if (h >> 31) & 1 else -1.0) * value * w
    norm = np.linalg.norm(out)
    return out / norm if norm else out


def test_hashing_vectors_follow_the_definition_whatever_the_batch():
    alone = [HashingEncoder().encode([t])[0] for t in TEXTS]
    batched = HashingEncoder().encode(TEXTS)
    warm = HashingEncoder()
    warm.encode(TEXTS[::-1])  # features and trigram buckets cached in another order
    again = warm.encode(TEXTS)
    for text, a, b, c in zip(TEXTS, alone, batched, again, strict=True):
        # the same bits however the texts are grouped or the tables were filled
        assert a.tobytes() == b.tobytes() == c.tobytes(), text
        assert np.allclose(a, _reference(text), atol=1e-12), text
    assert not batched[2].any() and not batched[3].any()


def test_hashing_vectors_keep_their_bits_as_the_feature_tables_grow():
    """Thousands of stems met first (the tables outgrow their first size several times,
    and short, long and stopword stems mix) change no bit of a later text's vector."""
    rng = np.random.default_rng(10)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, rng.integers(1, 30))) for _ in range(6000)]
    warm = HashingEncoder()
    warm.encode([" ".join(words[i : i + 500]) + " the and" for i in range(0, 6000, 500)])
    for text, fresh, grown in zip(
        TEXTS, HashingEncoder().encode(TEXTS), warm.encode(TEXTS), strict=True
    ):
        assert fresh.tobytes() == grown.tobytes(), text
    for text in words[:50]:
        assert np.allclose(warm.encode([text])[0], _reference(text), atol=1e-12), text


@pytest.fixture()
def project(tmp_path, store):
    files = {
        "sched/upload.py": "def upload():\n    retries the upload\n",
        "sched/lease.py": "lease renewal for the upload\n",
        "sched/other.py": "scheduler state machine\n",
        "docs/lease.md": "how a lease expires\n",
        # several chunks of one file: their terms pool into the file's coverage
        "sched/big.py": "upload retries\n"
        + "".join(f"filler {i}\n" for i in range(300))
        + "scheduler lease\n",
    }
    db = store(tmp_path, "p", files)
    prepare(db)
    pid = project_id(db, "p")
    return db, pid, term_stats(db, pid)


def test_file_coverage_on_masks_equals_the_gates_coverage(project):
    db, pid, stats = project
    p = gate_mod.plan(analyze("upload retries lease scheduler"), stats)
    assert len(p.focus_stems) >= 3
    rowids = [r[0] for r in db.query("SELECT id FROM chunks ORDER BY id")]
    combos = [set(), {p.focus_stems[0]}, set(p.focus_stems[1:]), set(p.focus_stems), {"x"}]
    cands = [Candidate(r, i, combos[i % len(combos)]) for i, r in enumerate(rowids)]
    weighted = _Weighted(p)
    for c in cands:
        assert weighted(c.matched) == gate_mod.coverage(p, c.matched)[1]
    # a file's candidates pool their terms
    files = dict(db.query("SELECT c.id, c.file_id FROM chunks c"))
    per_file: dict[int, set[str]] = {}
    for c in cands:
        per_file.setdefault(files[c.rowid], set()).update(c.matched)
    assert any(
        len(set().union(*(c.matched for c in cands if files[c.rowid] == f)))
        > max(len(c.matched) for c in cands if files[c.rowid] == f)
        for f in per_file
    )
    expected = {c.rowid: gate_mod.coverage(p, per_file[files[c.rowid]])[1] for c in cands}
    assert _file_coverage(db, stats, _Weighted(p), cands, cands) == expected


def test_a_coded_project_encodes_each_query_once_and_hashes_nothing(tmp_path, monkeypatch):
    """With stored codes (``encoder = "wordllama"``) a search encodes its query once with
    the configured encoder; no candidate text and no query is hashed (every candidate
    has its stored code)."""
    config = load_config(tmp_path, {"encoder": "wordllama"})
    db = open_authority(tmp_path, config)
    pid = db.write(lambda tx: ensure_project(tx, "notes", None))
    files = {f"notes/{i}.md": f"The upload lease {i} renews before the scheduler retries.\n"
             for i in range(4)}  # fmt: skip
    files |= {f"misc/{i}.md": f"Garden note {i}: tomatoes want sun.\n" for i in range(30)}
    rows = [prepare_file(p, t.encode()) for p, t in files.items()]
    db.write(lambda tx: put_files(tx, pid, rows))
    codes = vectors.encode_job(
        db, config, vectors.job_payload(pid, [(r.path, r.content_hash) for r in rows])
    )
    db.write(lambda tx: vectors.put(tx, pid, config, codes))
    model = vectors.configured(config)
    encoded: list[list[str]] = []
    real = model.encode
    monkeypatch.setattr(model, "encode", lambda texts: encoded.append(list(texts)) or real(texts))
    hashed: list = []
    real_hash = DEFAULT_ENCODER.encode_stems
    monkeypatch.setattr(
        DEFAULT_ENCODER, "encode_stems", lambda lists: hashed.append(lists) or real_hash(lists)
    )
    r = search(db, "notes", "lease renews")  # short: the rescue looks at codes too
    db.close()
    assert r["status"] == "ok" and r["items"][0]["path"].startswith("notes/")
    assert encoded == [["lease renews"]]
    assert hashed == []


def test_postings_are_read_only_for_stems_the_project_holds(project):
    """A term's forms that no chunk holds (the vocabulary says so) cost no postings
    query; the answer is the one of the held forms alone."""
    db, _, stats = project
    statements: list[tuple] = []
    db.conn.exec_trace = lambda cursor, sql, bindings: statements.append(bindings) or True
    try:
        stats.prefetch(["upload", "uploadzzq"])
        both = stats.bm25_scored([("upload", "uploadzzq")], 10)
    finally:
        db.conn.exec_trace = None
    assert both == stats.bm25_scored([("upload",)], 10) and both
    assert not any(b and "uploadzzq" in b for b in statements[1:])  # only its df lookup


@pytest.mark.parametrize("dim", [256, 64, 24])
def test_code_similarity_is_the_share_of_agreeing_signs(dim):
    """The word-by-word popcount (whole 64-bit words) and the byte path give each code's
    sign agreement with the query, 1 - 2 * differing bits / dim, bit for bit."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (500, dim // 8), dtype=np.uint8)
    query = rng.integers(0, 256, dim // 8, dtype=np.uint8)
    bits = np.unpackbits(codes, axis=1) != np.unpackbits(query)[None, :]
    expected = 1.0 - 2.0 * bits.sum(axis=1).astype(np.int32) / dim
    assert code_similarity(query, codes, dim).tobytes() == expected.tobytes()
