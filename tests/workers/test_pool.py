"""The pool's own framing is the one ``multiprocess.Connection`` reads and writes."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from multiprocess.connection import Connection

from memoryd.workers.pool import frame, unframe


def test_frames_cross_with_connection_both_ways_even_when_larger_than_the_buffer() -> None:
    ours, theirs = socket.socketpair()
    conn = Connection(theirs.detach())
    big = bytes(range(256)) * 40_000  # 10 MB: far past any socket buffer
    writer = threading.Thread(target=lambda: ours.sendall(frame(big) + big))
    writer.start()
    assert conn.recv_bytes() == big
    writer.join()

    conn.send_bytes(b"small")
    sender = threading.Thread(target=conn.send_bytes, args=(big,))
    sender.start()
    buffer = bytearray()
    messages: list[bytes] = []
    while len(messages) < 2:
        buffer += ours.recv(1 << 20)
        while (message := unframe(buffer)) is not None:
            messages.append(message)
    sender.join()
    assert messages == [b"small", big] and not buffer
    conn.close()
    ours.close()


def test_unframe_waits_for_a_whole_message() -> None:
    data = frame(b"abcdef") + b"abcdef"
    buffer = bytearray(data[:7])
    assert unframe(buffer) is None and len(buffer) == 7
    buffer += data[7:]
    assert unframe(buffer) == b"abcdef" and not buffer


def test_an_in_memory_connection_does_not_force_spawned_workers(tmp_path) -> None:
    """Capabilities keep in-memory SQLite (tokenizers): no file lock to inherit, so the
    first workers are still forked (a spawn costs a third of a second each). In a fresh
    interpreter: this one's threads and connections are the test run's."""
    probe = (
        "import apsw, sys\n"
        "from memoryd.workers.pool import _fork_safe\n"
        "scratch = apsw.Connection(':memory:')\n"
        "print(_fork_safe())\n"
        "disk = apsw.Connection(sys.argv[1])\n"
        "print(_fork_safe())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "x.db")],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert out == ["True", "False"]  # a file connection would share its locks with a child
