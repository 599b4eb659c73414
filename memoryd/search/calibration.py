"""Scores that estimate the chance an item answers the question.

A source rates an item by signals the gate and its rankings already compute
(:func:`memoryd.search.pipeline.scored`): its *evidence* (the share of the
question's focus-term specificity it holds) and its *strength* in the source (its
fused reciprocal-rank score). The pipeline adds what only the list shows: the
item's place in its source's list (``first``: 1 / (1 + rank)), its *margin* over
the next item's raw score, the number of focus terms of the question, and the
kind of source. A logistic model on these (:class:`Model`, coefficients in
``calibration.json`` beside this module) turns them into a probability that the
item answers the question.

The model is fitted on memoryd's development sets only
(``ops/bench/fit_calibration.py``), with the coefficients of the evidence signals
held non-negative, so more evidence never lowers a score, and checked on the
untouched splits (``ops/bench/bench_devsets.py``: expected calibration error,
reliability tables, risk-coverage).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("calibration.json")
SIGNALS = "_signals"  # an item's (evidence, strength) until the pipeline calibrates it
FEATURES = ("evidence", "strength", "first", "margin", "focus", "archive", "records")
# more of these never lowers a score: their coefficients are held at or above zero
MONOTONE = ("evidence", "strength", "first", "margin")
KINDS = ("chunks", "archive", "records")  # chunks: the kind without its own intercept


@dataclass(frozen=True)
class Model:
    """A logistic model: P(answers) = 1 / (1 + exp(-(intercept + sum w_f * x_f)))."""

    intercept: float
    weights: dict[str, float]

    def probability(self, x: dict[str, float]) -> float:
        z = self.intercept + sum(w * x.get(f, 0.0) for f, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def as_dict(self) -> dict:
        return {"intercept": self.intercept, "weights": self.weights}


@cache
def load(path: Path = DATA) -> Model:
    data = json.loads(path.read_text())
    weights = {f: float(data["weights"].get(f, 0.0)) for f in FEATURES}
    negative = [f for f in MONOTONE if weights[f] < 0]
    if negative:
        raise ValueError(f"{path}: negative weights on monotone signals {negative}")
    return Model(float(data["intercept"]), weights)


_override: list[Model | None] = []  # using(): a model, or None for the raw scores
_recording: list[bool] = []


def active() -> Model | None:
    """The model scoring items: ``calibration.json``'s unless :func:`using` says otherwise."""
    return _override[-1] if _override else load()


@contextmanager
def using(model: Model | None) -> Iterator[None]:
    """Score with ``model`` inside the block; None keeps the uncalibrated scores
    (evidence times strength), as benchmarks compare."""
    _override.append(model)
    try:
        yield
    finally:
        _override.pop()


@contextmanager
def recording() -> Iterator[None]:
    """Inside the block every item keeps its feature values under ``signals`` (what
    the fitting script learns from)."""
    _recording.append(True)
    try:
        yield
    finally:
        _recording.pop()


def features(items: list[dict], kind: str, focus: int) -> list[dict[str, float]]:
    """Each item's feature values (``items``: one source's list, best first, each
    holding its :data:`SIGNALS`)."""
    signals = [item.get(SIGNALS) or (float(item["score"]), 1.0) for item in items]
    raw = [e * s for e, s in signals]
    out = []
    for rank, (evidence, strength) in enumerate(signals):
        nxt = raw[rank + 1] if rank + 1 < len(raw) else 0.0
        x = {
            "evidence": evidence,
            "strength": strength,
            "first": 1.0 / (1 + rank),
            "margin": max(0.0, raw[rank] - nxt),
            "focus": math.log1p(focus),
        }
        x.update({k: float(kind == k) for k in KINDS[1:]})
        out.append(x)
    return out


def calibrate(items: list[dict], kind: str, focus: int) -> list[dict]:
    """``items`` (one source's, best first) scored by the active model; without one,
    their raw scores stay. Their signals are dropped (kept as ``signals`` while
    :func:`recording`)."""
    model = active()
    xs = features(items, kind, focus)
    for item, x in zip(items, xs, strict=True):
        item.pop(SIGNALS, None)
        if model is not None:
            item["score"] = model.probability(x)
        if _recording:
            item["signals"] = x
    return items
