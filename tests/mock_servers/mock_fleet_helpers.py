"""Helpers shared by the mock_servers tests."""

from __future__ import annotations

import mcp_types as types
from mcp import Client


async def list_all(client: Client) -> list[types.Tool]:
    """Every tool of a server, following nextCursor to the end."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools
