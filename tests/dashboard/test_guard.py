"""The dashboard answers only its own loopback address, and says how a browser may use it."""

from __future__ import annotations

import http.client
import os
import socket
from urllib.parse import urlsplit

import orjson

from tests.conftest import run_cli
from tests.dashboard.test_dashboard import start_dashboard


def get(url: str, host: str | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"Host": host} if host else {}
    conn.request("GET", f"{parts.path}?{parts.query}", headers=headers)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


def test_a_foreign_host_is_refused_and_every_answer_forbids_framing(home, background) -> None:
    assert run_cli("init", home=home).code == 0
    dash, url = start_dashboard(background)
    port = urlsplit(url).port
    ok = get(url)
    assert ok.status == 200
    csp = ok.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and ok.headers["X-Frame-Options"] == "DENY"
    assert get(url, host=f"localhost:{port}").status == 200
    # a rebinding page's requests carry its own name, the token and all
    for foreign in ("attacker.example", f"attacker.example:{port}", f"127.0.0.1:{port + 1}"):
        refused = get(url, host=foreign)
        assert refused.status == 403, foreign
        assert refused.headers["X-Frame-Options"] == "DENY"
    assert dash.terminate() in (0, -15)


def test_a_busy_port_is_a_typed_error_naming_its_holder(home) -> None:
    assert run_cli("init", home=home).code == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run_cli("dashboard", "--port", str(port), "--json", home=home)
    assert res.code == 2 and "Traceback" not in res.stderr + res.stdout, res
    answer = orjson.loads(res.stdout)
    assert answer["error"] == "PORT_BUSY" and f"port {port}" in answer["message"]
    assert f"pid {os.getpid()}" in answer["message"], answer
