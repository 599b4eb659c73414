"""Search answers on the standard library, saved or compared with a saved run: the
check that a storage change (layout, statistics) leaves what users get unchanged.

The questions are bench_scale's answerable and absent-subject ones plus a few
more; each answer is its status and every item's path, first line and score.
The stdlib is ingested into a temporary home with ``Projects.ingest`` (or
``--home`` names an existing one). Answers depend on the interpreter's
stdlib, so a saved file is compared only on the machine that wrote it. They do
not depend on the order the workers committed the files in (equal scores go by
path, then start line): ``--workers`` and ``--batch-files`` ingest in another
order, and the answers must stay equal.

    .venv/bin/python ops/bench/bench_answers.py --save FILE      # e.g. at the old commit
    .venv/bin/python ops/bench/bench_answers.py --against FILE   # exit 1 when any differs
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops" / "bench"))

from bench_scale import ABSENT, ANSWERABLE  # noqa: E402

from memoryd.operations.api import Memoryd  # noqa: E402
from memoryd.operations.projects import Projects  # noqa: E402
from memoryd.operations.search import Search  # noqa: E402

PROJECT = "stdlib"
MORE = [
    "socket timeout",
    "json decoder error",
    "thread lock acquire",
    "zip file",
    "regular expression compile flags",
    "abstract base class register",
    "asyncio event loop",
    "decimal rounding",
    "unicode normalization",
    "tar archive extract",
]


def answers(md: Memoryd, project: str) -> dict[str, list]:
    out = {}
    for q in ANSWERABLE + ABSENT + MORE:
        r = Search(md).search(q, project, limit=10)
        out[q] = [r["status"]] + [[i["path"], i["start_line"], i["score"]] for i in r["items"]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, help="an existing home (default: ingest the stdlib)")
    ap.add_argument("--project", default=PROJECT)
    ap.add_argument("--save", type=Path, help="write the answers here")
    ap.add_argument("--against", type=Path, help="compare with answers saved here")
    ap.add_argument("--workers", type=int, help="ingest worker processes (default: config)")
    ap.add_argument("--batch-files", type=int, help="most files in one ingest batch job")
    args = ap.parse_args(argv)
    overrides = {
        k: v
        for k, v in (("workers", args.workers), ("ingest_batch_files", args.batch_files))
        if v is not None
    }
    with tempfile.TemporaryDirectory(prefix="memoryd-answers-") as tmp:
        md = Memoryd(args.home or Path(tmp) / "home", overrides)
        if not args.home:
            md.init()
            Projects(md).ingest(Path(sysconfig.get_paths()["stdlib"]), args.project, wait=True)
        got = answers(md, args.project)
        md.close()
    if args.save:
        args.save.write_text(json.dumps(got, indent=1) + "\n")
    if not args.against:
        return 0
    saved = json.loads(args.against.read_text())
    differ = [q for q in saved if saved[q] != got.get(q)]
    ok = sum(1 for a in got.values() if a[0] == "ok")
    print(f"{len(saved) - len(differ)}/{len(saved)} answers equal ({ok} ok)")
    for q in differ:
        print(f"  differs: {q!r}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
