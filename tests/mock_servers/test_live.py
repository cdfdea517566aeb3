"""Live catalogs: servers whose tools change while they serve, and the notifications they send."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mock_servers import (
    CatalogChange,
    ChangeApplied,
    ChangeDocument,
    Faults,
    FleetArgumentError,
    FleetHost,
    FleetSpec,
    HostError,
    Ledger,
    MemoryFleet,
    ServerDocument,
    ServerSpec,
    SpecError,
    ToolSpec,
    generate_tools,
    read_ledger,
    spec_from_dict,
    spec_to_dict,
    stdio_params,
)
from mock_servers._http import run_host
from mock_servers.strategies import catalog_changes, server_specs

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "mock_servers" / "README.md"

SPEC = spec_from_dict(
    {
        "servers": [
            {"id": "live", "tool_count": 3, "page_size": 2, "list_changed": True},
            {
                "id": "scheduled",
                "tool_count": 0,
                "tools": [{"name": "alpha"}, {"name": "beta"}],
                "changes": [
                    {"after_calls": 2, "remove": ["beta"], "add": [{"name": "late", "description": "L."}]},
                    {"after_seconds": 0, "update": [{"name": "late", "description": "Later."}], "notify": 2},
                ],
            },
            {"id": "quiet", "tool_count": 2},
        ]
    }
)


async def list_all(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


class Heard:
    """A message handler that counts ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    async def wait(self) -> None:
        with anyio.fail_after(10):
            await self.event.wait()
        self.event = anyio.Event()


@asynccontextmanager
async def legacy(target: Any) -> AsyncIterator[tuple[Client, Heard]]:
    heard = Heard()
    async with Client(target, mode="legacy", message_handler=heard) as client:
        yield client, heard


# -- the spec -----------------------------------------------------------------------------------


def test_a_spec_with_changes_reads_back_as_written() -> None:
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(SPEC)))) == SPEC
    breaking = spec_from_dict(
        {"servers": [{"id": "s", "tool_count": 1, "changes": [{"after_calls": 1, "break_listen": True}]}]}
    )
    assert spec_from_dict(spec_to_dict(breaking)) == breaking and breaking.servers[0].changes[0].break_listen
    scheduled = SPEC.server("scheduled")
    assert scheduled.list_changed  # changes imply it
    assert [c.trigger for c in scheduled.changes] == ["after_calls", "after_seconds"]
    assert not SPEC.server("quiet").list_changed


@pytest.mark.parametrize(
    ("server", "field", "expected"),
    [
        ({"changes": [{"remove": ["x"]}]}, "changes[0].after_calls", "exactly one trigger"),
        ({"changes": [{"after_calls": 1, "after_seconds": 1}]}, "changes[0].after_calls", "exactly one trigger"),
        ({"changes": [{"after_calls": 1, "remove": ["nope"]}]}, "changes[0].remove[0]", "a tool the server lists"),
        (
            {"changes": [{"after_calls": 1, "remove": ["x"]}, {"after_calls": 2, "update": [{"name": "x"}]}]},
            "changes[1].update[0].name",
            "a tool the server lists",
        ),
        ({"changes": [{"after_calls": 1, "add": [{"name": "x"}]}]}, "changes[0].add[0].name", "a name no tool has"),
        ({"changes": [{"after_calls": 1, "rename": [{"from": "x"}]}]}, "changes[0].rename[0].to", "a tool name"),
        ({"changes": [{"after_calls": 1, "notify": 10_001}]}, "changes[0].notify", "between 0 and 10,000"),
        ({"raw": True, "list_changed": True}, "raw", "a live catalog"),
        ({"changes": {"after_calls": 1}}, "changes", "a list of changes"),
        ({"changes": [{"after_calls": 1}] * 1_001}, "changes", "at most 1,000 changes"),
        ({"changes": [{"after_calls": 1, "add": {"name": "y"}}]}, "changes[0].add", "a list of tools"),
        ({"changes": [{"after_calls": 1, "list_error": "yes"}]}, "changes[0].list_error", "true or false"),
        ({"changes": [{"after_calls": 1, "list_hang": 1}]}, "changes[0].list_hang", "true or false"),
        ({"changes": [{"after_calls": 1, "break_listen": "yes"}]}, "changes[0].break_listen", "true or false"),
        ({"changes": [{"after_calls": 1, "rename": {"x": "y"}}]}, "changes[0].rename", "a list of {from, to}"),
        ({"changes": [{"after_calls": 1, "update": {"name": "x"}}]}, "changes[0].update", "a list of tools"),
        ({"changes": [{"after_calls": 1, "update": [{"description": "D."}]}]}, "changes[0].update[0].name", "the name"),
        ({"legacy_only": "yes"}, "legacy_only", "true or false"),
    ],
)
def test_a_change_that_cannot_fire_is_refused_when_the_spec_is_read(
    server: dict[str, Any], field: str, expected: str
) -> None:
    document = {"servers": [{"id": "s", "tool_count": 0, "tools": [{"name": "x"}], **server}]}

    with pytest.raises(SpecError) as caught:
        spec_from_dict(document)

    assert any(p.field == f"servers[0].{field}" and expected in p.expected for p in caught.value.problems), str(
        caught.value
    )


