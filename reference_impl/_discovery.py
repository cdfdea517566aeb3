"""The ``search_mcp_tools`` meta-tool: argument checking and candidate activation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._bounds import listed, shown
from ._wire import Definition

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
DEFAULT_LIMIT = 6  # DSC-5.2: a missing limit
MAX_LIMIT = 12  # DSC-5.3: the most one call activates


def discovery_definition() -> Definition:
    return {
        "name": DISCOVERY_TOOL,
        # DSC-3.1, DSC-3.2: when to call it (the tools in view are not enough), and that tools come next turn.
        "description": (
            "Search the connected MCP servers for tools you do not have yet. Call this when the "
            "tools you can see are not enough for the task: describe the capability you need in "
            "plain words. Matching tools are activated and become available on your next turn; "
            "this tool does not run them."
        ),
        # DSC-2.1, DSC-2.2, DSC-2.3: a required string query, optional server_ids and limit. DSC-2.4: it admits
        # every limit from 1 to 12 and declares 12 the largest (ID-11), though a larger one counts as 12.
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
            # DSC-7.5: other arguments are refused (parse_arguments).
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
    # DSC-7.5 (MAY): an argument other than query, server_ids, limit is refused.
    unknown = sorted(set(arguments) - {"query", "server_ids", "limit"})
    if unknown:
        raise InvalidDiscoveryArguments(f"unknown arguments [{listed(unknown)}]; expected query, server_ids, limit")
    # DSC-7.1: a missing, empty, blank or non-string query.
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidDiscoveryArguments(
            f"'query' must be a non-empty string describing a capability, got {shown(query)}"
        )
    limit = arguments.get("limit")
    # DSC-5.2: a missing or null limit counts as 6 (ID-12).
    if limit is None:
        limit = DEFAULT_LIMIT
    # DSC-7.2: 0, negative, fractional, a string, a boolean.
    elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidDiscoveryArguments(f"'limit' must be a positive integer, got {shown(limit)}")
    server_ids = arguments.get("server_ids")
    # DSC-8.1: a missing or null server_ids means no scope.
    if server_ids is None:
        server_ids = []
    # DSC-7.3: anything but a list of strings.
    if not isinstance(server_ids, list) or not all(isinstance(s, str) for s in server_ids):
        raise InvalidDiscoveryArguments(f"'server_ids' must be a list of server id strings, got {shown(server_ids)}")
    # DSC-7.4: an entry naming no server of the run is refused (ID-13); a server of the run that is not
    # in auto mode is a valid name (DSC-8.2): known_servers holds every server of the run.
    strangers = [s for s in server_ids if s not in known_servers]
    if strangers:
        raise InvalidDiscoveryArguments(
            f"'server_ids' names [{listed(strangers)}], not servers of this run; known servers: [{listed(sorted(known_servers))}]"
        )
    # DSC-5.3: a limit above 12 counts as 12 (ID-11).
    return DiscoveryArguments(query=query, server_ids=tuple(server_ids), limit=min(limit, MAX_LIMIT))
