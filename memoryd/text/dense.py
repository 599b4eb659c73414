"""The dense route: pluggable encoders, the in-wheel semantic model, compact codes.

An :class:`Encoder` turns texts into fixed-length vectors; the engine only
takes cosines between a query vector and candidate vectors. Any object with
``dim``, ``name`` and ``encode(texts) -> list[Sequence[float]]`` plugs in;
nothing is ever downloaded. The config setting ``encoder`` picks one
(:func:`load_encoder`): ``hashing`` (below, the default: in memory, nothing
stored; docs/decisions/encoder-default.md), ``wordllama``
(:class:`WordLlamaEncoder`, the model inside the wordllama wheel), ``minilm``
(:class:`memoryd.text.minilm.MiniLMEncoder`, a transformer sentence encoder from the
optional ``semantic`` extra; docs/decisions/encoder-minilm.md) or
``command:...`` (:class:`CommandEncoder`, a user's own model behind JSON lines).
All but ``hashing`` store each chunk's vector after ingest as a sign code
(:func:`pack`, 1 bit a dimension; :mod:`memoryd.storage.vectors`) that
:mod:`memoryd.search.semantic` searches by brute force; a candidate without a
stored code (not coded yet) is re-ranked by :class:`HashingEncoder` at query time.

:class:`HashingEncoder` is a feature-hashing bag of words: each
indexed stem (same tokenizer as FTS5, stopwords removed) and each character
trigram of it is hashed (CRC-32, stable across processes and machines) into
``dim`` signed buckets with sublinear term frequency, and the vector is
L2-normalized (numpy). It is deterministic and offline. It knows no synonyms: its value
is partial-word overlap (trigrams) and a similarity that does not depend on
BM25's length normalization. It is *not* a semantic model, which is why the
gate never lets it rescue a long question (DESIGN.md: cosine rescue only for
queries of at most two normalized terms).
"""

from __future__ import annotations

import functools
import json
import math
import operator
import shlex
import threading
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, filterfalse
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memoryd.base.errors import EncoderUnavailable
from memoryd.base.lazy import lazy_module, loaded
from memoryd.text.minilm import MINILM, MiniLMEncoder
from memoryd.text.terms import STOPWORDS, stems

if TYPE_CHECKING:
    import subprocess

np = lazy_module("numpy")  # loaded on first use (memoryd.base.lazy)


