"""langchain-mcp-adapters (PyPI), as a LangChain agent loads MCP tools: get_tools, then invoke one."""

from __future__ import annotations

from typing import Any

from _common import call_if_listed, run
from langchain_mcp_adapters.client import MultiServerMCPClient


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    if connection["type"] == "stdio":
        config: dict[str, Any] = {
            "transport": "stdio",
            "command": connection["command"],
            "args": connection["args"],
            "env": connection["env"],
        }
    else:
        config = {"transport": "streamable_http", "url": connection["url"]}
    client = MultiServerMCPClient({server_id: config})
    tools = await client.get_tools(server_name=server_id)
    entry["listed"] = len(tools)
    entry["read_only"] = [t.name for t in tools if (t.metadata or {}).get("readOnlyHint")]
    by_name = {t.name: t for t in tools}

    async def do() -> bool:
        tool = by_name[call["tool"]]
        tool.handle_tool_error = False
        await tool.ainvoke(call["arguments"])
        return False

    await call_if_listed(list(by_name), call, entry, do)


if __name__ == "__main__":
    run("langchain-mcp-adapters", "langchain-mcp-adapters", visit)
