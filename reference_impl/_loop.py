"""The agent loop: definitions re-read before every model call, and the final 128 check."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ._budgets import REQUEST_LIMIT
from ._errors import RequestTooLargeError
from ._wire import Definition, Message, ToolResult

__all__ = ["AgentLoop", "ModelProvider", "ModelReply", "ToolCall", "assemble_request"]

DefinitionsProvider = Callable[[], Sequence[Definition]]
Executor = Callable[[str, Mapping[str, Any]], Awaitable[ToolResult]]


def assemble_request(definitions: Sequence[Definition], extra_tools: Sequence[Definition] = ()) -> list[Definition]:
    """The tool list of one request, refused locally when it exceeds the provider's limit."""
    # Copies, whatever mapping the host handed in: the request is the provider's, not the host's.
    tools = [cast(Definition, dict(tool)) for tool in [*definitions, *extra_tools]]
    # BUD-3.1, BUD-3.2: the whole request, extra tools included, is refused locally over 128, before any
    # provider is called; exactly 128 passes (BUD-3.3).
    if len(tools) > REQUEST_LIMIT:
        raise RequestTooLargeError(
            f"the request would carry {len(tools)} tool definitions, more than the {REQUEST_LIMIT} a provider "
            "accepts; remove non-MCP tools or lower the other tools added to the request",
            count=len(tools),
            limit=REQUEST_LIMIT,
        )
    return tools


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What the model answered: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ModelProvider(Protocol):
    async def complete(self, messages: Sequence[Message], tools: Sequence[Definition]) -> ModelReply:
        """One model request with the conversation so far and the tools it may call."""
        ...


class AgentLoop:
    """Calls the model until it stops asking for tools.

    The loop takes a *provider* of definitions, not a list: it asks again before every
    model call, so tools activated by discovery reach the model on the next turn.
    """

    def __init__(
        self,
        model: ModelProvider,
        definitions: DefinitionsProvider,
        execute: Executor,
        *,
        max_turns: int = 16,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns!r}")
        self.model = model
        self.definitions = definitions
        self.execute = execute
        self.max_turns = max_turns
        self.requests: list[list[Definition]] = []

    async def run(self, user_message: str, system_prompt: str = "") -> list[Message]:
        """Run to the model's final answer; return the whole conversation."""
        messages: list[Message] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": user_message})
        for _ in range(self.max_turns):
            # DEF-2.1, DEF-2.2: read anew for every request, so a tool discovery activated is in the next one.
            tools = assemble_request(self.definitions())
            self.requests.append(tools)
            reply = await self.model.complete(messages, tools)
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in reply.tool_calls],
                }
            )
            if not reply.tool_calls:
                return messages
            for tool_call in reply.tool_calls:
                result = await self.execute(tool_call.name, tool_call.arguments)
                messages.append({"role": "tool", "name": tool_call.name, "content": json.dumps(result)})
        return messages
