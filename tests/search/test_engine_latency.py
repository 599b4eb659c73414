"""The query path's shortcuts give the answers of the plain computations they replace:
the hashing encoder's batched counting, its trigram cache, and file coverage on bit
masks of focus terms."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from memoryd.search import gate as gate_mod
from memoryd.search.dense import HashingEncoder
from memoryd.search.engine import Candidate, _file_coverage, _Weighted
from memoryd.search.stats import term_stats
from memoryd.search.terms import STOPWORDS, analyze, stems
from memoryd.storage.corpus import project_id
from memoryd.storage.fts import prepare

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
