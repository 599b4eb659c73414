"""Walk a repository and decide which files are eligible, counting every skip by reason.

Rules: ``.git/`` and the default ignore set are skipped; ``.gitignore`` files
apply to their own directory and below (deeper files win, as in git); extra
``excludes`` use the same syntax; hidden names and credential files by name
(``SECRET_FILES``: dotenv files, keys; :mod:`memoryd.ingest.sensitive`) are skipped
unless included explicitly (other files are judged by their content as a batch reads
them), and names that are not UTF-8 are skipped and counted as ``bad_name``;
symlinks are followed only to regular files inside the repository, never into
directories; binaries (a NUL byte in the first 8 KiB, as git decides), files over
the size limit, special files and unreadable files are skipped. Every skip is
counted by reason and listed with its path (:class:`Skipped`, bounded by
``SKIPPED_PATHS_LISTED``). Every read opens its path component by component from
the root with ``O_NOFOLLOW`` (:func:`open_contained`): nothing outside the
repository is ever read, whatever changes between scan and batch.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from memoryd.base.config import (
    BINARY_SNIFF_BYTES,
    READ_STEP_BYTES,
    READER_DIRS_KEPT,
    SKIPPED_PATHS_LISTED,
)
from memoryd.ingest.chunking import digest
from memoryd.ingest.sensitive import secret_file_patterns

DEFAULT_IGNORES = (
    ".git/", ".hg/", ".svn/", "node_modules/", ".venv/", "venv/", "virtualenv/",
    "site-packages/", "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".tox/", ".nox/", ".cache/", "build/", "dist/", "target/", "*.egg-info/",
    ".eggs/", ".gradle/", ".idea/", ".DS_Store", "*.pyc", "*.pyo", "*.o", "*.so",
    "*.a", "*.dylib", "*.class", "*.jar", "*.whl", "*.zip", "*.tar", "*.gz",
)  # fmt: skip

# Skipped unless --include-secrets: names that say a file holds credentials (dotenv
# files, private keys, keystores; gitignore syntax, matched against a file's name).
# Hidden names (a leading dot) are skipped too unless --include-hidden, as
# ripgrep-like tools do.
SECRET_FILES = tuple(secret_file_patterns())


class Skipped(Counter):
    """Skips counted by reason, and listed: (reason, path, detail) of the first
    ``SKIPPED_PATHS_LISTED`` (a run's summary names every skipped file; a pruned
    directory is one entry, its path ending in "/")."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: list[tuple[str, str, str]] = []

    def note(self, reason: str, path: str, detail: str = "") -> None:
        self[reason] += 1
        if len(self.listed) < SKIPPED_PATHS_LISTED:
            self.listed.append((reason, shown_path(path), detail))


def shown_path(path: str) -> str:
    """``path`` as a listing can carry it: a name that is not UTF-8 (its bytes kept as
    surrogates by the file system's decoding) shows them as ``\\xNN`` escapes, since no
    JSON payload or text column can hold it."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


@dataclass(frozen=True)
class Eligible:
    path: str  # relative, '/'-separated
    size: int
    content_hash: bytes  # b"": not hashed by this scan


@dataclass
class ScanResult:
    eligible: list[Eligible] = field(default_factory=list)
    skipped: Skipped = field(default_factory=Skipped)


class _Matcher:
    """A gitignore spec's verdict on a path: True (ignored), False (taken back by a
    negation), None (no pattern matches). Without negations any match ignores, so the
    patterns are one joined regex, one search a path instead of one a pattern (most
    specs: the defaults, the secret names, most ``.gitignore`` files)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.spec = GitIgnoreSpec.from_lines(lines)
        patterns = [p for p in self.spec.patterns if p.include is not None]
        self.joined: re.Pattern | None = None
        if all(p.include for p in patterns):
            alternatives = (_GROUP.sub("(", p.regex.pattern) for p in patterns)
            self.joined = re.compile("|".join(f"(?:{a})" for a in alternatives) or "(?!)")

    def check(self, path: str) -> bool | None:
        if self.joined is None:
            return self.spec.check_file(path).include
        return True if self.joined.search(path) else None


_GROUP = re.compile(r"\(\?P<\w+>")  # a named group (repeated across patterns when joined)


class _Ignores:
    """The stack of ignore specs that apply to one directory, and the name rules."""

    def __init__(
        self, excludes: list[str], include_hidden: bool = False, include_secrets: bool = False
    ) -> None:
        self.base = _Matcher(DEFAULT_IGNORES)
        self.excludes = _Matcher(excludes) if excludes else None
        self.secrets = _Matcher(SECRET_FILES)
        self.include_hidden, self.include_secrets = include_hidden, include_secrets
        self.nested: dict[str, _Matcher] = {}  # dir rel path -> its .gitignore

    def load(self, root: Path, rel_dir: str) -> None:
        path = root / rel_dir / ".gitignore" if rel_dir else root / ".gitignore"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        self.nested[rel_dir] = _Matcher(lines)

    def ignored(self, rel: str, is_dir: bool) -> tuple[bool, str]:
        probe = rel + "/" if is_dir else rel
        verdict, reason = None, ""
        if self.base.check(probe):
            verdict, reason = True, "default_ignore"
        elif self.excludes and self.excludes.check(probe):
            verdict, reason = True, "exclude"
        for rel_dir, spec in self.nested.items():
            if rel_dir and not rel.startswith(rel_dir + "/"):
                continue
            sub = probe[len(rel_dir) + 1 :] if rel_dir else probe
            include = spec.check(sub)
            if include is not None:  # deeper .gitignore files come later and win
                verdict, reason = include, "gitignore"
        return bool(verdict), reason


