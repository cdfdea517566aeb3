"""A stdio MCP server written with the SDK's high-level `MCPServer`, as most Python servers are."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("Helpdesk")


@server.tool(description="List the open tickets of a queue.")
def list_tickets(queue: str, limit: int = 10) -> list[str]:
    return [f"{queue}-{n}" for n in range(limit)]


@server.tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run("stdio")
