"""The optional dense route: a pluggable encoder and a deterministic offline default.

An :class:`Encoder` turns texts into fixed-length vectors; the engine only
takes cosines between a query vector and candidate vectors. Any object with
``dim`` and ``encode(texts) -> list[Sequence[float]]`` plugs in (a real
sentence-embedding model, for instance); nothing is downloaded by default.

:class:`HashingEncoder`, the default, is a feature-hashing bag of words: each
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

import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memoryd.search.terms import STOPWORDS, stems


@runtime_checkable
class Encoder(Protocol):
    dim: int

    def encode(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """One vector of length ``dim`` per text."""
        ...


_WIDTH = 24  # feature slots per stem in the table; longer stems are encoded apart
_MAX_VOCAB = 200_000  # stems kept in the feature table (then it starts afresh)


class HashingEncoder:
    """Hashed stem + character-trigram features; deterministic, offline (numpy).

    Each stem's features are computed once and kept in a padded table (bucket
    and signed value per slot), so encoding a text is one tokenizer pass, a
    dictionary lookup per token and a weighted ``bincount``.
    """

    def __init__(self, dim: int = 256, trigram_weight: float = 0.5) -> None:
        self.dim = dim
        self.trigram_weight = trigram_weight
        self._reset()

    def _reset(self) -> None:
        self._ids: dict[str, int] = {}
        self._buckets = np.zeros((1024, _WIDTH), dtype=np.intp)
        self._values = np.zeros((1024, _WIDTH), dtype=np.float64)
        self._long: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._rows = 0

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = zlib.crc32(feature.encode("utf-8"))
        return h % self.dim, (1.0 if (h >> 31) & 1 else -1.0)

    def _stem_features(self, stem: str) -> list[tuple[int, float]]:
        """Buckets and signed values of one stem's features (word, then trigrams)."""
        out = [self._bucket("w:" + stem)]
        padded = f"<{stem}>"
        if len(padded) > 4:
            w = self.trigram_weight / (len(padded) - 2)
            for i in range(len(padded) - 2):
                b, sign = self._bucket("c:" + padded[i : i + 3])
                out.append((b, sign * w))
        return out

    def _add(self, new: set[str]) -> None:
        """Give each new stem its row (-1: a stopword, no features; below -1: more
        features than the table's width, kept apart), all rows written at once."""
        if len(self._ids) + len(new) > _MAX_VOCAB:
            self._reset()
        short: list[str] = []
        pad_b: list[list[int]] = []
        pad_v: list[list[float]] = []
        for stem in new:
            if stem in STOPWORDS:
                self._ids[stem] = -1
                continue
            feats = self._stem_features(stem)
            if len(feats) > _WIDTH:
                i = -2 - len(self._long)
                self._long[i] = (np.array([b for b, _ in feats]), np.array([v for _, v in feats]))
                self._ids[stem] = i
                continue
            short.append(stem)
            fill = _WIDTH - len(feats)
            pad_b.append([b for b, _ in feats] + [0] * fill)
            pad_v.append([v for _, v in feats] + [0.0] * fill)
        if not short:
            return
        first = self._rows
        need = first + len(short)
        if need > len(self._buckets):
            size = max(need, 2 * len(self._buckets))
            grown_b = np.zeros((size, _WIDTH), np.intp)
            grown_v = np.zeros((size, _WIDTH))
            grown_b[:first] = self._buckets[:first]
            grown_v[:first] = self._values[:first]
            self._buckets, self._values = grown_b, grown_v
        self._buckets[first:need] = pad_b
        self._values[first:need] = pad_v
        self._ids.update(zip(short, range(first, need), strict=True))
        self._rows = need

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.encode_stems([stems(text) for text in texts])

    def encode_stems(self, token_lists: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """:meth:`encode` of texts already tokenized (their indexed stems, in order),
        all of them in one array operation."""
        n = len(token_lists)
        counted = [Counter(toks) for toks in token_lists]
        ids_of = self._ids
        new = {t for counts in counted for t in counts if t not in ids_of}
        if new:
            if len(ids_of) + len(new) > _MAX_VOCAB:  # start afresh with this batch's stems
                new = {t for counts in counted for t in counts}
            self._add(new)
            ids_of = self._ids
        idx: list[int] = []
        tfs: list[int] = []
        seg: list[int] = []
        longs: list[tuple[int, int, int]] = []
        for j, counts in enumerate(counted):
            for t, tf in counts.items():
                i = ids_of[t]
                if i >= 0:
                    idx.append(i)
                    tfs.append(tf)
                    seg.append(j)
                elif i < -1:
                    longs.append((j, i, tf))
        out = np.zeros(n * self.dim)
        if idx:
            rows = np.array(idx, dtype=np.intp)
            weight = 1.0 + np.log(np.array(tfs, dtype=np.float64))
            buckets = self._buckets[rows] + (np.array(seg, dtype=np.intp) * self.dim)[:, None]
            out += np.bincount(
                buckets.ravel(),
                weights=(self._values[rows] * weight[:, None]).ravel(),
                minlength=n * self.dim,
            )
        vectors = out.reshape(n, self.dim)
        for j, i, tf in longs:
            b, val = self._long[i]
            vectors[j] += np.bincount(b, weights=val * (1.0 + np.log(tf)), minlength=self.dim)
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        norms[norms == 0] = 1.0
        vectors /= norms[:, None]
        return list(vectors)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na, nb = float(np.sqrt(a @ a)), float(np.sqrt(b @ b))
    return float(a @ b) / (na * nb) if na and nb else 0.0


DEFAULT_ENCODER = HashingEncoder()
