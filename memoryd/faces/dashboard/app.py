"""``memoryd dashboard``: Starlette on uvicorn, on 127.0.0.1 only, behind a URL token.

The token is random per start and printed with the URL (as Jupyter does); a
request without it, or naming another ``Host``, gets 403, whatever the path.
The page refreshes itself (``<meta http-equiv="refresh">``); ``/api/snapshot``
serves the same data as JSON behind the same token. The handlers are
``async`` and read synchronously: one thread uses the read-only connection, one
short read per statement.
"""

from __future__ import annotations

import contextlib
import errno
import secrets
import socket
import webbrowser
from urllib.parse import parse_qs

import orjson
import psutil
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.base.errors import PortBusy
from memoryd.faces.dashboard.data import DashboardData
from memoryd.faces.dashboard.page import render
from memoryd.operations.api import Memoryd

HOST = "127.0.0.1"  # never another interface: the page shows pids, paths and errors
WINDOW_SECONDS = 3600.0  # the charts' default time window (?window=SECONDS)


#: Sent with every answer: the page loads nothing from anywhere and is never framed.
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; img-src data:"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == name), "")


class Guard:
    """Refuse (403) every HTTP request whose ``token`` query parameter is not ours, or
    whose ``Host`` is not this loopback listener (a page of another site that rebinds
    its name to 127.0.0.1 sends its own name); add :data:`SECURITY_HEADERS` to every
    answer."""

    def __init__(self, app: ASGIApp, token: str, hosts: set[str]) -> None:
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            await send(message)

        if why := self._refusal(scope):
            await PlainTextResponse(f"403: {why}", status_code=403)(scope, receive, guarded)
            return
        await self.app(scope, receive, guarded)

    def _refusal(self, scope: Scope) -> str | None:
        if _header(scope, b"host").lower() not in self.hosts:
            return "this dashboard answers only at the address printed at its start"
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return "this dashboard needs the URL with the token printed at its start"
        return None


def loopback_hosts(port: int) -> set[str]:
    """The ``Host`` values a browser sends for this listener."""
    return {f"{HOST}:{port}", f"localhost:{port}"}


def create_app(data: DashboardData, token: str, refresh_seconds: float, port: int) -> ASGIApp:
    def window(request: Request) -> float:
        try:
            return max(60.0, float(request.query_params.get("window", WINDOW_SECONDS)))
        except ValueError:
            return WINDOW_SECONDS

    async def page(request: Request) -> Response:
        seconds = window(request)
        snap = data.snapshot(seconds)
        html = render(snap, refresh_seconds=refresh_seconds, window_seconds=seconds)
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def snapshot(request: Request) -> Response:
        body = orjson.dumps(data.snapshot(window(request)), default=str)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    app = Starlette(routes=[Route("/", page), Route("/api/snapshot", snapshot)])
    return Guard(app, token, loopback_hosts(port))


def _holder(port: int) -> str:
    """Who listens on ``port``, as far as this user may see."""
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections(kind="inet"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN:
                if conn.pid is None:
                    return "a process of another user"
                with contextlib.suppress(psutil.Error):
                    proc = psutil.Process(conn.pid)
                    return f"pid {conn.pid} ({' '.join(proc.cmdline())[:120] or proc.name()})"
                return f"pid {conn.pid}"
    return "another process"


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback address only (port 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        raise PortBusy(
            f"port {port} on {HOST} is taken by {_holder(port)}; "
            "pick another with --port, or --port 0 for any free one"
        ) from None
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def serve(md: Memoryd, *, port: int, open_browser: bool, announce) -> None:
    """Serve the dashboard of ``md``'s home until interrupted; ``announce(url)`` is called
    once the socket listens."""
    data = DashboardData(md)
    token = secrets.token_urlsafe(24)
    sock = bind(port)
    port = sock.getsockname()[1]
    url = f"http://{HOST}:{port}/?token={token}"
    refresh = max(2.0, md.config.sample_period_seconds or 5.0)
    config = uvicorn.Config(
        create_app(data, token, refresh, port),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    announce(url)
    if open_browser:
        webbrowser.open(url)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        data.close()
