"""The agent loop: definitions re-read before every model call, and the local 128 check (DEF-2, BUD-3)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from reference_impl import (
    DISCOVERY_TOOL,
    REQUEST_LIMIT,
    AgentLoop,
    ModelReply,
    RequestTooLargeError,
    ToolCall,
    ToolPolicy,
    ToolResult,
    assemble_request,
    open_toolset,
)

from .servers import Recorder, base_tool, base_tools, memory, tool

SIZE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}


class ScriptedModel:
    """A model provider that answers from a script and records every request it receives."""

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)
        self.tools: list[list[dict[str, Any]]] = []
        self.messages: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> ModelReply:
        self.tools.append([dict(t) for t in tools])
        self.messages.append([dict(m) for m in messages])
        return self.replies[len(self.tools) - 1]


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["name"] for t in tools]


def test_a_request_of_128_definitions_is_assembled() -> None:
    definitions = base_tools(100)
    extra = base_tools(28)
    tools = assemble_request(definitions, extra)
    assert len(tools) == REQUEST_LIMIT == 128
    assert tools[:100] == definitions
    tools[0]["name"] = "changed"
    assert definitions[0]["name"] == "base_000"


def test_a_request_over_128_definitions_is_refused_locally() -> None:
    with pytest.raises(RequestTooLargeError) as caught:
        assemble_request(base_tools(120), base_tools(9))
    assert (caught.value.count, caught.value.limit) == (129, 128)
    assert caught.value.kind == "request_too_large"
    assert "129 tool definitions, more than the 128" in caught.value.message


async def test_the_loop_rereads_definitions_so_a_discovered_tool_is_in_the_next_request_and_runs() -> None:
    recorder = Recorder()
    tools = [*(tool(f"aa_{i:02d}") for i in range(12)), tool("widget", "Make a widget", schema=SIZE_SCHEMA)]
    async with open_toolset([memory("shop", tools, recorder=recorder)], base_tools=base_tools(1)) as toolset:
        model = ScriptedModel(
            ModelReply(tool_calls=(ToolCall(DISCOVERY_TOOL, {"query": "widget"}),)),
            ModelReply(text="calling it", tool_calls=(ToolCall("shop__widget", {"size": 3}),)),
            ModelReply(text="done"),
        )
        loop = AgentLoop(model, toolset.request_definitions, toolset.call)
        messages = await loop.run("make me a widget", system_prompt="be brief")

    assert "shop__widget" not in _names(model.tools[0])
    assert model.tools[1][-1] == {"name": "shop__widget", "description": "Make a widget", "inputSchema": SIZE_SCHEMA}
    assert _names(model.tools[2]) == _names(model.tools[1])
    assert loop.requests == model.tools
    assert recorder.calls == [("widget", {"size": 3})]
    assert messages[0] == {"role": "system", "content": "be brief"}
    assert messages[1] == {"role": "user", "content": "make me a widget"}
    assert messages[2]["tool_calls"] == [{"name": DISCOVERY_TOOL, "arguments": {"query": "widget"}}]
    assert messages[3]["role"] == "tool"
    assert json.loads(messages[3]["content"])["structuredContent"]["activated"][0]["name"] == "shop__widget"
    assert json.loads(messages[5]["content"])["isError"] is False
    assert messages[-1] == {"role": "assistant", "content": "done", "tool_calls": []}


async def test_a_request_over_128_fails_before_the_provider_is_called() -> None:
    model = ScriptedModel(ModelReply(text="never"))
    loop = AgentLoop(model, lambda: base_tools(129), _never_called)
    with pytest.raises(RequestTooLargeError):
        await loop.run("hello")
    assert model.tools == []


async def test_growth_through_discovery_that_would_exceed_128_fails_before_the_next_model_call() -> None:
    # 95 base tools + discovery + 21 tools other parts of the host add = 117 at first;
    # discovering 12 tools makes the next request 117 + 12 = 129.
    widgets = [tool(f"w_{i:02d}", "widget") for i in range(20)]
    extra = [base_tool(f"extra_{i}") for i in range(21)]
    server = memory("shop", widgets, policy=ToolPolicy(max_active_tools=96))
    async with open_toolset([server], base_tools=base_tools(95)) as toolset:
        model = ScriptedModel(ModelReply(tool_calls=(ToolCall(DISCOVERY_TOOL, {"query": "widget", "limit": 12}),)))
        loop = AgentLoop(model, lambda: [*toolset.request_definitions(), *extra], toolset.call)
        with pytest.raises(RequestTooLargeError) as caught:
            await loop.run("widgets")
        assert caught.value.count == 129
        assert len(model.tools) == 1
        assert len(model.tools[0]) == 117


async def test_the_loop_stops_after_max_turns() -> None:
    model = ScriptedModel(*(ModelReply(tool_calls=(ToolCall("base_000", {}),)) for _ in range(3)))
    calls: list[str] = []

    async def execute(name: str, arguments: Mapping[str, Any]) -> ToolResult:
        calls.append(name)
        return {"content": [], "isError": False}

    loop = AgentLoop(model, lambda: base_tools(1), execute, max_turns=2)
    messages = await loop.run("go")
    assert calls == ["base_000", "base_000"]
    assert len(model.tools) == 2
    assert messages[0] == {"role": "user", "content": "go"}
    assert messages[-1]["role"] == "tool"


def test_max_turns_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"max_turns must be at least 1, got 0"):
        AgentLoop(ScriptedModel(), list, _never_called, max_turns=0)


async def _never_called(name: str, arguments: Mapping[str, Any]) -> ToolResult:
    raise AssertionError("no tool should run")
