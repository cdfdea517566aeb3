"""The discovery tool: its definition, argument checking, candidates, limits and result (DSC-1..10, R5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from reference_impl import (
    DISCOVERY_TOOL,
    AdaptiveToolset,
    Definition,
    ServerConfig,
    ToolPolicy,
    ToolResult,
    discovery_definition,
    open_toolset,
)
from reference_impl._discovery import DEFAULT_LIMIT, MAX_LIMIT, InvalidDiscoveryArguments, parse_arguments

from .servers import Recorder, base_tools, memory, tool

FILLERS = [tool(f"aa_{i:03d}", "filler") for i in range(12)]


def widgets(count: int, prefix: str = "widget") -> list[dict[str, Any]]:
    return [
        tool(f"{prefix}_{i:02d}", "Make a widget", schema={"type": "object", "required": ["size"]})
        for i in range(count)
    ]


def shop(recorder: Recorder | None = None, *, policy: ToolPolicy | None = None) -> ServerConfig:
    # Empty message: the first round takes the twelve fillers ("aa_" sorts first); the rest is hidden.
    tools = [*FILLERS, *widgets(20), tool("gadget_list", "list gadgets")]
    return memory("shop", tools, policy=policy, recorder=recorder)


def activated(result: ToolResult) -> list[str]:
    assert result["isError"] is False, result
    return [t["name"] for t in result["structuredContent"]["activated"]]


def test_the_discovery_definition_has_a_required_string_query_optional_server_ids_and_integer_limit() -> None:
    definition = discovery_definition()
    assert definition["name"] == DISCOVERY_TOOL == "search_mcp_tools"
    schema = definition["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["server_ids"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Only search these servers (optional).",
    }
    assert schema["properties"]["limit"]["type"] == "integer"
    assert schema["properties"]["limit"]["default"] == DEFAULT_LIMIT == 6
    assert schema["properties"]["limit"]["maximum"] == MAX_LIMIT == 12


def test_the_discovery_description_says_when_to_call_it_and_that_tools_arrive_next_turn() -> None:
    description = discovery_definition()["description"]
    assert "not enough" in description
    assert "next turn" in description


async def test_the_discovery_tool_is_registered_exactly_when_a_server_is_in_auto_mode() -> None:
    fixed = memory("fixed", [tool("a")], policy=ToolPolicy(mode="all"))
    async with open_toolset([fixed]) as toolset:
        assert DISCOVERY_TOOL not in [d["name"] for d in toolset.definitions()]
    async with open_toolset([fixed, memory("auto", [])]) as toolset:
        assert toolset.definitions()[0]["name"] == DISCOVERY_TOOL
    async with open_toolset([]) as toolset:
        assert toolset.definitions() == []


async def test_discovery_activates_six_by_default_in_rank_order_and_reports_the_counts() -> None:
    async with open_toolset([shop()]) as toolset:
        result = await toolset.call(DISCOVERY_TOOL, {"query": "widget"})
        assert activated(result) == [f"shop__widget_{i:02d}" for i in range(6)]
        # 12 first-round + 6 = 18 active; dynamic capacity 112 - 0 base - 1 discovery = 111.
        assert result["structuredContent"]["activeCount"] == 18
        assert result["structuredContent"]["remainingCapacity"] == 111 - 18
        assert result["structuredContent"]["activated"][0] == {
            "name": "shop__widget_00",
            "description": "Make a widget",
        }
        assert "available on your next turn" in result["content"][0]["text"]


@pytest.mark.parametrize(("limit", "expected"), [(None, 6), (1, 1), (3, 3), (12, 12), (13, 12), (1000, 12)])
async def test_a_missing_or_null_limit_is_six_and_a_larger_one_is_clamped_to_twelve(
    limit: int | None, expected: int
) -> None:
    arguments: dict[str, Any] = {"query": "widget"}
    if limit is not None:
        arguments["limit"] = limit
    async with open_toolset([shop()]) as toolset:
        assert len(activated(await toolset.call(DISCOVERY_TOOL, arguments))) == expected
    async with open_toolset([shop()]) as toolset:
        assert len(activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": limit}))) == expected


async def _refused(toolset: AdaptiveToolset, arguments: Any, message: str) -> None:
    before = toolset.definitions()
    result = await toolset.call(DISCOVERY_TOOL, arguments)
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert message in result["content"][0]["text"]
    assert result["content"][0]["text"].startswith(f"{DISCOVERY_TOOL}: ")
    assert toolset.definitions() == before
    assert toolset.trace.discoveries == []


@pytest.mark.parametrize("limit", [0, -1, True, False, 1.5, 6.0, "3", [3]])
async def test_a_limit_that_is_not_a_positive_integer_is_an_error_that_activates_nothing(limit: Any) -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(toolset, {"query": "widget", "limit": limit}, "'limit' must be a positive integer")


@pytest.mark.parametrize("query", ["", "   ", "\n\t", 5, None, ["widget"], {"q": "widget"}])
async def test_a_missing_empty_blank_or_non_string_query_is_an_error_that_activates_nothing(query: Any) -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(toolset, {"query": query}, "'query' must be a non-empty string")
        await _refused(toolset, {"limit": 3}, "'query' must be a non-empty string")


async def test_a_discovery_call_without_arguments_is_an_error_about_the_query() -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(toolset, None, "'query' must be a non-empty string describing a capability, got None")


@pytest.mark.parametrize("server_ids", ["shop", {"shop": 1}, [1], ["shop", None], 3])
async def test_server_ids_that_are_not_a_list_of_strings_are_an_error(server_ids: Any) -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(toolset, {"query": "widget", "server_ids": server_ids}, "'server_ids' must be a list")


async def test_server_ids_naming_a_server_not_in_the_run_are_an_error_listing_the_known_ones() -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(
            toolset,
            {"query": "widget", "server_ids": ["shop", "github"]},
            "'server_ids' names ['github'], not servers of this run; known servers: ['shop']",
        )


@pytest.mark.parametrize("arguments", [["widget"], "widget", {"query": "widget", "scope": "all"}])
async def test_arguments_that_are_not_an_object_or_carry_unknown_keys_are_an_error(arguments: Any) -> None:
    async with open_toolset([shop()]) as toolset:
        await _refused(toolset, arguments, "argument")


def test_parse_arguments_accepts_the_full_form() -> None:
    parsed = parse_arguments({"query": " x ", "server_ids": ["a"], "limit": 40}, frozenset({"a", "b"}))
    assert (parsed.query, parsed.server_ids, parsed.limit) == (" x ", ("a",), 12)
    with pytest.raises(InvalidDiscoveryArguments):
        parse_arguments({"query": "x", "server_ids": ["c"]}, frozenset({"a"}))


async def test_an_empty_server_ids_list_means_no_scope() -> None:
    servers = [memory("a", [*FILLERS, *widgets(3)]), memory("b", [*FILLERS, *widgets(3)])]
    async with open_toolset(servers) as toolset:
        result = await toolset.call(DISCOVERY_TOOL, {"query": "widget", "server_ids": []})
        assert activated(result) == [f"{s}__widget_{i:02d}" for s in "ab" for i in range(3)]


async def test_server_ids_restrict_the_candidates_to_the_named_servers() -> None:
    servers = [memory("a", [*FILLERS, *widgets(3)]), memory("b", [*FILLERS, *widgets(3)])]
    async with open_toolset(servers) as toolset:
        result = await toolset.call(DISCOVERY_TOOL, {"query": "widget", "server_ids": ["b"]})
        assert activated(result) == ["b__widget_00", "b__widget_01", "b__widget_02"]
        assert toolset.trace.discoveries[-1].server_ids == ("b",)


async def test_naming_a_server_that_is_not_in_auto_mode_is_valid_and_finds_nothing_there() -> None:
    fixed = memory("fixed", [tool("a"), *widgets(3)], policy=ToolPolicy(mode="allowlist", allowed_tools=("a",)))
    async with open_toolset([shop(), fixed]) as toolset:
        result = await toolset.call(DISCOVERY_TOOL, {"query": "widget", "server_ids": ["fixed"]})
        assert activated(result) == []
        assert result["structuredContent"]["activeCount"] == 13


async def test_only_candidates_with_a_relevance_signal_from_the_query_are_activated() -> None:
    async with open_toolset([shop()], system_prompt="widget") as toolset:
        # The system prompt gives every widget 2 points: the first round takes widget_00..11.
        assert toolset.active_names == tuple(f"shop__widget_{i:02d}" for i in range(12))
        result = await toolset.call(DISCOVERY_TOOL, {"query": "list gadgets", "limit": 12})
        # widget_12..19 still score 2 from the system prompt, but carry no signal from the query.
        assert activated(result) == ["shop__gadget_list"]
        empty = await toolset.call(DISCOVERY_TOOL, {"query": "nothing like it", "limit": 12})
        assert activated(empty) == []
        assert "No matching tool could be activated." in empty["content"][0]["text"]
        assert empty["structuredContent"] == {"activated": [], "activeCount": 13, "remainingCapacity": 111 - 13}


async def test_the_server_id_and_aliases_in_the_query_are_relevance_signals() -> None:
    tracker = memory("tracker", [*FILLERS, tool("create_issue", "Open a ticket"), tool("zz", "unrelated")])
    async with open_toolset([shop(), tracker]) as toolset:
        assert activated(await toolset.call(DISCOVERY_TOOL, {"query": "工单"})) == ["tracker__create_issue"]
        by_id = await toolset.call(DISCOVERY_TOOL, {"query": "the shop server", "limit": 3})
        assert activated(by_id) == ["shop__gadget_list", "shop__widget_00", "shop__widget_01"]


async def test_discovery_ranks_with_the_query_in_place_of_the_user_message() -> None:
    # "list gadgets": gadget_list hits list and gadgets (24) and is read-shaped under a read signal (+8).
    async with open_toolset([shop()], user_message="widget widget") as toolset:
        assert activated(await toolset.call(DISCOVERY_TOOL, {"query": "list gadgets", "limit": 1})) == [
            "shop__gadget_list"
        ]
        assert str(toolset.trace.discoveries[-1].score("shop__gadget_list")).startswith("32 ")  # type: ignore[misc]


async def test_tools_already_active_are_not_candidates() -> None:
    async with open_toolset([shop()]) as toolset:
        assert activated(await toolset.call(DISCOVERY_TOOL, {"query": "filler"})) == []
        first = activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 2}))
        second = activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 2}))
        assert first == ["shop__widget_00", "shop__widget_01"]
        assert second == ["shop__widget_02", "shop__widget_03"]


async def test_growth_stops_at_the_dynamic_watermark_of_112_minus_base_tools_minus_discovery() -> None:
    # 95 base tools + discovery: first-round capacity 0, dynamic capacity 112 - 95 - 1 = 16.
    server = memory("shop", widgets(40), policy=ToolPolicy(max_active_tools=96))
    async with open_toolset([server], base_tools=base_tools(95)) as toolset:
        assert toolset.active_names == ()
        results = [await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 12}) for _ in range(3)]
        assert [len(activated(r)) for r in results] == [12, 4, 0]
        assert [r["structuredContent"]["remainingCapacity"] for r in results] == [4, 0, 0]
        assert [r["structuredContent"]["activeCount"] for r in results] == [12, 16, 16]
        assert len(toolset.request_definitions()) == 112


async def test_growth_stops_at_the_watermark_when_the_room_is_smaller_than_the_limit() -> None:
    server = memory("shop", widgets(40), policy=ToolPolicy(max_active_tools=96))
    async with open_toolset([server], base_tools=base_tools(93)) as toolset:
        # first-round capacity 2, dynamic 18: 16 more fit.
        assert len(toolset.active_names) == 2
        found = [len(activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget"}))) for _ in range(4)]
        assert found == [6, 6, 4, 0]
        assert len(toolset.request_definitions()) == 112


async def test_discovery_never_exceeds_a_servers_max_active_tools() -> None:
    tight = memory("tight", widgets(30), policy=ToolPolicy(max_active_tools=14))
    roomy = memory("roomy", [*FILLERS, *widgets(30, "widget_r")])
    async with open_toolset([tight, roomy]) as toolset:
        first = activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget", "server_ids": ["tight"], "limit": 12}))
        assert first == ["tight__widget_12", "tight__widget_13"]
        trace = toolset.trace.discoveries[-1]
        assert trace.skipped["tight__widget_14"] == "server at maxActiveTools"
        again = await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 3})
        assert activated(again) == ["roomy__widget_r_00", "roomy__widget_r_01", "roomy__widget_r_02"]
        assert sum(name.startswith("tight__") for name in toolset.active_names) == 14


async def test_discovery_never_calls_a_server_tool_nor_returns_unselected_schemas() -> None:
    recorder = Recorder()
    async with open_toolset([shop(recorder)]) as toolset:
        result = await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 2})
        assert recorder.calls == []
        text = str(result)
        assert "inputSchema" not in text
        assert "required" not in text
        assert "shop__widget_02" not in text
        assert set(result["structuredContent"]) == {"activated", "activeCount", "remainingCapacity"}


async def test_discovery_only_activates_inside_a_non_empty_auto_allowed_list() -> None:
    policy = ToolPolicy(allowed_tools=(*(f"aa_{i:03d}" for i in range(12)), "widget_05"))
    async with open_toolset([shop(policy=policy)]) as toolset:
        assert activated(await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 12})) == ["shop__widget_05"]


def _names(definitions: Sequence[Definition]) -> list[str]:
    return [d["name"] for d in definitions]


async def test_search_is_the_same_as_calling_the_discovery_tool_through_the_gate() -> None:
    async with open_toolset([shop()]) as toolset:
        result = toolset.search({"query": "widget", "limit": 1})
        assert activated(result) == ["shop__widget_00"]
        assert _names(toolset.definitions())[-1] == "shop__widget_00"
