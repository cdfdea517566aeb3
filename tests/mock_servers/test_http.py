"""Fleets over Streamable HTTP: the shared fleet host, and the in-process server."""

from __future__ import annotations

import json
import socket
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mock_servers import (
    Faults,
    FleetHost,
    FleetSpec,
    HostError,
    ServerSpec,
    _app,
    example_arguments,
    generate_tools,
    preset,
    read_ledger,
    serve_http,
)
from mock_servers._http import bind
from tests.mock_servers.mock_fleet_helpers import list_all, post_initialize, until

GITHUB = ServerSpec(id="github", tool_count=25, page_size=10, seed=1)
RAW = ServerSpec(id="raw", domain="crm", tool_count=7, page_size=3, raw=True, faults=Faults(read_only_hint_string=1))
ERAS = ["auto", "legacy"]


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("server", [GITHUB, RAW], ids=["sdk", "raw"])
async def test_a_fleet_added_to_the_host_is_listed_and_called_over_http(
    fleet_host: FleetHost, server: ServerSpec, mode: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    urls = fleet_host.add_fleet(FleetSpec(servers=(server,)), ledger)
    tool = generate_tools(server)[0]
    async with Client(urls[server.id], mode=mode) as client:
        tools = await list_all(client)
        good = await client.call_tool(tool["name"], example_arguments(tool))
        bad = await client.call_tool(tool["name"], {"limit": "not a number"})
    fleet_host.remove_fleet(urls)
    assert [t.name for t in tools] == [t["name"] for t in generate_tools(server)]
    assert (good.is_error, bad.is_error) == (False, True)
    view = read_ledger(ledger)
    assert view.listed_pages(server.id) == list(range(-(-server.tool_count // server.page_size)))
    assert [c["isError"] for c in view.calls(server.id)] == [False, True]
    if mode == "legacy":
        assert len(view.of("session_opened", server.id)) == 1
        assert view.every_session_closed()
    else:
        # On the 2026-07-28 revision an HTTP client leaves no session trace at all.
        assert view.of("session_opened") == view.of("session_closed") == []


@pytest.mark.e2e
async def test_each_fleet_gets_its_own_paths_and_a_removed_fleet_answers_404(fleet_host: FleetHost) -> None:
    one = fleet_host.add_fleet(FleetSpec(servers=(GITHUB,)))
    two = fleet_host.add_fleet(FleetSpec(servers=(GITHUB,)), name="second")
    assert one.fleet != two.fleet == "second"
    assert one["github"] != two["github"]
    fleet_host.remove_fleet("second")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(two["github"], data=b"{}", method="POST"), timeout=10)
    caught.value.close()
    assert caught.value.code == 404
    async with Client(one["github"]) as client:
        assert len(await list_all(client)) == 25
    fleet_host.remove_fleet(one)


@pytest.mark.e2e
def test_the_host_refuses_a_taken_fleet_name_and_an_invalid_spec(fleet_host: FleetHost) -> None:
    urls = fleet_host.add_fleet(FleetSpec(servers=(GITHUB,)), name="taken")
    with pytest.raises(HostError, match="taken"):
        fleet_host.add_fleet(FleetSpec(servers=(GITHUB,)), name="taken")
    with pytest.raises(HostError, match="no fleet named"):
        fleet_host.remove_fleet("never-added")
    fleet_host.remove_fleet(urls)


@pytest.mark.e2e
def test_a_host_keeps_its_log_in_no_file_that_a_killed_caller_would_leave_behind() -> None:
    def logs() -> set[Path]:
        return set(Path(tempfile.gettempdir()).glob("mcp-fleet-host-*"))

    before = logs()
    launched = FleetHost.launch()
    # Still starting (its imports take a while): a caller killed now leaves nothing by name.
    assert logs() == before
    launched.group.kill()
    launched.close()
    assert logs() == before


@pytest.mark.e2e
def test_the_control_api_needs_the_host_token(fleet_host: FleetHost) -> None:
    request = urllib.request.Request(fleet_host.url + "/_fleet/health")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    caught.value.close()
    assert caught.value.code == 403


@pytest.mark.e2e
async def test_http_faults_fire_and_are_recorded(fleet_host: FleetHost, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = FleetSpec(
        servers=(
            ServerSpec(id="dead", faults=Faults(fail_to_start=True)),
            ServerSpec(id="erroring", tool_count=4, page_size=2, faults=Faults(error_on_list=0)),
            ServerSpec(id="crashing", tool_count=4, page_size=2, faults=Faults(crash_on_list=1)),
            ServerSpec(id="hanging", tool_count=4, page_size=2, faults=Faults(hang_on_list=0)),
            ServerSpec(id="dropping", tool_count=2, faults=Faults(drop_mid_call=("*",), slow=0.01)),
        )
    )
    urls = fleet_host.add_fleet(spec, ledger)
    with pytest.raises(Exception) as failed:
        async with Client(urls["dead"]):
            pass
    assert "MCPError" in repr(failed.value)
    async with Client(urls["erroring"]) as client:
        with pytest.raises(MCPError) as erroring:
            await client.list_tools()
    async with Client(urls["crashing"]) as client:
        first = await client.list_tools()
        with pytest.raises(MCPError):
            await client.list_tools(cursor=first.next_cursor)
    async with Client(urls["hanging"], read_timeout_seconds=0.3) as client:
        with pytest.raises(MCPError) as hanging:
            await client.list_tools()
    tool = generate_tools(spec.server("dropping"))[0]
    async with Client(urls["dropping"], mode="legacy") as client:
        await list_all(client)
        with pytest.raises(MCPError):
            await client.call_tool(tool["name"], example_arguments(tool))
    fleet_host.remove_fleet(urls)
    assert erroring.value.code == types.INTERNAL_ERROR
    assert hanging.value.code == types.REQUEST_TIMEOUT
    fired = {(f["server"], f["fault"]) for f in read_ledger(ledger).faults()}
    assert fired == {
        ("dead", "fail_to_start"),
        ("erroring", "error_on_list"),
        ("crashing", "crash_on_list"),
        ("hanging", "hang_on_list"),
        ("dropping", "drop_mid_call"),
        ("dropping", "slow"),
    }
    assert [c["name"] for c in read_ledger(ledger).calls("dropping")] == [tool["name"]]


async def test_serve_http_runs_a_preset_fleet_in_this_process(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with serve_http("seed-example", ledger) as urls:
        assert sorted(urls) == ["browser", "data", "github", "linear"]
        async with Client(urls["linear"], mode="legacy") as client:
            assert len(await list_all(client)) == 40
    view = read_ledger(ledger)
    assert view.listed_pages("linear") == [0, 1]
    assert view.every_session_closed()
    assert [e["event"] for e in view.of("fleet_removed")] == ["fleet_removed"]


@pytest.mark.e2e
def test_a_preset_added_by_name_serves_every_server(fleet_host: FleetHost) -> None:
    urls = fleet_host.add_fleet("realistic")
    assert sorted(urls) == sorted(s.id for s in preset("realistic").servers)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    assert all(url.startswith(fleet_host.url) and url.endswith("/mcp") for url in urls.values())
    assert body
    fleet_host.remove_fleet(urls)


async def test_a_call_cut_during_a_slow_delay_is_recorded_as_called_and_cancelled(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = FleetSpec(servers=(ServerSpec(id="s", tool_count=3, faults=Faults(slow=60)),))
    tool = generate_tools(spec.servers[0])[0]
    async with serve_http(spec, ledger) as urls:
        with pytest.raises(Exception):  # noqa: B017 - the client times out; how it says so is its business
            async with Client(urls["s"], mode="auto", read_timeout_seconds=0.2) as client:
                await client.call_tool(tool["name"], example_arguments(tool))
    calls = read_ledger(ledger).calls("s")
    assert [(c["name"], c["cancelled"], c["protocolVersion"]) for c in calls] == [(tool["name"], True, "2026-07-28")]


@pytest.mark.parametrize("server", [GITHUB, RAW], ids=["sdk", "raw"])
async def test_a_legacy_session_whose_client_vanished_is_closed_after_the_idle_bound(
    server: ServerSpec, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with serve_http(FleetSpec(servers=(server,)), ledger, session_idle_seconds=0.3) as urls:
        session_id = await anyio.to_thread.run_sync(post_initialize, urls[server.id])
        assert [e["sessionId"] for e in read_ledger(ledger).sessions_open()] == [session_id]
        await until(lambda: read_ledger(ledger).every_session_closed())
        closed = read_ledger(ledger).of("session_closed")
    assert [e["sessionId"] for e in closed] == [session_id]


def test_the_listening_socket_says_tcp_so_that_responses_are_sent_without_delay() -> None:
    # asyncio sets TCP_NODELAY only on accepted sockets whose protocol is IPPROTO_TCP; with
    # protocol 0, every HTTP response waited ~40 ms for a delayed ACK between head and body.
    with bind(0) as sock:
        assert sock.proto == socket.IPPROTO_TCP


@pytest.mark.parametrize("server", [GITHUB, RAW], ids=["sdk", "raw"])
async def test_a_server_refuses_sessions_beyond_its_cap_and_keeps_serving_the_open_ones(
    server: ServerSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_app, "MAX_SESSIONS", 3)
    ledger = tmp_path / "ledger.jsonl"
    async with serve_http(FleetSpec(servers=(server,)), ledger) as urls:
        opened = [await anyio.to_thread.run_sync(post_initialize, urls[server.id]) for _ in range(3)]
        with pytest.raises(urllib.error.HTTPError) as refused:
            await anyio.to_thread.run_sync(post_initialize, urls[server.id])
        still_open = [e["sessionId"] for e in read_ledger(ledger).sessions_open()]
    assert refused.value.code == 503
    refused.value.close()
    assert still_open == opened


@pytest.mark.e2e
def test_a_host_that_cannot_start_is_reported_with_the_end_of_its_log() -> None:
    with pytest.raises(HostError, match=r"did not start.*\n.*--session-idle must be a positive number"):
        FleetHost.spawn(session_idle_seconds=-1, timeout=30)
