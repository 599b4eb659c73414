"""Walk a repository and decide which files are eligible, counting every skip by reason.

Rules: ``.git/`` and the default ignore set are skipped; ``.gitignore`` files
apply to their own directory and below (deeper files win, as in git); extra
``excludes`` use the same syntax; symlinks are followed only to regular files
inside the repository, never into directories; binaries (a NUL byte in the
first 8 KiB, as git decides), files over the size limit, special files and
unreadable files are skipped.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from memoryd.config import BINARY_SNIFF_BYTES
from memoryd.ingest.chunking import digest

DEFAULT_IGNORES = (
    ".git/", ".hg/", ".svn/", "node_modules/", ".venv/", "venv/", "virtualenv/",
    "site-packages/", "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".tox/", ".nox/", ".cache/", "build/", "dist/", "target/", "*.egg-info/",
    ".eggs/", ".gradle/", ".idea/", ".DS_Store", "*.pyc", "*.pyo", "*.o", "*.so",
    "*.a", "*.dylib", "*.class", "*.jar", "*.whl", "*.zip", "*.tar", "*.gz",
)  # fmt: skip


@dataclass(frozen=True)
class Eligible:
    path: str  # relative, '/'-separated
    size: int
    content_hash: str


@dataclass
class ScanResult:
    eligible: list[Eligible] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)


class _Ignores:
    """The stack of ignore specs that apply to one directory."""

    def __init__(self, excludes: list[str]) -> None:
        self.base = GitIgnoreSpec.from_lines([*DEFAULT_IGNORES, *excludes])
        self.nested: dict[str, GitIgnoreSpec] = {}  # dir rel path -> its .gitignore

    def load(self, root: Path, rel_dir: str) -> None:
        path = root / rel_dir / ".gitignore" if rel_dir else root / ".gitignore"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        self.nested[rel_dir] = GitIgnoreSpec.from_lines(lines)

    def ignored(self, rel: str, is_dir: bool) -> tuple[bool, str]:
        probe = rel + "/" if is_dir else rel
        verdict, reason = None, ""
        base = self.base.check_file(probe).include
        if base:
            verdict, reason = True, "default_ignore"
        for rel_dir, spec in self.nested.items():
            if rel_dir and not rel.startswith(rel_dir + "/"):
                continue
            sub = probe[len(rel_dir) + 1 :] if rel_dir else probe
            include = spec.check_file(sub).include
            if include is not None:  # deeper .gitignore files come later and win
                verdict, reason = include, "gitignore"
        return bool(verdict), reason


def _read_eligible(
    path: Path, max_bytes: int, skipped: Counter, *, sniff_only: bool = False
) -> bytes | None:
    """The file's bytes, or None (counted in ``skipped``) when it is not eligible.
    ``sniff_only`` reads just the prefix that decides binary files."""
    try:
        st = os.stat(path)
    except OSError:
        skipped["unreadable"] += 1
        return None
    if not stat.S_ISREG(st.st_mode):
        skipped["special"] += 1
        return None
    if st.st_size > max_bytes:
        skipped["too_large"] += 1
        return None
    try:
        with open(path, "rb") as fh:
            raw = fh.read(BINARY_SNIFF_BYTES if sniff_only else max_bytes + 1)
    except OSError:
        skipped["unreadable"] += 1
        return None
    if len(raw) > max_bytes:
        skipped["too_large"] += 1
        return None
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        skipped["binary"] += 1
        return None
    return raw


def _walk(root: Path, ignores: _Ignores, result: ScanResult) -> Iterator[tuple[str, Path]]:
    """Yield (relative path, absolute path) of candidate files, pruning as it goes."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            ignores.load(root, rel_dir)
        keep = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = Path(dirpath, name)
            if full.is_symlink():
                result.skipped["symlink_dir"] += 1
                continue
            is_ignored, reason = ignores.ignored(rel, True)
            if is_ignored:
                result.skipped[reason] += 1
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            is_ignored, reason = ignores.ignored(rel, False)
            if is_ignored:
                result.skipped[reason] += 1
                continue
            yield rel, Path(dirpath, name)


def inside(root: Path, path: Path) -> bool:
    """True when ``path`` resolves to a location inside ``root`` (symlinks followed)."""
    try:
        path.resolve(strict=True).relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def scan(
    root: Path, *, max_bytes: int, excludes: list[str] | None = None, hashes: bool = True
) -> ScanResult:
    """Eligible files with their sizes and content hashes. Without ``hashes`` (nothing
    stored to compare with) only the binary-deciding prefix is read, the size comes
    from ``stat`` and ``content_hash`` is empty: batches read and hash every file."""
    root = Path(root).resolve()
    result = ScanResult()
    ignores = _Ignores(list(excludes or []))
    for rel, path in _walk(root, ignores, result):
        if _symlink_skip(root, path, result.skipped):
            continue
        if not hashes:
            if _read_eligible(path, max_bytes, result.skipped, sniff_only=True) is not None:
                result.eligible.append(Eligible(rel, os.stat(path).st_size, ""))
            continue
        raw = _read_eligible(path, max_bytes, result.skipped)
        if raw is not None:
            result.eligible.append(Eligible(rel, len(raw), digest(raw)))
    return result


def read_file(root: Path, rel: str, max_bytes: int, skipped: Counter) -> bytes | None:
    """Read one eligible file again at batch time (it may have changed or vanished)."""
    root = Path(root).resolve()
    path = root / rel
    if _symlink_skip(root, path, skipped):
        return None
    if not path.exists():
        skipped["vanished"] += 1
        return None
    return _read_eligible(path, max_bytes, skipped)


def _symlink_skip(root: Path, path: Path, skipped: Counter) -> bool:
    """Count and skip a symlink that dangles or leads out of the repository."""
    if not path.is_symlink():
        return False
    if not path.exists():
        skipped["broken_symlink"] += 1
        return True
    if not inside(root, path):
        skipped["symlink_outside"] += 1
        return True
    return False
