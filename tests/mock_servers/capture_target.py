"""A stdio MCP server written the ordinary way with the SDK, unlike the fleet's: the server to capture.

Its eight tools use what real definitions carry and generated ones do not (output schemas,
icons, ``_meta``, every annotation, a ``null`` default, a tool with no description), three
to a ``tools/list`` page; two of them list tickets with a ``limit`` and a ``status`` filter
(one with an output schema, one without). ``python capture_target.py loop`` hands out the
same cursor forever.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

PAGE = 3
STATUS = {"enum": ["open", "pending", "closed"]}
ITEM = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "title": {"type": "string"}, "status": STATUS},
    "required": ["id"],
}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_tickets",
        "title": "Search tickets",
        "description": "Full-text search over support tickets.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "page": {"type": ["integer", "null"], "default": None},
                "limit": {"type": "integer", "minimum": 0, "maximum": 100},
                "status": STATUS,
            },
            "required": ["q"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "tickets": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "total": {"type": "integer"},
            },
            "required": ["tickets", "total"],
            "$defs": {"item": ITEM},
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False, "title": "Search"},
        "icons": [{"src": "https://example.com/search.png", "mimeType": "image/png"}],
    },
    {
        "name": "get_ticket",
        "description": "Fetch one ticket.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        "outputSchema": ITEM,
        "annotations": {"readOnlyHint": True},
        "_meta": {"example.com/owner": "support"},
    },
    {
        "name": "close_ticket",
        "description": "Close a ticket.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {"name": "ping_upstream", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {
        "name": "delete_ticket",
        "description": "Delete a ticket for good.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        "annotations": {"destructiveHint": True},
    },
    {
        "name": "export_report",
        "description": "Export the weekly report.",
        "inputSchema": {"type": "object", "properties": {"format": {"enum": ["csv", "pdf"]}}},
    },
    {"name": "who_am_i", "description": "The signed-in agent.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "listTickets",
        "description": "List support tickets, newest first.",
        "inputSchema": {
            "type": "object",
            "properties": {"maxResults": {"type": "integer"}, "status": STATUS, "assignee": {"type": "string"}},
        },
        "annotations": {"readOnlyHint": True},
    },
]
MODELS = [types.Tool.model_validate(t) for t in TOOLS]
LOOP = sys.argv[1:2] == ["loop"]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = int(params.cursor) if params and params.cursor else 0
    following = start + PAGE
    if LOOP:
        return types.ListToolsResult(tools=MODELS[:PAGE], next_cursor="3")
    return types.ListToolsResult(
        tools=MODELS[start:following], next_cursor=str(following) if following < len(MODELS) else None
    )


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "who_am_i":
        return types.CallToolResult(
            content=[types.TextContent(text="agent-7"), types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]
        )
    return types.CallToolResult(content=[types.TextContent(text=f"real {params.name}")], structured_content={"id": 1})


SERVER = Server("Ticket Desk", version="3.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await SERVER.run(read, write, SERVER.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
