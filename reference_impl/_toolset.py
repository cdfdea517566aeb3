"""The run-scoped adaptive toolset: per-turn definitions and the execution gate.

One :class:`AdaptiveToolset` per run. Its active set decides both what the model sees
(:meth:`definitions`) and what the host runs (:meth:`call`), so the two gates cannot drift.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from . import _trace
from ._bounds import shown
from ._budgets import FAIRNESS_CAP, Budgets
from ._catalog import Catalog, CatalogEntry
from ._config import ServerConfig, validate_servers
from ._connections import DEFAULT_CONNECT_TIMEOUT, Connection, error_result
from ._discovery import DISCOVERY_TOOL, InvalidDiscoveryArguments, discovery_definition, parse_arguments
from ._errors import ConfigurationError, ServerConnectionError
from ._policy import Eligibility, resolve_policies
from ._ranking import LexicalRanker, Ranker, RankingIndex, ToolDoc
from ._selection import select_first_round
from ._trace import DiscoveryTrace, SelectionTrace

__all__ = ["AdaptiveToolset", "open_toolset"]

DEFAULT_LIST_TIMEOUT = 30.0


def _check_base_tools(base_tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    checked: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, tool in enumerate(base_tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ConfigurationError(
                f"baseTools[{i}] must be an object with a non-empty string 'name', got {tool!r:.80}"
            )
        if tool["name"] == DISCOVERY_TOOL:
            raise ConfigurationError(
                f"baseTools[{i}] {DISCOVERY_TOOL!r} collides with the discovery tool {DISCOVERY_TOOL}; "
                "rename the base tool"
            )
        if tool["name"] in names:
            raise ConfigurationError(f"baseTools[{i}].name {tool['name']!r} is already taken in this request")
        names.add(tool["name"])
        checked.append(dict(tool))
    return checked


def _check_base_collisions(base_tools: Sequence[Mapping[str, Any]], catalog: Catalog) -> None:
    """Refuse a base tool named like an MCP tool of the run: calls by that name would be ambiguous."""
    for i, tool in enumerate(base_tools):
        entry = catalog.by_qualified.get(tool["name"]) or catalog.by_exposed.get(tool["name"])
        if entry is not None:
            raise ConfigurationError(
                f"baseTools[{i}] {tool['name']!r} collides with the MCP tool {entry.name!r} of server "
                f"{entry.server_id!r}, named {entry.exposed_name!r} in this run; rename the base tool"
            )


class AdaptiveToolset:
    """One run's catalog, active set, definitions and gate."""

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        connections: Mapping[str, Connection],
        catalog: Catalog,
        eligibility: Eligibility,
        index: RankingIndex,
        budgets: Budgets,
        base_tools: list[dict[str, Any]],
        user_message: str,
    ) -> None:
        self.servers = tuple(servers)
        self.catalog = catalog
        self.budgets = budgets
        self._connections = connections
        self._eligibility = eligibility
        self._index = index
        self._base_tools = base_tools
        self._policies = {server.id: server.policy for server in servers}
        first = select_first_round(servers, catalog, eligibility, index, budgets, user_message)
        self._active: list[int] = list(first.active)
        self._active_set: set[int] = set(first.active)
        self._per_server: dict[str, int] = {server.id: 0 for server in servers}
        for i in first.active:
            self._per_server[catalog.entries[i].server_id] += 1
        self._first_round_per_server = dict(self._per_server)
        self._active_by_name: dict[str, CatalogEntry] = {
            catalog.entries[i].exposed_name: catalog.entries[i] for i in first.active
        }
        self.trace = SelectionTrace(
            names=tuple(entry.qualified_name for entry in catalog.entries),
            servers=tuple(entry.server_id for entry in catalog.entries),
            outcomes=dict(first.outcomes),
            default_outcome=self._default_outcome,
            score=lambda i: index.breakdown(i, user_message),
        )

    def _default_outcome(self, i: int) -> str:
        reason = self._eligibility.excluded.get(i)
        if reason is not None:
            return f"excluded: {reason}"
        # Every eligible tool of a server not in auto mode is required, so only auto
        # servers' tools get here. The walk stops once every server is at its cap, so tools it never reached are
        # left by their server's cap, not by the capacity.
        server_id = self.catalog.entries[i].server_id
        if self._first_round_per_server[server_id] >= min(FAIRNESS_CAP, self._policies[server_id].max_active_tools):
            return _trace.SERVER_CAP
        return _trace.CAPACITY

    @property
    def discovery_registered(self) -> bool:
        return bool(self._eligibility.auto_servers)

    @property
    def active_names(self) -> tuple[str, ...]:
        """Names of the active MCP tools, as the model sees them, in activation order."""
        return tuple(self.catalog.entries[i].exposed_name for i in self._active)

    def definitions(self) -> list[dict[str, Any]]:
        """The toolset's definitions for the next model request: discovery tool, then active tools."""
        tools = [discovery_definition()] if self.discovery_registered else []
        tools += [self.catalog.entries[i].definition() for i in self._active]
        return tools

    def request_definitions(self) -> list[dict[str, Any]]:
        """Base tools followed by the toolset's definitions: everything a request carries."""
        return [dict(tool) for tool in self._base_tools] + self.definitions()

    def can_execute(self, name: str) -> bool:
        return name in self._active_by_name

    async def call(self, name: str, arguments: Any = None) -> dict[str, Any]:
        """Run one tool call through the execution gate. Never raises for a refused or failed call."""
        if name == DISCOVERY_TOOL and self.discovery_registered:
            return self.search(arguments if arguments is not None else {})
        entry = self._active_by_name.get(name)
        if entry is None:
            if any(tool["name"] == name for tool in self._base_tools):
                return error_result(f"{shown(name)} is a base tool; base tools run outside the MCP toolset")
            hint = (
                f" Call {DISCOVERY_TOOL} with a description of what you need; tools it activates are "
                "available on your next turn."
                if self.discovery_registered
                else ""
            )
            return error_result(f"Tool {shown(name)} is not active in this run and cannot be executed.{hint}")
        if arguments is not None and not isinstance(arguments, Mapping):
            return error_result(f"arguments for {name!r} must be an object, got {shown(arguments)}")
        return await self._connections[entry.server_id].call(entry.name, arguments or {})

    def search(self, arguments: Any) -> dict[str, Any]:
        """The discovery tool: activate the best matching candidates for the next turn."""
        try:
            args = parse_arguments(arguments, frozenset(self._policies))
        except InvalidDiscoveryArguments as error:
            return error_result(f"{DISCOVERY_TOOL}: {error}")
        entries = self.catalog.entries
        scope = set(args.server_ids)
        room = self.budgets.dynamic_capacity - len(self._active)
        matched: list[str] = []
        examined: dict[str, int] = {}
        activated: list[int] = []
        skipped: dict[str, str] = {}
        for i in self._index.matches(args.query):
            entry = entries[i]
            if (scope and entry.server_id not in scope) or entry.server_id not in self._eligibility.auto_servers:
                continue
            if i in self._active_set or not self._eligibility.is_eligible(i):
                continue
            if len(activated) >= min(args.limit, room):
                break
            matched.append(entry.qualified_name)
            examined[entry.qualified_name] = i
            if self._per_server[entry.server_id] >= self._policies[entry.server_id].max_active_tools:
                skipped[entry.qualified_name] = "server at maxActiveTools"
            else:
                self._activate(i)
                activated.append(i)
        index, query = self._index, args.query
        self.trace.discoveries.append(
            DiscoveryTrace(
                query=args.query,
                server_ids=args.server_ids,
                limit=args.limit,
                matched=tuple(matched),
                activated=tuple(entries[i].qualified_name for i in activated),
                skipped=skipped,
                score=lambda name: index.breakdown(examined[name], query),
            )
        )
        found = [{"name": entries[i].exposed_name, "description": entries[i].description} for i in activated]
        remaining = self.budgets.dynamic_capacity - len(self._active)
        lines = [f"- {tool['name']}: {tool['description']}" for tool in found]
        text = (
            "Activated these tools; they are available on your next turn:\n" + "\n".join(lines)
            if found
            else "No matching tool could be activated."
        )
        text += f"\nActive MCP tools: {len(self._active)}; remaining capacity: {remaining}."
        return {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "structuredContent": {
                "activated": found,
                "activeCount": len(self._active),
                "remainingCapacity": remaining,
            },
        }

    def _activate(self, i: int) -> None:
        entry = self.catalog.entries[i]
        self._active.append(i)
        self._active_set.add(i)
        self._per_server[entry.server_id] += 1
        self._active_by_name[entry.exposed_name] = entry

    def eligible(self, qualified_name: str) -> bool:
        """Whether the policy admits a tool (for inspection; the gate uses the active set)."""
        entry = self.catalog.by_qualified.get(qualified_name)
        return entry is not None and self._eligibility.is_eligible(entry.index)


