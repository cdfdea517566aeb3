"""A small hand-written JSON-RPC MCP server, for definitions the SDK refuses to send.

It serves the catalog exactly as generated (``readOnlyHint: "true"``, a missing name, an
input schema that is not an object…) and answers just enough of both protocol eras for
real clients to list (with pagination) and call tools: the ``initialize`` handshake
(2025-11-25 and earlier) and ``server/discover`` with per-request ``_meta`` (2026-07-28).
It runs over stdio (one JSON message per line) and over Streamable HTTP (JSON responses).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from mock_servers._server import DropConnection, ServerCore, legacy_refusal

__all__ = ["RawHttpServer", "RawProtocol", "serve_raw_stdio"]

# The part of ASGI a fleet host speaks: HTTP connections (uvicorn runs it without lifespan
# and websockets). A TypedDict names the keys read or sent here; a server's scope holds more.


class HTTPScope(TypedDict):
    """The scope of an ASGI ``http`` connection."""

    type: Literal["http"]
    method: str
    path: str
    query_string: bytes
    headers: Iterable[tuple[bytes, bytes]]


class OtherScope(TypedDict):
    """The scope of a connection a fleet host does not serve."""

    type: Literal["lifespan", "websocket"]


class HTTPRequestEvent(TypedDict):
    """A part of the request body (the last one has no ``more_body``, or a false one)."""

    type: Literal["http.request"]
    body: NotRequired[bytes]
    more_body: NotRequired[bool]


class HTTPDisconnectEvent(TypedDict):
    """The client went away."""

    type: Literal["http.disconnect"]


class HTTPResponseStartEvent(TypedDict):
    """The status and headers of the response."""

    type: Literal["http.response.start"]
    status: int
    headers: NotRequired[Iterable[tuple[bytes, bytes]]]


class HTTPResponseBodyEvent(TypedDict):
    """A part of the response body (``more_body``: more parts follow)."""

    type: Literal["http.response.body"]
    body: NotRequired[bytes]
    more_body: NotRequired[bool]


Scope: TypeAlias = HTTPScope | OtherScope
Receive: TypeAlias = Callable[[], Awaitable[HTTPRequestEvent | HTTPDisconnectEvent]]
Send: TypeAlias = Callable[[HTTPResponseStartEvent | HTTPResponseBodyEvent], Awaitable[None]]


class RawProtocol:
    """Answers JSON-RPC messages for one server; a connection (stdio) or a whole host path (HTTP)."""

    def __init__(self, core: ServerCore) -> None:
        self.core = core
        self.server_info = {"name": core.spec.id, "version": "1.0.0"}
        self.handshake_version: str | None = None

    async def handle(self, message: Any, *, session_id: str | None = None) -> dict[str, Any] | None:
        """The response to one message, or ``None`` for a notification."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "method" not in message:
            return _error(message.get("id") if isinstance(message, dict) else None, -32600, "Invalid Request")
        method = message["method"]
        params = message.get("params") or {}
        if "id" not in message:
            if method == "notifications/initialized":
                self.core.record("initialized", protocolVersion=self.handshake_version)
            return None
        request_id = message["id"]
        if self.core.spec.legacy_only and (refusal := legacy_refusal(message)) is not None:
            return refusal
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = (
            isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion") in MODERN_PROTOCOL_VERSIONS
        )
        version = meta.get("io.modelcontextprotocol/protocolVersion") if modern and meta else None
        try:
            result = await self._dispatch(method, params if isinstance(params, dict) else {}, version, session_id)
        except MCPError as exc:
            return _error(request_id, exc.code, exc.message)
        if modern:
            result = {**result, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
            result["_meta"] = {"io.modelcontextprotocol/serverInfo": self.server_info}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _dispatch(
        self, method: str, params: dict[str, Any], version: str | None, session_id: str | None
    ) -> dict[str, Any]:
        capabilities = {"tools": {"listChanged": False}}
        if method == "initialize":
            asked = params.get("protocolVersion")
            chosen = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
            self.handshake_version = chosen
            if self.core.transport == "http":
                self.core.record("session_opened", era="legacy", protocolVersion=chosen, sessionId=session_id)
            return {"protocolVersion": chosen, "capabilities": capabilities, "serverInfo": self.server_info}
        if method == "server/discover":
            self.core.record("discovered", protocolVersion=version)
            return {"supportedVersions": list(MODERN_PROTOCOL_VERSIONS), "capabilities": capabilities}
        if method == "ping":
            return {}
        if method == "tools/list":
            cursor = params.get("cursor")
            tools, next_cursor = await self.core.list_page(cursor if isinstance(cursor, str) else None, version)
            page: dict[str, Any] = {"tools": tools}
            if next_cursor is not None:
                page["nextCursor"] = next_cursor
            return page
        if method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments")
            if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
                raise MCPError(types.INVALID_PARAMS, "tools/call needs a string name and object arguments")
            outcome = await self.core.call(name, arguments, version)
            return cast(dict[str, Any], outcome.wire())
        raise MCPError(types.METHOD_NOT_FOUND, f"Method not found: {method}")


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


# ---------------------------------------------------------------------------------------------
# stdio


async def serve_raw_stdio(core: ServerCore) -> None:
    """Serve one connection on this process's stdin and stdout until stdin closes."""
    protocol = RawProtocol(core)
    stdin = anyio.wrap_file(sys.stdin.buffer)
    lock = anyio.Lock()

    async def answer(message: Any) -> None:
        response = await protocol.handle(message)
        if response is not None:
            data = (json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            async with lock:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()

    core.record("session_opened")
    async with anyio.create_task_group() as tg:
        async for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                tg.start_soon(_write_error, lock)
                continue
            tg.start_soon(answer, message)
        core.stopping.set()
        tg.cancel_scope.cancel()
    core.record("session_closed")


async def _write_error(lock: anyio.Lock) -> None:
    async with lock:
        sys.stdout.buffer.write((json.dumps(_error(None, -32700, "Parse error")) + "\n").encode())
        sys.stdout.buffer.flush()


# ---------------------------------------------------------------------------------------------
# Streamable HTTP (JSON responses only; no server-to-client stream)


class RawHttpServer:
    """An ASGI app serving one raw server at whatever path it is mounted on.

    Legacy-era sessions end when the client sends DELETE, after ``idle_seconds`` without a
    request (`expire_idle_sessions`), or when the server stops (`close_sessions`); each
    end is recorded as ``session_closed``.
    """

    def __init__(self, core: ServerCore, idle_seconds: float, *, max_sessions: int = 1000) -> None:
        self.core = core
        self.protocol = RawProtocol(core)
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self.sessions: dict[str, float] = {}  # session id → time of its last request

    def _close(self, session_id: str) -> None:
        if self.sessions.pop(session_id, None) is not None:
            self.core.record("session_closed", sessionId=session_id)

    def close_sessions(self) -> None:
        for session_id in list(self.sessions):
            self._close(session_id)

    async def expire_idle_sessions(self) -> None:
        while True:
            now = anyio.current_time()
            for session_id, last in list(self.sessions.items()):
                if now - last >= self.idle_seconds:
                    self._close(session_id)
            oldest = min(self.sessions.values(), default=now)
            await anyio.sleep(max(0.01, oldest + self.idle_seconds - now))

    async def __call__(self, scope: HTTPScope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        session_id = headers.get("mcp-session-id")
        if session_id in self.sessions:
            self.sessions[session_id] = anyio.current_time()
        if method == "DELETE":
            if session_id is not None:
                self._close(session_id)
            await _respond(send, 200, b"")
            return
        if method != "POST":
            await _respond(send, 405, b"", [(b"allow", b"POST, DELETE")])
            return
        try:
            body = await read_body(receive, MAX_BODY)
        except ValueError:
            await _respond_json(send, 413, _error(None, -32600, f"a request body is at most {MAX_BODY:,} bytes"))
            return
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            await _respond_json(send, 400, _error(None, -32700, "Parse error"))
            return
        extra: list[tuple[bytes, bytes]] = []
        if isinstance(message, dict) and message.get("method") == "initialize":
            if len(self.sessions) >= self.max_sessions:
                await _respond_json(send, 503, _error(message.get("id"), -32603, "Too many open sessions"))
                return
            session_id = uuid.uuid4().hex
            self.sessions[session_id] = anyio.current_time()
            extra.append((b"mcp-session-id", session_id.encode()))
        try:
            response = await self.protocol.handle(message, session_id=session_id)
        except DropConnection:
            await abort(send)
            return
        if response is None:
            await _respond(send, 202, b"")
        else:
            await _respond_json(send, 200, response, extra)


#: Bytes of one HTTP request body a raw server reads.
MAX_BODY = 16 * 1024 * 1024


async def read_body(receive: Receive, limit: int | None = None) -> bytes:
    """The whole request body.

    Raises:
        ValueError: it is longer than ``limit`` bytes (the rest is not read).
    """
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body)
        body += message.get("body", b"")
        if limit is not None and len(body) > limit:
            raise ValueError(f"request body over {limit} bytes")
        if not message.get("more_body"):
            return bytes(body)


async def abort(send: Send) -> None:
    """Start a streamed response and break the connection before any event is sent."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": b"", "more_body": True})
    raise DropConnection("connection dropped")


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": body})


async def _respond_json(send: Send, status: int, data: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    await _respond(send, status, body, [(b"content-type", b"application/json"), *(headers or [])])
