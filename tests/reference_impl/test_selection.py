"""The first round: the worked example, fill, fairness, global ranking, capacity and its errors (SEL, BUD-4, ERR-1/2)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from reference_impl import (
    DYNAMIC_LIMIT,
    FAIRNESS_CAP,
    FIRST_ROUND_LIMIT,
    REQUEST_LIMIT,
    Budgets,
    Definition,
    McpToolSelectionError,
    SelectionError,
    ServerConfig,
    ToolPolicy,
    open_toolset,
)

from .servers import base_tools, memory, numbered_tools, tool

DISCOVERY = "search_mcp_tools"


def _per_server(names: tuple[str, ...]) -> Counter[str]:
    return Counter(name.split("__", 1)[0] for name in names)


def test_the_watermarks_and_capacities_are_those_of_the_specification() -> None:
    assert (FIRST_ROUND_LIMIT, DYNAMIC_LIMIT, REQUEST_LIMIT, FAIRNESS_CAP) == (96, 112, 128, 12)
    budgets = Budgets(base_tools=3, discovery_tools=1)
    assert budgets.first_round_capacity == 92
    assert budgets.dynamic_capacity == 108
    assert Budgets(base_tools=0, discovery_tools=0).first_round_capacity == 96


async def test_the_worked_example_gives_49_toolset_definitions_52_in_the_request_and_112_left() -> None:
    servers = [memory(s, numbered_tools(s, 40)) for s in ("github", "linear", "slack", "notion")]
    question = "Which pull requests in github need a review before the release?"
    async with open_toolset(servers, base_tools=base_tools(3), user_message=question) as toolset:
        assert len(toolset.catalog) == 160
        assert _per_server(toolset.active_names) == {"github": 12, "linear": 12, "slack": 12, "notion": 12}
        definitions = toolset.definitions()
        assert len(definitions) == 49
        assert definitions[0]["name"] == DISCOVERY
        request = toolset.request_definitions()
        assert len(request) == 52
        assert [d["name"] for d in request[:4]] == ["base_000", "base_001", "base_002", DISCOVERY]
        assert len(toolset.catalog) - len(toolset.active_names) == 112
        assert toolset.budgets.first_round_capacity == 92
        assert toolset.budgets.dynamic_capacity == 108


async def test_the_first_round_fills_to_the_caps_even_with_tools_that_score_below_zero() -> None:
    # "list recent" is a read signal: every delete_* tool scores -32, and twelve are still taken.
    servers = [memory(s, [tool(f"delete_{i:02d}") for i in range(20)]) for s in ("a", "b")]
    async with open_toolset(servers, user_message="list recent things") as toolset:
        assert _per_server(toolset.active_names) == {"a": 12, "b": 12}
        assert toolset.trace.by_name("a__delete_00").score is not None
        assert toolset.trace.by_name("a__delete_00").score.total == -32  # type: ignore[union-attr]


async def test_the_number_of_first_round_tools_does_not_depend_on_the_message() -> None:
    servers = [memory(s, numbered_tools(s, 30)) for s in ("a", "b", "c")]
    counts = set()
    for message in ("", "a tool number 7", "列出最近的工单", "delete everything now"):
        async with open_toolset(servers, user_message=message) as toolset:
            counts.add(len(toolset.active_names))
    assert counts == {36}


async def test_the_first_round_walks_one_global_ranking_while_the_capacity_lasts() -> None:
    # 90 base tools + discovery leave 5 slots. Scores for "deploy logs": b__deploy_logs 24,
    # a__deploy 12, b__deploy 12, a__logs 12, then every other tool 0, ties by qualified name.
    servers = [
        memory("a", [tool("deploy"), tool("logs"), tool("zero_1"), tool("zero_2")]),
        memory("b", [tool("deploy_logs"), tool("deploy"), tool("zero_3")]),
    ]
    async with open_toolset(servers, base_tools=base_tools(90), user_message="deploy logs") as toolset:
        assert toolset.budgets.first_round_capacity == 5
        assert toolset.active_names == ("b__deploy_logs", "a__deploy", "a__logs", "b__deploy", "a__zero_1")
        assert toolset.trace.by_name("a__zero_2").outcome == "left: first-round capacity used up"


async def test_a_server_at_its_first_round_cap_leaves_room_for_the_others_in_rank_order() -> None:
    # Server a scores highest everywhere, but takes only 12; b fills the rest of the walk.
    a_tools = [tool(f"match_{i:02d}", "match") for i in range(20)]
    b_tools = [tool(f"other_{i:02d}") for i in range(20)]
    async with open_toolset([memory("a", a_tools), memory("b", b_tools)], user_message="match") as toolset:
        names = toolset.active_names
        assert names[:12] == tuple(f"a__match_{i:02d}" for i in range(12))
        assert names[12:] == tuple(f"b__other_{i:02d}" for i in range(12))
        assert toolset.trace.by_name("a__match_12").outcome == "left: server at its first-round cap"


async def test_a_first_round_capacity_of_exactly_zero_is_allowed_when_nothing_is_required() -> None:
    async with open_toolset([memory("s", numbered_tools("t", 5))], base_tools=base_tools(95)) as toolset:
        assert toolset.budgets.first_round_capacity == 0
        assert toolset.active_names == ()
        assert len(toolset.request_definitions()) == 96
    async with open_toolset([], base_tools=base_tools(96)) as toolset:
        assert toolset.definitions() == []
        assert len(toolset.request_definitions()) == 96


@pytest.mark.parametrize(
    ("servers", "base"),
    [([], 97), ([memory("s", numbered_tools("t", 3))], 96), ([memory("s", [])], 100)],
    ids=["no-server", "discovery-tips-it-over", "empty-server"],
)
async def test_base_tools_over_the_96_watermark_are_a_selection_error(servers: list[ServerConfig], base: int) -> None:
    with pytest.raises(SelectionError, match=r"leave -\d+ first-round slots under the 96 watermark") as caught:
        async with open_toolset(servers, base_tools=base_tools(base)):
            pytest.fail("the run must not open")
    assert caught.value.kind == "selection_error"
    assert McpToolSelectionError is SelectionError


async def test_a_capacity_of_zero_with_a_required_tool_is_a_selection_error() -> None:
    policy = ToolPolicy(pinned_tools=("t_000",))
    with pytest.raises(SelectionError, match=r"1 required tools do not fit the first-round capacity of 0"):
        async with open_toolset([memory("s", numbered_tools("t", 3), policy=policy)], base_tools=base_tools(95)):
            pytest.fail("the run must not open")


@pytest.mark.parametrize(
    "policy",
    [
        ToolPolicy(mode="allowlist", allowed_tools=("t_000", "t_001", "t_002"), max_active_tools=2),
        ToolPolicy(mode="all", max_active_tools=4),
        ToolPolicy(pinned_tools=("t_000", "t_001", "t_002"), max_active_tools=2),
    ],
    ids=["allowlist", "all", "pinned"],
)
async def test_required_tools_over_a_servers_max_active_tools_are_a_selection_error_naming_it(
    policy: ToolPolicy,
) -> None:
    with pytest.raises(SelectionError, match=r"server 'crm' has \d+ required tools but maxActiveTools is \d") as caught:
        async with open_toolset([memory("ok", [tool("x")]), memory("crm", numbered_tools("t", 5), policy=policy)]):
            pytest.fail("the run must not open")
    assert "shrink the allowlist or pinned tools, or use auto mode" in caught.value.message


async def test_required_tools_over_the_first_round_capacity_are_a_selection_error() -> None:
    # No auto server: no discovery tool; 90 base tools leave 6 slots for 10 required tools.
    policy = ToolPolicy(mode="all")
    with pytest.raises(SelectionError, match=r"10 required tools do not fit the first-round capacity of 6"):
        async with open_toolset([memory("s", numbered_tools("t", 10), policy=policy)], base_tools=base_tools(90)):
            pytest.fail("the run must not open")


async def test_all_mode_over_the_budget_is_a_selection_error_not_a_truncation() -> None:
    policy = ToolPolicy(mode="all", max_active_tools=60)
    servers = [memory(s, numbered_tools(s, 50), policy=policy) for s in ("a", "b")]
    with pytest.raises(SelectionError, match=r"100 required tools do not fit the first-round capacity of 96"):
        async with open_toolset(servers):
            pytest.fail("the run must not open")


async def test_all_mode_within_the_budget_activates_everything() -> None:
    policy = ToolPolicy(mode="all", max_active_tools=60)
    servers = [memory(s, numbered_tools(s, 48), policy=policy) for s in ("a", "b")]
    async with open_toolset(servers) as toolset:
        assert len(toolset.request_definitions()) == 96


def _shuffled_servers(seed: int) -> list[ServerConfig]:
    rng = random.Random(seed)
    specs: dict[str, list[dict[str, Any]]] = {
        "github": [
            tool("list_pull_requests", "List pull requests", read_only=True),
            tool("merge_pull_request", "Merge a pull request"),
            *numbered_tools("gh", 15),
        ],
        "linear": [tool("list_issues", "List issues", read_only=True), *numbered_tools("lin", 15)],
        "Zed": numbered_tools("zed", 15),
        "fixed": [tool("a"), tool("b")],
    }
    policies = {
        "fixed": ToolPolicy(mode="allowlist", allowed_tools=("b", "a")),
        "linear": ToolPolicy(pinned_tools=("lin_014",)),
    }
    servers = []
    for server_id, tools in specs.items():
        listing = list(tools)
        rng.shuffle(listing)
        servers.append(memory(server_id, listing, policy=policies.get(server_id), page_size=rng.randint(3, 20)))
    rng.shuffle(servers)
    return servers


async def test_reordering_servers_or_their_listings_changes_neither_the_active_set_nor_the_order() -> None:
    message = "show the open pull requests and 工单 in linear"
    results: list[tuple[list[Definition], dict[str, Any], list[Definition]]] = []
    for seed in range(4):
        async with open_toolset(_shuffled_servers(seed), base_tools=base_tools(80), user_message=message) as toolset:
            first_round = toolset.request_definitions()
            found = await toolset.call(DISCOVERY, {"query": "gh tool number"})
            results.append((first_round, found["structuredContent"], toolset.definitions()))
    assert all(result == results[0] for result in results[1:])
    assert results[0][1]["activated"]
