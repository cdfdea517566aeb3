"""Mock MCP servers built on the official SDK's lowlevel `Server`, and the behaviour they
share with the raw JSON-RPC servers: pagination, argument validation, results and faults.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, NotRequired, TypedDict

import anyio
import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mock_servers._control import ChangeApplied
from mock_servers._errors import FleetArgumentError
from mock_servers._ledger import Ledger
from mock_servers._live import ListingWatch, LiveCatalog, Notifier
from mock_servers._results import ResultMaker
from mock_servers._spec import CatalogChange, FleetSpec, ServerSpec
from mock_servers._spec_changes import as_change
from mock_servers._spec_format import ChangeDocument
from mock_servers._wire import JsonSchema, ListedTool

__all__ = ["CallResult", "MemoryFleet", "ServerCore", "build_server", "call_result", "legacy_refusal", "memory_server"]


class DropConnection(Exception):
    """Raised inside a request when a fault asks for the connection to be dropped (HTTP)."""


class CallResult(TypedDict):
    """A ``tools/call`` result in wire form. The content blocks are MCP's, of any kind a
    recorded sample holds (``text``, ``image``, ``resource``, ...); the structured content is
    the tool's own JSON."""

    content: list[dict[str, Any]]
    isError: bool
    structuredContent: NotRequired[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a ``tools/call`` returns: a text (or recorded content blocks), structured content, the error flag."""

    text: str
    structured: Mapping[str, Any] | None
    is_error: bool
    content: tuple[Mapping[str, Any], ...] | None = None

    def wire(self) -> CallResult:
        content = [dict(c) for c in self.content] if self.content is not None else [{"type": "text", "text": self.text}]
        out: CallResult = {"content": content, "isError": self.is_error}
        if self.structured is not None:
            out["structuredContent"] = dict(self.structured)
        return out


def call_result(server: ServerSpec, name: str, arguments: Mapping[str, Any] | None = None) -> CallResult:
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
        self.live = LiveCatalog(spec)
        self.notifier = Notifier()
        self.watch = ListingWatch()
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._models: tuple[int, list[types.Tool]] | None = None
        self.results = ResultMaker(spec)
        self._samples = {t.name: t.samples for t in spec.tools if t.samples}
        #: ``tools/call`` requests that reached the server, in all: what ``after_calls`` counts.
        self.calls = 0
        self._fired = 0
        self._fired_event = anyio.Event()
        self._serving_since: float | None = None
        self._changing = anyio.Lock()
        # Taken by the first caller of exit_process: the stdout watcher and the serving
        # loop can both see the client go, and the process ends with one record.
        self._exiting = threading.Lock()

    @property
    def tools(self) -> list[ListedTool]:
        """The definitions the server lists now, in listing order (wire form)."""
        return self.live.tools

    def models(self) -> list[types.Tool]:
        """The tools as SDK models, made once per catalog version."""
        if self._models is None or self._models[0] != self.live.version:
            self._models = (self.live.version, [types.Tool.model_validate(t) for t in self.live.tools])
        return self._models[1]

    # -- events ---------------------------------------------------------------------------------

    def record(self, event: str, **fields: Any) -> None:
        self.ledger.record(event, self.spec.id, **fields)

    def fault(self, kind: str, **fields: Any) -> None:
        self.record("fault", fault=kind, **fields)

    def exit_process(self, code: int, reason: str) -> NoReturn:
        """End a stdio server process at once, as a crash would (after recording it). Only
        the first caller records and exits; a later one waits for the process to end."""
        if not self._exiting.acquire(blocking=False):
            threading.Event().wait()
        self.record("process_exit", code=code, reason=reason)
        os._exit(code)

    async def delay(self, *, call: bool = False) -> bool:
        """Wait out the ``slow`` fault (and ``slow_calls`` before a call); True when the
        server stopped before it was over."""
        faults = self.spec.faults
        for kind, seconds in (("slow", faults.slow), ("slow_calls", faults.slow_calls if call else 0.0)):
            if seconds > 0:
                self.fault(kind, seconds=seconds)
                # Cut short when the server stops, so that stopping never waits on a slow call.
                with anyio.move_on_after(seconds):
                    await self.stopping.wait()
                    return True
        return False

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

    async def list_page(self, cursor: str | None, protocol_version: str | None) -> tuple[list[ListedTool], str | None]:
        """Serve one page: apply the faults, record the listing, return (tools, nextCursor)."""
        await self.delay()
        start = self.decode_cursor(cursor)
        page = start // self.spec.page_size
        if self.live.list_error:
            self.fault("list_error", page=page, catalog=self.live.version)
            self.watch.refused(self.live.version)
            raise MCPError(types.INTERNAL_ERROR, f"tools/list failed on page {page} (list_error set by a change)")
        if self.live.list_hang:
            self.fault("list_hang", page=page, catalog=self.live.version)
            self.watch.refused(self.live.version)
            await self.stopping.wait()
            raise MCPError(types.INTERNAL_ERROR, "server is shutting down")
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
        tools = self.live.tools
        end = min(start + self.spec.page_size, len(tools))
        next_cursor = self.encode_cursor(end) if end < len(tools) else None
        self.record(
            "tools_listed",
            page=page,
            cursor=cursor or None,
            count=end - start,
            nextCursor=next_cursor,
            protocolVersion=protocol_version,
            catalog=self.live.version,
        )
        self.watch.page(self.live.version, first=start == 0, last=next_cursor is None)
        for index in range(start, end):
            for fault in self.live.faults_at(index):
                self.fault(fault, page=page, tool=tools[index].get("name"), index=index)
        held = self.spec.faults.slow_last_page
        if next_cursor is None and held > 0:
            self.fault("slow_last_page", page=page, seconds=held)
            with anyio.move_on_after(held):
                await self.stopping.wait()  # cut short when the server stops
        return tools[start:end], next_cursor

    # -- tools/call -----------------------------------------------------------------------------

    def tool(self, name: str) -> ListedTool | None:
        """The definition listed under this name (the first one, if listed twice)."""
        return self.live.by_name.get(name)

    def input_schema(self, name: str) -> JsonSchema | None:
        """The input schema listed for this name, for the SDK to validate arguments with."""
        tool = self.live.by_name.get(name)
        schema = tool.get("inputSchema") if tool else None
        return schema if isinstance(schema, Mapping) else None

    async def call(self, name: str, arguments: Mapping[str, Any] | None, protocol_version: str | None) -> Outcome:
        """Run a tool call: record it, apply the faults, validate the arguments.

        A change scheduled ``after_calls`` fires as the call is answered, before its result
        leaves the server.

        Raises:
            MCPError: INVALID_PARAMS for a tool this server does not have.
            DropConnection: the call is to be dropped (HTTP transport).
        """
        try:
            return await self._call(name, arguments, protocol_version)
        finally:
            self.calls += 1
            if self._fired < len(self.spec.changes):
                with anyio.CancelScope(shield=True):
                    await self._advance()

    async def _call(self, name: str, arguments: Mapping[str, Any] | None, protocol_version: str | None) -> Outcome:
        args = dict(arguments or {})
        # A call cut during its delay did reach the server: the client gave up (or went away),
        # or the server stopped first, which of the two is a race; either way it was never answered.
        cut = True
        try:
            cut = await self.delay(call=True)
        finally:
            if cut:
                self.record(
                    "tool_called",
                    name=name,
                    arguments=args,
                    isError=True,
                    cancelled=True,
                    protocolVersion=protocol_version,
                )
        if cut:
            raise MCPError(types.INTERNAL_ERROR, "the server stopped while the call was delayed")
        tool = self.live.by_name.get(name)
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

    # -- live catalog ---------------------------------------------------------------------------

    async def change(self, change: CatalogChange) -> ChangeApplied:
        """Apply a change to the tools, record it, and send its notifications.

        Notifications go only from a server that declares ``list_changed``. Returns
        ``{"catalog", "tools", "notified"}``: the catalog version the change made, how many
        tools the server now lists, and how many notifications it sent.

        Raises:
            FleetArgumentError: an edit names a tool the server does not list, or adds a
                name it has; nothing changes then.
        """
        async with self._changing:
            report = self.live.apply(change)
            self._validators.clear()
            self.record(
                "tools_changed",
                trigger=change.trigger,
                catalog=report.catalog,
                removed=list(report.removed),
                renamed=[list(pair) for pair in report.renamed],
                updated=list(report.updated),
                added=list(report.added),
                tools=report.tools,
                listError=report.list_error,
                listHang=report.list_hang,
            )
            count = change.notify if self.spec.list_changed else 0
            for n in range(1, count + 1):
                connections, streams = await self.notifier.send()
                self.record(
                    "list_changed", catalog=report.catalog, n=n, of=count, connections=connections, streams=streams
                )
            if change.break_listen:
                self.fault("break_listen", catalog=report.catalog, streams=self.notifier.break_streams())
        return {"catalog": report.catalog, "tools": report.tools, "notified": count}

    def _due(self, change: CatalogChange) -> bool:
        if change.after_calls is not None:
            return self.calls >= change.after_calls
        since = self._serving_since
        return (
            since is not None
            and change.after_seconds is not None
            and anyio.current_time() >= since + change.after_seconds
        )

    async def _advance(self) -> None:
        """Fire the scheduled changes that are due, in order."""
        schedule = self.spec.changes
        while self._fired < len(schedule) and self._due(schedule[self._fired]):
            change = schedule[self._fired]
            self._fired += 1
            try:
                await self.change(change)
            except FleetArgumentError as exc:
                # Only a spec built in Python, never read and checked, can get here.
                self.record("tools_changed", trigger=change.trigger, skipped=str(exc))
            self._fired_event.set()
            self._fired_event = anyio.Event()

    async def run_schedule(self) -> None:
        """Fire the changes scheduled ``after_seconds``; runs for as long as the server serves."""
        schedule = self.spec.changes
        if not any(c.after_seconds is not None for c in schedule):
            return
        if self._serving_since is None:
            self._serving_since = anyio.current_time()
        while self._fired < len(schedule):
            fired = self._fired_event
            change = schedule[self._fired]
            if change.after_seconds is not None:
                await anyio.sleep_until(self._serving_since + change.after_seconds)
                await self._advance()
            else:
                await fired.wait()

    def outcome(self, tool: ListedTool, name: str, arguments: dict[str, Any]) -> Outcome:
        """The result of a call that no fault intercepts: validation, then a recorded or a made-up result."""
        schema = tool.get("inputSchema")
        try:
            validator = self._validators.get(name)
            if validator is None:
                cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                validator = self._validators[name] = cls(schema)
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        except (jsonschema.SchemaError, TypeError, AttributeError) as exc:
            return Outcome(f"{self.spec.id}.{name}: the tool's input schema is unusable ({exc})", None, True)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
            return Outcome(f"Invalid arguments for {name}: {where}: {errors[0].message}", None, True)
        for sample in self._samples.get(name, ()):
            if _same_json(sample["arguments"], arguments):
                result = sample["result"]
                structured = result.get("structuredContent")
                return Outcome(
                    "",
                    structured if isinstance(structured, Mapping) else None,
                    result.get("isError") is True,
                    tuple(result.get("content", ())),
                )
        text, made, is_error = self.results.make(tool, arguments)
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


class _FleetServer(Server[Any]):
    """An SDK server whose handshake declares ``tools.listChanged`` when its catalog is live."""

    list_changed = False

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=self.list_changed)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def sdk_server_for(core: ServerCore) -> Server[Any]:
    """The SDK server of a core (see `build_server`)."""
    server = core.spec
    transport = core.transport

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        # On stdio and in memory the lifespan spans exactly one client connection.
        per_connection = transport != "http"
        if per_connection:
            core.record("session_opened")
        try:
            async with anyio.create_task_group() as schedule:
                if per_connection:
                    schedule.start_soon(core.run_schedule)
                try:
                    yield {}
                finally:
                    schedule.cancel_scope.cancel()
        finally:
            if per_connection:
                core.record("session_closed")

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        tools, next_cursor = await core.list_page(cursor, ctx.protocol_version)
        start = core.decode_cursor(cursor) if tools else 0
        return types.ListToolsResult(tools=core.models()[start : start + len(tools)], next_cursor=next_cursor)

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

    # On the 2026-07-28 era a client hears of changes only on a subscriptions/listen stream.
    listen = core.notifier.listen if server.list_changed else None
    sdk_server = _FleetServer(
        server.id,
        version="1.0.0",
        lifespan=lifespan,
        get_tool_input_schema=core.input_schema,
        on_list_tools=_memory_safe(list_tools),
        on_call_tool=call_tool,
        on_subscriptions_listen=listen,
    )
    sdk_server.list_changed = server.list_changed
    sdk_server.middleware.append(_SessionObserver(core))
    return sdk_server


def legacy_refusal(message: bytes | Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC error a server built before the 2026-07-28 revision answers a request of
    that revision with (``server/discover``, or a request carrying the revision in its
    ``_meta``); None for any other message, and for bytes that are not JSON. It has no
    ``server/discover``, so a client in ``auto`` mode falls back to ``initialize``. Applied
    before the SDK reads the message: the SDK locks a connection to the era of its first
    request."""
    if isinstance(message, bytes):
        try:
            message = json.loads(message)
        except (ValueError, RecursionError):
            return None  # the SDK's reading refuses it
    if not isinstance(message, Mapping) or "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if method == "server/discover":
        code, text = types.METHOD_NOT_FOUND, f"Method not found: {method}"
    elif isinstance(meta, Mapping) and meta.get("io.modelcontextprotocol/protocolVersion") in MODERN_PROTOCOL_VERSIONS:
        code, text = types.INVALID_REQUEST, "this server speaks only the initialize handshake (2025-11-25 and earlier)"
    else:
        return None
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}}


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
        if self.core.spec.list_changed and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # A handshake-era client hears of changes on its connection's own stream.
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                self.core.notifier.add_connection(connection)
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


