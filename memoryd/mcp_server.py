"""``memoryd mcp``: the memory service as an MCP server over stdio (official SDK).

Every tool is a thin call into :class:`memoryd.api.Memoryd`. An abstention is a
normal result (``status``, empty ``items``, the ``gap``); a typed error is a
tool error whose text starts with its code and says what to do. The server
holds one active-context lease client for the session it serves: versions the
agent leases are kept alive by a heartbeat thread and released when the
session ends (stdin closes); if the server is killed, the lease lapses after
its ttl like any crashed client's.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import anyio
import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memoryd.api import Memoryd
from memoryd.errors import MemorydError

Query = Annotated[str, Field(description="What to look for, in plain words.")]
Project = Annotated[
    str | None,
    Field(description="Project name (default: the server's --project, else the only one)."),
]
Limit = Annotated[int, Field(ge=1, le=100, description="Most items to return.")]
Locator = Annotated[str, Field(description="An archive version, as returned by archive tools.")]

#: Each tool: its one-line description and an example call (tests/test_docs.py checks both).
TOOLS: dict[str, tuple[str, str]] = {
    "search": (
        "Search project memory (code and docs); abstains when evidence is insufficient.",
        '{"query": "how are JSON documents decoded?"}',
    ),
    "recall": (
        "Recall project memory plus recent archive evidence (within the recall horizons); "
        "injects nothing when the evidence is insufficient.",
        '{"query": "which retry backoff did we choose?"}',
    ),
    "remember": (
        "Stage memory candidates for consolidation; returns what was staged and what was "
        "dropped, with reasons.",
        '{"candidates": [{"text": "We use apsw, not sqlite3."}]}',
    ),
    "archive_add": (
        "Archive one JSONL transcript as a session of the evidence archive.",
        '{"transcript": "<JSONL lines>", "project": "myrepo", "session": "s42"}',
    ),
    "archive_search": (
        "Search the evidence archive with the evidence gate.",
        '{"query": "retry backoff decision", "project": "myrepo"}',
    ),
    "archive_get": (
        "Read one archived version (live with content, superseded or expired).",
        '{"locator": "s-chat-1a2b3c@1"}',
    ),
    "pin": (
        "Protect an archived document from retention until unpinned.",
        '{"locator": "s-chat-1a2b3c@1"}',
    ),
    "unpin": (
        "Remove a pin; the document expires at its original deadline.",
        '{"locator": "s-chat-1a2b3c@1"}',
    ),
    "lease_acquire": (
        "Lease archive versions for this session (all or nothing); kept alive until it ends.",
        '{"locators": ["s-chat-1a2b3c@1"], "project": "myrepo"}',
    ),
    "lease_renew": ("Renew this session's lease now (the server also heartbeats it).", "{}"),
    "lease_release": (
        "Release this session's lease: every version, or the ones named.",
        '{"locators": ["s-chat-1a2b3c@1"]}',
    ),
    "status": ("The home's queue, supervisor, projects and this session's lease.", "{}"),
}


def description(name: str) -> str:
    summary, example = TOOLS[name]
    return f"{summary} Example: {example}"


def remember_candidates(md: Memoryd, project: str, candidates: list[dict]) -> dict:
    """Stage candidates for consolidation (one JSON line each, as `memoryd memory add`):
    what was staged, the candidate ids, and the dropped ones with their line and reason.
    Nothing valid: MALFORMED_CANDIDATE, a tool error."""
    data = b"\n".join(orjson.dumps(c) for c in candidates)
    answer = md.memory_add(data, project)
    return {k: answer[k] for k in ("project", "staged", "candidates", "dropped")}


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """A typed error becomes a tool error: its code, whether a retry may help, what to do."""
    try:
        yield
    except MemorydError as exc:
        retry = " (retryable)" if exc.retryable else ""
        raise ToolError(f"{exc.code}{retry}: {exc}") from None


class Session:
    """One served session: the API, its lease client, and the heartbeat keeping it alive.

    A lock serializes calls into the API: the embedded archive is opened per
    call and two opens in one process would collide. Beside a supervisor, reads
    are one control-socket request each, made on the event loop through their
    own API instance and connection (:meth:`read`): a hop to a worker thread
    costs a read more than the request, and the heartbeat never holds their
    connection.
    """

    def __init__(self, md: Memoryd, project: str | None) -> None:
        self.md = md
        self.reads = Memoryd(md.home)  # the event loop's: beside a supervisor only
        self.reads.config = md.config
        self.project = project
        self.client = f"mcp-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.leased = False
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.beats = 0
        self.heartbeat = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)

    @contextlib.contextmanager
    def api(self) -> Iterator[Memoryd]:
        """The API under the session lock; a typed error becomes a tool error."""
        with tool_errors(), self.lock:
            yield self.md

    async def read(self, fn: Callable[[Memoryd], Any]) -> Any:
        """A read: on the event loop when a supervisor answers it over its control
        socket, else (embedded, opening stores) in a worker thread under the lock."""
        if self.reads.supervised():
            with tool_errors():
                return fn(self.reads)
        return await anyio.to_thread.run_sync(self._locked, fn)

    def _locked(self, fn: Callable[[Memoryd], Any]) -> Any:
        with self.api() as md:
            return fn(md)

    def project_name(self, project: str | None) -> str:
        with self.api() as md:
            return md.default_project(project or self.project)

    def lease(self, action: str, **args: Any) -> dict:
        with self.api() as md:
            result = md.archive("lease", {"action": action, "client": self.client, **args})
        self.leased = action != "release" or bool(args.get("locators"))
        return result

    def _beat(self) -> None:
        period = float(self.md.config.mcp_heartbeat_seconds)
        while not self.stopped.wait(period):
            if not self.leased:
                continue
            try:
                self.lease("renew")
                self.beats += 1
            except ToolError:
                self.leased = False  # lapsed or gone: the agent acquires again

    def close(self) -> None:
        """Stop the heartbeat and release the session's lease."""
        self.stopped.set()
        if self.leased:
            with contextlib.suppress(ToolError):
                self.lease("release")
        self.md.close()
        self.reads.close()