def test_a_raw_server_cannot_be_built_with_a_live_catalog() -> None:
    with pytest.raises(FleetArgumentError, match="raw server cannot serve a live catalog"):
        ServerSpec(id="s", raw=True, list_changed=True)


@settings(max_examples=25, deadline=None)
@given(server_specs(max_tools=6, explicit_tools=True, live=True))
def test_generated_live_servers_read_back_and_their_schedules_apply(server: ServerSpec) -> None:
    document = {"servers": [json.loads(json.dumps(spec_to_dict_server(server)))]}

    assert spec_from_dict(document).servers[0] == server


def spec_to_dict_server(server: ServerSpec) -> ServerDocument:
    from mock_servers._spec import server_to_dict

    return server_to_dict(server)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_a_drawn_change_applies_to_its_server_in_memory(data: st.DataObject) -> None:
    server = ServerSpec(id="s", tool_count=4, list_changed=True)
    change = data.draw(catalog_changes(server))

    async def apply() -> ChangeApplied:
        return await MemoryFleet(spec_from_dict({"servers": [spec_to_dict_server(server)]})).change_tools("s", change)

    answer = anyio.run(apply)

    expected = 4 - len(change.remove) + len(change.add)
    assert answer == {"catalog": 1, "tools": expected, "notified": change.notify}


# -- in memory ----------------------------------------------------------------------------------


async def test_a_change_after_the_nth_call_reaches_the_client_before_that_calls_result(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))

    async with legacy(fleet.servers["scheduled"]) as (client, heard):
        names = [t.name for t in await list_all(client)]
        await client.call_tool(names[0], {})
        assert heard.count == 0
        await client.call_tool(names[0], {})
        await heard.wait()
        after = [t.name for t in await list_all(client)]

    assert names == ["alpha", "beta"]
    assert after == ["alpha", "late"]
    ledger = read_ledger(tmp_path / "ledger.jsonl")
    [change, *_] = ledger.changes("scheduled")
    assert (change["trigger"], change["removed"], change["added"], change["catalog"]) == (
        "after_calls",
        ["beta"],
        ["late"],
        1,
    )
    assert [(e["n"], e["of"], e["connections"]) for e in ledger.notifications("scheduled", catalog=1)] == [(1, 1, 1)]


async def test_a_change_after_seconds_fires_once_its_turn_comes(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))

    async with legacy(fleet.servers["scheduled"]) as (client, heard):
        tool = (await list_all(client))[0].name
        await client.call_tool(tool, {})
        await client.call_tool(tool, {})
        await heard.wait()  # the first change; the second (after 0 s) was waiting for it
        while heard.count < 3:
            await heard.wait()
        late = next(t for t in await list_all(client) if t.name == "late")

    assert late.description == "Later."
    triggers = [c["trigger"] for c in read_ledger(tmp_path / "ledger.jsonl").changes("scheduled")]
    assert triggers == ["after_calls", "after_seconds"]


async def test_a_change_on_demand_reaches_both_eras_and_every_notification_is_recorded(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))

    async with legacy(fleet.servers["live"]) as (old, heard), Client(fleet.servers["live"]) as new:
        await list_all(old)
        async with new.listen(tools_list_changed=True) as events:
            answer = await fleet.change_tools("live", {"add": [{"name": "fresh"}], "notify": 300})
            await heard.wait()
            with anyio.fail_after(10):
                await events.__anext__()
        names = [t.name for t in await list_all(new)]

    assert answer == {"catalog": 1, "tools": 4, "notified": 300}
    assert names[-1] == "fresh"
    sent = read_ledger(tmp_path / "ledger.jsonl").notifications("live")
    assert [e["n"] for e in sent] == list(range(1, 301))
    assert {(e["connections"], e["streams"]) for e in sent} == {(1, 1)}


