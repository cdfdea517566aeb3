"""mcp-use's MCPClient (PyPI ``mcp-use``), as its agents use it: a session, list_tools, call_tool."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")

from _common import call_if_listed, outcome_of, run, settle
from mcp_use import MCPClient


def config_of(connection: dict[str, Any]) -> dict[str, Any]:
    if connection["type"] == "stdio":
        return {"command": connection["command"], "args": connection["args"], "env": connection["env"]}
    return {"url": connection["url"]}


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    client = MCPClient.from_dict({"mcpServers": {server_id: config_of(connection)}})
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


async def visit_live(server_id: str, connection: dict[str, Any], plan: dict[str, Any], entry: dict[str, Any]) -> None:
    client = MCPClient.from_dict({"mcpServers": {server_id: config_of(connection)}})
    try:
        session = await client.create_session(server_id)
        entry["listed"] = len(await session.list_tools())
        await session.call_tool(plan["keep"], {})
        await settle(plan)

        async def gone() -> bool:
            return bool((await session.call_tool(plan["gone"], {})).isError)

        entry["call"] = {"tool": plan["gone"], "outcome": await outcome_of(gone)}
    finally:
        await client.close_all_sessions()


if __name__ == "__main__":
    run("mcp-use", "mcp-use", visit, visit_live)
