"""MCP connections, one owner task each, over stdio, Streamable HTTP or memory.

anyio requires that a client be closed by the task that opened it, so every connection
lives in a task of its own that opens the client, lists every page of tools, then waits
until it is told to stop and closes the client itself. Without refresh the listing is read
once, when the run opens (CAT-6.1). A connection of a run with refresh
also follows the server's ``notifications/tools/list_changed`` (on a ``subscriptions/listen``
stream on the 2026-07-28 revision, on the connection itself before it) and lists the server
again, coalescing a storm of notifications into as few listings as it can.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Protocol, cast

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ._bounds import MAX_DEPTH, deeper_than, unencodable
from ._config import DEFAULT_CONNECT_TIMEOUT, HttpTarget, MemoryTarget, ServerConfig, StdioTarget
from ._errors import ServerConnectionError
from ._stdio import stdio_transport
from ._wire import ToolResult

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "Connection", "ListingListener"]

# CAT-2.4 (MAY): the bound of pages this implementation follows (ID-8), past the 1,000 of CAT-2.1.
MAX_PAGES = 10_000
_log = logging.getLogger("reference_impl")


class ListingListener(Protocol):
    """What a connection of a run with refresh tells when its server has been listed again."""

    def apply_listing(self, server_id: str, tools: Sequence[Any]) -> bool: ...

    def listing_failed(self, server_id: str, reason: str) -> None: ...


class _TappedReader:
    """A read stream that remembers the raw result of the last ``tools/list`` response.

    The SDK validates results into models that coerce ``"true"`` to ``True``; read-only
    must see the JSON value the server actually sent (POL-5.4).
    """

    def __init__(self, inner: Any, sink: list[Any]) -> None:
        self._inner = inner
        self._sink = sink

    def _look(self, item: Any) -> Any:
        if isinstance(item, SessionMessage):
            result = getattr(item.message, "result", None)
            if isinstance(result, dict) and isinstance(result.get("tools"), list):
                self._sink.append(result)
        return item

    async def receive(self) -> Any:
        return self._look(await self._inner.receive())

    def __aiter__(self) -> _TappedReader:
        return self

    async def __anext__(self) -> Any:
        return self._look(await self._inner.__anext__())

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TappedReader:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every HTTP client: building one costs ~30 ms of CPU, so a run of
    many servers would otherwise spend most of its connection time loading certificates."""
    return ssl.create_default_context()


@asynccontextmanager
async def _http_streams(url: str) -> AsyncIterator[Any]:
    # The MCP SDK's own timeouts: 30 s to connect and write, 300 s to read a held-open stream.
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(timeout=timeout, verify=_tls()) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