async def test_break_listen_ends_each_open_listen_stream_with_an_error_after_the_notifications(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))
    heard: list[object] = []

    async with Client(fleet.servers["live"]) as client:
        async with client.listen(tools_list_changed=True) as events:
            await fleet.change_tools("live", {"add": [{"name": "fresh"}], "break_listen": True})
            with anyio.fail_after(10), pytest.raises(SubscriptionLost) as lost:
                async for event in events:
                    heard.append(event)
        # The connection outlives the stream: the client listens again and hears the next change.
        async with client.listen(tools_list_changed=True) as again:
            await fleet.change_tools("live", {"remove": ["fresh"]})
            with anyio.fail_after(10):
                await again.__anext__()
        names = [t.name for t in await list_all(client)]

    assert len(heard) == 1
    assert isinstance(lost.value.__cause__, MCPError) and "break_listen" in lost.value.__cause__.error.message
    assert "fresh" not in names
    assert [(e["catalog"], e["streams"]) for e in read_ledger(tmp_path / "ledger.jsonl").faults("live")] == [(1, 1)]


async def test_a_server_without_list_changed_changes_silently() -> None:
    fleet = MemoryFleet(SPEC)

    answer = await fleet.change_tools("quiet", CatalogChange(add=(ToolSpec("fresh"),)))

    assert answer == {"catalog": 1, "tools": 3, "notified": 0}


async def test_an_edit_that_does_not_apply_is_refused_and_changes_nothing() -> None:
    fleet = MemoryFleet(SPEC)

    with pytest.raises(FleetArgumentError, match=r"remove\[0\]: expected a tool the server lists .*'nope'"):
        await fleet.change_tools("live", {"remove": ["nope"], "add": [{"name": "fresh"}]})

    async with Client(fleet.servers["live"]) as client:
        assert "fresh" not in [t.name for t in await list_all(client)]
    with pytest.raises(FleetArgumentError, match="no server 'ghost'"):
        await fleet.change_tools("ghost", {})


async def test_a_removed_tool_is_unknown_to_the_server_and_the_call_is_recorded(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))
    gone = generate_tools(SPEC.server("live"))[0]["name"]

    await fleet.change_tools("live", {"remove": [gone]})
    async with Client(fleet.servers["live"]) as client:
        with pytest.raises(MCPError, match=f"Unknown tool: {gone}"):
            await client.call_tool(gone, {})

    [call] = read_ledger(tmp_path / "ledger.jsonl").calls("live", gone)
    assert call["unknown"] is True


async def test_await_listing_waits_for_every_page_read_from_the_first_after_the_change() -> None:
    fleet = MemoryFleet(SPEC)
    answer = await fleet.change_tools("live", {"add": [{"name": "fresh"}]})

    async with Client(fleet.servers["live"]) as client:
        assert await fleet.await_listing("live", answer["catalog"], timeout=0.05) == "timeout"
        page = await client.list_tools()
        assert await fleet.await_listing("live", answer["catalog"], timeout=0.05) == "timeout"
        await client.list_tools(cursor=page.next_cursor)
        assert await fleet.await_listing("live", answer["catalog"], timeout=0.05) == "complete"


async def test_list_error_makes_listing_fail_until_healed_and_await_listing_says_so(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))
    broken = await fleet.change_tools("live", {"list_error": True})

    async with Client(fleet.servers["live"]) as client:
        with pytest.raises(Exception, match="list_error"):
            await client.list_tools()
        outcome = await fleet.await_listing("live", broken["catalog"], timeout=1)
        healed = await fleet.change_tools("live", {"list_error": False})
        tools = await list_all(client)

    assert outcome == "error"
    assert len(tools) == 3 and healed["catalog"] == 2
    [fault] = read_ledger(tmp_path / "ledger.jsonl").faults("live", "list_error")
    assert fault["catalog"] == 1


