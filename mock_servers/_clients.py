"""Client configuration for a fleet: what VS Code, Claude Desktop, Cursor or the MCP Inspector read.

Each client keeps its servers in a JSON file of its own shape; `client_config` gives that
file's content with one entry per server of the fleet:

- ``vscode``: ``.vscode/mcp.json``, ``{"servers": {id: {"type": "http", "url": …}}}``;
- ``claude``: Claude Desktop's ``claude_desktop_config.json``, ``{"mcpServers": {id:
  {"command": …, "args": […], "env": {…}}}}``, absolute stdio commands (its file starts
  local processes only);
- ``cursor``: ``.cursor/mcp.json``, ``{"mcpServers": {id: {"url": …}}}``;
- ``inspector``: a file for ``mcp-inspector --config FILE --server ID``,
  ``{"mcpServers": {id: {"type": "http", "url": …}}}``, for the MCP Inspector 2.0 or later:
  before 2.0 (0.x, such as the 0.15 an npx cache may hold, and 1.x) the Inspector reads only
  stdio entries from ``--config`` and fails on these (``spawn undefined ENOENT``, ``Command
  is required``); `usage_notes` gives the command with the version pinned.

Over HTTP the URLs are those of ``mcp-fleet serve --port PORT [--processes N]``; over stdio
each entry starts ``python -m mock_servers stdio SPEC --server-id ID`` with this interpreter.
"""

from __future__ import annotations

import os
from typing import Literal, NotRequired, TypeAlias, TypedDict

from mock_servers._errors import FleetArgumentError
from mock_servers._launch import stdio_command
from mock_servers._serve import endpoint_urls
from mock_servers._spec import FleetSpec

__all__ = ["CLIENTS", "DEFAULT_PORT", "INSPECTOR", "ClientConfig", "client_config", "default_transport", "usage_notes"]

CLIENTS = ("vscode", "claude", "cursor", "inspector")
#: The port ``config`` assumes when none is given (``serve`` must then be started with it).
DEFAULT_PORT = 8765
_TRANSPORTS = {
    "vscode": ("http", "stdio"),
    "claude": ("stdio",),
    "cursor": ("http", "stdio"),
    "inspector": ("http", "stdio"),
}
_TYPED = ("vscode", "inspector")  # clients whose entries name their transport in "type"
#: The MCP Inspector the ``inspector`` file is for, pinned (checked with 2.0.0 and 2.12.0; HTTP
#: entries fail before 2.0). It asks for Node 22.19 or later, and runs on Node 20 with warnings.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


class HttpEntry(TypedDict):
    """A server reached at a URL; ``type`` only in the files that name the transport."""

    type: NotRequired[Literal["http"]]
    url: str


class StdioEntry(TypedDict):
    """A server started as a local process; ``type`` only in the files that name the transport."""

    type: NotRequired[Literal["stdio"]]
    command: str
    args: list[str]
    env: dict[str, str]


class VsCodeConfig(TypedDict):
    """VS Code's ``.vscode/mcp.json``."""

    servers: dict[str, HttpEntry | StdioEntry]


class McpServersConfig(TypedDict):
    """The file of Claude Desktop, Cursor and the MCP Inspector."""

    mcpServers: dict[str, HttpEntry | StdioEntry]


#: A client's configuration file, as `client_config` writes it.
ClientConfig: TypeAlias = VsCodeConfig | McpServersConfig


def default_transport(client: str) -> str:
    """The transport a client's entries use unless asked otherwise."""
    return _TRANSPORTS[client][0]


def client_config(
    client: str,
    spec: FleetSpec,
    *,
    source: str | os.PathLike[str] | None = None,
    transport: str | None = None,
    port: int = DEFAULT_PORT,
    processes: int = 1,
    ledger_path: str | os.PathLike[str] | None = None,
) -> ClientConfig:
    """The content of ``client``'s configuration file for every server of ``spec``.

    ``source`` is the preset name or spec file stdio entries start the servers from (the
    spec travels inline on each command line without it); ``ledger_path`` is where those
    servers record. Over HTTP the ledger belongs to ``mcp-fleet serve``.

    Raises:
        FleetArgumentError: an unknown client, a transport the client's file cannot
            describe, or a port out of range.
    """
    if client not in CLIENTS:
        raise FleetArgumentError(f"client must be one of {', '.join(CLIENTS)}, got {client!r}")
    transport = transport or default_transport(client)
    if transport not in _TRANSPORTS[client]:
        raise FleetArgumentError(f"{client}'s configuration file cannot start {transport} servers")
    if transport == "http" and not port:
        raise FleetArgumentError("over HTTP the clients need a fixed port: give one from 1 to 65535")
    entries: dict[str, HttpEntry | StdioEntry] = {}
    if transport == "http":
        for server_id, url in endpoint_urls(spec, port, processes).items():
            entries[server_id] = {"type": "http", "url": url} if client in _TYPED else {"url": url}
    else:
        for server in spec.servers:
            command = stdio_command(source if source is not None else spec, server.id, ledger_path)
            entry: StdioEntry = {"command": command["command"], "args": command["args"], "env": command["env"]}
            entries[server.id] = {"type": "stdio", **entry} if client in _TYPED else entry
    return {"servers": entries} if client == "vscode" else {"mcpServers": entries}


def usage_notes(client: str, spec: FleetSpec, *, file: str = "FILE") -> list[str]:
    """How to open ``client``'s file, as lines to print beside it (empty when there is nothing to say)."""
    if client != "inspector":
        return []
    server = spec.servers[0].id if spec.servers else "ID"
    return [
        "for the MCP Inspector 2.0 or later: before 2.0 (0.x, such as a cached 0.15, and 1.x) "
        '--config reads only stdio entries and fails on "type": "http"',
        f"save it as {file}, then: npx -y {INSPECTOR} --config {file} --server {server}"
        " (add --cli --method tools/list for the command line)",
    ]
