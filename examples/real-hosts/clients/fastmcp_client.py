"""fastmcp's Client (PyPI ``fastmcp``), as a host uses it: list the tools, call one."""

from __future__ import annotations

from typing import Any

from _common import call_if_listed, run
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def visit(server_id: str, connection: dict[str, Any], call: dict[str, Any], entry: dict[str, Any]) -> None:
    if connection["type"] == "stdio":
        target: Any = StdioTransport(connection["command"], connection["args"], env=connection["env"])
    else:
        target = connection["url"]
    async with Client(target) as client:
        tools = await client.list_tools()
        entry["listed"] = len(tools)
        entry["read_only"] = [t.name for t in tools if t.annotations and t.annotations.read_only_hint]

        async def do() -> bool:
            result = await client.call_tool(call["tool"], call["arguments"], raise_on_error=False)
            return bool(result.is_error)

        await call_if_listed([t.name for t in tools], call, entry, do)


if __name__ == "__main__":
    run("fastmcp", "fastmcp", visit)