class MemoryFleet:
    """A fleet served in memory, whose live catalogs a test changes on demand.

    ``servers`` maps each server id to an SDK `Server` for ``mcp.Client(server)``; every
    client of one server shares its catalog, so a change reaches all of them.

    Raises:
        FleetArgumentError: a server of the fleet is a raw one (serve it over stdio or HTTP).
    """

    def __init__(self, spec: FleetSpec, ledger: Ledger | None = None) -> None:
        self.spec = spec
        self._cores = {s.id: ServerCore(s, ledger or Ledger(None), "memory") for s in spec.servers}
        self.servers: dict[str, Server[Any]] = {sid: build_core_server(core) for sid, core in self._cores.items()}

    def _core(self, server_id: str) -> ServerCore:
        core = self._cores.get(server_id)
        if core is None:
            raise FleetArgumentError(f"the fleet has no server {server_id!r}; it has {sorted(self._cores)}")
        return core

    async def change_tools(self, server_id: str, change: CatalogChange | ChangeDocument) -> ChangeApplied:
        """Change a server's tools now and send its notifications (see `ServerCore.change`).

        ``change`` is a `CatalogChange` or its spec form (``{"remove": ["x"], "notify": 3}``).

        Raises:
            SpecError: ``change`` is not a valid change.
            FleetArgumentError: no such server, or an edit that does not apply to its tools.
        """
        return await self._core(server_id).change(as_change(change))

    async def await_listing(self, server_id: str, after: int, timeout: float = 10.0) -> str:
        """Wait until a client has listed the server's tools since catalog version ``after``.

        Returns ``complete`` (every page, from page 0, at that version or later), ``error``
        (a ``tools/list`` refused by ``list_error`` or left hanging by ``list_hang``) or ``timeout``.
        """
        return await self._core(server_id).watch.wait(after, timeout)


def build_core_server(core: ServerCore) -> Server[Any]:
    if core.spec.raw:
        raise FleetArgumentError(f"server {core.spec.id!r} is a raw JSON-RPC server; serve it over stdio or HTTP")
    return sdk_server_for(core)
