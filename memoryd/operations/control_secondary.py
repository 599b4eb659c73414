"""The control server's archive secondary: opened once, caught up only when the
primary changed, reopened when the archive directory was switched or the primary
flushed a write-ahead log the secondary had replayed (:func:`flushed`).

A catch-up re-reads the primary's MANIFEST and WAL tail (several ms even when
nothing changed), so it is skipped while the primary's write-ahead logs, its
MANIFEST and ``CURRENT`` look exactly as at the last catch-up (names, sizes,
modification times): every write appends to a log, every flush or compaction
rewrites the MANIFEST. A migration switch (:mod:`memoryd.retention.boundary`)
renames a new store directory into the archive's place; a secondary still
reading the old one would answer from the old files and decode payloads with
the old format, so the directory's identity (device, inode) is checked before
every read and a changed one is reopened.

RocksDB opens (and catches up) file by file through the directory's path: a switch
(or a flush of the primary) landing inside an open leaves an instance that read the old
directory's MANIFEST and the new one's table files and logs (both number theirs from
1), which answers a live version NOT_FOUND. So an open or a catch-up counts only if the
directory's identity and the primary's MANIFEST are the same after it as before;
otherwise it is done again (:data:`ATTEMPTS`), then left to the archive's owner.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from memoryd.base.errors import StoreBusy
from memoryd.storage.archive import ArchiveStore

Fingerprint = tuple[tuple[str, int, int], ...]
#: A directory changed less than this ago may have changed again unseen within its
#: mtime's granularity (the kernel's coarse clock: a few ms): listed again until older.
RACY_NS = 100_000_000
#: Opens (or catch-ups) tried while the directory keeps moving under them; then the read
#: is left to the archive's owner.
ATTEMPTS = 4


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the archive directory; None while it is missing (mid-switch)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def marked(path: Path) -> list[str] | None:
    """The names a primary's write changes: its logs, MANIFEST and CURRENT."""
    try:
        with os.scandir(path) as entries:
            return sorted(
                e.name
                for e in entries
                if e.name.endswith(".log") or e.name.startswith("MANIFEST") or e.name == "CURRENT"
            )
    except FileNotFoundError:
        return None


def fingerprint(path: Path, names: list[str]) -> Fingerprint:
    """(name, size, mtime) of each of ``names`` in ``path``; FileNotFoundError if one went."""
    marks = []
    for name in names:
        st = os.stat(path / name)
        marks.append((name, st.st_size, st.st_mtime_ns))
    return tuple(marks)


def flushed(seen: Fingerprint | None, now: Fingerprint | None) -> bool:
    """Whether the primary flushed or compacted since the secondary caught up: its
    MANIFEST changed or a write-ahead log the secondary replayed is gone (or a file went
    mid-look: ``now`` is None). A catch-up then reads the flushed files but keeps what it
    replayed from the flushed log in its memtable, which reads before them: a key
    deleted before the flush (a forget, a purge) would still be served. Only a reopen
    drops it. The MANIFEST is the sign to trust: the primary records a flush there at
    once, and deletes the obsolete log only later, in the background."""
    if seen is None:
        return False
    if now is None:
        return True
    logs_now = {name for name, _, _ in now}
    if any(name.endswith(".log") and name not in logs_now for name, _, _ in seen):
        return True
    return _manifests(seen) != _manifests(now)


def _manifests(marks: Fingerprint) -> set[tuple[str, int, int]]:
    return {m for m in marks if m[0].startswith("MANIFEST")}


