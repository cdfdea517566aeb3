"""mcp-use's MCPClient (PyPI ``mcp-use``), as its agents use it: a session, list_tools, call_tool."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")

from _common import call_if_listed, run
from mcp_use import MCPClient


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    if connection["type"] == "stdio":
        config: dict[str, Any] = {
            "command": connection["command"],
            "args": connection["args"],
            "env": connection["env"],
        }
    else:
        config = {"url": connection["url"]}
    client = MCPClient.from_dict({"mcpServers": {server_id: config}})
    try:
        session = await client.create_session(server_id)
        tools = await session.list_tools()
        entry["listed"] = len(tools)
        entry["read_only"] = [t.name for t in tools if t.annotations and t.annotations.readOnlyHint]

        async def do() -> bool:
            result = await session.call_tool(call["tool"], call["arguments"])
            return bool(result.isError)

        await call_if_listed([t.name for t in tools], call, entry, do)
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    run("mcp-use", "mcp-use", visit)
