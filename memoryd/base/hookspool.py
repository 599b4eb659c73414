"""The hook spool: agent hook events kept durably in the home until they are archived.

A hook process (``memoryd hook EVENT``) runs on every prompt and tool call, so this
module imports only ``os``, ``time`` and :mod:`memoryd.base.hookjson` (neither orjson
nor ``json``: their imports cost a hook more than its work; nor ``fcntl`` or ``zlib``,
shared libraries whose loading costs a hook more than its write: the lock is
``os.lockf``, the checksum :func:`checksum`); ``hashlib`` (OpenSSL's library) and
``fcntl`` wait for a transcript's event. It is the whole of what a hook needs to keep
an event; the drain (:mod:`memoryd.capture`) reads the same files (the logs through
:mod:`memoryd.base.hooklog`, which a hook never imports).

Layout, under ``$HOME/hooks/`` (directories 0700, files 0600):

- ``spool/<session>.log``: a session's prompts and tool calls, one *record* each,
  appended (``O_APPEND``, one ``write`` under ``os.lockf``) and ``fdatasync``ed
  before the hook returns: one sync an event, the directory's only when the hook
  made the file (:func:`append_record`). A record frames itself: ``\xff``, a header
  line (its kind, its name or offset, its length, a checksum), the JSON, a newline.
  The JSON is ASCII, so ``\xff`` starts every record and nothing else: a record torn
  by a kill mid-write (its length or checksum wrong) is skipped and the next found.
  The drain appends a *consumed* record (``C``) naming the offset its archive write
  reached, so a log carries its own progress (renamed, it carries it along).
- ``spool/<session>.<ns>.sealed``: a log the drain renamed away (its archived head
  large, or the session idle); no hook writes to it once the drain has held its lock
  after the rename (a hook checks, under the lock, that its file is still the live
  one). Removed when all of it is archived.
- ``spool/<ns>-<pid>-<size>.ev``: one event a file (a transcript's pieces: their
  names say how far the spool holds a transcript, :func:`spooled_to`), written under
  a hidden temporary name, fsynced, renamed into place and its directory fsynced.
- ``batches/<first event>.json``: the drain's manifest of the events one archive
  write takes (so a redo after a kill writes the same documents with the same ids).
- ``offsets/<session key>``: how far into a session's transcript the spool holds it.
- ``failures.jsonl``: a line per hook that could not do its work (bounded; doctor
  shows them); an event refused by a full spool is one, ``SPOOL_FULL``.
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
LOG_SUFFIX = ".log"
SEALED_SUFFIX = ".sealed"
#: Defaults of the settings of the same names (``memoryd.base.config``), here so a hook
#: reads them without building a Config.
SPOOL_MAX_BYTES = 256 * 1024 * 1024
FAILURES_MAX_BYTES = 256 * 1024  # then the file starts again (the last one kept as .1)
DIR_MODE = 0o700
FILE_MODE = 0o600
#: A log a hook made, until the directory entry is fsynced: a hook appending to a log
#: in this mode fsyncs the directory too (the maker may not have yet), then marks it.
NEW_LOG_MODE = 0o700
#: Records: ``\xff`` then ``KIND ARG LENGTH CHECKSUM\n``, LENGTH bytes of JSON, ``\n``.
MARK = b"\xff"
EVENT_RECORD, CONSUMED_RECORD = "E", "C"
MAX_HEADER = 96
#: The drain renames a live log away (and a hook starts the next) once its archived
#: head reaches ``ROTATE_BYTES``, or when no hook wrote to it for ``IDLE_SECONDS``:
#: each rotation costs the session's next hook a new file (its directory fsynced).
ROTATE_BYTES = 1024 * 1024
IDLE_SECONDS = 300.0
#: The checksum's modulus (the largest prime below 2**30: one CPython digit, so the
#: remainder of a long integer is one C loop).
CHECKSUM_PRIME = 1073741789


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


class SpoolFull(Exception):
    """The spool holds ``max_bytes`` already: the event is refused (and recorded as a
    ``SPOOL_FULL`` failure by the hook)."""


def append(home: str, event: dict, max_bytes: int = SPOOL_MAX_BYTES, *, prefix: str = "") -> str:
    """Keep ``event`` durably; returns its name. A transcript piece (``prefix``: its
    session and how far it goes, see :func:`transcript_prefix`) is a file of its own;
    any other event a record appended to its session's log. Raises
    :class:`SpoolFull` when the spool would pass ``max_bytes`` (the drain has not kept
    up, or no supervisor ran for long): the caller records it, ``doctor`` reports it."""
    data = dumps(event)
    folder = spool_dir(home)
    try:
        size = spool_size(folder)
    except FileNotFoundError:
        ensure_dir(folder)
        size = 0
    if size + len(data) > max_bytes:
        raise SpoolFull(f"the hook spool holds {max_bytes} bytes or more")
    name = f"{prefix}{time.time_ns():020d}-{os.getpid()}-{len(data)}"
    if prefix:
        write_durable(os.path.join(folder, name + EVENT_SUFFIX), data)
        return name + EVENT_SUFFIX
    append_record(folder, log_name(str(event.get("session") or "unknown")),
                  frame(EVENT_RECORD, name, data))  # fmt: skip
    return name


def spool_size(folder: str) -> int:
    """The spool's bytes: each event file's (its name says), each log's and sealed
    log's. A log's archived head counts until the drain rotates the log (at most
    ``ROTATE_BYTES`` a log, or until it is idle)."""
    total = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if name.endswith(EVENT_SUFFIX):
                total += event_size(name)
            elif name.endswith((LOG_SUFFIX, SEALED_SUFFIX)):
                try:
                    total += entry.stat().st_size
                except FileNotFoundError:
                    continue  # the drain removed it meanwhile
    return total


def log_name(session: str) -> str:
    """A session's log file name: a checksum of its id (two sessions sharing one log
    cost nothing: each record names its session; ``hashlib`` costs a hook its import)."""
    raw = session.encode("utf-8", "surrogatepass")
    return f"{checksum(raw):08x}{len(raw) % 256:02x}{checksum(raw[::-1]):08x}{LOG_SUFFIX}"


def checksum(data: bytes) -> int:
    """A 30-bit checksum of ``data`` from builtins alone (``zlib``'s or ``binascii``'s
    CRC costs a hook a shared library's loading): ``data`` as a big-endian number,
    modulo a prime. A torn or foreign tail changes it (the length is checked too)."""
    return int.from_bytes(data, "big") % CHECKSUM_PRIME


def frame(kind: str, arg: object, payload: bytes = b"") -> bytes:
    """One record: ``\xff``, its header line, ``payload`` (ASCII JSON: never ``\xff``)
    and a newline. The checksum covers the header's fields and the payload."""
    head = f"{kind} {arg} {len(payload)} ".encode()
    return b"".join((MARK, head, b"%08x\n" % checksum(head + payload), payload, b"\n"))


def append_record(folder: str, name: str, record: bytes) -> None:
    """``record`` appended to the log ``name`` in ``folder``, durably, in one ``write``
    under the log's lock. The lock and a check that the open file is still the one at
    ``name`` keep a record out of a log the drain renamed away (it takes the lock after
    its rename, so any hook that passed the check has written before it reads). A log
    made here is synced with its directory; one another hook made and has not yet
    marked synced (mode ``NEW_LOG_MODE``) is synced here too."""
    path = os.path.join(folder, name)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    while True:
        made = False
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, NEW_LOG_MODE)
            except FileExistsError:
                continue
            made = True
        try:
            os.lockf(fd, os.F_LOCK, 0)
            st = os.fstat(fd)
            try:
                live = os.stat(path)
            except FileNotFoundError:
                continue  # renamed away by the drain: a new log
            if (live.st_ino, live.st_dev) != (st.st_ino, st.st_dev):
                continue
            if os.write(fd, record) != len(record):
                raise OSError(f"a short write to {path}")  # torn: the drain skips it
            os.lseek(fd, 0, os.SEEK_SET)
            os.lockf(fd, os.F_ULOCK, 0)
            os.fdatasync(fd)
            if made or st.st_mode & 0o100:
                fsync_dir(folder)
                os.fchmod(fd, FILE_MODE)
            return
        finally:
            os.close(fd)


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