async def test_a_renamed_tool_keeps_its_definition_under_its_new_name() -> None:
    fleet = MemoryFleet(SPEC)
    before = generate_tools(SPEC.server("live"))[1]

    await fleet.change_tools("live", {"rename": [{"from": before["name"], "to": "renamed"}]})
    async with Client(fleet.servers["live"]) as client:
        renamed = next(t for t in await list_all(client) if t.name == "renamed")

    assert renamed.description == before["description"]
    assert renamed.input_schema == before["inputSchema"]


# -- over HTTP and stdio ------------------------------------------------------------------------


@pytest.mark.e2e
def test_a_fleet_host_changes_a_server_on_demand_for_legacy_http_clients(fleet_host: FleetHost, tmp_path: Path) -> None:
    urls = fleet_host.add_fleet(SPEC, tmp_path / "ledger.jsonl")
    tool = generate_tools(SPEC.server("live"))[0]["name"]
    update: ChangeDocument = {"update": [{"name": tool, "description": "Changed."}]}

    async def visit() -> tuple[str | None, str]:
        async with legacy(urls["live"]) as (client, heard):
            await list_all(client)
            answer = await anyio.to_thread.run_sync(lambda: fleet_host.change_tools(urls, "live", update))
            await heard.wait()
            changed = next(t for t in await list_all(client) if t.name == tool)
            listed = await anyio.to_thread.run_sync(lambda: fleet_host.await_listing(urls, "live", answer["catalog"]))
            return changed.description, listed

    try:
        assert anyio.run(visit) == ("Changed.", "complete")
        with pytest.raises(HostError, match="remove\\[0\\]"):
            fleet_host.change_tools(urls, "live", {"remove": ["nope"]})
        with pytest.raises(HostError, match="no server 'ghost'"):
            fleet_host.change_tools(urls, "ghost", {})
    finally:
        fleet_host.remove_fleet(urls)


@pytest.mark.e2e
def test_a_stdio_server_follows_its_schedule(tmp_path: Path) -> None:
    async def visit() -> list[str]:
        async with legacy(stdio_params(SPEC, "scheduled", tmp_path / "ledger.jsonl")) as (client, heard):
            tool = (await list_all(client))[0].name
            await client.call_tool(tool, {})
            await client.call_tool(tool, {})
            await heard.wait()
            return [t.name for t in await list_all(client)]

    assert anyio.run(visit) == ["alpha", "late"]


async def test_list_hang_leaves_listing_unanswered_until_healed_and_await_listing_says_so(tmp_path: Path) -> None:
    fleet = MemoryFleet(SPEC, Ledger(tmp_path / "ledger.jsonl"))
    stuck = await fleet.change_tools("live", {"list_hang": True})
    answered: list[int] = []

    async def hang(client: Client) -> None:
        answered.append(len((await client.list_tools()).tools))

    async with Client(fleet.servers["live"]) as client, anyio.create_task_group() as tg:
        tg.start_soon(hang, client)
        outcome = await fleet.await_listing("live", stuck["catalog"], timeout=10)
        await fleet.change_tools("live", {"list_hang": False})
        tools = await list_all(client)
        tg.cancel_scope.cancel()

    assert (outcome, answered, len(tools)) == ("error", [], 3)
    [fault] = read_ledger(tmp_path / "ledger.jsonl").faults("live", "list_hang")
    assert fault["catalog"] == 1


async def test_a_slow_last_page_is_recorded_complete_before_the_client_has_it(tmp_path: Path) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="late", tool_count=3, page_size=2, faults=Faults(slow_last_page=600)),))
    fleet = MemoryFleet(spec, Ledger(tmp_path / "ledger.jsonl"))
    pages: list[int] = []

    async def read(client: Client) -> None:
        first = await client.list_tools()
        pages.append(len(first.tools))
        pages.append(len((await client.list_tools(cursor=first.next_cursor)).tools))

    async with Client(fleet.servers["late"]) as client, anyio.create_task_group() as tg:
        tg.start_soon(read, client)
        assert await fleet.await_listing("late", 0) == "complete"
        held = pages.copy()
        tg.cancel_scope.cancel()

    assert held == [2]  # the first page is in; the last, recorded, is still held back
    assert [e["fault"] for e in read_ledger(tmp_path / "ledger.jsonl").of("fault")] == ["slow_last_page"]


# -- servers of the initialize era ----------------------------------------------------------------

