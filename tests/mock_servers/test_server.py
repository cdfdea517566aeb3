"""The SDK-built servers, driven in memory by the official Python client in both eras."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mock_servers import (
    Faults,
    FleetArgumentError,
    Ledger,
    ServerSpec,
    build_server,
    call_result,
    example_arguments,
    generate_tools,
    memory_server,
    read_ledger,
)
from tests.mock_servers.mock_fleet_helpers import list_all

GITHUB = ServerSpec(id="github", tool_count=45, page_size=20, seed=5)
ERAS = ["auto", "legacy"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_lists_every_page_and_gets_the_generated_catalog(mode: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with Client(memory_server(GITHUB, Ledger(ledger)), mode=mode) as client:
        tools = await list_all(client)
    wire = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
    assert wire == generate_tools(GITHUB)
    assert read_ledger(ledger).listed_pages("github") == [0, 1, 2]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_valid_call_returns_the_result_made_for_it_and_is_recorded(mode: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    tool = generate_tools(GITHUB)[0]
    args = example_arguments(tool)
    async with Client(memory_server(GITHUB, Ledger(ledger)), mode=mode) as client:
        await list_all(client)
        result = await client.call_tool(tool["name"], args)
    assert result.is_error is False
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    expected = call_result(GITHUB, tool["name"], args)
    assert {key: wire.get(key) for key in expected} == expected
    [call] = read_ledger(ledger).calls("github", tool["name"])
    assert call["arguments"] == args
    assert call["isError"] is False


@pytest.mark.parametrize("mode", ERAS)
async def test_arguments_that_break_the_schema_give_a_tool_error(mode: str) -> None:
    tool = generate_tools(GITHUB)[0]
    async with Client(memory_server(GITHUB), mode=mode) as client:
        await list_all(client)
        result = await client.call_tool(tool["name"], {"owner": 3})
    assert result.is_error is True
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text.startswith(f"Invalid arguments for {tool['name']}: ")


@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_tool_is_an_invalid_params_error(mode: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with Client(memory_server(GITHUB, Ledger(ledger)), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
    assert caught.value.code == types.INVALID_PARAMS
    assert read_ledger(ledger).calls("github", "no_such_tool")[0]["unknown"] is True


async def test_a_foreign_cursor_is_refused() -> None:
    async with Client(memory_server(GITHUB)) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor="bm90LWEtY3Vyc29y")
    assert caught.value.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ERAS)
async def test_each_in_memory_client_opens_and_closes_one_session(mode: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with Client(memory_server(GITHUB, Ledger(ledger)), mode=mode):
        assert not read_ledger(ledger).every_session_closed()
    view = read_ledger(ledger)
    assert len(view.of("session_opened")) == 1
    assert view.every_session_closed()
    handshake = view.of("discovered", "github") if mode == "auto" else view.of("initialized", "github")
    assert handshake[0]["protocolVersion"] == client_version(mode)


def client_version(mode: str) -> str:
    return "2026-07-28" if mode == "auto" else "2025-11-25"


async def test_error_on_list_fails_the_listing_and_is_recorded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=10, page_size=5, faults=Faults(error_on_list=1))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        first = await client.list_tools()
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor=first.next_cursor)
    assert caught.value.code == types.INTERNAL_ERROR
    assert [f["page"] for f in read_ledger(ledger).faults("s", "error_on_list")] == [1]


async def test_hang_on_list_never_answers(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=3, faults=Faults(hang_on_list=0))
    async with Client(memory_server(server, Ledger(ledger)), read_timeout_seconds=0.2) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.code == types.REQUEST_TIMEOUT
    assert read_ledger(ledger).faults("s", "hang_on_list")


async def test_tool_call_error_fails_only_the_named_tools(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    tools = generate_tools(ServerSpec(id="s", tool_count=4))
    server = ServerSpec(id="s", tool_count=4, faults=Faults(tool_call_error=(tools[0]["name"],)))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        await list_all(client)
        failed = await client.call_tool(tools[0]["name"], example_arguments(tools[0]))
        fine = await client.call_tool(tools[1]["name"], example_arguments(tools[1]))
    assert (failed.is_error, fine.is_error) == (True, False)
    assert [f["tool"] for f in read_ledger(ledger).faults("s", "tool_call_error")] == [tools[0]["name"]]


async def test_error_on_call_answers_the_named_tools_with_a_json_rpc_error(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    tools = generate_tools(ServerSpec(id="s", tool_count=4))
    server = ServerSpec(id="s", tool_count=4, faults=Faults(error_on_call=(tools[0]["name"],)))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        await list_all(client)
        with pytest.raises(MCPError) as caught:
            await client.call_tool(tools[0]["name"], example_arguments(tools[0]))
        fine = await client.call_tool(tools[1]["name"], example_arguments(tools[1]))
    assert (caught.value.code, fine.is_error) == (types.INTERNAL_ERROR, False)
    assert [f["tool"] for f in read_ledger(ledger).faults("s", "error_on_call")] == [tools[0]["name"]]


async def test_in_memory_a_dropped_call_or_crashed_listing_is_a_connection_closed_error(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=4, page_size=2, faults=Faults(drop_mid_call=("*",), crash_on_list=1))
    tool = generate_tools(server)[0]
    async with Client(memory_server(server, Ledger(ledger))) as client:
        first = await client.list_tools()
        with pytest.raises(MCPError) as crashed:
            await client.list_tools(cursor=first.next_cursor)
        with pytest.raises(MCPError) as dropped:
            await client.call_tool(tool["name"], example_arguments(tool))
    assert crashed.value.code == dropped.value.code == types.CONNECTION_CLOSED
    assert {f["fault"] for f in read_ledger(ledger).faults("s")} == {"crash_on_list", "drop_mid_call"}


async def test_slow_delays_every_response_and_is_recorded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=2, faults=Faults(slow=0.05))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        start = anyio.current_time()
        await client.list_tools()
        assert anyio.current_time() - start >= 0.05
    assert read_ledger(ledger).faults("s", "slow")[0]["seconds"] == 0.05


async def test_slow_calls_delays_only_calls_and_is_recorded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=2, faults=Faults(slow_calls=0.05))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        tools = (await client.list_tools()).tools
        assert not read_ledger(ledger).faults("s", "slow_calls")
        start = anyio.current_time()
        await client.call_tool(tools[0].name, {})
        assert anyio.current_time() - start >= 0.05
    assert [f["seconds"] for f in read_ledger(ledger).faults("s", "slow_calls")] == [0.05]


async def test_catalog_faults_are_recorded_when_their_page_is_served(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=6, faults=Faults(duplicate_names=1, bad_names=("double_underscore",)))
    async with Client(memory_server(server, Ledger(ledger))) as client:
        tools = await list_all(client)
    names = [t.name for t in tools]
    assert len(names) == 7
    assert len(set(names)) == 6
    assert {f["fault"] for f in read_ledger(ledger).faults("s")} == {"duplicate_names", "bad_names"}


def test_a_raw_server_cannot_be_built_with_the_sdk() -> None:
    with pytest.raises(FleetArgumentError, match="raw"):
        build_server(ServerSpec(id="r", raw=True), Ledger(None))
