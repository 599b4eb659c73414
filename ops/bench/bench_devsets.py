"""memoryd's own development sets for search: recall and abstention.

Two sets nobody tuned on before, each split into a ``dev`` part (looked at
while changing search) and an ``untouched`` part (scored only at the end):

* **repo**: a site-packages source tree that is not the standard library
  (pytest's ``_pytest`` and ``click``, copied from the running interpreter's
  site-packages), ingested with ``Projects.ingest`` and searched with
  ``Search.search`` as a user would. Questions in ``devsets/repo_questions.json``
  (English and Spanish); an answer is one of the listed paths in the top 3;
  absent questions must abstain. Its ``fresh`` part (repo only) was written after
  the last rule change and is scored once, at the end of a round.
* **conversations**: ``devsets/conversations.txt``, two named speakers per
  conversation, turns ``Name: text``, one date per session, each session archived
  as a JSONL transcript (the speakers alternate the roles ``user`` and
  ``assistant``; the content keeps ``Name: ``) into one archive project per
  conversation and searched with the archive's ``search`` operation. Session
  recall@3 on answerable questions, abstention on the ones about something the
  named person never said or did.
* **conversations-large**: the same format and measure, larger
  (``devsets/conversations_large.txt``: six conversations of five sessions,
  106 answerable and 31 must-abstain questions; written in session 6).

Beside memoryd, the same questions through plain BM25 without a gate: FTS5's
``rank`` over the question's words (repo) and the archive's own BM25
(conversations). LongMemEval (make bench-search, bench-archive) is the set the
gate was tuned on; these are not.

Scores: memoryd answers each question once uncalibrated (``memoryd-raw``: the
gate's evidence times rank strength, as before calibration) and once with the
calibrated scores (:mod:`memoryd.search.calibration`), both with no answer
threshold; the answer threshold is then applied to the best item's score. Each
set prints the counts at the configured threshold, the risk-coverage curve
(recall of answerable vs abstention on unanswerable as the threshold rises;
BM25's at the deciles of its best score) and the expected calibration error of
the top-3 items (10 equal-width bins; an item is right when it is one of the
question's answers); ``--tables`` prints the reliability tables.

    .venv/bin/python ops/bench/bench_devsets.py [--split dev|untouched|fresh|all] [--only SET]
        [--tables] [--json] [-v]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

from bench_longmemeval import bm25_plain as fts_bm25  # noqa: E402

from memoryd.archive.ops import run_op  # noqa: E402
from memoryd.archive.owner import ArchiveOwner  # noqa: E402
from memoryd.base.config import SETTINGS  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.control_client import unwrap  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402
from memoryd.search import archive_bm25, calibration  # noqa: E402
from memoryd.storage.archive import tokenize  # noqa: E402
from memoryd.storage.corpus import project_id  # noqa: E402
from memoryd.text.terms import STOPWORDS  # noqa: E402

DATA = Path(__file__).resolve().parent / "devsets"
CONVERSATION_SETS = {  # set name -> (transcripts, questions) under DATA
    "conversations": ("conversations.txt", "conversation_questions.json"),
    "conversations-large": ("conversations_large.txt", "conversations_large_questions.json"),
}
REPO_PACKAGES = ("_pytest", "click")
REPO_PROJECT = "devrepo"
TOP = 3
NOW = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
THRESHOLD = SETTINGS["answer_threshold"].default
CURVE = tuple(round(0.1 * i, 1) for i in range(10))  # memoryd's thresholds on the curve
BINS = 10
RUNNERS = ("memoryd-raw", "memoryd", "bm25")


def row(absent: bool, items: list[dict], right: set[str]) -> dict:
    """One question's answer: its top items' scores, whether each is right, their
    calibration features (when recorded), and whether any is right."""
    top = items[:TOP]
    rights = [i["path"] in right for i in top]
    return {
        "absent": absent,
        "scores": [float(i["score"]) for i in top],
        "right": rights,
        "signals": [i.get("signals") for i in top],
        "hit": not absent and any(rights),
    }


def counts(rows: list[dict], threshold: float | None = None) -> dict:
    """answered: answerable with an answer in the top 3; abstained: no item, or (with
    ``threshold``) a best item scoring below it."""

    def abstains(r: dict) -> bool:
        return not r["scores"] or (threshold is not None and r["scores"][0] < threshold)

    ans = [r for r in rows if not r["absent"]]
    absn = [r for r in rows if r["absent"]]
    return {
        "answered": sum(r["hit"] and not abstains(r) for r in ans),
        "answerable": len(ans),
        "abstained": sum(abstains(r) for r in absn),
        "absent": len(absn),
        "abstained_answerable": sum(abstains(r) for r in ans),
    }


def curve(rows: list[dict], thresholds: tuple[float, ...]) -> list[dict]:
    """Recall of the answerable and abstention on the unanswerable at each threshold."""
    out = []
    for t in thresholds:
        c = counts(rows, t)
        out.append(
            {
                "threshold": t,
                "recall": c["answered"] / (c["answerable"] or 1),
                "abstention": c["abstained"] / (c["absent"] or 1),
            }
        )
    return out


def deciles(rows: list[dict]) -> tuple[float, ...]:
    """Thresholds at the deciles of the best scores (a score of any scale: BM25's)."""
    best = sorted(r["scores"][0] for r in rows if r["scores"])
    if not best:
        return (0.0,)
    return tuple(best[min(len(best) - 1, len(best) * i // 10)] for i in range(10))


def reliability(rows: list[dict], bins: int = BINS) -> list[dict]:
    """Top-3 items by score bin: how many, their mean score, the share right."""
    table = [{"n": 0, "score": 0.0, "right": 0} for _ in range(bins)]
    for r in rows:
        for score, right in zip(r["scores"], r["right"], strict=True):
            b = table[min(bins - 1, int(score * bins))]
            b["n"] += 1
            b["score"] += score
            b["right"] += right
    return [
        {"bin": f"{i / bins:.1f}-{(i + 1) / bins:.1f}", "n": b["n"]}
        | ({"mean_score": b["score"] / b["n"], "accuracy": b["right"] / b["n"]} if b["n"] else {})
        for i, b in enumerate(table)
    ]


def ece(rows: list[dict], bins: int = BINS) -> float:
    """Expected calibration error of the top-3 items: the bins' |mean score - share
    right|, weighted by their share of the items."""
    table = reliability(rows, bins)
    total = sum(b["n"] for b in table) or 1
    return sum(b["n"] * abs(b["mean_score"] - b["accuracy"]) for b in table if b["n"]) / total


def summary(runner: str, rows: list[dict]) -> dict:
    """A runner's figures on one set: counts (memoryd at the answer threshold), curve,
    and for memoryd's scores the calibration error and reliability table."""
    if runner == "bm25":
        return {"counts": counts(rows), "curve": curve(rows, deciles(rows))}
    threshold = THRESHOLD if runner == "memoryd" else None
    return {
        "counts": counts(rows, threshold),
        "curve": curve(rows, CURVE),
        "ece": ece(rows),
        "reliability": reliability(rows),
    }


def memoryd_runs(ask: Callable[..., dict]) -> dict[str, Callable[..., dict]]:
    """``ask`` (a question -> its answer, at threshold 0) uncalibrated and calibrated."""

    def raw(*q: str) -> dict:
        with calibration.using(None):
            return ask(*q)

    return {"memoryd-raw": raw, "memoryd": ask}


# -- repository ------------------------------------------------------------------------


def build_repo(home: Path) -> Memoryd:
    site = Path(sysconfig.get_paths()["purelib"])
    tree = home / "tree"
    for name in REPO_PACKAGES:
        shutil.copytree(site / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    md = Memoryd(home / "home")
    md.init()
    Projects(md).ingest(tree, REPO_PROJECT, wait=True, workers=1)
    return md


def run_repo(md: Memoryd, split: str, verbose: bool) -> dict:
    spec = json.loads((DATA / "repo_questions.json").read_text())
    db = md.reader
    pid = project_id(db, REPO_PROJECT)
    runners = memoryd_runs(
        lambda q: Search(md).search(q, REPO_PROJECT, limit=10, answer_threshold=0.0)
    )
    runners["bm25"] = lambda q: fts_bm25(db, pid, q, 10)
    out = {}
    for name, run in runners.items():
        rows = []
        for absent, items in ((False, spec["answerable"]), (True, spec["absent"])):
            for it in items:
                if split != "all" and it["split"] != split:
                    continue
                rows.append(row(absent, run(it["q"])["items"], set(it.get("paths", ()))))
                if verbose and name == "memoryd":
                    _miss("repo", it["q"], rows[-1], None)
        out[name] = rows
    return out


def _miss(where: str, q: str, r: dict, gap: str | None) -> None:
    """Print a question memoryd got wrong (at the answer threshold)."""
    abstains = not r["scores"] or r["scores"][0] < THRESHOLD
    if r["hit"] == r["absent"] or r["absent"] != abstains:
        kind = "ABSENT" if r["absent"] else "MISS"
        print(f"  {where} {kind}: {q} -> {r['scores']} {r['right']} {gap or ''}")


# -- conversations -----------------------------------------------------------------------


def parse_conversations(text: str) -> dict[str, dict]:
    """name -> {"split", "sessions": [(date, [(speaker, text), ...]), ...]}."""
    convs: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("=== conversation "):
            name, split = line.split()[2:4]
            current = convs[name] = {"split": split, "sessions": []}
        elif line.startswith("--- session "):
            current["sessions"].append((line.split()[3], []))
        else:
            speaker, said = line.split(":", 1)
            current["sessions"][-1][1].append((speaker.strip(), said.strip()))
    return convs


def session_jsonl(turns: list[tuple[str, str]]) -> bytes:
    """The first speaker as ``user``, the other as ``assistant``; the text keeps its name."""
    first = turns[0][0]
    return "\n".join(
        json.dumps({"role": "user" if who == first else "assistant", "content": f"{who}: {said}"})
        for who, said in turns
    ).encode()


def build_conversations(home: Path, convs: dict[str, dict]) -> ArchiveOwner:
    md = Memoryd(home)
    md.init()
    owner = ArchiveOwner(md.home, md.config)
    for name, conv in convs.items():
        for n, (date, turns) in enumerate(conv["sessions"], 1):
            created = datetime.fromisoformat(date).replace(tzinfo=UTC).timestamp()
            args = {
                "project": name,
                "class": None,
                "session": f"session-{n}",
                "created_at": created,
                "content": "\n".join(
                    f"{json.loads(m)['role']}: {json.loads(m)['content']}"
                    for m in session_jsonl(turns).decode().splitlines()
                ),
                "turns": len(turns),
                "tools": [],
                "now": NOW,
                "imported": True,  # history older than its class age
            }
            unwrap(run_op(owner, "add", args))
    return owner


def _archive_bm25(owner: ArchiveOwner, project: str, q: str) -> dict:
    words = [w for w in tokenize(q) if w not in STOPWORDS]
    hits = archive_bm25.search(owner.store.postings, project, words, limit=10) if words else []
    return {"items": [{"path": h.session, "score": h.score} for h in hits]}


def run_conversations(
    owner: ArchiveOwner, convs: dict, questions: str, split: str, verbose: bool
) -> dict:
    spec = json.loads((DATA / questions).read_text())
    args = {"limit": 10, "now": NOW, "answer_threshold": 0.0}
    runners = memoryd_runs(
        lambda p, q: unwrap(run_op(owner, "search", {"project": p, "query": q, **args}))
    )
    runners["bm25"] = lambda p, q: _archive_bm25(owner, p, q)
    out = {}
    for name, run in runners.items():
        rows = []
        for it in spec["questions"]:
            if split != "all" and convs[it["conv"]]["split"] != split:
                continue
            r = run(it["conv"], it["q"])
            want = {f"session-{n}" for n in it["sessions"]}
            rows.append(row(bool(it.get("absent")), sessions(r["items"]), want))
            if verbose and name == "memoryd":
                _miss("conv", it["q"], rows[-1], r.get("gap"))
        out[name] = rows
    return out


def sessions(items: list[dict]) -> list[dict]:
    """Each session's best item (a session's further windows are not other answers)."""
    best: dict[str, dict] = {}
    for item in items:
        best.setdefault(item["path"], item)
    return list(best.values())


def _line(label: str, s: dict) -> str:
    return (
        f"{label:<32} answered {s['answered']:>3}/{s['answerable']:<3}"
        f" (abstained on {s['abstained_answerable']:>3})"
        f"   abstained {s['abstained']:>3}/{s['absent']}"
    )


def collect(split: str, only: str | None = None, verbose: bool = False) -> dict[str, dict]:
    """set -> runner -> one :func:`row` per question of ``split``."""
    report: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="memoryd-devsets-") as tmp, calibration.recording():
        if only in (None, "repo"):
            md = build_repo(Path(tmp) / "repo")
            report["repo"] = run_repo(md, split, verbose)
            md.close()
        for name, (transcripts, questions) in CONVERSATION_SETS.items():
            if only not in (None, name):
                continue
            convs = parse_conversations((DATA / transcripts).read_text())
            with build_conversations(Path(tmp) / name, convs) as owner:
                report[name] = run_conversations(owner, convs, questions, split, verbose)
    return report


def _print(report: dict[str, dict], tables: bool) -> None:
    for set_name, runners in report.items():
        print(f"\n{set_name}")
        for runner, s in runners.items():
            label = f"{set_name} {runner}" + (f" @{THRESHOLD:g}" if runner == "memoryd" else "")
            extra = f"   ECE {s['ece']:.3f}" if "ece" in s else ""
            print(_line(label, s["counts"]) + extra)
        for runner, s in runners.items():
            points = "  ".join(
                f"{p['threshold']:.3g}:{p['recall']:.0%}/{p['abstention']:.0%}" for p in s["curve"]
            )
            print(f"  risk-coverage {runner:<12} (threshold:recall/abstention) {points}")
        for runner, s in runners.items() if tables else ():
            if "reliability" in s:
                print(f"  reliability {runner}: bin, items, mean score, share right")
                for b in s["reliability"]:
                    figures = f"{b['mean_score']:.3f}  {b['accuracy']:.3f}" if b["n"] else "-"
                    print(f"    {b['bin']}  {b['n']:>4}  {figures}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "untouched", "fresh", "all"), default="dev")
    ap.add_argument("--only", choices=("repo", *CONVERSATION_SETS))
    ap.add_argument("--tables", action="store_true", help="print the reliability tables")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print memoryd's misses")
    args = ap.parse_args(argv)
    rows = collect(args.split, args.only, args.verbose)
    report = {
        name: {runner: summary(runner, r) for runner, r in runners.items()}
        for name, runners in rows.items()
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"split: {args.split}; answer threshold {THRESHOLD:g}; ECE over the top-{TOP} items")
    _print(report, args.tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
