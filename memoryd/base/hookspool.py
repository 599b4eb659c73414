"""The hook spool: agent hook events kept durably in the home until they are archived.

A hook process (``memoryd hook EVENT``) runs on every prompt and tool call, so this
module imports only ``os``, ``time`` and :mod:`memoryd.base.hookjson` (neither orjson
nor ``json``: their imports cost a hook more than its work); ``hashlib`` (OpenSSL's
library) and ``fcntl`` wait for a transcript's event. It is the whole of what a hook
needs to keep an event, and the drain (:mod:`memoryd.capture`) reads the same files.

Layout, under ``$HOME/hooks/`` (directories 0700, files 0600):

- ``spool/<ns>-<pid>-<size>.ev``: one event per file, written under a hidden
  temporary name, fsynced, renamed into place and its directory fsynced before the
  hook returns. A crash leaves the whole event or nothing; the name sorts in arrival
  order and carries the file's size, so the spool's total is a directory listing.
- ``batches/<first event>.json``: the drain's manifest of the events one archive
  write takes (so a redo after a kill writes the same documents with the same ids).
- ``offsets/<session key>``: how far into a session's transcript the spool holds it.
- ``failures.jsonl``: a line per hook that could not do its work (bounded; doctor
  shows them), ``dropped`` counts events refused by a full spool.
"""

import os
import time

from memoryd.base import hookjson

HOOKS_DIR = "hooks"
SPOOL = "spool"
BATCHES = "batches"
OFFSETS = "offsets"
FAILURES_FILE = "failures.jsonl"
EVENT_SUFFIX = ".ev"
#: Defaults of the settings of the same names (``memoryd.base.config``), here so a hook
#: reads them without building a Config.
SPOOL_MAX_BYTES = 256 * 1024 * 1024
FAILURES_MAX_BYTES = 256 * 1024  # then the file starts again (the last one kept as .1)
DIR_MODE = 0o700
FILE_MODE = 0o600


def hooks_dir(home: str) -> str:
    return os.path.join(home, HOOKS_DIR)


def spool_dir(home: str) -> str:
    return os.path.join(home, HOOKS_DIR, SPOOL)


def ensure_dir(path: str) -> None:
    """``path`` and its missing parents, 0700 (the home's own mode)."""
    os.makedirs(path, mode=DIR_MODE, exist_ok=True)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: str, data: bytes) -> None:
    """``data`` as the whole of ``path``: a temporary name, fsync, rename, directory
    fsync. A failure leaves no temporary file."""
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.rename(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        _unlink(tmp, OSError)
        raise
    fsync_dir(folder)


def _unlink(path: str, ignored: type[OSError] = FileNotFoundError) -> None:
    """Remove ``path``, ``ignored`` errors ignored (``contextlib``'s import is one more
    for a hook)."""
    try:
        os.unlink(path)
    except ignored:
        return


def event_names(home: str) -> list[str]:
    """The spooled events' file names, oldest first (never a temporary file)."""
    try:
        names = os.listdir(spool_dir(home))
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(EVENT_SUFFIX) and not n.startswith("."))


