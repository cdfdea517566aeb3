"""The patches, one function per defect; each is applied alone, in a driver process.

Every patch replaces the narrowest piece of reference_impl that carries the behaviour it
breaks, so that the defect shows on its own clause and nowhere else by accident.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from reference_impl import (
    ToolResult,
    _budgets,
    _catalog,
    _config,
    _connections,
    _policy,
    _ranking,
    _selection,
    _toolset,
)
from reference_impl._catalog import Catalog
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import _session
from tests.conformance.defects._registry import defect

__all__: list[str] = []

Budgets = _budgets.Budgets


def _swap(owner: object, name: str, value: object) -> None:
    """Replace ``owner.name``, which must exist: the one way a defect patches the reference."""
    if not hasattr(owner, name):
        raise AttributeError(f"{owner!r} has no attribute {name!r} to patch")
    setattr(owner, name, value)


# Budgets ---------------------------------------------------------------------------------


@defect("BUD-1.1", "first-round watermark 97 instead of 96")
def first_round_97() -> None:
    """First-round capacity computed from 97 instead of 96."""
    _swap(
        Budgets,
        "first_round_capacity",
        property(lambda self: _budgets.FIRST_ROUND_LIMIT + 1 - self.base_tools - self.discovery_tools),
    )


@defect("BUD-2.1", "dynamic watermark 113 instead of 112")
def dynamic_113() -> None:
    """Dynamic capacity computed from 113 instead of 112."""
    _swap(
        Budgets,
        "dynamic_capacity",
        property(lambda self: _budgets.DYNAMIC_LIMIT + 1 - self.base_tools - self.discovery_tools),
    )


@defect("BUD-3.2", "run.request never refuses more than 128 definitions")
def no_final_check() -> None:
    """``run.request`` assembles the request without the 128 check."""

    def assemble_request(
        definitions: Sequence[Mapping[str, Any]], extra_tools: Sequence[Mapping[str, Any]] = ()
    ) -> list[dict[str, Any]]:
        return [dict(tool) for tool in definitions] + [dict(tool) for tool in extra_tools]

    _swap(_session, "assemble_request", assemble_request)


# Execution gate --------------------------------------------------------------------------


def _split_prefix(toolset: AdaptiveToolset, name: str) -> tuple[str, str] | None:
    server_id, sep, rest = name.partition(_catalog.SEPARATOR)
    if sep and server_id in toolset._connections:
        return server_id, rest
    return None


def _refused_by_gate(toolset: AdaptiveToolset, name: str) -> bool:
    if toolset.can_execute(name):
        return False
    if name == "search_mcp_tools" and toolset.discovery_registered:
        return False
    return not any(tool["name"] == name for tool in toolset._base_tools)


@defect("GATE-1.1", "the gate runs any name whose server prefix exists")
def gate_checks_prefix_only() -> None:
    """The gate runs any name whose server prefix names a server of the run."""
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        target = _split_prefix(self, name) if _refused_by_gate(self, name) else None
        if target is not None and (arguments is None or isinstance(arguments, Mapping)):
            server_id, tool = target
            return await self._connections[server_id].call(tool, arguments or {})
        return await original(self, name, arguments)

    _swap(AdaptiveToolset, "call", call)


@defect("GATE-1.2", "the gate calls the server, then returns the refusal")
def gate_calls_before_refusing() -> None:
    """The gate forwards a refused call to the server it resembles, then refuses it."""
    original = AdaptiveToolset.call

    def resemble(toolset: AdaptiveToolset, name: str) -> tuple[str, str] | None:
        target = _split_prefix(toolset, name)
        if target is not None:
            return target
        folded = name.casefold()
        for entry in toolset.catalog.entries:
            if folded in (entry.qualified_name.casefold(), entry.exposed_name.casefold(), entry.name.casefold()):
                return entry.server_id, entry.name
        for server_id in toolset._connections:
            if folded.rstrip("_") == server_id.casefold():
                return server_id, name
        return None

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        if _refused_by_gate(self, name):
            target = resemble(self, name)
            if target is not None:
                server_id, tool = target
                args = arguments if isinstance(arguments, Mapping) else {}
                await self._connections[server_id].call(tool, args)
        return await original(self, name, arguments)

    _swap(AdaptiveToolset, "call", call)


# Cleanup ---------------------------------------------------------------------------------

# Connection tasks of failed opens, kept so that nothing closes them.
_LEAKED: list[asyncio.Task[None]] = []


@defect("ERR-6.1", "a failed run.open leaves its connections open")
def leaks_on_error() -> None:
    """A run.open that fails leaves every connection it opened running."""

    @asynccontextmanager
    async def open_toolset(
        servers: Sequence[Any],
        *,
        base_tools: Sequence[Mapping[str, Any]] = (),
        user_message: str = "",
        system_prompt: str = "",
        ranker: Any = None,
        list_timeout: float = _config.DEFAULT_LIST_TIMEOUT,
        call_timeout: float | None = None,
        connect_timeout: float = _config.DEFAULT_CONNECT_TIMEOUT,
        eviction: str | None = None,
        refresh: bool = False,
    ) -> AsyncIterator[AdaptiveToolset]:
        # The defect driver claims neither optional profile: `refresh` is accepted and not followed.
        _config.validate_servers(servers)
        base = _toolset._check_base_tools(base_tools)
        connections = {
            server.id: _connections.Connection(
                server, list_timeout=list_timeout, call_timeout=call_timeout, connect_timeout=connect_timeout
            )
            for server in servers
        }
        tasks = [asyncio.create_task(connection.run()) for connection in connections.values()]
        try:
            for connection in connections.values():
                await connection.ready.wait()
            error = next((c.error for c in connections.values() if c.error is not None), None)
            if error is not None:
                raise error
            catalog = Catalog.from_listings({sid: c.tools for sid, c in connections.items()})
            _toolset._check_base_collisions(base, catalog)
            eligibility = _policy.resolve_policies(servers, catalog)
            docs = [
                _ranking.ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only)
                for e in catalog.entries
            ]
            index = (ranker or _ranking.LexicalRanker()).index(docs, system_prompt)
            budgets = Budgets(base_tools=len(base), discovery_tools=1 if eligibility.auto_servers else 0)
            toolset = AdaptiveToolset(
                servers, connections, catalog, eligibility, index, budgets, base, user_message, eviction=eviction
            )
        except BaseException:
            _LEAKED.extend(tasks)  # the defect: no connection is told to stop
            raise
        try:
            yield toolset
        finally:
            for connection in connections.values():
                connection.stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

    _swap(_session, "open_toolset", open_toolset)


# Ranking ---------------------------------------------------------------------------------

# Listing position of every qualified name of the catalog built last (servers in their
# configured order, then each server's tools in listed order).
_LISTING_POSITION: dict[str, int] = {}


@defect("RNK-8.1", "equal scores ordered by listing order, not qualified name")
def ties_by_listing_order() -> None:
    """Equal scores are ordered by listing position instead of qualified name.

    The ranker breaks ties on the ``qualified_name`` of its documents and uses that field
    for nothing else, so the documents get a listing-position key in its place.
    """
    original_from_listings = Catalog.from_listings.__func__  # type: ignore[attr-defined]
    original_doc = _ranking.ToolDoc

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        catalog: Catalog = original_from_listings(cls, listings)
        _LISTING_POSITION.clear()
        position = 0
        for server_id, tools in listings.items():
            for raw in tools:
                name = raw.get("name") if isinstance(raw, Mapping) else None
                if isinstance(name, str):
                    _LISTING_POSITION.setdefault(_catalog.qualified_name(server_id, name), position)
                    position += 1
        return catalog

    def tool_doc(qualified: str, server_id: str, name: str, description: str, read_only: bool) -> Any:
        # Built right after from_listings, with no await in between.
        key = f"{_LISTING_POSITION.get(qualified, 0):012d}"
        return original_doc(key, server_id, name, description, read_only)

    _swap(Catalog, "from_listings", classmethod(from_listings))
    _swap(_toolset, "ToolDoc", tool_doc)


# Selection -------------------------------------------------------------------------------


@defect("SEL-1.1", "the first round ignores the 12-per-server cap")
def no_fairness_cap() -> None:
    """The first round caps a server only by its maxActiveTools, not by 12."""
    _swap(_selection, "FAIRNESS_CAP", 10**9)


class _Unbounded:
    max_active_tools = 10**9


@defect("SEL-3.1", "discovery ignores maxActiveTools")
def discovery_ignores_max_active() -> None:
    """Discovery activates tools of a server that is at its maxActiveTools."""
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        policies = self._policies
        _swap(self, "_policies", {server_id: _Unbounded() for server_id in policies})
        try:
            return original(self, arguments)
        finally:
            self._policies = policies

    _swap(AdaptiveToolset, "search", search)
