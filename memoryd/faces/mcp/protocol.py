"""The MCP protocol as memoryd's server speaks it: JSON-RPC 2.0 messages, one a line,
for a server of tools (``initialize``, ``ping``, ``tools/list``, ``tools/call``;
``resources/list`` and ``prompts/list`` answered empty), built on pydantic alone.

The SDK's server is not imported: importing it (its client, its HTTP, SSE and auth
transports, the models of every protocol revision) cost a ``memoryd mcp`` start about
1.2 s of CPU, four fifths of a start's CPU, and a server restarting beside others
takes that from their answers. What the SDK's ``MCPServer`` did for these tools is
done the same way here: a tool's arguments are a pydantic model built from its
signature (its JSON schema is the tool's ``inputSchema``, titled
``<tool>Arguments``), validated before the call; a ``def`` tool runs in a worker
thread, an ``async def`` one on the event loop; its answer is the result's JSON
(indented by two) as one text content; a failure is a result with ``isError``. The
SDK stays the reference: tests drive this server with the SDK's client, whose models
validate every answer, and compare the tool list with the SDK server's for the same
functions (tests/agent/test_mcp_protocol.py).
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

#: The revisions reachable through the ``initialize`` handshake, oldest first; a
#: client asking for another is offered the newest (it may then hang up).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32601, -32602, -32603
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "tools": {"listChanged": False},
}
#: Listed empty (as the SDK's server answered them), not refused.
EMPTY_LISTS = {"resources/list": "resources", "prompts/list": "prompts",
               "resources/templates/list": "resourceTemplates"}  # fmt: skip

log = logging.getLogger(__name__)


class ToolError(Exception):
    """A tool's failure the agent is told about: its text is the result's text."""


class ProtocolError(Exception):
    """A request this server cannot take: answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


class _Arguments(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)


@dataclass
class Tool:
    """One tool: its function, description and argument model."""

    name: str
    description: str
    fn: Callable[..., Any]
    model: type[BaseModel]

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str, description: str) -> Tool:
        """The tool of ``fn``: each parameter (its annotation, with any ``Field`` in an
        ``Annotated``, and its default) a field of the ``<name>Arguments`` model."""
        hints = typing.get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for p in inspect.signature(fn).parameters.values():
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (hints.get(p.name, Any), default)
        model = create_model(f"{name}Arguments", __base__=_Arguments, **fields)
        return cls(name, description, fn, model)

    def listing(self) -> dict:
        return {"name": self.name, "description": self.description,
                "inputSchema": self.model.model_json_schema()}  # fmt: skip

    def arguments(self, arguments: dict) -> dict:
        """The validated arguments by name (ValidationError when they do not fit)."""
        validated = self.model.model_validate(arguments)
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    async def run(self, kwargs: dict) -> Any:
        """The function's answer to validated arguments."""
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        return await anyio.to_thread.run_sync(lambda: self.fn(**kwargs))


def text_result(text: str, *, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def json_text(result: Any) -> str:
    """A tool's answer as its text content (the SDK's: JSON indented by two)."""
    if isinstance(result, str):
        return result
    return pydantic_core.to_json(result, fallback=str, indent=2).decode()


class Server:
    """The tools and the server's identity; :meth:`answer` answers one request.

    ``call_tool(tool, arguments)`` may be replaced to check or reword a call (the
    memoryd server refuses unknown arguments and words validation errors)."""

    def __init__(self, name: str, version: str, instructions: str) -> None:
        self.name, self.version, self.instructions = name, version, instructions
        self.tools: dict[str, Tool] = {}
        self.handlers: dict[str, Callable[[dict], Awaitable[dict]]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
        }

    def tool(self, name: str, description: str) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            self.tools[name] = Tool.of(fn, name, description)
            return fn

        return register

    async def answer(self, request: dict) -> dict:
        """The JSON-RPC answer to ``request`` (a message with a method and an id)."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        method = request["method"]
        try:
            if method in EMPTY_LISTS:
                return {**reply, "result": {EMPTY_LISTS[method]: []}}
            handler = self.handlers.get(method)
            if handler is None:
                raise ProtocolError(METHOD_NOT_FOUND, "Method not found", method)
            params = request.get("params") or {}
            if not isinstance(params, dict):
                raise ProtocolError(INVALID_PARAMS, "Invalid params: not an object")
            return {**reply, "result": await handler(params)}
        except ProtocolError as exc:
            error = {"code": exc.code, "message": str(exc)}
            return {**reply, "error": error if exc.data is None else {**error, "data": exc.data}}

    async def _initialize(self, params: dict) -> dict:
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": CAPABILITIES,
            "serverInfo": {"name": self.name, "version": self.version},
            "instructions": self.instructions,
        }

    async def _ping(self, params: dict) -> dict:
        return {}

    async def _list_tools(self, params: dict) -> dict:
        return {"tools": [tool.listing() for tool in self.tools.values()]}

    async def _call_tool(self, params: dict) -> dict:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: a tool's name and arguments")
        try:
            return text_result(json_text(await self.call_tool(name, arguments)))
        except ToolError as exc:
            return text_result(str(exc), error=True)
        except Exception:
            log.exception("tool %s failed", name)
            return text_result(f"Error executing tool {name}", error=True)

    async def call_tool(self, name: str, arguments: dict) -> Any:
        tool = self.tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool: {name}")
        try:
            kwargs = tool.arguments(arguments)
        except ValidationError as exc:
            raise ToolError(f"Error executing tool {name}: {exc}") from exc
        return await tool.run(kwargs)