LEGACY = spec_from_dict(
    {
        "servers": [
            {"id": "old", "tool_count": 3, "list_changed": True, "legacy_only": True},
            {"id": "old_raw", "tool_count": 2, "raw": True, "legacy_only": True},
        ]
    }
)


def test_a_legacy_only_server_reads_back_as_written() -> None:
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(LEGACY)))) == LEGACY
    assert LEGACY.server("old").legacy_only
    assert "legacy_only" not in spec_to_dict(SPEC)["servers"][0]


async def _meet(target: Any) -> tuple[str | None, int, list[str]]:
    """What a default (``auto``) client makes of a server: the protocol version, the tools it
    lists, and how a client that insists on the 2026-07-28 revision is answered."""
    async with Client(target) as client:
        version, count = client.protocol_version, len(await list_all(client))
    refused: list[str] = []
    try:
        async with Client(target, mode="2026-07-28") as modern:
            await modern.list_tools()
    except* MCPError as group:
        refused = [str(error) for error in group.exceptions]
    return version, count, refused


@pytest.mark.e2e
def test_a_legacy_only_server_over_http_is_met_through_the_initialize_handshake(
    fleet_host: FleetHost, tmp_path: Path
) -> None:
    urls = fleet_host.add_fleet(LEGACY, tmp_path / "ledger.jsonl")
    try:
        met = {server_id: anyio.run(_meet, urls[server_id]) for server_id in ("old", "old_raw")}
    finally:
        fleet_host.remove_fleet(urls)

    assert {k: (v[0] in MODERN_PROTOCOL_VERSIONS, v[1], len(v[2])) for k, v in met.items()} == {
        "old": (False, 3, 1),
        "old_raw": (False, 2, 1),
    }
    ledger = read_ledger(tmp_path / "ledger.jsonl")
    assert {e["server"] for e in ledger.of("session_opened") if e["era"] == "legacy"} == {"old", "old_raw"}
    assert not ledger.of("discovered")


@pytest.mark.e2e
def test_a_legacy_only_stdio_server_is_met_through_the_initialize_handshake(tmp_path: Path) -> None:
    version, count, refused = anyio.run(_meet, stdio_params(LEGACY, "old", tmp_path / "ledger.jsonl"))

    assert (version in MODERN_PROTOCOL_VERSIONS, count, len(refused)) == (False, 3, 1)


def test_the_serve_control_api_changes_tools_without_a_token(tmp_path: Path) -> None:
    async def serve() -> tuple[int, dict[str, Any], int]:
        async with run_host() as app:
            await app.add_fleet(SPEC, tmp_path / "ledger.jsonl", name="fleet")
            async with httpx2.AsyncClient(base_url=app.base_url) as http:
                changed = await http.post("/_fleet/fleets/fleet/servers/live/changes", json={"notify": 2})
                refused = await http.post("/_fleet/fleets/fleet/servers/live/changes", json={"remove": 3})
                waited = await http.get("/_fleet/fleets/fleet/servers/live/listing", params={"after": 1, "timeout": 0})
            return changed.status_code, {**changed.json(), **waited.json()}, refused.status_code

    status, answer, refused = anyio.run(serve)

    assert (status, refused) == (200, 400)
    assert answer == {"catalog": 1, "tools": 3, "notified": 2, "outcome": "timeout"}


@pytest.mark.e2e
def test_the_mcp_fleet_fixture_changes_http_fleets_and_refuses_stdio_ones(tmp_path: Path) -> None:
    from mock_servers import FleetFactory

    with FleetHost.start() as host:
        factory = FleetFactory(tmp_path, lambda: host)
        http = factory(SPEC)
        stdio = factory(SPEC, transport="stdio")
        try:
            assert http.change_tools("live", {"add": [{"name": "fresh"}]})["tools"] == 4
            assert http.await_listing("live", 1, timeout=0) == "timeout"
            with pytest.raises(FleetArgumentError, match="need transport='http'"):
                stdio.change_tools("live", {})
        finally:
            assert factory.close() == []


# -- the README ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_the_readme_example_of_a_host_that_relists_passes_as_written(pytester: pytest.Pytester) -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: test_list_changed.py -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README has lost its live-catalog example"
    pytester.makeini("[pytest]\nfilterwarnings = error\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_list_changed=match.group(1))

    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist")

    result.assert_outcomes(passed=1)
