"""Processes for the spool's drills (tests/capture/test_spool_log.py): hooks appending
tool events, and a drain archiving into a file that stands for the archive.

    python -m tests.capture.spool_drill append HOME SESSION COUNT SIZE TAG
    python -m tests.capture.spool_drill drain HOME OUT [ROTATE_BYTES IDLE_SECONDS]

``append`` appends COUNT tool events (outputs of about SIZE bytes, each holding
``TAG-i``) as a hook does, and prints each one's name as it is durable. ``drain``
runs :func:`memoryd.capture.drain.drain` until nothing waits, its archive a JSON-lines
file written as the archive writes: one synced write a batch, and a request already
applied answered without writing (the first write of a request id is the one kept).
"""

from __future__ import annotations

import os
import sys
import time

import orjson

from memoryd.base import hooklog, hookspool


class FileArchive:
    """``store.ledgers.append_many`` into a JSON-lines file, one fsynced write a call."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.ledgers = self

    def append_many(self, items: list) -> None:
        lines = b"".join(orjson.dumps({"request": i.request_id, "doc": i.doc_id, "cls": i.cls,
                                       "content": i.content}) + b"\n" for i in items)  # fmt: skip
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _drop_torn_tail(fd)
            os.write(fd, lines)
            os.fsync(fd)
        finally:
            os.close(fd)


def _drop_torn_tail(fd: int) -> None:
    """What the archive's recovery does with a write a SIGKILL tore (a large write can
    stop part way): its bytes after the last whole line go, so the next write starts
    a line of its own."""
    end = os.lseek(fd, 0, os.SEEK_END)
    tail = os.pread(fd, min(end, 1 << 20), max(0, end - (1 << 20)))
    if tail and not tail.endswith(b"\n"):
        cut = tail.rfind(b"\n") + 1  # 0: no whole line in the last MiB (lines are smaller)
        os.ftruncate(fd, end - len(tail) + cut)


class Policy:
    def expires_at(self, cls: str, at: float) -> float | None:
        return None


def archived(path: str) -> dict[str, dict]:
    """The archive's documents by request id: the first write of each (a later one is
    a redo the archive answers without writing)."""
    docs: dict[str, dict] = {}
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.endswith(b"\n"):  # a torn last line: its write never returned
                    d = orjson.loads(line)
                    docs.setdefault(d["request"], d)
    except FileNotFoundError:
        pass
    return docs


def append(home: str, session: str, count: int, size: int, tag: str) -> None:
    for i in range(count):
        event = {"v": 1, "event": "PostToolUse", "agent": "claude-code", "session": session,
                 "cwd": "/work/drill", "at": time.time(), "transcript_path": None,
                 "kind": "tool", "tool_name": "Bash", "tool_input": {"command": f"{tag}-{i}"},
                 "tool_response": f"{tag}-{i} " + "x" * (size * (i % 7 + 1) // 4)}  # fmt: skip
        name = hookspool.append(home, event)
        sys.stdout.write(f"{tag}-{i} {name}\n")
        sys.stdout.flush()


def drain(home: str, out: str) -> None:
    from memoryd.capture import drain as capture

    while True:
        capture.drain(home, FileArchive(out), Policy(), dict, 1.0)
        if not hooklog.waiting(home, capture.IDLE_SECONDS) and not capture.pending_batches(home):
            return


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "append":
        append(args[0], args[1], int(args[2]), int(args[3]), args[4])
    else:
        if len(args) > 2:
            from memoryd.capture import drain as capture

            capture.ROTATE_BYTES, capture.IDLE_SECONDS = int(args[2]), float(args[3])
        drain(args[0], args[1])
