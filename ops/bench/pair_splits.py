"""What the generators of memory statement pairs share beyond their content: drawing
``n`` unique pairs of each label, the command line that writes them as JSON lines, and
English number words. The pairs themselves (domains, frames, values) stay in each
generator, written apart."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import orjson

P = TypeVar("P")

_ONES = (  # noqa: SIM905 (one string reads better than twenty quoted words)
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "- - twenty thirty forty fifty sixty seventy eighty ninety".split()  # noqa: SIM905


def in_words(n: int) -> str:
    """``n`` (0 to 999,999) in English words: 45 -> forty-five, 1500 -> one thousand
    five hundred."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + in_words(rest))
    rest = n % 1000
    return in_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + in_words(rest))


def unique_per_label(
    labels: Sequence[str], n: int, draw: Callable[[str], P], texts: Callable[[P], tuple]
) -> list[P]:
    """``n`` pairs of each label in turn from ``draw``, skipping any whose ``texts`` (the
    two sentences) were drawn before."""
    seen: set[tuple] = set()
    out: list[P] = []
    for label in labels:
        made = 0
        while made < n:
            p = draw(label)
            if texts(p) not in seen:
                seen.add(texts(p))
                out.append(p)
                made += 1
    return out


def write_pairs_cli(
    description: str, pairs: Callable[[int, int], list[dict]], default_pairs: int, seed: int
) -> None:
    """``--out FILE [--pairs N] [--seed S]``: one JSON line per pair."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=default_pairs, help="pairs of each label")
    ap.add_argument("--seed", type=int, default=seed)
    args = ap.parse_args()
    args.out.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in pairs(args.pairs, args.seed)))
