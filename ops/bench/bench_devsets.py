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

    .venv/bin/python ops/bench/bench_devsets.py [--split dev|untouched|fresh|all] [--json] [-v]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import sysconfig
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

from bench_longmemeval import bm25_plain as fts_bm25  # noqa: E402

from memoryd.archive.ops import run_op  # noqa: E402
from memoryd.archive.owner import ArchiveOwner  # noqa: E402
from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.control_client import unwrap  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402
from memoryd.search import archive_bm25  # noqa: E402
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


def _score(rows: list[dict]) -> dict:
    """answered: answerable with an answer in the top 3; abstained: absent with no items."""
    ans = [r for r in rows if not r["absent"]]
    absn = [r for r in rows if r["absent"]]
    return {
        "answered": sum(r["hit"] for r in ans),
        "answerable": len(ans),
        "abstained": sum(r["abstained"] for r in absn),
        "absent": len(absn),
        "abstained_answerable": sum(r["abstained"] for r in ans),
    }


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
    runners = {
        "memoryd": lambda q: Search(md).search(q, REPO_PROJECT, limit=10),
        "bm25": lambda q: fts_bm25(db, pid, q, 10),
    }
    out = {}
    for name, run in runners.items():
        rows = []
        for absent, items in ((False, spec["answerable"]), (True, spec["absent"])):
            for it in items:
                if split != "all" and it["split"] != split:
                    continue
                r = run(it["q"])
                top = [i["path"] for i in r["items"][:TOP]]
                hit = not absent and any(p in it["paths"] for p in top)
                rows.append({"absent": absent, "hit": hit, "abstained": not r["items"]})
                if verbose and name == "memoryd" and (hit == absent or absent != (not top)):
                    print(f"  repo {'ABSENT' if absent else 'MISS'}: {it['q']} -> {top}")
        out[name] = _score(rows)
    return out


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
    return {"items": [{"path": h.session} for h in hits]}


def run_conversations(
    owner: ArchiveOwner, convs: dict, questions: str, split: str, verbose: bool
) -> dict:
    spec = json.loads((DATA / questions).read_text())
    runners = {
        "memoryd": lambda p, q: unwrap(
            run_op(owner, "search", {"project": p, "query": q, "limit": 10, "now": NOW})
        ),
        "bm25": lambda p, q: _archive_bm25(owner, p, q),
    }
    out = {}
    for name, run in runners.items():
        rows = []
        for it in spec["questions"]:
            if split != "all" and convs[it["conv"]]["split"] != split:
                continue
            absent = bool(it.get("absent"))
            r = run(it["conv"], it["q"])
            top = list(dict.fromkeys(i["path"] for i in r["items"]))[:TOP]
            want = {f"session-{n}" for n in it["sessions"]}
            hit = bool(want.intersection(top))
            rows.append({"absent": absent, "hit": hit, "abstained": not r["items"]})
            if verbose and name == "memoryd" and (hit == absent or absent != (not top)):
                print(f"  conv {'ABSENT' if absent else 'MISS'}: {it['q']} -> {top} {r.get('gap')}")
        out[name] = _score(rows)
    return out


def _line(label: str, s: dict) -> str:
    return (
        f"{label:<28} answered {s['answered']:>2}/{s['answerable']:<2}"
        f" (abstained on {s['abstained_answerable']})   abstained {s['abstained']:>2}/{s['absent']}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "untouched", "fresh", "all"), default="dev")
    ap.add_argument("--only", choices=("repo", *CONVERSATION_SETS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print memoryd's misses")
    args = ap.parse_args(argv)
    report: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="memoryd-devsets-") as tmp:
        if args.only in (None, "repo"):
            md = build_repo(Path(tmp) / "repo")
            report["repo"] = run_repo(md, args.split, args.verbose)
            md.close()
        for name, (transcripts, questions) in CONVERSATION_SETS.items():
            if args.only not in (None, name):
                continue
            convs = parse_conversations((DATA / transcripts).read_text())
            with build_conversations(Path(tmp) / name, convs) as owner:
                report[name] = run_conversations(owner, convs, questions, args.split, args.verbose)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"split: {args.split}")
    for set_name, runners in report.items():
        for runner, s in runners.items():
            print(_line(f"{set_name} {runner}", s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
