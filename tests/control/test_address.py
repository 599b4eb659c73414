"""A home deeper than an AF_UNIX address holds still gets its control socket."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from memoryd.operations.control_client import address, connect, socket_path


def test_a_socket_deeper_than_sun_path_binds_and_connects(tmp_path: Path) -> None:
    home = tmp_path / ("d" * 60) / ("e" * 60)
    home.mkdir(parents=True)
    path = socket_path(home)
    assert len(str(path)) > 108  # bind(str(path)) would raise "AF_UNIX path too long"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with server:
        with address(path) as where:
            server.bind(where)
        assert path.exists()  # the socket file is where the home expects it
        server.listen(1)
        echo = threading.Thread(target=lambda: _echo_once(server), daemon=True)
        echo.start()
        conn = connect(home)
        assert conn is not None
        with conn:
            conn.sendall(b"ping")
            assert conn.recv(4) == b"ping"
        echo.join(10)


def test_a_short_path_is_its_own_address(tmp_path: Path) -> None:
    with address(tmp_path / "s.sock") as where:
        assert where == str(tmp_path / "s.sock")


def _echo_once(server: socket.socket) -> None:
    peer, _ = server.accept()
    with peer:
        peer.sendall(peer.recv(4))
