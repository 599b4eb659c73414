"""``memoryd mcp``: the memory service as an MCP server over stdio
(:mod:`memoryd.faces.mcp.protocol`: the protocol without the SDK's server).

Every tool is a thin call into :class:`memoryd.operations.api.Memoryd`. An abstention is a
normal result (``status``, empty ``items``, the ``gap``); a typed error is a
tool error whose text starts with its code and says what to do. The server
holds one active-context lease client for the session it serves: versions the
agent leases are kept alive by a heartbeat thread and released when the
session ends (stdin closes); if the server is killed, the lease lapses after
its ttl like any crashed client's.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import anyio
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memoryd import __version__
from memoryd.archive.transcripts import doc_id
from memoryd.base.config import (
    DRAIN_EXIT_SECONDS,
    MEMORY_FORGET_SETTLE_SECONDS,
    MEMORY_SETTLE_SECONDS,
)
from memoryd.base.errors import MemorydError, UsageError, corruption, is_corruption
from memoryd.base.times import utc_iso
from memoryd.consolidation.candidates import DEFAULT_KIND, KINDS
from memoryd.faces.mcp import stdio as mcp_stdio
from memoryd.faces.mcp.protocol import Server as ProtocolServer
from memoryd.faces.mcp.protocol import ToolError
from memoryd.faces.mcp.reads import LocalReads, NotHere
from memoryd.operations.api import Memoryd, NotRouted
from memoryd.operations.archive import Archive
from memoryd.operations.home import Home
from memoryd.operations.memory import Memory
from memoryd.operations.projects import Projects
from memoryd.operations.recall import recall
from memoryd.operations.search import Search
from memoryd.storage.archive import make_locator

Query = Annotated[str, Field(description="What to look for, in plain words.")]
Project = Annotated[
    str | None,
    Field(description="Project name (default: the server's --project, else the only one)."),
]
Limit = Annotated[int, Field(ge=1, le=100, description="Most items to return.")]
Locator = Annotated[
    str, Field(description="An archive version DOC@VERSION, as archive tools return it.")
]
Locators = Annotated[list[str], Field(description="Archive versions (DOC@VERSION).")]
RetentionClass = Literal["ephemeral", "conversation", "derived", "durable"]


class Candidate(BaseModel):
    """One thing to remember. Only text is required."""

    # The library validates the rest (lengths, blank strings), as for `memoryd memory add`.
    model_config = ConfigDict(extra="forbid")

    kind: Literal[KINDS] = Field(  # type: ignore[valid-type]
        DEFAULT_KIND,
        description="lesson: how to do something or what to avoid; fact: how things are; "
        "decision: what was chosen; preference: how the user wants things.",
    )
    text: str = Field(description="The memory: one self-contained statement.")
    triggers: list[str] | None = Field(
        None,
        description="Words that should bring it back (a lesson without any gets its "
        "five longest content words).",
    )
    scope: str | None = Field(None, description="Where it applies (default: the project).")
    refs: list[str] | None = Field(
        None,
        description="Paths (path:START-END for lines: recall marks each verified, moved, "
        "changed or stale where the code is now) or archive locators it is about.",
    )
    source: str | None = Field(None, description="Where it came from, e.g. a session id.")


#: The session the ``archive_add`` example archives: the other archive tools' examples
#: name its first version, so every example, called in this order on a home whose
#: project ``myrepo`` is ingested, succeeds as written (tests/agent/test_agent_loop.py).
EXAMPLE_PROJECT, EXAMPLE_SESSION = "myrepo", "s42"
EXAMPLE_FACT = "We use apsw, not sqlite3."
EXAMPLE_LOCATOR = make_locator(doc_id("s", EXAMPLE_PROJECT, EXAMPLE_SESSION), 1)
#: A transcript line carries its time (else archive_add asks for created_at): the server's
#: start, so the example never archives a session already past its retention age.
EXAMPLE_TRANSCRIPT = json.dumps(
    {
        "role": "user",
        "content": "We chose exponential retry backoff.",
        "timestamp": utc_iso(int(time.time())),
    }
)

#: Each tool: its one-line description and an example call (tests/test_docs.py checks both).
TOOLS: dict[str, tuple[str, dict]] = {
    "search": (
        "Search project memory (code, docs and memory records); abstains when evidence is "
        "insufficient. Waits briefly for this session's remembered candidates; "
        "`memory_pending` says which are not searchable yet and why.",
        {"query": "how are JSON documents decoded?"},
    ),
    "recall": (
        "Recall project memory plus recent archive evidence (within the recall horizons); "
        "injects nothing when the evidence is insufficient. Waits like search.",
        {"query": "which retry backoff did we choose?"},
    ),
    "remember": (
        "Save memory candidates (only text is required; kind defaults to fact). Returns what "
        "was staged and what was dropped, with reasons; a supervisor consolidates them "
        "(started for the home if none runs), after which search and recall find them.",
        {"candidates": [{"text": EXAMPLE_FACT}]},
    ),
    "archive_add": (
        "Archive one JSONL transcript as a session of the evidence archive.",
        {"transcript": EXAMPLE_TRANSCRIPT, "project": EXAMPLE_PROJECT, "session": EXAMPLE_SESSION},
    ),
    "archive_search": (
        "Search the evidence archive with the evidence gate.",
        {"query": "retry backoff decision", "project": EXAMPLE_PROJECT},
    ),
    "archive_get": (
        "Read one archived version (live with content, superseded or expired).",
        {"locator": EXAMPLE_LOCATOR},
    ),
    "pin": (
        "Protect an archived document from retention until unpinned.",
        {"locator": EXAMPLE_LOCATOR},
    ),
    "unpin": (
        "Remove a pin; the document expires at its original deadline.",
        {"locator": EXAMPLE_LOCATOR},
    ),
    "forget": (
        "Delete a memory record (and the older records it replaced) with every byte of its "
        "text in the home: by its id (as search, recall and memory list name it), or by its "
        "text as remembered.",
        {"text": EXAMPLE_FACT},
    ),
    "lease_acquire": (
        "Lease archive versions for this session (all or nothing); kept alive until it ends.",
        {"locators": [EXAMPLE_LOCATOR], "project": EXAMPLE_PROJECT},
    ),
    "lease_renew": ("Renew this session's lease now (the server also heartbeats it).", {}),
    "lease_release": (
        "Release this session's lease: every version, or the ones named.",
        {"locators": [EXAMPLE_LOCATOR]},
    ),
    "status": ("The home's queue, supervisor, projects and this session's lease.", {}),
}


def description(name: str) -> str:
    summary, example = TOOLS[name]
    return f"{summary} Example: {json.dumps(example)}"


def remember_candidates(md: Memoryd, project: str, candidates: list[Candidate]) -> dict:
    """Stage candidates for consolidation (one JSON line each, as `memoryd memory add`):
    what was staged, the candidate ids, the dropped ones with their line (the
    candidate's position, from 1) and reason, and the supervisor that will consolidate
    them (``started``: a draining one was started for them). Nothing valid:
    MALFORMED_CANDIDATE."""
    data = b"\n".join(orjson.dumps(c.model_dump(exclude_none=True)) for c in candidates)
    answer = Memory(md).add(data, project, consolidate=True)
    keys = ("project", "staged", "candidates", "dropped", "supervisor", "started")
    return {k: answer[k] for k in keys}


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """A typed error becomes a tool error: its code, whether a retry may help, what to do."""
    try:
        yield
    except Exception as exc:
        if is_corruption(exc):
            exc = corruption(exc, "a store of the home")
        elif not isinstance(exc, MemorydError):
            raise
        retry = " (retryable)" if exc.retryable else ""
        raise ToolError(f"{exc.code}{retry}: {exc}") from None


class Session:
    """One served session: the API, its lease client, and the heartbeat keeping it alive.

    A lock serializes calls into the API: the embedded archive is opened per
    call and two opens in one process would collide. Reads (search, recall, the
    archive's get and search) are answered in this process on the event loop
    (:mod:`memoryd.faces.mcp.reads`: a hop to a worker thread costs a read more
    than the read), beside a supervisor or not; every call through the API may
    have written, so the next read catches the archive up first. Until the home
    has an authority and an archive, and for ``status``, a read is one
    control-socket request beside a supervisor, else an embedded call.

    ``staged`` follows the candidates this session remembered until a run decided
    them: search and recall first wait for them (bounded) and say what search cannot
    see yet (``memory_pending``), so a remembered fact is never silently missing.
    """

    def __init__(self, md: Memoryd, project: str | None) -> None:
        self.md = md
        self.reads = Memoryd(md.home)  # the event loop's: beside a supervisor only
        self.reads.config = md.config
        self.reads.route_only = True
        self.project = project
        self.client = f"mcp-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.leased = False
        self.staged: list[str] = []  # candidate ids remembered here and not yet decided
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.beats = 0
        self.heartbeat = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)
        self.local = LocalReads(md.home, md.config, os.getpid(), self._hand_over, project)

    @contextlib.contextmanager
    def api(self, *, writes: bool = True) -> Iterator[Memoryd]:
        """The API under the session lock; a typed error becomes a tool error. What
        it did may have written the archive: the next local read catches up first
        (``writes=False``: a read of the authority, after which it need not)."""
        try:
            with tool_errors(), self.lock:
                yield self.md
        finally:
            if writes:
                self.local.wrote()

    async def read(self, fn: Callable[[Memoryd], Any], *, local: bool = True) -> Any:
        """A read: here (:class:`LocalReads`) when ``local`` and the home has both
        stores; else on the event loop when a supervisor answers it over its control
        socket, else (embedded, opening stores) in a worker thread under the lock."""
        if local:
            try:
                with tool_errors():
                    return self.local.run(fn)
            except NotHere:
                pass
        if self.reads.supervised():
            try:
                with tool_errors():
                    return fn(self.reads)
            except NotRouted:  # it stopped meanwhile (a drain whose queue ran out)
                pass
        return await anyio.to_thread.run_sync(self._locked, fn)

    def _locked(self, fn: Callable[[Memoryd], Any]) -> Any:
        with self.api() as md:
            return fn(md)

    def _hand_over(self, op: str, args: dict) -> Any:
        """A write the local reads gathered, to the archive's owner (the flusher's thread)."""
        with self.lock:
            return self.md.archive(op, args)

    def remember(self, project: str | None, candidates: list[Candidate]) -> dict:
        with self.api() as md:
            name = Projects(md).default(project or self.project)
            answer = remember_candidates(md, name, candidates)
            self.staged += answer["candidates"]
            return answer

    async def answer(self, fn: Callable[[Memoryd], dict]) -> dict:
        """A search or recall, after this session's remembered candidates settled."""
        pending = await anyio.to_thread.run_sync(self.settle) if self.staged else None
        return {**await self.read(fn), "memory_pending": pending}

    def settle(
        self, timeout: float = MEMORY_SETTLE_SECONDS, *, through_pause: bool = False
    ) -> dict | None:
        with self.api(writes=False) as md:  # it reads the authority (and may start a drain)
            settled = Memory(md).settle(self.staged, timeout=timeout, through_pause=through_pause)
            self.staged = settled["open"]
            return settled["pending"]

    def project_name(self, project: str | None) -> str:
        with self.api(writes=False) as md:
            return Projects(md).default(project or self.project)

    def lease(self, action: str, **args: Any) -> dict:
        with self.api() as md:
            result = md.archive("lease", {"action": action, "client": self.client, **args})
        self.leased = action != "release" or bool(args.get("locators"))
        return result

    def _beat(self) -> None:
        period = self.md.config.mcp_heartbeat_seconds
        while not self.stopped.wait(period):
            if not self.leased:
                continue
            try:
                self.lease("renew")
                self.beats += 1
            except ToolError:
                self.leased = False  # lapsed or gone: the agent acquires again

    def close(self) -> None:
        """Stop the heartbeat, release the session's lease, and let a drain the session
        started finish (or stop it): nothing the server started outlives it for long."""
        self.stopped.set()
        if self.leased:
            with contextlib.suppress(ToolError):
                self.lease("release")
        self.local.close()  # hands over what its reads gathered: before the API closes
        self.md.drain.finish(DRAIN_EXIT_SECONDS)
        self.md.close()
        self.reads.close()


SHOWN_INPUT_CHARS = 60  # of a rejected argument value, in its error


def argument_errors(tool: str, exc: ValidationError) -> str:
    """Pydantic's report on a call's arguments as one BAD_USAGE line: each argument
    (its path inside a list or object), what is wrong, and the value given."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        got = "" if err["type"] == "missing" else f" (got {repr(err['input'])[:SHOWN_INPUT_CHARS]})"
        parts.append(f"argument {where!r}: {err['msg'][:1].lower()}{err['msg'][1:]}{got}")
    return f"BAD_USAGE: {tool}: {'; '.join(parts)}"


class Server(ProtocolServer):
    """The protocol's server with memoryd's errors for a call's arguments: an unknown
    argument is refused (not ignored), a wrong one is ``BAD_USAGE`` in one line, and a
    tool's typed error reaches the agent as it was raised (its code first)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        tool = self.tools.get(name)
        if tool is not None:
            takes = tool.model.model_fields
            if unknown := sorted(set(arguments) - set(takes)):
                raise ToolError(
                    f"BAD_USAGE: {name} takes no argument {', '.join(map(repr, unknown))}; "
                    f"its arguments: {', '.join(takes) or 'none'}"
                )
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(name, exc.__cause__)) from None
            raise


