"""Mock MCP servers built on the official SDK's lowlevel `Server`, and the behaviour they
share with the raw JSON-RPC servers: pagination, argument validation, results and faults.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError

from mock_servers._errors import FleetArgumentError
from mock_servers._generate import build_catalog
from mock_servers._ledger import Ledger
from mock_servers._results import ResultMaker
from mock_servers._spec import ServerSpec

__all__ = ["ServerCore", "build_server", "call_result", "memory_server"]


class DropConnection(Exception):
    """Raised inside a request when a fault asks for the connection to be dropped (HTTP)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a ``tools/call`` returns: a text (or recorded content blocks), structured content, the error flag."""

    text: str
    structured: Mapping[str, Any] | None
    is_error: bool
    content: tuple[Mapping[str, Any], ...] | None = None

    def wire(self) -> dict[str, Any]:
        content = [dict(c) for c in self.content] if self.content is not None else [{"type": "text", "text": self.text}]
        out: dict[str, Any] = {"content": content, "isError": self.is_error}
        if self.structured is not None:
            out["structuredContent"] = dict(self.structured)
        return out


def call_result(server: ServerSpec, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``tools/call`` result (wire form) a server gives for this call when no fault intervenes.

    Results are made with Faker, seeded by the server's seed, the tool and the arguments, so
    this is exactly what a host receives for the same call on any transport.

    Raises:
        FleetArgumentError: the server has no tool of that name.
    """
    core = ServerCore(server, Ledger(None), "memory")
    tool = core.tool(name)
    if tool is None:
        raise FleetArgumentError(f"server {server.id!r} has no tool {name!r}")
    return core.outcome(tool, name, dict(arguments or {})).wire()