def event_size(name: str) -> int:
    """The size an event's name records (0 for a name not made here)."""
    try:
        return int(name[: -len(EVENT_SUFFIX)].rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return 0


def spool_bytes(names: list[str]) -> int:
    return sum(event_size(n) for n in names)


class SpoolFull(Exception):
    """The spool holds ``max_bytes`` already: the event is refused, and counted."""


def append(home: str, event: dict, max_bytes: int = SPOOL_MAX_BYTES, *, prefix: str = "") -> str:
    """Keep ``event`` durably; returns its file name (``prefix`` first: a transcript
    piece's names its session and how far it goes, see :func:`transcript_prefix`).
    Raises :class:`SpoolFull` when the spool would pass ``max_bytes`` (the drain has
    not kept up, or no supervisor ran for long): the caller records it, ``doctor``
    reports it."""
    data = dumps(event)
    folder = spool_dir(home)
    ensure_dir(folder)
    if spool_bytes(event_names(home)) + len(data) > max_bytes:
        raise SpoolFull(f"the hook spool holds {max_bytes} bytes or more")
    name = f"{prefix}{time.time_ns():020d}-{os.getpid()}-{len(data)}{EVENT_SUFFIX}"
    write_durable(os.path.join(folder, name), data)
    return name


def transcript_prefix(session: str, path: str, to: int) -> str:
    """The name start of a transcript piece: its session and path, and the offset it
    reaches. A hook killed after spooling a piece but before noting its offset finds
    the offset in the name (:func:`spooled_to`), so no piece is spooled twice."""
    return f"t-{session_key(session)}-{path_key(path)}-{to:016d}-"


def path_key(path: str) -> str:
    import hashlib

    return hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def spooled_to(names: list[str], session: str, path: str) -> int:
    """How far the spooled (not yet archived) pieces of a transcript reach (0: none)."""
    head = f"t-{session_key(session)}-{path_key(path)}-"
    return max((int(n[len(head) : len(head) + 16]) for n in names if n.startswith(head)),
               default=0)  # fmt: skip


def read_event(home: str, name: str) -> dict | None:
    """A spooled event, or None when it is gone (archived and removed)."""
    try:
        with open(os.path.join(spool_dir(home), name), "rb") as f:
            return hookjson.loads(f.read())
    except FileNotFoundError:
        return None


def remove_event(home: str, name: str) -> None:
    _unlink(os.path.join(spool_dir(home), name))


def session_key(session: str) -> str:
    """A file name for a session id of any shape."""
    import hashlib

    return hashlib.blake2b(session.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def offset_path(home: str, session: str) -> str:
    return os.path.join(home, HOOKS_DIR, OFFSETS, session_key(session))


def read_offsets(home: str, session: str) -> dict:
    """``{transcript path: bytes spooled}`` of a session (empty when none)."""
    try:
        with open(offset_path(home, session), "rb") as f:
            return hookjson.loads(f.read())
    except (FileNotFoundError, ValueError):
        return {}


def write_offsets(home: str, session: str, offsets: dict) -> None:
    path = offset_path(home, session)
    ensure_dir(os.path.dirname(path))
    write_durable(path, dumps(offsets))


class offsets_locked:  # noqa: N801 - used as the context manager it was written as
    """An exclusive lock on a session's offsets (a hook reading its transcript, the
    drain advancing them): two hooks of one session never spool one piece twice. A
    class, not ``contextlib.contextmanager``: that import is one more for a hook."""

    def __init__(self, home: str, session: str) -> None:
        self.path = offset_path(home, session) + ".lock"
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl

        ensure_dir(os.path.dirname(self.path))
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def record_failure(home: str, event: str, code: str, message: str) -> None:
    """One line in ``failures.jsonl`` (one ``write`` with ``O_APPEND``: lines of
    concurrent hooks never interleave). Bounded: past ``FAILURES_MAX_BYTES`` the file
    is renamed to ``.1`` (the one before is dropped). Never raises."""
    import contextlib  # here: a hook that fails pays for it, not every hook

    with contextlib.suppress(OSError):
        folder = hooks_dir(home)
        ensure_dir(folder)
        path = os.path.join(folder, FAILURES_FILE)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_size > FAILURES_MAX_BYTES:
                os.replace(path, path + ".1")
        line = dumps({"at": time.time(), "event": event, "code": code,
                             "message": message[:500]}) + b"\n"  # fmt: skip
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def read_failures(home: str) -> list[dict]:
    """The failures recorded, oldest first (the rotated file's, then the current's)."""
    import contextlib

    path = os.path.join(hooks_dir(home), FAILURES_FILE)
    found = []
    for name in (path + ".1", path):
        with contextlib.suppress(FileNotFoundError), open(name, "rb") as f:
            for line in f:
                with contextlib.suppress(ValueError):
                    found.append(hookjson.loads(line))
    return found


def dumps(value: object) -> bytes:
    """Compact ASCII JSON (:mod:`memoryd.base.hookjson`: orjson's or ``json``'s import
    costs a hook process more than its work)."""
    return hookjson.dumps(value)
