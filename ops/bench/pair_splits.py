"""What the generators of memory statement pairs share beyond their content: drawing
``n`` unique pairs of each label, and the command line that writes them as JSON lines.
The pairs themselves (domains, frames, values) stay in each generator, written apart."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import orjson

P = TypeVar("P")


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
