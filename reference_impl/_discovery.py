"""The ``search_mcp_tools`` meta-tool: argument checking and candidate activation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._bounds import listed, shown

__all__ = [
    "DEFAULT_LIMIT",
    "DISCOVERY_TOOL",
    "MAX_LIMIT",
    "DiscoveryArguments",
    "InvalidDiscoveryArguments",
    "discovery_definition",
    "parse_arguments",
]

DISCOVERY_TOOL = "search_mcp_tools"
DEFAULT_LIMIT = 6
MAX_LIMIT = 12


def discovery_definition() -> dict[str, Any]:
    return {
        "name": DISCOVERY_TOOL,
        "description": (
            "Search the connected MCP servers for tools you do not have yet. Call this when the "
            "tools you can see are not enough for the task: describe the capability you need in "
            "plain words. Matching tools are activated and become available on your next turn; "
            "this tool does not run them."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The capability you need, in natural language."},
                "server_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only search these servers (optional).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": f"How many tools to activate at most (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


class InvalidDiscoveryArguments(ValueError):
    """Arguments the discovery tool refuses; the message goes back to the agent."""


@dataclass(frozen=True, slots=True)
class DiscoveryArguments:
    query: str
    server_ids: tuple[str, ...]
    limit: int


def parse_arguments(arguments: Any, known_servers: frozenset[str]) -> DiscoveryArguments:
    """Validate the agent's arguments; every problem names the argument and its value."""
    if not isinstance(arguments, Mapping):
        raise InvalidDiscoveryArguments(f"arguments must be an object, got {shown(arguments)}")
    unknown = sorted(set(arguments) - {"query", "server_ids", "limit"})
    if unknown:
        raise InvalidDiscoveryArguments(f"unknown arguments [{listed(unknown)}]; expected query, server_ids, limit")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidDiscoveryArguments(
            f"'query' must be a non-empty string describing a capability, got {shown(query)}"
        )
    limit = arguments.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidDiscoveryArguments(f"'limit' must be a positive integer, got {shown(limit)}")
    server_ids = arguments.get("server_ids")
    if server_ids is None:
        server_ids = []
    if not isinstance(server_ids, list) or not all(isinstance(s, str) for s in server_ids):
        raise InvalidDiscoveryArguments(f"'server_ids' must be a list of server id strings, got {shown(server_ids)}")
    strangers = [s for s in server_ids if s not in known_servers]
    if strangers:
        raise InvalidDiscoveryArguments(
            f"'server_ids' names [{listed(strangers)}], not servers of this run; known servers: [{listed(sorted(known_servers))}]"
        )
    return DiscoveryArguments(query=query, server_ids=tuple(server_ids), limit=min(limit, MAX_LIMIT))