class ServerCore:
    """The behaviour of one mock server, whatever serves it on the wire.

    Args:
        spec: the server's spec.
        ledger: where events are recorded.
        transport: ``memory``, ``stdio`` or ``http``; decides how faults that end a
            connection behave (a stdio process exits; HTTP drops the connection).
        stopping: set when the server is shutting down, to release a hanging ``tools/list``.
    """

    def __init__(self, spec: ServerSpec, ledger: Ledger, transport: str, stopping: anyio.Event | None = None) -> None:
        self.spec = spec
        self.ledger = ledger.for_transport(transport)
        self.transport = transport
        self.stopping = stopping or anyio.Event()
        catalog = build_catalog(spec)
        self.tools = catalog.tools
        self.faulty = catalog.faulty
        self._by_name: dict[str, dict[str, Any]] = {}
        for tool in self.tools:
            name = tool.get("name")
            if isinstance(name, str) and name not in self._by_name:
                self._by_name[name] = tool
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self.results = ResultMaker(spec)
        self._samples = {t.name: t.samples for t in spec.tools if t.samples}

    # -- events ---------------------------------------------------------------------------------

    def record(self, event: str, **fields: Any) -> None:
        self.ledger.record(event, self.spec.id, **fields)

    def fault(self, kind: str, **fields: Any) -> None:
        self.record("fault", fault=kind, **fields)

    def exit_process(self, code: int, reason: str) -> None:
        """End a stdio server process at once, as a crash would (after recording it)."""
        self.record("process_exit", code=code, reason=reason)
        os._exit(code)

    async def delay(self) -> None:
        if self.spec.faults.slow > 0:
            self.fault("slow", seconds=self.spec.faults.slow)
            # Cut short when the server stops, so that stopping never waits on a slow call.
            with anyio.move_on_after(self.spec.faults.slow):
                await self.stopping.wait()

    # -- tools/list -----------------------------------------------------------------------------

    def encode_cursor(self, offset: int) -> str:
        return base64.urlsafe_b64encode(f"{self.spec.id}:{offset}".encode()).decode().rstrip("=")

    def decode_cursor(self, cursor: str | None) -> int:
        """The offset a cursor stands for; ``None`` or ``""`` is the first page.

        Raises:
            MCPError: INVALID_PARAMS for a cursor this server did not hand out.
        """
        if not cursor:
            return 0
        try:
            text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            server_id, _, offset = text.rpartition(":")
            value = int(offset)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            value = -1
            server_id = ""
        if server_id != self.spec.id or not 0 <= value <= len(self.tools):
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
        return value

    def page_index(self, cursor: str | None) -> int:
        return self.decode_cursor(cursor) // self.spec.page_size

    def list_fault(self, page: int) -> str | None:
        """Which list fault, if any, fires on this page."""
        faults = self.spec.faults
        for kind in ("crash_on_list", "hang_on_list", "error_on_list"):
            if getattr(faults, kind) == page:
                return kind
        return None

    async def list_page(
        self, cursor: str | None, protocol_version: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Serve one page: apply the faults, record the listing, return (tools, nextCursor)."""
        await self.delay()
        start = self.decode_cursor(cursor)
        page = start // self.spec.page_size
        kind = self.list_fault(page)
        if kind == "crash_on_list":
            self.fault(kind, page=page)
            if self.transport == "stdio":
                self.exit_process(70, "crash_on_list")
            raise DropConnection(kind)
        if kind == "hang_on_list":
            self.fault(kind, page=page)
            await self.stopping.wait()
            raise MCPError(types.INTERNAL_ERROR, "server is shutting down")
        if kind == "error_on_list":
            self.fault(kind, page=page)
            raise MCPError(types.INTERNAL_ERROR, f"tools/list failed on page {page} (injected error_on_list fault)")
        end = min(start + self.spec.page_size, len(self.tools))
        next_cursor = self.encode_cursor(end) if end < len(self.tools) else None
        self.record(
            "tools_listed",
            page=page,
            cursor=cursor or None,
            count=end - start,
            nextCursor=next_cursor,
            protocolVersion=protocol_version,
        )
        for index in range(start, end):
            for fault in self.faulty.get(index, ()):
                self.fault(fault, page=page, tool=self.tools[index].get("name"), index=index)
        return self.tools[start:end], next_cursor

    # -- tools/call -----------------------------------------------------------------------------

    def tool(self, name: str) -> dict[str, Any] | None:
        """The definition listed under this name (the first one, if listed twice)."""
        return self._by_name.get(name)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self._by_name.get(name)
        schema = tool.get("inputSchema") if tool else None
        return schema if isinstance(schema, Mapping) else None

    async def call(self, name: str, arguments: Mapping[str, Any] | None, protocol_version: str | None) -> Outcome:
        """Run a tool call: record it, apply the faults, validate the arguments.

        Raises:
            MCPError: INVALID_PARAMS for a tool this server does not have.
            DropConnection: the call is to be dropped (HTTP transport).
        """
        args = dict(arguments or {})
        try:
            await self.delay()
        except anyio.get_cancelled_exc_class():
            # The client gave up (or went away) while the call was delayed: it did reach the server.
            self.record(
                "tool_called", name=name, arguments=args, isError=True, cancelled=True, protocolVersion=protocol_version
            )
            raise
        tool = self._by_name.get(name)
        faults = self.spec.faults
        if tool is None:
            self.record(
                "tool_called", name=name, arguments=args, isError=True, unknown=True, protocolVersion=protocol_version
            )
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        if faults.calls_drop(name):
            self.record("tool_called", name=name, arguments=args, isError=True, protocolVersion=protocol_version)
            self.fault("drop_mid_call", tool=name)
            if self.transport == "stdio":
                self.exit_process(75, "drop_mid_call")
            raise DropConnection("drop_mid_call")
        if faults.calls_error(name):
            self.record("tool_called", name=name, arguments=args, isError=True, protocolVersion=protocol_version)
            self.fault("error_on_call", tool=name)
            raise MCPError(types.INTERNAL_ERROR, f"tools/call of {name} failed (injected error_on_call fault)")
        outcome = self.outcome(tool, name, args)
        if not outcome.is_error and faults.calls_fail(name):
            self.fault("tool_call_error", tool=name)
            outcome = Outcome(
                f"{self.spec.id}.{name} failed: the service returned an error (injected fault)", None, True
            )
        self.record(
            "tool_called", name=name, arguments=args, isError=outcome.is_error, protocolVersion=protocol_version
        )
        return outcome

    def outcome(self, tool: Mapping[str, Any], name: str, args: dict[str, Any]) -> Outcome:
        """The result of a call that no fault intercepts: validation, then a recorded or a made-up result."""
        schema = tool.get("inputSchema")
        try:
            validator = self._validators.get(name)
            if validator is None:
                cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                validator = self._validators[name] = cls(schema)
            errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
        except (jsonschema.SchemaError, TypeError, AttributeError) as exc:
            return Outcome(f"{self.spec.id}.{name}: the tool's input schema is unusable ({exc})", None, True)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
            return Outcome(f"Invalid arguments for {name}: {where}: {errors[0].message}", None, True)
        for sample in self._samples.get(name, ()):
            if _same_json(sample["arguments"], args):
                result = sample["result"]
                structured = result.get("structuredContent")
                return Outcome(
                    "",
                    structured if isinstance(structured, Mapping) else None,
                    result.get("isError") is True,
                    tuple(result.get("content", ())),
                )
        text, made, is_error = self.results.make(tool, args)
        return Outcome(text, made, is_error)


def _same_json(a: Any, b: Any) -> bool:
    def canonical(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    return canonical(a) == canonical(b)


# ---------------------------------------------------------------------------------------------
# The SDK server


def build_server(
    server: ServerSpec, ledger: Ledger, *, transport: str = "memory", stopping: anyio.Event | None = None
) -> Server[Any]:
    """A lowlevel SDK `Server` serving one spec'd server, recording into ``ledger``.

    ``transport`` (``memory``, ``stdio`` or ``http``) decides how sessions are observed
    and how connection-ending faults behave; use `memory_server`, `serve_stdio` or the
    HTTP fleet rather than passing it by hand.

    Raises:
        FleetArgumentError: the server is a raw one (serve it with the raw transports).
    """
    if server.raw:
        raise FleetArgumentError(f"server {server.id!r} is a raw JSON-RPC server; serve it over stdio or HTTP")
    return sdk_server_for(ServerCore(server, ledger, transport, stopping))


def sdk_server_for(core: ServerCore) -> Server[Any]:
    """The SDK server of a core (see `build_server`)."""
    server = core.spec
    transport = core.transport
    models = [types.Tool.model_validate(t) for t in core.tools]

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        # On stdio and in memory the lifespan spans exactly one client connection.
        per_connection = transport != "http"
        if per_connection:
            core.record("session_opened")
        try:
            yield {}
        finally:
            if per_connection:
                core.record("session_closed")

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        tools, next_cursor = await core.list_page(cursor, ctx.protocol_version)
        start = core.decode_cursor(cursor)
        return types.ListToolsResult(tools=models[start : start + len(tools)], next_cursor=next_cursor)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            outcome = await core.call(params.name, params.arguments, ctx.protocol_version)
        except DropConnection:
            # Only reached in memory: there is no connection to drop, so fail the request
            # the way a client sees a vanished server.
            raise MCPError(types.CONNECTION_CLOSED, "Connection closed (injected drop_mid_call fault)") from None
        if outcome.content is not None:
            return types.CallToolResult.model_validate(outcome.wire())
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.text)],
            structured_content=dict(outcome.structured) if outcome.structured is not None else None,
            is_error=outcome.is_error,
        )

    sdk_server: Server[Any] = Server(
        server.id,
        version="1.0.0",
        lifespan=lifespan,
        get_tool_input_schema=core.input_schema,
        on_list_tools=_memory_safe(list_tools),
        on_call_tool=call_tool,
    )
    sdk_server.middleware.append(_SessionObserver(core))
    return sdk_server


def _memory_safe(handler: Any) -> Any:
    async def wrapped(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        try:
            return await handler(ctx, params)
        except DropConnection:
            raise MCPError(types.CONNECTION_CLOSED, "Connection closed (injected crash_on_list fault)") from None

    return wrapped


class _SessionObserver:
    """Server middleware recording handshakes and, on legacy HTTP, session open and close."""

    def __init__(self, core: ServerCore) -> None:
        self.core = core

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        method = ctx.method
        if method == "initialize":
            result = await call_next(ctx)
            version = result.get("protocolVersion") if isinstance(result, Mapping) else None
            if self.core.transport == "http":
                connection = getattr(ctx.session, "_connection", None)
                session_id = getattr(connection, "session_id", None)
                self.core.record("session_opened", era="legacy", protocolVersion=version, sessionId=session_id)
                if connection is not None:
                    connection.exit_stack.callback(self.core.record, "session_closed", sessionId=session_id)
            return result
        if method == "notifications/initialized":
            self.core.record("initialized", protocolVersion=ctx.protocol_version)
        elif method == "server/discover":
            self.core.record("discovered", protocolVersion=ctx.protocol_version)
        return await call_next(ctx)


def memory_server(server: ServerSpec, ledger: Ledger | None = None) -> Server[Any]:
    """An SDK `Server` for in-process use: ``async with mcp.Client(memory_server(spec)) as client``."""
    return build_server(server, ledger or Ledger(None), transport="memory")
