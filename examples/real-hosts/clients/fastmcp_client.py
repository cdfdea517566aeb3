"""fastmcp's Client (PyPI ``fastmcp``), as a host uses it: list the tools, call one."""

from __future__ import annotations

from typing import Any

from _common import call_if_listed, outcome_of, run, settle
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


def target_of(connection: dict[str, Any]) -> Any:
    if connection["type"] == "stdio":
        return StdioTransport(connection["command"], connection["args"], env=connection["env"])
    return connection["url"]


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    async with Client(target_of(connection)) as client:
        tools = await client.list_tools()
        entry["listed"] = len(tools)
        entry["read_only"] = [t.name for t in tools if t.annotations and t.annotations.read_only_hint]

        async def do() -> bool:
            result = await client.call_tool(call["tool"], call["arguments"], raise_on_error=False)
            return bool(result.is_error)

        await call_if_listed([t.name for t in tools], call, entry, do)


async def visit_live(server_id: str, connection: dict[str, Any], plan: dict[str, Any], entry: dict[str, Any]) -> None:
    async with Client(target_of(connection)) as client:
        entry["listed"] = len(await client.list_tools())
        await client.call_tool(plan["keep"], {}, raise_on_error=False)
        await settle(plan)

        async def gone() -> bool:
            return bool((await client.call_tool(plan["gone"], {}, raise_on_error=False)).is_error)

        entry["call"] = {"tool": plan["gone"], "outcome": await outcome_of(gone)}


if __name__ == "__main__":
    run("fastmcp", "fastmcp", visit, visit_live)