@runtime_checkable
class Encoder(Protocol):
    dim: int
    name: str  # what made a stored vector: vectors of two names are never compared

    def encode(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """One vector of length ``dim`` per text."""
        ...


_WIDTH = 24  # a stem with more features is summed apart, after the others (as it always was)
_MAX_VOCAB = 200_000  # stems kept in the feature table (then it starts afresh)


class HashingEncoder:
    """Hashed stem + character-trigram features; deterministic, offline (numpy).

    Each stem's features are computed once and kept in flat tables (bucket and
    signed value per feature, a stem's features one after the other), so encoding a
    text is one tokenizer pass, a dictionary lookup per token and a weighted
    ``bincount`` over its stems' features only.
    """

    def __init__(self, dim: int = 256, trigram_weight: float = 0.5) -> None:
        self.dim = dim
        self.name = f"hashing:{dim}:{trigram_weight:g}"
        self.trigram_weight = trigram_weight
        self._reset()

    def _reset(self) -> None:
        self._ids: dict[str, int] = {}
        self._tables = False  # the arrays below, made on the first encode_stems
        self._features = 0
        self._long: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._rows = 0
        # character trigram -> (bucket, sign): far fewer trigrams than stems, so a new
        # stem mostly costs one hash (its word feature), not one per trigram
        self._trigrams: dict[str, tuple[int, float]] = {}
        # stem -> its features (buckets, values), None for a stopword: encode_plain's
        self._plain: dict[str, tuple[list[int], list[float]] | None] = {}

    def _make_tables(self) -> None:
        self._start = np.zeros(1024, dtype=np.intp)  # row -> its first feature
        self._count = np.zeros(1024, dtype=np.intp)  # row -> how many features
        self._feature_b = np.zeros(8192, dtype=np.intp)
        self._feature_v = np.zeros(8192, dtype=np.float64)
        self._tables = True

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = zlib.crc32(feature.encode("utf-8"))
        return h % self.dim, (1.0 if (h >> 31) & 1 else -1.0)

    def _new_trigram(self, tri: str) -> tuple[int, float]:
        """A trigram's (bucket, sign), hashed once per encoder."""
        self._trigrams[tri] = hit = self._bucket("c:" + tri)
        return hit

    def _add(self, new: set[str]) -> None:
        """Give each new stem its row and features (-1: a stopword, no features; below
        -1: more features than :data:`_WIDTH`, kept apart), all rows written at once.
        A stem's features: its word, then each character trigram of ``<stem>`` (stems
        of one or two letters: the word alone), hashed (:meth:`_bucket`) into a bucket
        and a sign; a trigram's value is ``trigram_weight`` shared among them."""
        if len(self._ids) + len(new) > _MAX_VOCAB:
            self._reset()
        if not self._tables:
            self._make_tables()
        short: list[str] = []
        counts: list[int] = []
        flat_b: list[int] = []  # the new rows' features, one after the other
        flat_v: list[float] = []
        for stem in new:
            if stem in STOPWORDS:
                self._ids[stem] = -1
                continue
            at = len(flat_b)
            self._stem_features(stem, flat_b, flat_v)
            if len(flat_b) - at > _WIDTH:
                i = -2 - len(self._long)
                self._long[i] = (np.array(flat_b[at:]), np.array(flat_v[at:]))
                self._ids[stem] = i
                del flat_b[at:], flat_v[at:]
                continue
            short.append(stem)
            counts.append(len(flat_b) - at)
        if not short:
            return
        first, at = self._rows, self._features
        need, end = first + len(short), at + len(flat_b)
        self._start, self._count = _grown(need, self._start, self._count)
        self._feature_b, self._feature_v = _grown(end, self._feature_b, self._feature_v)
        starts, k = [], at
        for c in counts:
            starts.append(k)
            k += c
        self._count[first:need] = counts
        self._start[first:need] = starts
        self._feature_b[at:end] = flat_b
        self._feature_v[at:end] = flat_v
        self._ids.update(zip(short, range(first, need), strict=True))
        self._rows, self._features = need, end

    def _stem_features(self, stem: str, flat_b: list[int], flat_v: list[float]) -> None:
        """Append a (non-stopword) stem's features: its word, then each character
        trigram of ``<stem>`` (stems of one or two letters: the word alone)."""
        b, sign = self._bucket("w:" + stem)
        flat_b.append(b)
        flat_v.append(sign)
        n = len(stem)  # trigrams of "<stem>"
        if n >= 3:
            known = self._trigrams
            padded, w = f"<{stem}>", self.trigram_weight / n
            for i in range(n):
                tri = padded[i : i + 3]
                hit = known.get(tri) or self._new_trigram(tri)
                flat_b.append(hit[0])
                flat_v.append(hit[1] * w)

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.encode_stems([stems(text) for text in texts])

    def encode_plain(self, token_lists: Sequence[Sequence[str]]) -> list[list[float]]:
        """:meth:`encode_stems` in Python lists, bit for bit (the same additions in the
        same order, the same logarithms and norms): a query's few vectors without
        numpy's import (a one-shot search, issue 32 item 6)."""
        plain, dim = self._plain, self.dim
        if len(plain) > _MAX_VOCAB:
            plain.clear()
        out = []
        for toks in token_lists:
            vec = [0.0] * dim
            longs = []
            for stem, tf in Counter(toks).items():
                if stem not in plain:
                    if stem in STOPWORDS:
                        plain[stem] = None
                    else:
                        plain[stem] = feats = ([], [])
                        self._stem_features(stem, *feats)
                feats = plain[stem]
                if feats is None:
                    continue
                w = 1.0 + math.log(tf)
                if len(feats[0]) > _WIDTH:  # summed apart, after the others
                    longs.append((feats, w))
                    continue
                for b, v in zip(*feats, strict=True):
                    vec[b] += v * w
            for (bs, vs), w in longs:
                part = [0.0] * dim
                for b, v in zip(bs, vs, strict=True):
                    part[b] += v * w
                vec = list(map(operator.add, vec, part))
            norm = math.sqrt(numpy_sum(list(map(operator.mul, vec, vec)))) or 1.0
            out.append([x / norm for x in vec])
        return out

    def encode_stems(self, token_lists: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """:meth:`encode` of texts already tokenized (their indexed stems, in order),
        all of them in one array operation.

        Each text's distinct stems are weighted by sublinear term frequency and summed
        in the order of their first occurrence (a ``Counter`` keeps that order and
        counts in C, so only distinct stems reach numpy), each stem's features in
        their order: the order of the additions, and so every bit of the vector, does
        not depend on how the texts are batched."""
        n = len(token_lists)
        counts = [Counter(toks) for toks in token_lists]
        new = set(filterfalse(self._ids.__contains__, chain.from_iterable(counts)))
        if new:
            if len(self._ids) + len(new) > _MAX_VOCAB:  # start afresh with this batch's stems
                new = set().union(*counts)
            self._add(new)
        distinct = [len(c) for c in counts]
        total = sum(distinct)
        out = np.zeros((n, self.dim))
        if total:
            ids_of = self._ids.__getitem__
            ids = np.fromiter(map(ids_of, chain.from_iterable(counts)), np.intp, total)
            tf = np.fromiter(chain.from_iterable(c.values() for c in counts), np.float64, total)
            seg = np.repeat(np.arange(n, dtype=np.intp), distinct)
            weight = 1.0 + _logs(tf)
            short = ids >= 0
            if short.any():
                out = self._summed(ids[short], seg[short], weight[short], n)
            for j, i, w in zip(seg[ids < -1], ids[ids < -1], weight[ids < -1], strict=True):
                b, val = self._long[int(i)]
                out[j] += np.bincount(b, weights=val * w, minlength=self.dim)
        norms = np.sqrt((out * out).sum(axis=1))
        norms[norms == 0] = 1.0
        out /= norms[:, None]
        return list(out)

    def _summed(self, rows: np.ndarray, seg: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
        """(n, dim): each text's weighted features of its stems ``rows`` (text ``seg``),
        added in order."""
        count = self._count[rows]
        ends = np.cumsum(count)
        at = np.arange(int(ends[-1]), dtype=np.intp) + np.repeat(
            self._start[rows] - ends + count, count
        )
        buckets = self._feature_b[at] + np.repeat(seg * self.dim, count)
        values = self._feature_v[at] * np.repeat(weight, count)
        return np.bincount(buckets, weights=values, minlength=n * self.dim).reshape(n, self.dim)


def _logs(tf: np.ndarray) -> np.ndarray:
    """``log`` of each term frequency as ``math.log`` takes it (numpy's may differ in
    the last bit on some CPUs; :meth:`HashingEncoder.encode_plain` uses ``math``'s)."""
    return np.fromiter(map(math.log, tf.tolist()), np.float64, len(tf))


def _grown(need: int, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` (of one length) with room for ``need`` items: the same arrays, or
    copies at least twice as long."""
    if need <= len(arrays[0]):
        return arrays
    size = max(need, 2 * len(arrays[0]))
    grown = []
    for a in arrays:
        g = np.zeros(size, dtype=a.dtype)
        g[: len(a)] = a
        grown.append(g)
    return tuple(grown)


def _fold_table() -> bytes:
    """ASCII letters lowercased, ASCII digits and ``_`` kept, other ASCII bytes become
    spaces; bytes of UTF-8 sequences (>= 0x80) stay word bytes."""
    table = bytearray(range(256))
    for c in range(128):
        ch = chr(c)
        if ch.isupper():
            table[c] = ord(ch.lower())
        elif not (ch.isalnum() or ch == "_"):
            table[c] = 0x20
    return bytes(table)


_FOLD = _fold_table()
_GROUP = 128  # texts summed in one array operation
_MAX_WORDS = 200_000  # words kept in the word table (then it starts afresh)
_TEXT_WORDS = 4096  # distinct words of one text that count (a chunk has far fewer)
_STEPS = 127  # a word vector's components, in whole steps of one scale (int8)
# New words from which the tokenizer's batch call (a pool of threads) pays: handing a
# query's few words to the pool cost about 1 ms of wall time a query, each alone 20 µs
_BATCH_WORDS = 256
WORDLLAMA = "wordllama:l2_supercat:256"  # the name of the wheel's model as memoryd uses it


def text_words(text: str) -> list[bytes]:
    """Distinct words of ``text`` in order of first occurrence (ASCII-lowercased UTF-8
    runs of letters, digits, ``_`` and non-ASCII characters), by byte translation."""
    words = text.encode("utf-8", "replace").translate(_FOLD).split()
    return list(dict.fromkeys(words))[:_TEXT_WORDS]


def wordllama_dir() -> Path:
    """The installed ``wordllama`` package: weights and tokenizer ship inside it."""
    import wordllama

    return Path(wordllama.__file__).parent


class WordLlamaEncoder:
    """wordllama's 256-dimension static embeddings (MIT), loaded from its wheel only.

    ``WordLlama.load(cache_dir=<the package>, disable_download=True)`` is the only
    load: the wheel keeps the tokenizer in ``tokenizers/`` where the default cache
    layout would miss it and download, so the package itself is named as the cache
    and downloads are off (a missing file is an error, never a network call).

    A text's vector is the sum of its distinct words' vectors (a word's vector: the
    sum of its tokens' embeddings, tokenized once per word and kept), L2-normalized:
    the model's average pooling with each distinct word counted once (the model's
    embedding norms already weigh frequent words down). Tokenizing every chunk would
    cost about 1 MB/s. Word vectors are kept as int8 in steps of one scale (a token's
    largest component is 127 steps; longer words are clipped there), so a text's sum
    is an exact integer sum whatever the order or batching: a rebuild reproduces the
    stored codes bit for bit, and the gather moves a quarter of float32's bytes.
    """

    def __init__(self) -> None:
        from wordllama import WordLlama

        try:
            model = WordLlama.load(cache_dir=wordllama_dir(), disable_download=True)
        except (OSError, ValueError) as e:
            raise EncoderUnavailable(
                f"the wordllama model could not be loaded from its wheel ({e}); reinstall"
                " wordllama, or set encoder = 'hashing'"
            ) from e
        self._tokenizer = model.tokenizer
        self._tokenizer.no_padding()
        emb = np.asarray(model.embedding, dtype=np.float32)
        # rows are scaled as they are gathered (the same float32 products): a scaled
        # copy of the whole table cost each process 33 MB and tens of ms at load
        self._embedding = emb
        self._scale = np.float32(_STEPS / np.maximum(emb.max(), -emb.min()))
        self.dim = int(emb.shape[1])
        self.name = WORDLLAMA
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._rows: dict[bytes, int] = {}  # row 0 of the table: zeros (padding)
        self._table = np.zeros((4096, self.dim), dtype=np.int8)

    def _add(self, new: list[bytes]) -> None:
        """Word vectors of ``new`` words (one tokenizer call for all of them)."""
        first = len(self._rows) + 1
        need = first + len(new)
        if need > len(self._table):
            grown = np.zeros((max(need, 2 * len(self._table)), self.dim), dtype=np.int8)
            grown[:first] = self._table[:first]
            self._table = grown
        texts = [w.decode("utf-8", "replace") for w in new]
        tok = self._tokenizer
        if len(texts) < _BATCH_WORDS:  # a query's new words: no thread pool (the same ids)
            encs = [tok.encode(text, add_special_tokens=False) for text in texts]
        else:
            encs = tok.encode_batch(texts, add_special_tokens=False)
        ids = [enc.ids for enc in encs]
        vocab = len(self._embedding)  # the padding id: gathered as row 0, then zeroed
        by_length = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for g in range(0, len(ids), _GROUP * 8):
            part = by_length[g : g + _GROUP * 8]
            pad = np.full((len(part), max(1, len(ids[part[-1]]))), vocab, dtype=np.intp)
            for j, i in enumerate(part):
                pad[j, : len(ids[i])] = ids[i]
            np.clip(pad, 0, vocab, out=pad)
            rows = self._embedding[np.where(pad == vocab, 0, pad)] * self._scale
            rows[pad == vocab] = 0.0
            sums = rows.sum(axis=1)  # in token order: the same in any group
            self._table[[first + i for i in part]] = np.clip(np.round(sums), -_STEPS, _STEPS)
        self._rows.update(zip(new, range(first, need), strict=True))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per text (a text without words: zeros)."""
        words = [text_words(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(words[i]))  # little padding
        with self._lock:
            new = [w for w in dict.fromkeys(chain.from_iterable(words)) if w not in self._rows]
            if new:
                if len(self._rows) + len(new) > _MAX_WORDS:  # afresh with these texts' words
                    self._reset()
                    new = list(dict.fromkeys(chain.from_iterable(words)))
                self._add(new)
            for g in range(0, len(texts), _GROUP):
                part = order[g : g + _GROUP]
                out[part] = self._sum([words[i] for i in part])
        norms = np.linalg.norm(out, axis=1)
        norms[norms == 0] = 1.0
        return out / norms[:, None]

    def _sum(self, part: list[list[bytes]]) -> np.ndarray:
        """Each text's sum of word vectors: the texts' word rows padded with the zero
        row to one length, gathered, and summed along the words."""
        width = max(map(len, part), default=0)
        idx = np.zeros((len(part), max(width, 1)), dtype=np.intp)
        row = self._rows.__getitem__
        for i, ws in enumerate(part):
            idx[i, : len(ws)] = list(map(row, ws))
        return self._table[idx].sum(axis=1, dtype=np.int32)


class CommandEncoder:
    """A user's own model behind a command speaking JSON lines on stdin/stdout.

    memoryd writes ``{"texts": [...]}`` on one line and reads one line
    ``{"vectors": [[...], ...]}`` (one vector per text, all of one length). The
    process is started once and kept; the command is never run through a shell.
    Its name is the command line, so changing the command means a rebuild.
    """

    def __init__(self, command: str) -> None:
        self.name = f"command:{command}"
        self._argv = shlex.split(command)
        if not self._argv:
            raise EncoderUnavailable("encoder = 'command:' names no command")
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.dim = len(self.encode(["dimension probe"])[0])

    def _ask(self, texts: list[str]) -> list:
        if self._proc is None or self._proc.poll() is not None:
            import subprocess  # here: only a command encoder starts a process (4 ms)

            self._proc = subprocess.Popen(
                self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"texts": texts}) + "\n")
        self._proc.stdin.flush()
        return json.loads(self._proc.stdout.readline())["vectors"]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            try:
                vectors = self._ask(list(texts))
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise EncoderUnavailable(
                    f"encoder command {self._argv[0]!r} failed ({e}); it must answer each"
                    ' line {"texts": [...]} with one line {"vectors": [[...], ...]}'
                ) from e
        out = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(out, axis=1)
        norms[norms == 0] = 1.0
        return out / norms[:, None]


_NAMES = {"wordllama": WORDLLAMA, "hashing": "hashing", "minilm": MINILM}
# Source bytes one vectors job codes at most, per encoder (the setting's own value
# when smaller): a job must end well inside ``job_timeout_seconds`` on a busy machine.
# minilm codes about 1,000 word pieces a CPU-second, so the setting's 1 MiB (about
# 160,000 of them) took over 600 s of wall time at load 12 and was killed, twice.
_JOB_BYTES = {"minilm": 64 * 1024}
_UNKNOWN = (
    "unknown encoder {spec!r}: use 'wordllama', 'minilm', 'hashing' or 'command:<program and args>'"
)


def encoder_name(spec: str) -> str:
    """The name vectors of the encoder a config ``encoder`` value names are stored
    under, without loading it."""
    if spec.startswith("command:"):
        return f"command:{spec[len('command:') :].strip()}"
    if spec in _NAMES:
        return _NAMES[spec]
    raise EncoderUnavailable(_UNKNOWN.format(spec=spec))


def job_bytes(spec: str, configured: int) -> int:
    """Source bytes of one vectors job under encoder ``spec`` (``configured``: the
    ``vectors_job_bytes`` setting)."""
    return min(configured, _JOB_BYTES.get(spec, configured))


@lru_cache(maxsize=8)
def load_encoder(spec: str) -> Encoder:
    """The encoder a config ``encoder`` value names, loaded once per process."""
    if spec == "wordllama":
        return WordLlamaEncoder()
    if spec == "hashing":
        return HashingEncoder()
    if spec == "minilm":
        return MiniLMEncoder()
    if spec.startswith("command:"):
        return CommandEncoder(spec[len("command:") :].strip())
    raise EncoderUnavailable(_UNKNOWN.format(spec=spec))


# -- compact codes ------------------------------------------------------------------
# A stored vector is its signs (1 bit per dimension, numpy packbits): 32 bytes for
# 256 dimensions. Similarity of codes is the share of agreeing signs mapped to
# [-1, 1] (1 - 2 * hamming / dim), the scale the gate's floor is calibrated on.


def pack(vectors: np.ndarray) -> bytes:
    """The sign codes of ``vectors`` (rows), concatenated."""
    return np.packbits(np.asarray(vectors) > 0, axis=1).tobytes()


def unpack(blob: bytes, dim: int) -> np.ndarray:
    """Rows of ``dim // 8`` code bytes from :func:`pack`'s output."""
    return np.frombuffer(blob, dtype=np.uint8).reshape(-1, dim // 8)


def code_similarity(query: np.ndarray, codes: np.ndarray, dim: int) -> np.ndarray:
    """Sign agreement of one query code (``dim // 8`` bytes) with each row of codes:
    XOR and population count over 64-bit words (bytes when a code is not a whole
    number of words)."""
    if codes.shape[1] % 8:
        diff = np.bitwise_xor(codes, query)
        hamming = np.bitwise_count(diff).sum(axis=1, dtype=np.int32)
        return 1.0 - 2.0 * hamming / dim
    # one column of words at a time: a sum along rows of four words cost more than the
    # XOR and the counts together (2.5x the whole, at 7,400 codes)
    words = np.ascontiguousarray(codes).view(np.uint64)
    q = query.copy().view(np.uint64)
    hamming = np.zeros(len(words), np.int32)
    for k in range(words.shape[1]):
        hamming += np.bitwise_count(words[:, k] ^ q[k])
    return 1.0 - 2.0 * hamming / dim


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (see :func:`cosines`)."""
    return cosines(a, [b])[0]


def cosines(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """The cosine of ``query`` with each of ``vectors`` (numpy's or lists): each sum of
    products in numpy's summation order (:func:`numpy_sum`), so arrays and lists give
    the same bits, and a BLAS's order of additions never enters."""
    if not vectors:
        return []
    if any(hasattr(v, "tolist") for v in (query, *vectors)):
        q = np.asarray(query, dtype=np.float64)
        m = np.asarray(vectors, dtype=np.float64)
        nq = math.sqrt((q * q).sum())
        dots, norms = (m * q).sum(axis=1).tolist(), np.sqrt((m * m).sum(axis=1)).tolist()
        return [d / (nq * n) if nq and n else 0.0 for d, n in zip(dots, norms, strict=True)]
    nq = math.sqrt(numpy_sum(list(map(operator.mul, query, query))))
    out = []
    for v in vectors:
        nv = math.sqrt(numpy_sum(list(map(operator.mul, v, v))))
        dot = numpy_sum(list(map(operator.mul, v, query)))
        out.append(dot / (nq * nv) if nq and nv else 0.0)
    return out


def numpy_sum(values: list[float]) -> float:
    """``sum`` of ``values`` in the order numpy's ``add.reduce`` adds a contiguous run
    of float64 (its pairwise summation: runs under 8 in order, up to 128 in eight
    interleaved partial sums, longer ones halved at a multiple of 8), bit for bit."""
    return -0.0 + _pairwise(values, 0, len(values))


def _pairwise(a: list[float], lo: int, n: int) -> float:
    if n < 8:
        res = -0.0
        for x in a[lo : lo + n]:
            res += x
        return res
    if n <= 128:
        r = a[lo : lo + 8]
        i, whole = 8, n - n % 8
        while i < whole:
            for j in range(8):
                r[j] += a[lo + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for x in a[lo + i : lo + n]:
            res += x
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def plain_vectors() -> bool:
    """Whether a query's few hashing vectors are made in Python
    (:meth:`HashingEncoder.encode_plain`): numpy is not loaded (a one-shot command;
    its import costs more than the vectors)."""
    return not loaded("numpy")


@functools.cache
def default_encoder() -> HashingEncoder:
    """The shared hashing encoder, made on first use (its tables are numpy arrays: a
    module importing this one, as every capability does, loads no numpy)."""
    return HashingEncoder()


def __getattr__(name: str) -> HashingEncoder:
    if name == "DEFAULT_ENCODER":  # the shared one, by its older name
        return default_encoder()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
