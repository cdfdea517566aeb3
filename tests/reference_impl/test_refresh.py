"""Runs with refresh: the catalog follows ``notifications/tools/list_changed`` through policy, gate and budgets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mock_servers import ChangeDocument, Ledger, MemoryFleet, read_ledger, spec_from_dict
from reference_impl import AdaptiveToolset, MemoryTarget, ServerConfig, ToolPolicy, open_toolset
from reference_impl._connections import Connection

from .servers import Recorder, memory, tool

READ = {"readOnlyHint": True}


def server(server_id: str, *tools: Mapping[str, Any], page_size: int = 50) -> dict[str, Any]:
    return {"id": server_id, "tool_count": 0, "page_size": page_size, "list_changed": True, "tools": list(tools)}


SPEC = spec_from_dict(
    {
        "servers": [
            server("docs", {"name": "get_page"}, {"name": "list_pages", "annotations": READ}, page_size=1),
            server("ro", {"name": "read_log", "annotations": READ}, {"name": "tail_log", "annotations": READ}),
            server("fixed", {"name": "a"}, {"name": "b"}),
            server("guarded", {"name": "archive_table"}, {"name": "list_tables"}),
        ]
    }
)
POLICIES = {
    "ro": ToolPolicy(side_effects="readOnly"),
    "fixed": ToolPolicy(mode="all", max_active_tools=2),
    "guarded": ToolPolicy(denied_tools=("drop_table",)),
}


@asynccontextmanager
async def run(tmp_path: Path, *, refresh: bool = True) -> AsyncIterator[tuple[AdaptiveToolset, MemoryFleet, Path]]:
    ledger = tmp_path / "ledger.jsonl"
    fleet = MemoryFleet(SPEC, Ledger(ledger))
    servers = [
        ServerConfig(s.id, MemoryTarget(fleet.servers[s.id]), POLICIES.get(s.id, ToolPolicy())) for s in SPEC.servers
    ]
    async with open_toolset(servers, refresh=refresh) as toolset:
        yield toolset, fleet, ledger


async def change(toolset: AdaptiveToolset, fleet: MemoryFleet, server_id: str, edits: ChangeDocument) -> str:
    """Change a server's tools, wait until the run has listed them again, and return how that ended."""
    answer = await fleet.change_tools(server_id, edits)
    outcome = await fleet.await_listing(server_id, answer["catalog"], timeout=10)
    await toolset.settled()
    return outcome


def names(toolset: AdaptiveToolset) -> list[str]:
    return [tool["name"] for tool in toolset.definitions()]


def activate(toolset: AdaptiveToolset, qualified: str) -> list[str]:
    server_id = qualified.split("__")[0]
    result = toolset.search({"query": qualified, "server_ids": [server_id], "limit": 12})
    return [tool["name"] for tool in result["structuredContent"]["activated"]]


async def test_a_removed_tool_leaves_the_definitions_and_the_gate_at_once(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, ledger):
        assert "docs__get_page" in names(toolset)
        assert await change(toolset, fleet, "docs", {"remove": ["get_page"]}) == "complete"
        refused = await toolset.call("docs__get_page", {})

        assert "docs__get_page" not in names(toolset)
        assert refused["isError"] and "not active" in refused["content"][0]["text"]
        assert activate(toolset, "docs__get_page") == []
    assert read_ledger(ledger).calls("docs") == []


