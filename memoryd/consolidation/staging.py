"""Staging and dead-letter files: one candidate per file, written atomically.

``staging/<project>/<ns>-<tag>.jsonl`` holds the validated candidates of one
``memory add`` (a line naming the project, then one line per candidate) until a consolidation
run has committed the fate of every one of them (one fsync per add, not per
candidate); ``deadletter/<project>/<id>.json``
keeps a candidate that could not be consolidated, with the reason. Both are
written to a temporary name, fsynced, renamed and the directory fsynced, with
mode 0600: a crash leaves either the whole file or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import orjson

from memoryd.base.durable import write_atomic

STAGING_DIR = "staging"
DEADLETTER_DIR = "deadletter"
SUFFIX = ".jsonl"


def staging_dir(home: Path, project: str) -> Path:
    return Path(home) / STAGING_DIR / project


def deadletter_dir(home: Path, project: str) -> Path:
    return Path(home) / DEADLETTER_DIR / project


def stage(home: Path, project: str, items: list[tuple[str, dict]]) -> Path:
    """Write one staging file holding every (candidate id, candidate), in order; file
    names sort in staging order. Its first line names the project; each other line is
    ``<id> TAB <candidate JSON>`` (a run reads ids without parsing every candidate)."""
    now = time.time_ns()
    tag = hashlib.blake2b("".join(cid for cid, _ in items).encode(), digest_size=6).hexdigest()
    path = staging_dir(home, project) / f"{now:020d}-{tag}{SUFFIX}"
    head = orjson.dumps({"project": project, "staged_at": now / 1e9})
    lines = [cid.encode() + b"\t" + orjson.dumps(c) for cid, c in items]
    write_atomic(path, b"\n".join([head, *lines]) + b"\n")
    return path


@dataclass
class Staged:
    path: Path
    id: str
    project: str
    raw: bytes = field(repr=False)

    @cached_property
    def candidate(self) -> dict:
        return dict(orjson.loads(self.raw))


def read(path: Path) -> list[Staged] | None:
    """A staging file's candidates (parsed when first used); None when it is damaged
    (not a file memoryd wrote whole) or gone."""
    try:
        head, *lines = path.read_bytes().splitlines()
        project = str(orjson.loads(head)["project"])
        out = []
        for line in lines:
            cid, tab, raw = line.partition(b"\t")
            if not tab or not raw.startswith(b"{"):
                return None
            out.append(Staged(path, cid.decode("ascii"), project, raw))
        return out or None
    except (OSError, ValueError, KeyError, TypeError):  # JSONDecodeError is a ValueError
        return None


def staged_files(home: Path, project: str) -> Iterator[Path]:
    """The project's staging files in staging order (temporary files are not yet files)."""
    folder = staging_dir(home, project)
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(folder)):
            if name.endswith(SUFFIX):
                yield folder / name


def deadletter(home: Path, project: str, name: str, body: dict) -> Path:
    """Keep a candidate (or a damaged file's bytes) and its reason under deadletter/."""
    path = deadletter_dir(home, project) / name
    if not path.exists():
        write_atomic(path, orjson.dumps(body, option=orjson.OPT_INDENT_2))
    return path


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def prune(folder: Path, stale: tuple[str, ...] = ()) -> None:
    """Remove a project's staging directory holding no staging file: first the ``stale``
    names in it (marks nothing reads any more), then the directory if that left it
    empty (an add writing into it keeps it). A directory kept for every project that
    ever staged would make each start sweep walk them all."""
    for name in stale:
        remove(folder / name)
    with contextlib.suppress(OSError):  # gone, or not empty (an add's file, or another)
        folder.rmdir()


def drop(home: Path, project: str, ids: set[str]) -> int:
    """Take the candidates ``ids`` out of the project's staging files (a file left with
    none is removed, another is written again without them); a forgotten record's
    candidates must leave no text here. Returns the files changed."""
    changed = 0
    for path in list(staged_files(home, project)):
        entries = read(path)
        if not entries or not ids.intersection(s.id for s in entries):
            continue
        kept = [s for s in entries if s.id not in ids]
        if kept:
            head = path.read_bytes().split(b"\n", 1)[0]
            lines = [s.id.encode() + b"\t" + s.raw for s in kept]
            write_atomic(path, b"\n".join([head, *lines]) + b"\n")
        else:
            remove(path)
        changed += 1
    return changed
