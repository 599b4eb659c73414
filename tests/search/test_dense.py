"""Encoders of the dense route: the in-wheel model never downloads, its codes
are reproducible, it knows synonyms; a user's command encoder plugs in."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from memoryd.base.errors import EncoderUnavailable
from memoryd.text.dense import (
    CommandEncoder,
    WordLlamaEncoder,
    code_similarity,
    load_encoder,
    pack,
    unpack,
)
from tests.conftest import offline as _offline


def test_wordllama_loads_and_encodes_with_the_network_refused(tmp_path):
    done = _offline(
        """
        from memoryd.text.dense import load_encoder
        enc = load_encoder("wordllama")
        print(enc.name, enc.encode(["a small offline test"]).shape)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["wordllama:l2_supercat:256", "(1,", "256)"]


def test_the_guard_catches_a_default_load_that_would_download(tmp_path):
    """The package's default load looks for its tokenizer where the wheel does not keep
    it and goes to the network: the refusal above is what a download would meet."""
    done = _offline(
        """
        from wordllama import WordLlama
        WordLlama.load()
        """,
        tmp_path,
    )
    assert done.returncode != 0
    assert "Failed to download" in done.stderr


@pytest.fixture(scope="module")
def wordllama():
    return WordLlamaEncoder()


def test_a_synonym_is_nearer_than_unrelated_text(wordllama):
    question = "which business did the firm buy"
    docs = [
        "The company acquired a small startup in the spring.",
        "The kettle boils water in two minutes.",
        "Rain is expected over the mountains tonight.",
    ]
    vecs = wordllama.encode([question, *docs])
    sims = vecs[1:] @ vecs[0]
    assert sims[0] > max(sims[1:]) + 0.1
    codes = unpack(pack(vecs), wordllama.dim)
    agree = code_similarity(codes[0], codes[1:], wordllama.dim)
    assert agree[0] == agree.max()


def test_codes_do_not_depend_on_batching_or_order(wordllama):
    texts = [f"line {i}: the parser reads token {i * 7} of the stream" for i in range(300)]
    texts += ["", "???", "naïve café crème", "x" * 5000]
    whole = pack(wordllama.encode(texts))
    one_by_one = b"".join(pack(wordllama.encode([t])) for t in texts)
    backwards = pack(wordllama.encode(texts[::-1])[::-1])
    assert whole == one_by_one == backwards
    assert wordllama.encode([""]).tolist() == [[0.0] * wordllama.dim]


def test_a_word_is_the_rounded_scaled_sum_of_its_tokens(wordllama):
    """Each word's int8 row, whatever else its batch holds: its tokens' embeddings
    scaled so the table's largest component is 127 steps, summed in token order,
    rounded and clipped (so a rebuild reproduces every stored code)."""
    from wordllama import WordLlama

    from memoryd.text.dense import wordllama_dir

    model = WordLlama.load(cache_dir=wordllama_dir(), disable_download=True)
    emb = np.asarray(model.embedding, dtype=np.float32)
    scale = np.float32(127 / np.abs(emb).max())
    words = ["lighthouse", "a", "naïve", "x" * 300, "parser"]
    wordllama.encode([" ".join(words)])
    for word in words:
        ids = model.tokenizer.encode(word, add_special_tokens=False).ids
        want = np.clip(np.round((emb[ids] * scale).sum(axis=0)), -127, 127).astype(np.int8)
        assert np.array_equal(wordllama._table[wordllama._rows[word.encode()]], want), word


def test_a_command_encoder_speaks_json_lines(tmp_path):
    script = tmp_path / "enc.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            for line in sys.stdin:
                texts = json.loads(line)["texts"]
                vecs = [[float(len(t)), float(t.count("a")), 1.0] for t in texts]
                print(json.dumps({"vectors": vecs}), flush=True)
            """
        )
    )
    enc = CommandEncoder(f"{sys.executable} {script}")
    assert enc.dim == 3 and enc.name.startswith("command:")
    v = enc.encode(["aaa", "bbbb"])
    assert v.shape == (2, 3)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)


def test_a_broken_command_or_unknown_encoder_is_a_typed_error(tmp_path):
    with pytest.raises(EncoderUnavailable, match="failed"):
        CommandEncoder(f"{sys.executable} -c pass")
    with pytest.raises(EncoderUnavailable, match="unknown encoder"):
        load_encoder("word2vec")