class Escape(ValueError):
    """A path that would leave the repository (``..``, absolute, a symlinked directory)."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO swapped in after the scan must not block the worker.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _components(rel: str) -> list[str]:
    """The components of a repository-relative path; :class:`Escape` if it could leave."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise Escape(rel)
    return parts


def open_contained(root: Path, rel: str, *, follow_last: bool = True) -> int:
    """An fd of ``root/rel`` opened component by component from ``root`` with
    ``O_NOFOLLOW``: a directory swapped for a symlink (to ``/etc``, say) between scan
    and read fails the open instead of being followed. A symlink as the last component
    is followed only when it resolves inside ``root``, and then the resolved path is
    opened the same strict way. Raises :class:`Escape` or ``OSError``."""
    parts = _components(rel)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Escape(rel) from None
                raise
            os.close(fd)
            fd = nxt
        try:
            return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            if not follow_last:
                raise Escape(rel) from None
    finally:
        os.close(fd)
    return _open_symlink_target(root, rel)


def _open_symlink_target(root: Path, rel: str) -> int:
    """The fd of the regular file a last-component symlink leads to, inside ``root``."""
    target = Path(os.path.realpath(root / rel))
    try:
        inner = target.relative_to(root).as_posix()
    except ValueError:
        raise Escape(rel) from None
    return open_contained(root, inner, follow_last=False)  # resolved: no symlink left


class ContainedReader:
    """Reads files of one repository the way :func:`open_contained` opens them (each
    directory component by component with ``O_NOFOLLOW``), keeping the directories it
    opened: a batch's or a scan's files, listed directory by directory, each cost one
    open, one ``fstat`` and their reads, not a walk from the root and an ``lstat``
    apiece. A symlink shows itself as the open's ``ELOOP`` and only then is looked at
    (:func:`_symlink_skip`). A directory swapped for a symlink after the reader opened
    it changes nothing: the reader holds the directory itself, inside the root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._dirs: dict[tuple[str, ...], int] = {}

    def __enter__(self) -> ContainedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()

    def _dir(self, parts: tuple[str, ...]) -> int:
        """The fd of the directory ``parts`` (from the root; cached). Raises
        :class:`Escape` when one of them is a symlink or no directory, else ``OSError``."""
        fd = self._dirs.get(parts)
        if fd is not None:
            return fd
        if not parts:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            parent = self._dir(parts[:-1])
            try:
                fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Escape("/".join(parts)) from None
                raise
        self._dirs[parts] = fd
        return fd

    def _open(self, rel: str, skipped: Skipped) -> int | None:
        """An fd of the regular-or-not file ``rel`` inside the root, or None (noted)."""
        if len(self._dirs) > READER_DIRS_KEPT:
            self.close()
        try:
            parts = _components(rel)
            return os.open(parts[-1], _FILE_FLAGS, dir_fd=self._dir(tuple(parts[:-1])))
        except Escape:
            skipped.note("outside_root", rel)
            return None
        except FileNotFoundError:
            skipped.note("vanished", rel)
            return None
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                skipped.note("unreadable", rel)
                return None
        if _symlink_skip(self.root, rel, self.root / rel, skipped):  # dangling, outside
            return None
        try:
            return _open_symlink_target(self.root, rel)
        except Escape:
            skipped.note("outside_root", rel)
        except FileNotFoundError:
            skipped.note("vanished", rel)
        except OSError:
            skipped.note("unreadable", rel)
        return None

    def read(
        self, rel: str, max_bytes: int, skipped: Skipped, *, sniff_only: bool = False
    ) -> tuple[bytes, int] | None:
        """The file's bytes and size, or None (noted in ``skipped``) when it is not
        eligible. ``sniff_only`` reads just the prefix that decides binary files."""
        fd = self._open(rel, skipped)
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                skipped.note("special", rel)
                return None
            if st.st_size > max_bytes:
                skipped.note("too_large", rel)
                return None
            limit = BINARY_SNIFF_BYTES if sniff_only else max_bytes + 1
            raw = _read_upto(fd, limit, st.st_size + 1)
        except OSError:
            skipped.note("unreadable", rel)
            return None
        finally:
            os.close(fd)
        if len(raw) > max_bytes:
            skipped.note("too_large", rel)
            return None
        if b"\0" in raw[:BINARY_SNIFF_BYTES]:
            skipped.note("binary", rel)
            return None
        return raw, st.st_size


def _read_upto(fd: int, limit: int, expected: int) -> bytes:
    """Up to ``limit`` bytes of ``fd`` (to its end), asking first for the ``expected``
    size: one read of the whole file, one more that finds its end."""
    data = os.read(fd, min(limit, expected))
    parts, got = [data], len(data)
    while got < limit and (data := os.read(fd, min(READ_STEP_BYTES, limit - got))):
        parts.append(data)
        got += len(data)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _name_reason(name: str, ignores: _Ignores) -> str:
    """Why a file or directory is skipped by its name alone, before any ignore file:
    a name that is not UTF-8 (it could not travel in a job payload nor be stored),
    a secret, a hidden name. Empty when the name is fine."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "bad_name"
    if not ignores.include_secrets and ignores.secrets.check(name):
        return "secret"
    if not ignores.include_hidden and name.startswith("."):
        return "hidden"
    return ""


