"""``memoryd dashboard``: Starlette on uvicorn, on 127.0.0.1 only, behind a URL token.

The token is random per start and printed with the URL (as Jupyter does); a
request without it gets 403, whatever the path. The page refreshes itself
(``<meta http-equiv="refresh">``); ``/api/snapshot`` serves the same data as
JSON behind the same token. The handlers are ``async`` and read synchronously:
one thread uses the read-only connection, one short read per statement.
"""

from __future__ import annotations

import secrets
import socket
import webbrowser
from urllib.parse import parse_qs

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.api import Memoryd
from memoryd.dashboard.data import DashboardData
from memoryd.dashboard.page import render

HOST = "127.0.0.1"  # never another interface: the page shows pids, paths and errors
WINDOW_SECONDS = 3600.0  # the charts' default time window (?window=SECONDS)


class RequireToken:
    """Refuse (403) every HTTP request whose ``token`` query parameter is not ours."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                refuse = PlainTextResponse(
                    "403: this dashboard needs the URL with the token printed at its start",
                    status_code=403,
                )
                await refuse(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(data: DashboardData, token: str, refresh_seconds: float) -> ASGIApp:
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
    return RequireToken(app, token)


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback address only (port 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def serve(md: Memoryd, *, port: int, open_browser: bool, announce) -> None:
    """Serve the dashboard of ``md``'s home until interrupted; ``announce(url)`` is called
    once the socket listens."""
    data = DashboardData(md)
    token = secrets.token_urlsafe(24)
    sock = bind(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/?token={token}"
    refresh = max(2.0, float(md.config.sample_period_seconds) or 5.0)
    config = uvicorn.Config(
        create_app(data, token, refresh), log_level="warning", access_log=False, lifespan="off"
    )
    announce(url)
    if open_browser:
        webbrowser.open(url)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        data.close()