@asynccontextmanager
async def _tapped(transport: Any, sink: list[Any]) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as streams:
        read, write = streams[0], streams[1]
        yield _TappedReader(read, sink), write


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    if isinstance(error, MCPError):
        return f"MCP error {error.code}: {error.message}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _single(error: Exception) -> Exception:
    """The one exception inside nested single-member exception groups, else the error itself."""
    while isinstance(error, ExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class Connection:
    """One server of a run: its client, its raw tool listing, and its lifetime."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        list_timeout: float,
        call_timeout: float | None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        refresh: bool = False,
    ) -> None:
        self.config = config
        self.connect_timeout = connect_timeout
        # Why the transport gave the server up (garbage on stdout), for the error message.
        self._problems: list[str] = []
        self.list_timeout = list_timeout
        self.call_timeout = call_timeout
        self.refresh = refresh
        self.tools: list[Any] = []
        self.error: ServerConnectionError | None = None
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.closed = anyio.Event()
        self._client: Client | None = None
        self._raw_pages: list[Any] = []
        # Refresh: notifications heard, and how many of them the listings done so far cover.
        self._listener: ListingListener | None = None
        self._attached = anyio.Event()
        self._heard = 0
        self._covered = 0
        self._wake = anyio.Event()
        self._caught_up = anyio.Event()

    def _client_for(self) -> Client:
        target = self.config.target
        handler = self._on_message if self.refresh else None
        if isinstance(target, MemoryTarget):
            return Client(target.server, message_handler=handler)
        if isinstance(target, StdioTarget):
            params = StdioServerParameters(
                command=target.command,
                # CAT-1.4: the configured command, args (none when none are given) and env.
                args=list(target.args),
                env=dict(target.env) if target.env is not None else None,
                cwd=target.cwd,
            )
            transport = stdio_transport(params, name=self.config.id, problems=self._problems)
            return Client(_tapped(transport, self._raw_pages), message_handler=handler)
        if isinstance(target, HttpTarget):
            return Client(_tapped(_http_streams(target.url), self._raw_pages), message_handler=handler)
        raise ServerConnectionError(f"server {self.config.id!r} has an unknown target {target!r}")

    async def run(self) -> None:
        """Open, list, wait for stop, close: all in this one task."""
        try:
            # The handshake has a bound of its own (PROTOCOL.md P22): lifted once it is done,
            # so that it never counts against listing or the run's lifetime.
            # PRO-9.1, PRO-9.2: start-up and handshake are bounded, by connectTimeoutSeconds when the run sets it.
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as handshake:
                async with self._client_for() as client, anyio.create_task_group() as following:
                    handshake.deadline = math.inf
                    self._client = client
                    if self.refresh:
                        # Listening starts before the listing, so that no change falls between the two.
                        await following.start(self._listen, client)
                        following.start_soon(self._relist, client)
                    # ERR-5.2, ERR-5.3: listing is bounded by the run's listTimeoutSeconds, 30 s by default (ID-5).
                    with anyio.fail_after(self.list_timeout):
                        self.tools = await self._list_all(client)
                    self.ready.set()
                    await self.stop.wait()
                    following.cancel_scope.cancel()
            if handshake.cancelled_caught:
                self.error = ServerConnectionError(
                    f"server {self.config.id!r} did not start or complete the MCP handshake within "
                    f"{self.connect_timeout:g} s",
                    server_id=self.config.id,
                )
        except Exception as caught:
            # The client's task groups wrap what the body raised in an exception group.
            error = _single(caught)
            if isinstance(error, ServerConnectionError):
                self.error = error
            # ERR-5.1, ERR-5.2: every way of failing names the server.
            elif isinstance(error, TimeoutError):
                self.error = ServerConnectionError(
                    f"server {self.config.id!r} did not finish listing its tools within {self.list_timeout:g} s",
                    server_id=self.config.id,
                )
            else:
                why = self._problems[0] if self._problems else _describe(error)
                self.error = ServerConnectionError(
                    f"server {self.config.id!r} could not be reached or listed: {why}",
                    server_id=self.config.id,
                )
        finally:
            self._client = None
            self.ready.set()
            self.closed.set()
            self._caught_up.set()  # nobody waits for a listing of a connection that has ended

    # -- refresh ----------------------------------------------------------------------------------

    def follow(self, listener: ListingListener) -> None:
        """Start telling ``listener`` of each new listing (the run's toolset, once it exists)."""
        self._listener = listener
        self._attached.set()

    async def _on_message(self, message: Any) -> None:
        # RFR-1.1: before the 2026-07-28 revision, the notification comes on the connection.
        if isinstance(message, types.ToolListChangedNotification):
            self._heard_one()

    def _heard_one(self) -> None:
        self._heard += 1
        self._wake.set()

    async def _listen(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """On the 2026-07-28 revision, hear of changes on a ``subscriptions/listen`` stream;
        started once the stream is acknowledged (or known not to come)."""
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            task_status.started()  # before that revision the notification comes on the connection; or never
            return
        try:
            # RFR-1.1: from the 2026-07-28 revision on, on a subscriptions/listen stream.
            async with client.listen(tools_list_changed=True) as events:
                task_status.started()
                async for _event in events:
                    self._heard_one()
        except Exception as error:  # a server that cannot be listened to simply never changes for us
            _log.warning("server %r: cannot follow tool list changes: %s", self.config.id, _describe(error))
            with contextlib.suppress(RuntimeError):  # started already
                task_status.started()

    async def _relist(self, client: Client) -> None:
        """List the server again after each notification; many notifications, one listing."""
        await self._attached.wait()
        assert self._listener is not None
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            # RFR-1.1: every page again (CAT-2); RFR-5.1: a storm of notifications is one listing per wake-up,
            # covering every notification heard before it began.
            while self._covered < self._heard:
                covering = self._heard
                try:
                    with anyio.fail_after(self.list_timeout):
                        tools = await self._list_all(client)
                except Exception as error:
                    reason = (
                        f"it did not finish listing within {self.list_timeout:g} s"
                        if isinstance(_single(error), TimeoutError)
                        else _describe(_single(error))
                    )
                    # RFR-5.2: a failed listing is a notice, never a failure of the run.
                    self._listener.listing_failed(self.config.id, reason)
                else:
                    if self._listener.apply_listing(self.config.id, tools):
                        self.tools = tools
                self._covered = covering
                self._caught_up.set()
                self._caught_up = anyio.Event()

    async def settled(self) -> None:
        """Return once the notifications heard so far are covered by a listing applied (or failed)."""
        target = self._heard
        while self._covered < target and not self.closed.is_set():
            await self._caught_up.wait()

    async def _list_all(self, client: Client) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        # CAT-2.4: a server still handing out cursors at the bound fails the run, named (below).
        for _ in range(MAX_PAGES):
            self._raw_pages.clear()
            try:
                # ERR-8.1: the SDK refuses a malformed definition (a name that is not a string, an input
                # schema whose type is not object).
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            except ValidationError as error:
                raise self._malformed(error) from None
            # CAT-2.2: a tool on a later page is in the catalog like any other.
            tools.extend(self._raw_tools(page))
            cursor = page.next_cursor
            # CAT-2.1, CAT-2.3: the end is a cursor absent, null or empty; a page with one is never the
            # last, even an empty one.
            if not cursor:
                return tools
        raise ServerConnectionError(
            f"server {self.config.id!r} kept returning a nextCursor after {MAX_PAGES} pages",
            server_id=self.config.id,
        )

    def _raw_tools(self, page: types.ListToolsResult) -> list[Any]:
        if self._raw_pages:
            raw = self._raw_pages[-1].get("tools")
            # CAT-1.2: each tool as the server sent it: name, description, input schema and the raw annotations.
            if isinstance(raw, list) and len(raw) == len(page.tools):
                return raw
        # In memory there is no wire: the models are all there is.
        return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in page.tools]

    def _malformed(self, error: ValidationError) -> ServerConnectionError:
        # ERR-8.2: the run fails (ID-4) naming the server and the tool's position, and its name when it has one.
        problem = error.errors()[0] if error.errors() else {"loc": (), "msg": str(error)}
        location = ".".join(str(part) for part in problem.get("loc", ()))
        tool = ""
        if self._raw_pages:
            loc = problem.get("loc", ())
            raw = self._raw_pages[-1].get("tools")
            if len(loc) >= 2 and loc[0] == "tools" and isinstance(loc[1], int) and isinstance(raw, list):
                item = raw[loc[1]] if loc[1] < len(raw) else None
                name = item.get("name") if isinstance(item, Mapping) else None
                tool = f" (tool {name!r})" if isinstance(name, str) else ""
        return ServerConnectionError(
            f"server {self.config.id!r} listed a malformed tool definition at {location}{tool}: {problem.get('msg')}",
            server_id=self.config.id,
        )

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call a tool; every failure comes back as an error result, never as an exception."""
        client = self._client
        if client is None:
            return error_result(f"server {self.config.id!r} is not connected")
        # GATE-4.2, GATE-4.3: a call that cannot be sent is an error result, and the connection stays as it was.
        if deeper_than(arguments, MAX_DEPTH - 1):
            return error_result(
                f"calling {name!r} on server {self.config.id!r} was refused: its arguments nest deeper than "
                f"{MAX_DEPTH - 1} levels; the call was not sent"
            )
        # GATE-4.5: a lone surrogate is refused here, so that no transport loses the server trying to write it.
        where = unencodable(arguments, "arguments")
        if where is not None:
            # No transport can write it, and some would lose the connection trying.
            return error_result(
                f"calling {name!r} on server {self.config.id!r} was refused: {where} holds a lone surrogate, "
                "which UTF-8 JSON cannot carry; the call was not sent"
            )
        try:
            # GATE-4.4: a call past the run's callTimeoutSeconds is an error result, and the run stays usable.
            timeout = self.call_timeout if self.call_timeout is not None else math.inf
            with anyio.fail_after(timeout):
                result = await client.call_tool(name, dict(arguments))
        except TimeoutError:
            return error_result(f"server {self.config.id!r} did not answer {name!r} within {self.call_timeout:g} s")
        except Exception as error:
            # GATE-4.2, GATE-4.3: a failure of any kind comes back as an error result, never as an exception.
            return error_result(f"calling {name!r} on server {self.config.id!r} failed: {_describe(error)}")
        # CAT-4.4: the server's content blocks, error flag and structuredContent, unchanged.
        dumped = result.model_dump(
            by_alias=True,
            mode="json",
            exclude_none=True,
            include={"content", "is_error", "structured_content"},
        ) | {"isError": bool(result.is_error)}
        return cast(ToolResult, dumped)


def error_result(message: str) -> ToolResult:
    # GATE-4.1, GATE-4.2: a refusal or a failure is a tool result with the error flag and a message.
    return {"content": [{"type": "text", "text": message}], "isError": True}
