"""LongMemEval data and scoring shared by the search benchmarks.

``bench_longmemeval.py`` (project search, ``make bench-search``) and
``bench_archive.py`` (archive search, ``make bench-archive``) read the same
file, dedupe sessions the same way and score the same measures:

* session recall@k (LongMemEval's recall_any): the share of answerable
  questions with at least one answer session among the first k distinct
  sessions of the result list; a session whose text is identical to an answer
  session counts as it (the data's ``_abs`` twins); an abstention retrieves
  nothing;
* ``all@10`` (every answer session in the first 10) and ``share@10`` (the mean
  share of a question's answer sessions there);
* ``_abs`` questions: abstained when ``items == []``;
* the split: even question indices were used for tuning, odd ones are held out.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "longmemeval_oracle.json.gz"
#: Where DATA comes from, for a message when it is absent.
DATA_SOURCE = (
    "LongMemEval's oracle variant (MIT), beside the repository in ../shared/data/ "
    "(its README names the source: the public LongMemEval release)"
)


def render(session: list[dict]) -> str:
    """One line per turn, ``role: text`` (a turn's own whitespace folded)."""
    lines = []
    for turn in session:
        text = " ".join(turn["content"].split())
        lines.append(f"{turn['role']}: {text}")
    return "\n".join(lines) + "\n"


def load(path: Path):
    """The questions and the distinct sessions, session id -> rendered text."""
    data = load_questions(path)
    sessions: dict[str, str] = {}
    for q in data:
        for sid, sess in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            sessions.setdefault(sid, render(sess))
    return data, sessions


def load_questions(path: Path) -> list[dict]:
    with gzip.open(path) as fh:
        return json.load(fh)


def text_digest(text: str) -> str:
    """Identical texts (the ``_abs`` twins) share a digest."""
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def splits(n: int, quick: bool) -> dict[str, list[int]]:
    """Question indices (every 5th with ``quick``): tuning (even), held out (odd), all."""
    idx = list(range(0, n, 5 if quick else 1))
    return {
        "tune (even)": [i for i in idx if i % 2 == 0],
        "held-out (odd)": [i for i in idx if i % 2 == 1],
        "all": idx,
    }


def sessions_ranked(result: dict, digest: dict[str, str]) -> list[str]:
    """The distinct session digests of a result's items, in order (items by ``path``)."""
    out: list[str] = []
    for it in result["items"]:
        d = digest[it["path"]]
        if d not in out:
            out.append(d)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def evaluate(
    data: list[dict],
    runners: dict[str, Callable[[str], dict]],
    digest: dict[str, str],
    sid_digest: dict[str, str],
    indices: Iterable[int],
) -> dict[str, dict]:
    """Recall, abstention and latency of each runner over the questions ``indices``.

    ``digest`` maps a result item's ``path`` to its session's text digest;
    ``sid_digest`` maps a LongMemEval session id to it.
    """
    indices = list(indices)
    res = {}
    for name, fn in runners.items():
        r5, r10, frac10, all10, abst, lat = [], [], [], [], 0, []
        n_abs = 0
        for i in indices:
            q = data[i]
            t0 = time.perf_counter()
            result = fn(q["question"])
            lat.append(time.perf_counter() - t0)
            if q["question_id"].endswith("_abs"):
                n_abs += 1
                abst += not result["items"]
                continue
            got = sessions_ranked(result, digest)
            want = {sid_digest[s] for s in q["answer_session_ids"]}
            r5.append(bool(want & set(got[:5])))
            r10.append(bool(want & set(got[:10])))
            frac10.append(len(want & set(got[:10])) / len(want))
            all10.append(want <= set(got[:10]))
        res[name] = {
            "answerable": len(r10),
            "recall@5": sum(r5) / len(r5) if r5 else 0.0,
            "recall@10": sum(r10) / len(r10) if r10 else 0.0,
            "share@10": sum(frac10) / len(frac10) if frac10 else 0.0,
            "recall_all@10": sum(all10) / len(all10) if all10 else 0.0,
            "abs_questions": n_abs,
            "abstained": abst,
            "p50_ms": statistics.median(lat) * 1000 if lat else 0.0,
            "p95_ms": percentile(lat, 0.95) * 1000 if lat else 0.0,
        }
    return res


def print_table(report_splits: dict[str, dict[str, dict]]) -> None:
    for split, res in report_splits.items():
        print(f"\n{split}:")
        print(
            f"  {'runner':<9} {'answerable':>10} {'R@5':>7} {'R@10':>7} {'all@10':>7}"
            f" {'share@10':>8} {'abstained':>10} {'p50 ms':>7} {'p95 ms':>7}"
        )
        for name, r in res.items():
            print(
                f"  {name:<9} {r['answerable']:>10} {r['recall@5']:>7.1%} {r['recall@10']:>7.1%}"
                f" {r['recall_all@10']:>7.1%} {r['share@10']:>8.1%}"
                f" {r['abstained']:>4}/{r['abs_questions']:<5}"
                f" {r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f}"
            )
