"""Fit memoryd's score calibration on the development splits only.

Answers every ``dev`` question of ``bench_devsets.py`` (repo, conversations,
conversations-large) uncalibrated, records each top-3 item's calibration
features (:mod:`memoryd.search.calibration`) and whether it is one of the
question's answers, and fits a logistic model by projected gradient descent
(numpy only): the coefficients of the evidence signals
(:data:`calibration.MONOTONE`) are held at or above zero, so more evidence
never lowers a score; the L2 penalty is chosen by cross-validation on dev,
folds by question. Writes ``memoryd/search/calibration.json``, then answers
dev again with the new model and prints the risk-coverage table the answer
threshold is chosen from (:func:`threshold`).
The untouched splits are never read here.

    .venv/bin/python ops/bench/fit_calibration.py [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

import bench_devsets as bench  # noqa: E402

from memoryd.search import calibration  # noqa: E402

PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
FOLDS = 5
STEPS = 20_000
RATE = 0.5
GRID = tuple(round(0.05 * i, 2) for i in range(20))
SEED = 7


def dataset(rows: dict[str, dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and question numbers of every recorded top-3 item."""
    xs, ys, groups = [], [], []
    q = 0
    for runners in rows.values():
        for r in runners["memoryd-raw"]:
            for signals, right in zip(r["signals"], r["right"], strict=True):
                xs.append([signals[f] for f in calibration.FEATURES])
                ys.append(float(right))
                groups.append(q)
            q += 1
    return np.array(xs), np.array(ys), np.array(groups)


def fit(x: np.ndarray, y: np.ndarray, penalty: float) -> tuple[float, np.ndarray]:
    """Intercept and weights minimizing mean log loss + penalty * |w|^2 / 2, the
    monotone features' weights projected onto w >= 0 after every step."""
    held = np.array([f in calibration.MONOTONE for f in calibration.FEATURES])
    b, w = 0.0, np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(b + x @ w)))
        err = p - y
        b -= RATE * err.mean()
        w -= RATE * (x.T @ err / len(y) + penalty * w)
        w[held] = np.maximum(w[held], 0.0)
    return b, w


def log_loss(b: float, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(1 / (1 + np.exp(-(b + x @ w))), 1e-9, 1 - 1e-9)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def cross_validated(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> dict[float, float]:
    """Mean held-out log loss of each penalty, folds by question."""
    questions = np.unique(groups)
    np.random.default_rng(SEED).shuffle(questions)
    folds = np.array_split(questions, FOLDS)
    losses = {}
    for penalty in PENALTIES:
        total = 0.0
        for fold in folds:
            test = np.isin(groups, fold)
            b, w = fit(x[~test], y[~test], penalty)
            total += log_loss(b, w, x[test], y[test]) * test.sum()
        losses[penalty] = total / len(y)
    return losses


def threshold(rows: dict[str, dict]) -> tuple[float, list[tuple[float, int]]]:
    """The answer threshold answering and abstaining right on the most dev questions
    (answered answerable plus abstained absent, pooled: an answer lost costs what an
    abstention won gains), the middle of the longest run of best thresholds (a
    threshold at the edge of a run sits on one dev question's score)."""
    table = []
    for t in GRID:
        right = 0
        for runners in rows.values():
            c = bench.counts(runners["memoryd"], t)
            right += c["answered"] + c["abstained"]
        table.append((t, right))
    best = max(v for _, v in table)
    runs: list[list[float]] = [[]]
    for t, v in table:
        if v == best:
            runs[-1].append(t)
        elif runs[-1]:
            runs.append([])
    longest = max(runs, key=len)
    return longest[len(longest) // 2], table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print the model, write nothing")
    args = ap.parse_args(argv)
    with calibration.using(None):
        rows = bench.collect("dev")
    x, y, groups = dataset(rows)
    print(f"dev items: {len(y)} ({int(y.sum())} right) of {len(np.unique(groups))} questions")
    losses = cross_validated(x, y, groups)
    for penalty, loss in losses.items():
        print(f"  penalty {penalty:g}: held-out log loss {loss:.4f}")
    penalty = min(losses, key=losses.get)
    b, w = fit(x, y, penalty)
    model = calibration.Model(
        round(float(b), 4),
        {f: round(float(v), 4) for f, v in zip(calibration.FEATURES, w, strict=True)},
    )
    print(f"penalty {penalty:g}; model {json.dumps(model.as_dict())}")
    if args.dry_run:
        return 0
    calibration.DATA.write_text(json.dumps(model.as_dict(), indent=2) + "\n")
    calibration.load.cache_clear()
    with calibration.using(model):
        chosen, table = threshold(bench.collect("dev"))
    for t, v in table:
        print(f"  threshold {t:.2f}: {v} dev questions answered or abstained right")
    print(f"answer threshold chosen on dev: {chosen:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
