"""The optional dense route: a pluggable encoder and a deterministic offline default.

An :class:`Encoder` turns texts into fixed-length vectors; the engine only
takes cosines between a query vector and candidate vectors. Any object with
``dim`` and ``encode(texts) -> list[Sequence[float]]`` plugs in (a real
sentence-embedding model, for instance); nothing is downloaded by default.

:class:`HashingEncoder`, the default, is a feature-hashing bag of words: each
indexed stem (same tokenizer as FTS5, stopwords removed) and each character
trigram of it is hashed (CRC-32, stable across processes and machines) into
``dim`` signed buckets with sublinear term frequency, and the vector is
L2-normalized. It is deterministic and offline. It knows no synonyms: its value
is partial-word overlap (trigrams) and a similarity that does not depend on
BM25's length normalization. It is *not* a semantic model, which is why the
gate never lets it rescue a long question (DESIGN.md: cosine rescue only for
queries of at most two normalized terms).
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

from memoryd.search.terms import STOPWORDS, stems


@runtime_checkable
class Encoder(Protocol):
    dim: int

    def encode(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """One vector of length ``dim`` per text."""
        ...


class HashingEncoder:
    """Hashed stem + character-trigram features; pure Python, deterministic, offline."""

    def __init__(self, dim: int = 256, trigram_weight: float = 0.5) -> None:
        self.dim = dim
        self.trigram_weight = trigram_weight
        self._features = lru_cache(maxsize=200_000)(self._stem_features)

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = zlib.crc32(feature.encode("utf-8"))
        return h % self.dim, (1.0 if (h >> 31) & 1 else -1.0)

    def _stem_features(self, stem: str) -> tuple[tuple[int, float], ...]:
        out = [self._bucket("w:" + stem)]
        padded = f"<{stem}>"
        if len(padded) > 4:
            w = self.trigram_weight / (len(padded) - 2)
            for i in range(len(padded) - 2):
                b, sign = self._bucket("c:" + padded[i : i + 3])
                out.append((b, sign * w))
        return tuple(out)

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            v = [0.0] * self.dim
            counts = Counter(stems(text))
            for stem, tf in counts.items():
                if stem in STOPWORDS:
                    continue
                weight = 1.0 + math.log(tf)
                for bucket, value in self._features(stem):
                    v[bucket] += value * weight
            norm = math.sqrt(sum(x * x for x in v))
            vectors.append([x / norm for x in v] if norm else v)
        return vectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


DEFAULT_ENCODER = HashingEncoder()