async def _open_connections(
    task_group: anyio.abc.TaskGroup, connections: Sequence[Connection]
) -> ServerConnectionError | None:
    for connection in connections:
        task_group.start_soon(connection.run)
    for connection in connections:
        await connection.ready.wait()
    # Report the first failure in configuration order, so the message is stable.
    return next((c.error for c in connections if c.error is not None), None)


@asynccontextmanager
async def open_toolset(
    servers: Sequence[ServerConfig],
    *,
    base_tools: Sequence[Mapping[str, Any]] = (),
    user_message: str = "",
    system_prompt: str = "",
    ranker: Ranker | None = None,
    list_timeout: float = DEFAULT_LIST_TIMEOUT,
    call_timeout: float | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> AsyncIterator[AdaptiveToolset]:
    """Connect, build the catalog, apply policy, select the first round; close on exit.

    Every connection opened is closed when the block ends, and also when opening fails,
    before the error propagates.
    """
    validate_servers(servers)
    base = _check_base_tools(base_tools)
    connections = {
        server.id: Connection(
            server, list_timeout=list_timeout, call_timeout=call_timeout, connect_timeout=connect_timeout
        )
        for server in servers
    }
    failure: Exception | None = None
    async with anyio.create_task_group() as task_group:
        try:
            error = await _open_connections(task_group, list(connections.values()))
            if error is not None:
                raise error
            catalog = Catalog.from_listings({sid: c.tools for sid, c in connections.items()})
            _check_base_collisions(base, catalog)
            eligibility = resolve_policies(servers, catalog)
            docs = [ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only) for e in catalog.entries]
            index = (ranker or LexicalRanker()).index(docs, system_prompt)
            budgets = Budgets(base_tools=len(base), discovery_tools=1 if eligibility.auto_servers else 0)
            toolset = AdaptiveToolset(servers, connections, catalog, eligibility, index, budgets, base, user_message)
            yield toolset
        except Exception as error:  # re-raised below, once every connection is closed
            failure = error
        finally:
            for connection in connections.values():
                connection.stop.set()
    if failure is not None:
        raise failure