def build(state: Session) -> MCPServer:
    server = MCPServer(
        "memoryd", instructions="Local memory for coding agents: search, recall, archive."
    )

    def tool(fn: Callable) -> Callable:
        name = fn.__name__.removesuffix("_tool")
        return server.tool(name=name, description=description(name))(fn)

    @tool
    async def search(query: Query, project: Project = None, limit: Limit = 10) -> dict:
        return await state.read(lambda md: md.search(query, project or state.project, limit=limit))

    @tool
    async def recall(query: Query, project: Project = None, limit: Limit = 5) -> dict:
        return await state.read(lambda md: md.recall(query, project or state.project, limit=limit))

    @tool
    def archive_add(
        transcript: Annotated[str, Field(description="JSONL transcript text, one message a line.")],
        project: Project = None,
        session: Annotated[
            str | None, Field(description="Session id (default: a content hash).")
        ] = None,
        retention_class: Annotated[
            str | None, Field(description="ephemeral, conversation (default), derived or durable.")
        ] = None,
        created_at: Annotated[str | None, Field(description="ISO 8601 creation time.")] = None,
    ) -> dict:
        name = state.project_name(project)
        with state.api() as md:
            return md.archive_add(
                transcript.encode(),
                project=name,
                source="mcp",
                cls=retention_class,
                session=session,
                created_at=created_at,
            )

    @tool
    async def archive_search(query: Query, project: Project = None, limit: Limit = 10) -> dict:
        def read(md: Memoryd) -> dict:
            name = md.default_project(project or state.project)
            return md.archive("search", {"project": name, "query": query, "limit": limit})

        return await state.read(read)

    @tool
    async def archive_get(locator: Locator) -> dict:
        return await state.read(lambda md: md.archive("get", {"locator": locator}))

    @tool
    def pin(locator: Locator, note: str | None = None) -> dict:
        with state.api() as md:
            return md.archive("pin", {"locator": locator, "note": note})

    @tool
    def unpin(locator: Locator) -> dict:
        with state.api() as md:
            return md.archive("unpin", {"locator": locator})

    @tool
    def lease_acquire(locators: list[str], project: Project = None) -> dict:
        return state.lease("acquire", project=state.project_name(project), locators=locators)

    @tool
    def lease_renew() -> dict:
        return state.lease("renew")

    @tool
    def lease_release(locators: list[str] | None = None) -> dict:
        return state.lease("release", locators=locators)

    @tool
    async def status() -> dict:
        report = await state.read(Memoryd.status)
        lease = {"client": state.client, "leased": state.leased, "heartbeats": state.beats}
        return {**report, "session": lease}

    @tool
    def remember(
        candidates: Annotated[list[dict], Field(description="Candidate facts, each with text.")],
        project: Project = None,
    ) -> dict:
        name = state.project_name(project)
        with state.api() as md:
            return remember_candidates(md, name, candidates)

    return server


def serve(md: Memoryd, project: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client disconnects."""
    state = Session(md, project)
    state.heartbeat.start()
    try:
        build(state).run("stdio")
    finally:
        state.close()
