"""Small MCP servers for the reference implementation's own tests: in memory, or raw over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from reference_impl import Definition, MemoryTarget, ServerConfig, StdioTarget, ToolPolicy

OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tool(name: str, description: str = "", *, read_only: bool | None = None, schema: Any = None) -> dict[str, Any]:
    """A tool definition in its wire form."""
    data: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema or OBJECT_SCHEMA}
    if read_only is not None:
        data["annotations"] = {"readOnlyHint": read_only}
    return data


def base_tool(name: str) -> Definition:
    """A base tool of a run (the host's own, not an MCP tool)."""
    return {"name": name, "description": "", "inputSchema": {"type": "object"}}


def base_tools(count: int) -> list[Definition]:
    """``count`` base tools of a run: ``base_000``, ``base_001``, …"""
    return [base_tool(f"base_{i:03d}") for i in range(count)]


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

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
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


def memory(
    server_id: str,
    tools: Sequence[Mapping[str, Any]],
    *,
    policy: ToolPolicy | None = None,
    page_size: int = 50,
    recorder: Recorder | None = None,
) -> ServerConfig:
    """A run's server backed by an in-memory test server."""
    target = MemoryTarget(make_server(server_id, tools, page_size=page_size, recorder=recorder))
    return ServerConfig(id=server_id, target=target, policy=policy or ToolPolicy())


RAW_SERVER = Path(__file__).with_name("raw_server.py")


@dataclass
class RawServer:
    """A stdio server writing raw JSON-RPC (see raw_server.py) and its lifecycle log."""

    config_file: Path
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    @property
    def started(self) -> bool:
        return "start" in self.lines()

    @property
    def exited(self) -> bool:
        return "exit" in self.lines()

    def children(self) -> list[int]:
        """The pids of the children it started (``spawn``)."""
        return [int(line.split()[1]) for line in self.lines() if line.startswith("child ")]

    def target(self) -> StdioTarget:
        return StdioTarget(command=sys.executable, args=(str(RAW_SERVER), str(self.config_file)))

    def config(self, server_id: str, policy: ToolPolicy | None = None) -> ServerConfig:
        return ServerConfig(id=server_id, target=self.target(), policy=policy or ToolPolicy())

    def transport(self) -> dict[str, Any]:
        """The driver protocol's stdio transport for this server."""
        return {"type": "stdio", "command": sys.executable, "args": [str(RAW_SERVER), str(self.config_file)]}


def raw_server(directory: Path, name: str, pages: Sequence[Sequence[Any]], **options: Any) -> RawServer:
    """Write a raw server's configuration under `directory`; pages are sent exactly as given."""
    config_file = directory / f"{name}.json"
    log = directory / f"{name}.log"
    config_file.write_text(json.dumps({"pages": [list(page) for page in pages], "log": str(log), **options}))
    return RawServer(config_file=config_file, log=log)
