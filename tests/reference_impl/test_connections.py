"""Connections: pagination, transports, connection errors naming the server, and failing tool calls (CAT-2, ERR-5/8, GATE-4)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from reference_impl import (
    DISCOVERY_TOOL,
    HttpTarget,
    MemoryTarget,
    ServerConfig,
    ServerConnectionError,
    StdioTarget,
    _connections,
    open_toolset,
)

from .servers import Recorder, make_server, memory, numbered_tools, raw_server, tool


async def test_listing_follows_every_cursor_and_later_pages_are_in_the_catalog() -> None:
    recorder = Recorder()
    server = memory("big", numbered_tools("t", 20), page_size=7, recorder=recorder)
    async with open_toolset([server]) as toolset:
        assert recorder.pages == [None, "7", "14"]
        assert [e.name for e in toolset.catalog.entries] == [f"t_{i:03d}" for i in range(20)]
        found = await toolset.call(DISCOVERY_TOOL, {"query": "19"})
        assert [t["name"] for t in found["structuredContent"]["activated"]] == ["big__t_019"]
        assert (await toolset.call("big__t_019", {"n": 19}))["isError"] is False
    assert recorder.calls == [("t_019", {"n": 19})]


def _paged_server(pages: list[tuple[list[str], str | None]], seen: list[str | None]) -> Server[Any]:
    """A server whose page k lists pages[k][0] with next cursor pages[k][1]; the cursor is the page number."""

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        seen.append(cursor)
        names, next_cursor = pages[int(cursor or 0)]
        listed = [types.Tool(name=name, input_schema={"type": "object"}) for name in names]
        return types.ListToolsResult(tools=listed, next_cursor=next_cursor)

    return Server("paged", on_list_tools=list_tools)


async def test_an_empty_next_cursor_ends_the_listing() -> None:
    seen: list[str | None] = []
    server = _paged_server([(["a"], "1"), (["b"], ""), (["never"], None)], seen)
    async with open_toolset([ServerConfig("p", MemoryTarget(server))]) as toolset:
        assert seen == [None, "1"]
        assert [e.name for e in toolset.catalog.entries] == ["a", "b"]


async def test_a_server_that_never_stops_paginating_is_a_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_connections, "MAX_PAGES", 3)
    seen: list[str | None] = []
    server = _paged_server([(["a"], "1"), (["b"], "2"), (["c"], "0")], seen)
    with pytest.raises(ServerConnectionError, match=r"server 'p' kept returning a nextCursor after 3 pages"):
        async with open_toolset([ServerConfig("p", MemoryTarget(server))]):
            pytest.fail("the run must not open")
    assert seen == [None, "1", "2"]


@pytest.mark.e2e
async def test_a_stdio_server_is_listed_page_by_page_and_its_tools_execute(tmp_path: Path) -> None:
    server = raw_server(tmp_path, "raw", [[tool("a")], [tool("b")], [tool("c", "the third page")]])
    async with open_toolset([server.config("raw")]) as toolset:
        assert toolset.active_names == ("raw__a", "raw__b", "raw__c")
        assert toolset.definitions()[-1]["description"] == "the third page"
        result = await toolset.call("raw__c", {"k": [1, "two"]})
        assert result == {"content": [{"type": "text", "text": "raw c ok"}], "isError": False}
    assert server.lines() == ["start", 'call c {"k": [1, "two"]}', "exit"]


@asynccontextmanager
async def http_server(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a socket that already listens, so clients can connect at once."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
    sock.close()


async def test_a_streamable_http_server_is_listed_and_its_tools_execute() -> None:
    recorder = Recorder()
    app = make_server("web", [tool("a", read_only=True), tool("b")], page_size=1, recorder=recorder)
    async with (
        http_server(app.streamable_http_app()) as url,
        open_toolset([ServerConfig("web", HttpTarget(url))]) as toolset,
    ):
        # (A tools/call with arguments makes this server list page 1 again: the SDK server's own check.)
        assert recorder.pages[:2] == [None, "1"]
        assert [e.annotations for e in toolset.catalog.entries] == [{"readOnlyHint": True}, None]
        result = await toolset.call("web__b", {"x": 1})
        assert result["structuredContent"] == {"server": "web", "tool": "b", "arguments": {"x": 1}}
    assert recorder.calls == [("b", {"x": 1})]


async def test_an_unreachable_http_server_is_a_connection_error_naming_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(ServerConnectionError, match=r"server 'web' could not be reached or listed") as caught:
            async with open_toolset([ServerConfig("web", HttpTarget(f"http://127.0.0.1:{port}/mcp"))]):
                pytest.fail("the run must not open")
    assert caught.value.server_id == "web"


@pytest.mark.e2e
async def test_a_command_that_does_not_exist_is_a_connection_error_naming_the_server() -> None:
    with pytest.raises(ServerConnectionError, match=r"server 'ghost' could not be reached or listed: FileNotFound"):
        async with open_toolset([ServerConfig("ghost", StdioTarget("/nonexistent/mcp-server"))]):
            pytest.fail("the run must not open")


@pytest.mark.e2e
async def test_a_server_that_exits_at_once_is_a_connection_error_naming_it(tmp_path: Path) -> None:
    gone = raw_server(tmp_path, "gone", [[]], exit_at_start=True)
    with pytest.raises(ServerConnectionError, match=r"server 'gone' could not be reached or listed") as caught:
        async with open_toolset([gone.config("gone")]):
            pytest.fail("the run must not open")
    assert caught.value.server_id == "gone"
    assert gone.lines() == ["start", "exit"]


async def test_a_server_that_does_not_finish_listing_in_time_is_a_connection_error() -> None:
    never = anyio.Event()

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await never.wait()
        raise AssertionError("unreachable")

    slow = ServerConfig("slow", MemoryTarget(Server("slow", on_list_tools=list_tools)))
    with anyio.fail_after(5), pytest.raises(ServerConnectionError) as caught:
        async with open_toolset([memory("fast", [tool("a")]), slow], list_timeout=0.05):
            pytest.fail("the run must not open")
    assert caught.value.message == "server 'slow' did not finish listing its tools within 0.05 s"


@pytest.mark.e2e
async def test_the_first_failing_server_in_configuration_order_is_the_one_reported(tmp_path: Path) -> None:
    first = raw_server(tmp_path, "first", [[]], exit_at_start=True)
    second = raw_server(tmp_path, "second", [[]], exit_at_start=True)
    with pytest.raises(ServerConnectionError, match=r"server 'b_first'"):
        async with open_toolset([first.config("b_first"), second.config("a_second")]):
            pytest.fail("the run must not open")


async def test_a_target_of_an_unknown_kind_is_a_connection_error() -> None:
    server = ServerConfig("odd", target="stdio://nowhere")  # type: ignore[arg-type]
    with pytest.raises(ServerConnectionError, match=r"server 'odd' has an unknown target 'stdio://nowhere'"):
        async with open_toolset([server]):
            pytest.fail("the run must not open")


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("page", "fragment"),
    [
        ([tool("ok"), {"name": "broken", "inputSchema": "object"}], "at tools.1.inputSchema (tool 'broken')"),
        ([tool("ok"), {"name": "broken", "inputSchema": ["type", "object"]}], "(tool 'broken')"),
        ([{"description": "no name", "inputSchema": {"type": "object"}}], "at tools.0.name"),
        ([{"name": 42, "inputSchema": {"type": "object"}}], "at tools.0.name"),
        ([{"name": "", "inputSchema": {"type": "object"}}], "at position 1: 'name' must be a non-empty string, got ''"),
        ([{"name": "no_schema"}], "at tools.0.inputSchema (tool 'no_schema')"),
    ],
)
async def test_a_malformed_tool_definition_fails_the_run_naming_the_server_and_the_tool(
    tmp_path: Path, page: list[Any], fragment: str
) -> None:
    healthy = raw_server(tmp_path, "healthy", [[tool("fine")]])
    bad = raw_server(tmp_path, "bad", [[tool("first")], page])
    with pytest.raises(ServerConnectionError) as caught:
        async with open_toolset([healthy.config("healthy"), bad.config("bad")]):
            pytest.fail("the run must not open")
    assert caught.value.server_id == "bad"
    assert caught.value.message.startswith("server 'bad' listed a malformed tool")
    assert fragment in caught.value.message
    assert healthy.exited
    assert bad.exited


def _failing_server(recorder: Recorder, release: anyio.Event) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        names = ["raises", "reports", "hangs", "works"]
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in names])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        recorder.calls.append((params.name, dict(params.arguments or {})))
        if params.name == "raises":
            raise MCPError(types.INVALID_PARAMS, "bad arguments for raises")
        if params.name == "hangs":
            await release.wait()
        is_error = params.name == "reports"
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} done")], is_error=is_error)

    return Server("failing", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_failing_tool_calls_come_back_as_error_results_and_the_run_stays_usable() -> None:
    recorder, release = Recorder(), anyio.Event()
    server = ServerConfig("f", MemoryTarget(_failing_server(recorder, release)))
    async with open_toolset([server], call_timeout=0.1) as toolset:
        raised = await toolset.call("f__raises", {})
        assert raised["isError"] is True
        assert raised["content"][0]["text"] == (
            "calling 'raises' on server 'f' failed: MCP error -32602: bad arguments for raises"
        )
        reported = await toolset.call("f__reports", {})
        assert reported == {"content": [{"type": "text", "text": "reports done"}], "isError": True}
        with anyio.fail_after(5):
            hung = await toolset.call("f__hangs", {})
        assert hung["isError"] is True
        assert hung["content"][0]["text"] == "server 'f' did not answer 'hangs' within 0.1 s"
        release.set()
        assert (await toolset.call("f__works", {}))["isError"] is False
    assert [name for name, _ in recorder.calls] == ["raises", "reports", "hangs", "works"]


@pytest.mark.e2e
async def test_a_server_that_dies_mid_call_gives_error_results_and_the_run_stays_usable(tmp_path: Path) -> None:
    crashing = raw_server(tmp_path, "crash", [[tool("boom"), tool("after")]], crash_on="boom")
    other = raw_server(tmp_path, "other", [[tool("still_here")]])
    async with open_toolset([crashing.config("c"), other.config("o")]) as toolset:
        with anyio.fail_after(10):
            dropped = await toolset.call("c__boom", {})
            assert dropped["isError"] is True
            assert "server 'c'" in dropped["content"][0]["text"]
            assert (await toolset.call("c__after", {}))["isError"] is True
            assert (await toolset.call("o__still_here", {}))["isError"] is False
            assert toolset.search({"query": "anything"})["isError"] is False
    assert crashing.exited
    assert other.lines() == ["start", "call still_here {}", "exit"]


async def test_a_call_on_a_connection_that_is_not_open_is_an_error_result() -> None:
    connection = _connections.Connection(memory("idle", []), list_timeout=1.0, call_timeout=None)
    result = await connection.call("anything", {})
    assert result == {"content": [{"type": "text", "text": "server 'idle' is not connected"}], "isError": True}
