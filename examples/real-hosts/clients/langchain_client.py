"""langchain-mcp-adapters (PyPI), as a LangChain agent loads MCP tools: get_tools, then invoke one."""

from __future__ import annotations

from typing import Any

from _common import call_if_listed, outcome_of, run, settle
from langchain_mcp_adapters.client import MultiServerMCPClient


def config_of(connection: dict[str, Any]) -> dict[str, Any]:
    if connection["type"] == "stdio":
        return {
            "transport": "stdio",
            "command": connection["command"],
            "args": connection["args"],
            "env": connection["env"],
        }
    return {"transport": "streamable_http", "url": connection["url"]}


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    client = MultiServerMCPClient({server_id: config_of(connection)})
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


async def visit_live(server_id: str, connection: dict[str, Any], plan: dict[str, Any], entry: dict[str, Any]) -> None:
    # As an agent holds them: the tools loaded once, each invoked when the model asks.
    tools = {t.name: t for t in await MultiServerMCPClient({server_id: config_of(connection)}).get_tools()}
    entry["listed"] = len(tools)
    await tools[plan["keep"]].ainvoke({})
    await settle(plan)

    async def gone() -> bool:
        tool = tools[plan["gone"]]
        tool.handle_tool_error = False
        await tool.ainvoke({})
        return False

    entry["call"] = {"tool": plan["gone"], "outcome": await outcome_of(gone)}


if __name__ == "__main__":
    run("langchain-mcp-adapters", "langchain-mcp-adapters", visit, visit_live)