def build(state: Session) -> Server:  # noqa: C901 (listed in pyproject.toml)
    server = Server(
        "memoryd",
        version=__version__,
        instructions="Local memory for coding agents: search, recall, archive.",
    )

    def tool(fn: Callable) -> Callable:
        name = fn.__name__.removesuffix("_tool")
        return server.tool(name, description(name))(fn)

    @tool
    async def search(query: Query, project: Project = None, limit: Limit = 10) -> dict:
        return await state.answer(
            lambda md: Search(md).search(query, project or state.project, limit=limit)
        )

    @tool
    async def recall_tool(query: Query, project: Project = None, limit: Limit = 5) -> dict:
        return await state.answer(
            lambda md: recall(md, query, project or state.project, limit=limit)
        )

    @tool
    def archive_add(
        transcript: Annotated[str, Field(description="JSONL transcript text, one message a line.")],
        project: Project = None,
        session: Annotated[
            str | None, Field(description="Session id (default: a content hash).")
        ] = None,
        retention_class: Annotated[
            RetentionClass | None, Field(description="Retention class (default: conversation).")
        ] = None,
        created_at: Annotated[
            str | None, Field(description="ISO 8601 creation time (default: the first timestamp).")
        ] = None,
        imported: Annotated[
            bool,
            Field(
                description="Importing history: class ages count from now, not from its "
                "creation (refused without it when already past its class age)."
            ),
        ] = False,
        new_project: Annotated[
            bool,
            Field(
                description="Start the project if no project has this name (an unknown "
                "one is refused without it)."
            ),
        ] = False,
    ) -> dict:
        name = state.project_name(project)
        with state.api() as md:
            return Archive(md).add(
                transcript.encode(),
                project=name,
                source="mcp",
                cls=retention_class,
                session=session,
                created_at=created_at,
                imported=imported,
                new_project=new_project,
            )

    @tool
    async def archive_search(query: Query, project: Project = None, limit: Limit = 10) -> dict:
        def read(md: Memoryd) -> dict:
            name = Projects(md).default(project or state.project)
            return Archive(md).search(name, query, limit=limit)

        return await state.read(read)

    @tool
    async def archive_get(locator: Locator) -> dict:
        return await state.read(lambda md: md.archive("get", {"locator": locator}))

    @tool
    def pin(
        locator: Locator,
        note: Annotated[str | None, Field(description="Why it is pinned.")] = None,
    ) -> dict:
        with state.api() as md:
            return md.archive("pin", {"locator": locator, "note": note})

    @tool
    def unpin(locator: Locator) -> dict:
        with state.api() as md:
            return md.archive("unpin", {"locator": locator})

    @tool
    def forget(
        id: Annotated[
            str | None, Field(description="A memory record id, m- and 16 hex digits.")
        ] = None,
        text: Annotated[
            str | None,
            Field(description="The record's text (case, punctuation and spacing aside)."),
        ] = None,
        project: Project = None,
    ) -> dict:
        if (id is None) == (text is None):
            raise ToolError("BAD_USAGE: name the record by id or by text (one of them)")
        if state.staged and text is not None:  # what it just remembered: forgotten at once
            state.settle(MEMORY_FORGET_SETTLE_SECONDS, through_pause=True)
        with state.api() as md:
            if id is not None:
                return Memory(md).forget(id)
            return Memory(md).forget_text(text, project or state.project)

    @tool
    def lease_acquire(locators: Locators, project: Project = None) -> dict:
        return state.lease("acquire", project=state.project_name(project), locators=locators)

    @tool
    def lease_renew() -> dict:
        return state.lease("renew")

    @tool
    def lease_release(
        locators: Annotated[
            list[str] | None, Field(description="Versions to release (default: every one).")
        ] = None,
    ) -> dict:
        return state.lease("release", locators=locators)

    @tool
    async def status() -> dict:
        report = await state.read(lambda md: Home(md).status(), local=False)
        lease = {"client": state.client, "leased": state.leased, "heartbeats": state.beats}
        return {**report, "session": lease}

    @tool
    def remember(
        candidates: Annotated[
            list[Candidate], Field(min_length=1, description="What to remember, one per item.")
        ],
        project: Project = None,
    ) -> dict:
        return state.remember(project, candidates)

    return server


def serve(md: Memoryd, project: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client disconnects."""
    state = Session(md, project)
    state.local.start()
    state.heartbeat.start()
    try:
        refused = mcp_stdio.run(build(state))
    finally:
        state.close()
    if refused:
        raise UsageError(
            f"{refused} line(s) on stdin were no JSON-RPC message (each logged above) "
            "and went unanswered: the client must send one JSON-RPC message a line"
        )
