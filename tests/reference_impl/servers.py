"""Small in-memory MCP servers for the reference implementation's own tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tool(name: str, description: str = "", *, read_only: bool | None = None, schema: Any = None) -> dict[str, Any]:
    """A tool definition in its wire form."""
    data: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema or OBJECT_SCHEMA}
    if read_only is not None:
        data["annotations"] = {"readOnlyHint": read_only}
    return data


@dataclass
class Recorder:
    """What a test server saw: listed pages and tool calls."""

    pages: list[str | None] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def make_server(
    name: str, tools: Sequence[Mapping[str, Any]], *, page_size: int = 50, recorder: Recorder | None = None
) -> Server[Any]:
    """A lowlevel server listing `tools` in pages of `page_size` and echoing calls."""
    models = [types.Tool.model_validate(dict(t)) for t in tools]
    seen = recorder if recorder is not None else Recorder()

    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        seen.pages.append(cursor)
        start = int(cursor) if cursor else 0
        end = start + page_size
        return types.ListToolsResult(tools=models[start:end], next_cursor=str(end) if end < len(models) else None)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        seen.calls.append((params.name, arguments))
        return types.CallToolResult(
            content=[types.TextContent(text=f"{name}.{params.name} ok")],
            structured_content={"server": name, "tool": params.name, "arguments": arguments},
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def numbered_tools(prefix: str, count: int, *, read_only: bool | None = None) -> list[dict[str, Any]]:
    return [tool(f"{prefix}_{i:03d}", f"{prefix} tool number {i}", read_only=read_only) for i in range(count)]