class Marks:
    """The primary's :func:`fingerprint`, without listing its directory on every read.

    The directory holds an info log per open besides the files that matter (hundreds:
    listing it cost a read about a millisecond), so its marked names are listed again
    only when the directory itself changed (a file added, removed or renamed bumps its
    mtime), when it changed too recently for its mtime's granularity to tell (as git's
    "racily clean" index entries), or when a marked file is gone.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.names: list[str] | None = None
        self.listed: tuple[int, int] | None = None  # (inode, mtime) of the listed directory
        self.listings = 0

    def __call__(self) -> Fingerprint | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        listed = (st.st_ino, st.st_mtime_ns)
        recent = time.time_ns() - st.st_mtime_ns < RACY_NS
        if self.names is None or listed != self.listed or recent:
            self.names, self.listed = marked(self.path), listed
            self.listings += 1
        if self.names is None:
            return None
        try:
            return fingerprint(self.path, self.names)
        except FileNotFoundError:  # a log went since the listing: list again next time
            self.names = None
            return None


def drop_stale(parent: Path) -> None:
    """Remove the secondary-instance directories under ``parent`` (one per pid) of
    processes that are gone: one stopped by a signal cannot clean up after itself."""
    with contextlib.suppress(FileNotFoundError):
        for entry in parent.iterdir():
            if not (entry.name.isdigit() and psutil.pid_exists(int(entry.name))):
                shutil.rmtree(entry, ignore_errors=True)


class Secondary:
    """One secondary instance of ``home/archive``, shared by the control threads.

    :meth:`reading` serializes reads with catch-ups and reopens (a reopen must never
    close a store another thread reads)."""

    def __init__(self, archive: Path, info_dir: Path) -> None:
        self.archive, self.info_dir = Path(archive), Path(info_dir)
        self.store: ArchiveStore | None = None
        self.opened: tuple[int, int] | None = None  # the directory identity it reads
        self.seen: Fingerprint | None = None  # the primary as of the last catch-up
        self.marks = Marks(self.archive)
        self.opens = 0  # how many times it was (re)opened
        self.catch_ups = 0  # how many catch-ups ran (the rest were skipped)
        self.forced = False  # the next read catches up whatever the primary looks like
        self.lock = threading.Lock()

    @contextmanager
    def reading(self) -> Iterator[ArchiveStore | None]:
        """The store, current with the primary; None when there is no archive (yet, or
        mid-switch: the caller lets the archive's owner answer)."""
        with self.lock:
            yield self._current()

    def refresh(self) -> bool:
        """Off any read's path, what would cost the next read most: the reopen after a
        flush (or a switch), and the catch-up after a write this process noted
        (:meth:`stale`). A write of another process appended to the log is left to the
        read (a catch-up costs it about a millisecond; made ahead of every such write,
        it would cost every idle reader one per write). Whether it did anything (False
        too when a read holds the instance: it makes it current itself). Whatever fails
        is left for the next read to meet and report."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            before = (self.opens, self.catch_ups)
            with contextlib.suppress(Exception):
                self._current(appended=False)
            return (self.opens, self.catch_ups) != before
        finally:
            self.lock.release()

    def _current(self, *, appended: bool = True) -> ArchiveStore | None:
        """The store, current; ``appended=False``: not caught up for a write of another
        process (:meth:`refresh`). None when there is no archive, or it kept moving."""
        # taken first: a write noted during this catch-up forces the next one
        forced, self.forced = self.forced, False
        for _ in range(ATTEMPTS):
            ident = identity(self.archive)
            if ident is None or not (self.archive / "CURRENT").exists():
                self.close()
                return None
            mark = self.marks()
            if self.store is not None and (ident != self.opened or flushed(self.seen, mark)):
                self.close()
            if self.store is not None and not (
                forced or (appended and (mark is None or mark != self.seen))
            ):
                return self.store  # as at the last catch-up: nothing to read
            try:
                self._open_or_catch_up(ident, mark)
            except Exception as exc:
                self.close()
                if not self._still(ident, mark):
                    continue  # the directory moved under it: read it again
                if isinstance(exc, _CatchUpFailed):
                    cause = exc.__cause__
                    raise StoreBusy(f"the archive changed during a read ({cause}); retry") from None
                raise
            if self._still(ident, mark):
                return self.store
            self.close()  # a switch or a flush landed inside: the view may mix two states
        return None

    def _open_or_catch_up(self, ident: tuple[int, int], mark: Fingerprint | None) -> None:
        if self.store is None:
            self.store = ArchiveStore.open_secondary(self.archive, self.info_dir)
            self.opened, self.opens, self.seen = ident, self.opens + 1, mark
            return
        try:
            self.store.catch_up()
        except Exception as exc:
            raise _CatchUpFailed from exc
        self.seen, self.catch_ups = mark, self.catch_ups + 1

    def _still(self, ident: tuple[int, int], mark: Fingerprint | None) -> bool:
        """Whether the directory is the one whose identity and MANIFEST were taken
        before the open (or catch-up): no switch and no flush landed inside it (an
        append to a log may have: the instance just reads less of it)."""
        if mark is None or identity(self.archive) != ident:
            return False
        now = self.marks()
        return now is not None and not flushed(mark, now)

    def stale(self) -> None:
        """A write this process knows of was committed: the next read catches up even
        if the primary's files look as at the last catch-up (within their mtime's
        granularity, a write of the same size would not show)."""
        self.forced = True

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.store, self.opened, self.seen = None, None, None


class _CatchUpFailed(Exception):
    """A catch-up raised (its cause): reported as :class:`StoreBusy` if nothing moved."""