def entry_error(exc: OSError) -> str:
    """The skip reason of an entry the scan could not look at (every such error skips
    and counts that entry alone, never the run)."""
    return "name_too_long" if exc.errno == errno.ENAMETOOLONG else "unreadable"


def _walk(root: Path, ignores: _Ignores, result: ScanResult) -> Iterator[tuple[str, Path]]:
    """Yield (relative path, absolute path) of candidate files, pruning as it goes. A
    directory that cannot be listed (its path past PATH_MAX, say) is counted."""

    def unlisted(exc: OSError) -> None:
        where = os.path.relpath(exc.filename, root) if exc.filename else ""
        result.skipped.note(entry_error(exc), where.replace(os.sep, "/") + "/")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            ignores.load(root, rel_dir)
        keep = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                linked = Path(dirpath, name).is_symlink()
            except OSError as exc:
                result.skipped.note(entry_error(exc), rel + "/")
                continue
            if linked:
                result.skipped.note("symlink_dir", rel + "/")
                continue
            reason = _skip_reason(ignores, rel, name, True)
            if reason:
                result.skipped.note(reason, rel + "/")
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            reason = _skip_reason(ignores, rel, name, False)
            if reason:
                result.skipped.note(reason, rel)
                continue
            yield rel, Path(dirpath, name)


def _skip_reason(ignores: _Ignores, rel: str, name: str, is_dir: bool) -> str:
    """The first reason to skip an entry: a bad name, then ignore files, then the
    secret and hidden rules (so a gitignored ``.env`` counts as gitignored)."""
    reason = _name_reason(name, ignores)
    if reason == "bad_name":
        return reason
    is_ignored, ignored_reason = ignores.ignored(rel, is_dir)
    return ignored_reason if is_ignored else reason


def inside(root: Path, path: Path) -> bool:
    """True when ``path`` resolves to a location inside ``root`` (symlinks followed)."""
    try:
        path.resolve(strict=True).relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def scan(
    root: Path,
    *,
    max_bytes: int,
    excludes: list[str] | None = None,
    hashes: bool = True,
    include_hidden: bool = False,
    include_secrets: bool = False,
    on_eligible: Callable[[int], None] | None = None,
) -> ScanResult:
    """Eligible files with their sizes and content hashes. Without ``hashes`` (nothing
    stored to compare with) only the binary-deciding prefix is read, the size comes
    from ``stat`` and ``content_hash`` is empty: batches read and hash every file.
    ``on_eligible`` is told the count of eligible files found so far, after each."""
    root = Path(root).resolve()
    result = ScanResult()
    ignores = _Ignores(list(excludes or []), include_hidden, include_secrets)
    with ContainedReader(root) as reader:
        for rel, _ in _walk(root, ignores, result):
            read = reader.read(rel, max_bytes, result.skipped, sniff_only=not hashes)
            if read is not None:
                raw, size = read
                result.eligible.append(Eligible(rel, size, digest(raw) if hashes else b""))
                if on_eligible:
                    on_eligible(len(result.eligible))
    return result


def read_files(
    root: Path, rels: Iterable[str], max_bytes: int, skipped: Skipped
) -> Iterator[tuple[str, bytes]]:
    """Read a batch's eligible files again (each may have changed or vanished, a
    directory on its path may now be a symlink, a crafted payload may name ``..``), in
    one pass (:class:`ContainedReader`): only a regular file inside ``root`` is ever
    read (any other noted in ``skipped``). Yields (path, bytes) of those read."""
    with ContainedReader(root) as reader:
        for rel in rels:
            read = reader.read(rel, max_bytes, skipped)
            if read is not None:
                yield rel, read[0]


def _symlink_skip(root: Path, rel: str, path: Path, skipped: Skipped) -> bool:
    """Count and skip a symlink that dangles or leads out of the repository (and an
    entry that cannot even be looked at)."""
    try:
        if not path.is_symlink():
            return False
        if not path.exists():
            skipped.note("broken_symlink", rel)
            return True
    except OSError as exc:
        skipped.note(entry_error(exc), rel)
        return True
    if not inside(root, path):
        skipped.note("symlink_outside", rel)
        return True
    return False