async def test_a_new_tool_on_a_later_page_is_discoverable_but_not_activated(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        await change(toolset, fleet, "docs", {"add": [{"name": "search_pages", "description": "Search pages."}]})

        assert "docs__search_pages" not in names(toolset)
        assert activate(toolset, "docs__search_pages") == ["docs__search_pages"]
        assert (await toolset.call("docs__search_pages", {}))["isError"] is False


async def test_a_changed_definition_replaces_the_old_one(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        await change(toolset, fleet, "docs", {"update": [{"name": "get_page", "description": "Get one page."}]})

        [page] = [t for t in toolset.definitions() if t["name"] == "docs__get_page"]
        assert page["description"] == "Get one page."


async def test_a_tool_that_lost_its_read_only_mark_leaves_a_read_only_server(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        assert "ro__tail_log" in names(toolset)
        await change(toolset, fleet, "ro", {"update": [{"name": "tail_log", "annotations": {"readOnlyHint": False}}]})

        assert "ro__tail_log" not in names(toolset)
        assert (await toolset.call("ro__tail_log", {}))["isError"]
        assert activate(toolset, "ro__tail_log") == []


async def test_a_renamed_tool_is_judged_by_the_policy_under_its_new_name(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        assert "guarded__archive_table" in names(toolset)
        await change(toolset, fleet, "guarded", {"rename": [{"from": "archive_table", "to": "drop_table"}]})

        assert {"guarded__archive_table", "guarded__drop_table"}.isdisjoint(names(toolset))
        assert activate(toolset, "guarded__drop_table") == []
        assert (await toolset.call("guarded__drop_table", {}))["isError"]


async def test_a_new_required_tool_is_activated_only_where_it_fits_and_the_run_says_so(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        await change(toolset, fleet, "fixed", {"remove": ["b"], "add": [{"name": "c"}]})
        fits = "fixed__c" in names(toolset)
        await change(toolset, fleet, "fixed", {"add": [{"name": "d"}]})

        assert fits
        assert "fixed__d" not in names(toolset)
        assert toolset.notices == [
            {
                "kind": "required_tool_inactive",
                "server": "fixed",
                "message": "server 'fixed' lists the required tool 'd', but its maxActiveTools of 2 leaves no room "
                "for it; it stays inactive",
                "tools": ["fixed__d"],
            }
        ]


async def test_a_server_that_fails_to_list_again_keeps_its_last_good_catalog(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, _):
        outcome = await change(toolset, fleet, "docs", {"add": [{"name": "new"}], "list_error": True})

        assert outcome == "error"
        assert "docs__get_page" in names(toolset)
        assert (await toolset.call("docs__get_page", {}))["isError"] is False
        assert [(n["kind"], n["server"]) for n in toolset.notices] == [("listing_failed_kept", "docs")]


async def test_a_storm_of_notifications_leaves_the_run_answering_with_the_last_catalog(tmp_path: Path) -> None:
    async with run(tmp_path) as (toolset, fleet, ledger):
        await change(toolset, fleet, "ro", {"add": [{"name": "grep_log", "annotations": READ}], "notify": 300})

        assert activate(toolset, "ro__grep_log") == ["ro__grep_log"]
        assert (await toolset.call("ro__grep_log", {}))["isError"] is False
    assert len(read_ledger(ledger).notifications("ro")) == 300


async def test_notifications_heard_while_nothing_lists_are_covered_by_one_listing() -> None:
    recorder = Recorder()
    config = memory("s", [tool("a")], recorder=recorder)
    connection = Connection(config, list_timeout=10, call_timeout=None, refresh=True)
    applied: list[int] = []

    class Listener:
        def apply_listing(self, server_id: str, tools: Sequence[Any]) -> bool:
            applied.append(len(tools))
            return True

        def listing_failed(self, server_id: str, reason: str) -> None:
            raise AssertionError(reason)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(connection.run)
        await connection.ready.wait()
        for _ in range(300):
            await connection._on_message(types.ToolListChangedNotification())
        connection.follow(Listener())
        await connection.settled()
        connection.stop.set()

    assert applied == [1]
    assert recorder.pages == [None, None]  # the listing that opened the run, and one for all 300


async def test_a_run_without_refresh_keeps_the_catalog_it_opened_with(tmp_path: Path) -> None:
    async with run(tmp_path, refresh=False) as (toolset, fleet, _):
        answer = await fleet.change_tools("docs", {"remove": ["get_page"]})

        assert await fleet.await_listing("docs", answer["catalog"], timeout=0.2) == "timeout"
        assert "docs__get_page" in names(toolset)


def test_the_builder_is_needed_to_apply_a_listing() -> None:
    toolset = object.__new__(AdaptiveToolset)
    toolset._builder = None
    with pytest.raises(RuntimeError, match="not opened with refresh"):
        toolset.apply_listing("docs", ())
