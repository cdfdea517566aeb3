"""Runs with eviction: the active set rolls within the dynamic capacity, least recently used first."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from reference_impl import AdaptiveToolset, ConfigurationError, ServerConfig, ToolPolicy, open_toolset

from .servers import Recorder, base_tool, memory, tool

#: 95 base tools and the discovery tool leave a first round of 0 and a dynamic capacity of 16;
#: 93 leave 2 and 18.
BASE = [base_tool(f"base_{i}") for i in range(95)]


def single(i: int, recorder: Recorder | None = None) -> ServerConfig:
    """Server ``sNN`` with the one tool ``opNN``."""
    return memory(f"s{i:02d}", [tool(f"op{i:02d}", f"Operation {i}.")], recorder=recorder)


def name(i: int) -> str:
    return f"s{i:02d}__op{i:02d}"


@asynccontextmanager
async def run(
    servers: Sequence[ServerConfig], *, base: int = 95, eviction: str | None = "lru"
) -> AsyncIterator[AdaptiveToolset]:
    async with open_toolset(servers, base_tools=BASE[:base], eviction=eviction) as toolset:
        yield toolset


def discover(toolset: AdaptiveToolset, i: int) -> dict[str, Any]:
    """A discovery call aimed at server ``sNN``'s one tool (DSC-5.8)."""
    result = toolset.search({"query": name(i), "server_ids": [f"s{i:02d}"], "limit": 1})
    return dict(result["structuredContent"])


def evicted(result: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in result.get("evicted", [])]


async def test_discovery_past_the_capacity_evicts_the_least_recently_used_tool_first() -> None:
    async with run([single(i) for i in range(20)]) as toolset:
        for i in range(16):
            assert evicted(discover(toolset, i)) == []
        results = [discover(toolset, i) for i in (16, 17)]

        assert [evicted(r) for r in results] == [[name(0)], [name(1)]]
        assert [r["activated"][0]["name"] for r in results] == [name(16), name(17)]
        assert [(r["activeCount"], r["remainingCapacity"]) for r in results] == [(16, 0), (16, 0)]
        assert len(toolset.request_definitions()) == 112


async def test_a_call_that_succeeds_is_a_use_and_one_that_fails_is_not() -> None:
    async with run([single(i) for i in range(20)]) as toolset:
        for i in range(16):
            discover(toolset, i)
        assert (await toolset.call(name(1), {}))["isError"] is False
        # Arguments that cannot be sent: an error result, which is no use of the tool.
        assert (await toolset.call(name(2), {"unsendable": object()}))["isError"] is True

        assert evicted(discover(toolset, 16)) == [name(0)]
        assert evicted(discover(toolset, 17)) == [name(2)]
        assert evicted(discover(toolset, 18)) == [name(3)]


async def test_tools_activated_together_go_in_order_of_qualified_name() -> None:
    servers = [memory("wide", [tool(f"op_{c}", "widget") for c in "dcba"]), *(single(i) for i in range(20))]
    async with run(servers) as toolset:
        toolset.search({"query": "widget", "server_ids": ["wide"], "limit": 4})
        for i in range(12):
            discover(toolset, i)

        assert [evicted(discover(toolset, i)) for i in (12, 13)] == [["wide__op_a"], ["wide__op_b"]]


async def test_a_required_tool_is_never_evicted() -> None:
    pinned = memory("pin", [tool("keep"), tool("other")], policy=ToolPolicy(pinned_tools=("keep",)))
    fixed = memory("fix", [tool("always")], policy=ToolPolicy(mode="allowlist", allowed_tools=("always",)))
    async with run([pinned, fixed, *(single(i) for i in range(40))], base=93) as toolset:
        for i in range(40):
            discover(toolset, i)

        assert {"pin__keep", "fix__always"} <= set(toolset.active_names)
        assert len(toolset.active_names) == 18


async def test_an_evicted_tool_leaves_the_gate_and_the_definitions_and_can_be_found_again() -> None:
    recorder = Recorder()
    async with run([single(0, recorder), *(single(i) for i in range(1, 20))]) as toolset:
        for i in range(17):
            discover(toolset, i)
        refused = await toolset.call(name(0), {})
        gone = name(0) not in [t["name"] for t in toolset.definitions()]
        again = discover(toolset, 0)
        called = await toolset.call(name(0), {})

    assert refused["isError"] and gone
    assert again["activated"] == [{"name": name(0), "description": "Operation 0."}]
    assert evicted(again) == [name(1)]
    assert called["isError"] is False
    assert recorder.calls == [("op00", {})]


async def test_a_call_that_activates_nothing_evicts_nothing() -> None:
    async with run([single(i) for i in range(17)]) as toolset:
        for i in range(16):
            discover(toolset, i)
        result = toolset.search({"query": name(3), "server_ids": ["s03"], "limit": 1})

        assert result["structuredContent"]["activated"] == [] and "evicted" not in result["structuredContent"]
        assert len(toolset.active_names) == 16


async def test_the_result_text_names_what_was_evicted() -> None:
    async with run([single(i) for i in range(17)]) as toolset:
        for i in range(16):
            discover(toolset, i)
        result = toolset.search({"query": name(16), "server_ids": ["s16"], "limit": 1})

    assert f"- {name(0)}" in result["content"][0]["text"].split("Deactivated to make room")[1]


async def test_a_server_at_max_active_tools_offers_no_candidate_whatever_eviction_could_free() -> None:
    capped = memory("cap", [tool("one"), tool("two")], policy=ToolPolicy(max_active_tools=1))
    async with run([capped, *(single(i) for i in range(20))]) as toolset:
        toolset.search({"query": "cap__one", "server_ids": ["cap"], "limit": 1})
        for i in range(15):
            discover(toolset, i)
        blocked = toolset.search({"query": "cap__two", "server_ids": ["cap"], "limit": 1})
        discover(toolset, 15)  # evicts cap__one, the least recently used
        freed = toolset.search({"query": "cap__two", "server_ids": ["cap"], "limit": 1})

    assert blocked["structuredContent"]["activated"] == []
    assert [t["name"] for t in freed["structuredContent"]["activated"]] == ["cap__two"]


async def test_without_eviction_discovery_stops_at_the_capacity() -> None:
    async with run([single(i) for i in range(17)], eviction=None) as toolset:
        for i in range(16):
            discover(toolset, i)

        assert discover(toolset, 16)["activated"] == []


async def test_an_unknown_eviction_policy_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="eviction must be one of \\['lru'\\]"):
        async with run([single(0)], eviction="fifo"):
            pass
