"""The run-scoped adaptive toolset: per-turn definitions and the execution gate.

One :class:`AdaptiveToolset` per run. Its active set decides both what the model sees
(:meth:`definitions`) and what the host runs (:meth:`call`), so the two gates cannot drift.
A run opened with ``eviction="lru"`` lets the active set roll within the dynamic capacity,
least recently used first; a run opened with ``refresh=True`` follows each server's catalog
when the server sends ``notifications/tools/list_changed``. Both change the one active set,
so they too move the two gates together.

Runs share nothing but the configuration they read and never write (ISO-1.1, ISO-1.2, ISO-2.1).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio

from . import _trace
from ._bounds import shown
from ._budgets import FAIRNESS_CAP, Budgets
from ._catalog import Catalog, CatalogEntry
from ._config import DEFAULT_CONNECT_TIMEOUT, DEFAULT_LIST_TIMEOUT, ServerConfig, validate_servers
from ._connections import Connection, error_result
from ._discovery import DISCOVERY_TOOL, InvalidDiscoveryArguments, discovery_definition, parse_arguments
from ._errors import ConfigurationError, ServerConnectionError, ToolsetError
from ._eviction import EVICTION_POLICIES, Recency
from ._policy import Eligibility, resolve_policies
from ._ranking import LexicalRanker, Ranker, RankingIndex, ToolDoc
from ._selection import select_first_round
from ._trace import DiscoveryTrace, SelectionTrace
from ._wire import Definition, Notice, NoticeKind, ToolResult

__all__ = ["AdaptiveToolset", "open_toolset"]

_log = logging.getLogger("reference_impl")


def _check_base_tools(base_tools: Sequence[Mapping[str, Any]]) -> list[Definition]:
    # Only what the design needs is checked: a name, free of collisions; the rest is the host's to get right.
    checked: list[Definition] = []
    names: set[str] = set()
    for i, tool in enumerate(base_tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ConfigurationError(
                f"baseTools[{i}] must be an object with a non-empty string 'name', got {tool!r:.80}"
            )
        # DEF-5.2: a base tool named like the discovery tool is a configuration error, registered or not (ID-15);
        # the message names both (DEF-5.3).
        if tool["name"] == DISCOVERY_TOOL:
            raise ConfigurationError(
                f"baseTools[{i}] {DISCOVERY_TOOL!r} collides with the discovery tool {DISCOVERY_TOOL}; "
                "rename the base tool"
            )
        # DEF-5.5: two base tools of one name.
        if tool["name"] in names:
            raise ConfigurationError(f"baseTools[{i}].name {tool['name']!r} is already taken in this request")
        names.add(tool["name"])
        checked.append(cast(Definition, dict(tool)))
    return checked


def _check_base_collisions(base_tools: Sequence[Mapping[str, Any]], catalog: Catalog) -> None:
    """Refuse a base tool named like an MCP tool of the run: calls by that name would be ambiguous."""
    for i, tool in enumerate(base_tools):
        # DEF-5.1: named like a tool of the catalog, active or not, by its qualified or its exposed name; DEF-5.3.
        entry = catalog.by_qualified.get(tool["name"]) or catalog.by_exposed.get(tool["name"])
        if entry is not None:
            raise ConfigurationError(
                f"baseTools[{i}] {tool['name']!r} collides with the MCP tool {entry.name!r} of server "
                f"{entry.server_id!r}, named {entry.exposed_name!r} in this run; rename the base tool"
            )


@dataclass(frozen=True, slots=True)
class _Builder:
    """What turns the servers' listings into a catalog, its eligibility and its ranking index:
    once when the run opens, and again after each refresh."""

    servers: tuple[ServerConfig, ...]
    base_tools: list[Definition]
    ranker: Ranker
    system_prompt: str

    def rebuild(self, listings: Mapping[str, Sequence[Any]]) -> tuple[Catalog, Eligibility, RankingIndex]:
        """Raises what a run fails to open with (malformed or colliding tools), except for names a
        policy gives that the server no longer offers: after a refresh those simply match nothing."""
        # RFR-3.1: a new listing goes through the same catalog checks and policy filter as the first one.
        catalog = Catalog.from_listings(listings)
        _check_base_collisions(self.base_tools, catalog)
        eligibility = resolve_policies(self.servers, catalog, strict=False)
        docs = [ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only) for e in catalog.entries]
        return catalog, eligibility, self.ranker.index(docs, self.system_prompt)


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
        base_tools: list[Definition],
        user_message: str,
        *,
        eviction: str | None = None,
        builder: _Builder | None = None,
    ) -> None:
        if eviction is not None and eviction not in EVICTION_POLICIES:
            raise ConfigurationError(
                f"eviction must be one of {list(EVICTION_POLICIES)} or None, got {shown(eviction)}"
            )
        self.servers = tuple(servers)
        self.catalog = catalog
        self.budgets = budgets
        self.eviction = eviction
        #: What the run has to tell its operator (PROTOCOL.md P40), oldest first.
        self.notices: list[Notice] = []
        self._connections = connections
        self._eligibility = eligibility
        self._index = index
        self._base_tools = base_tools
        self._builder = builder
        self._policies = {server.id: server.policy for server in servers}
        first = select_first_round(servers, catalog, eligibility, index, budgets, user_message)
        # DEF-3.1: the active set only grows, in order of activation (ID-1); ISO-1.1: it belongs to this run
        # alone, and no other run's discovery touches it.
        self._active: list[int] = list(first.active)
        self._active_set: set[int] = set(first.active)
        self._per_server: dict[str, int] = {server.id: 0 for server in servers}
        for i in first.active:
            self._per_server[catalog.entries[i].server_id] += 1
        self._active_by_name: dict[str, CatalogEntry] = {
            catalog.entries[i].exposed_name: catalog.entries[i] for i in first.active
        }
        self._recency = Recency()
        # EVC-3.3: the first round's tools share one moment of last use.
        self._recency.use(catalog.entries[i].qualified_name for i in first.active)
        first_round_per_server = dict(self._per_server)
        policies = self._policies

        def default_outcome(i: int) -> str:
            # Bound to the catalog the run opened with: the trace tells the first round.
            reason = eligibility.excluded.get(i)
            if reason is not None:
                return f"excluded: {reason}"
            # Every eligible tool of a server not in auto mode is required, so only auto
            # servers' tools get here. The walk stops once every server is at its cap, so tools
            # it never reached are left by their server's cap, not by the capacity.
            server_id = catalog.entries[i].server_id
            if first_round_per_server[server_id] >= min(FAIRNESS_CAP, policies[server_id].max_active_tools):
                return _trace.SERVER_CAP
            return _trace.CAPACITY

        self.trace = SelectionTrace(
            names=tuple(entry.qualified_name for entry in catalog.entries),
            servers=tuple(entry.server_id for entry in catalog.entries),
            outcomes=dict(first.outcomes),
            default_outcome=default_outcome,
            score=lambda i: index.breakdown(i, user_message),
        )

    @property
    def discovery_registered(self) -> bool:
        # DSC-1.1, DSC-1.2: registered exactly when a server of the run is in auto mode.
        return bool(self._eligibility.auto_servers)

    @property
    def active_names(self) -> tuple[str, ...]:
        """Names of the active MCP tools, as the model sees them, in activation order."""
        return tuple(self.catalog.entries[i].exposed_name for i in self._active)

    def definitions(self) -> list[Definition]:
        """The toolset's definitions for the next model request: discovery tool, then active tools."""
        # DEF-1.1, DEF-2.1: built anew on every read from the active set, so a tool activated by discovery is
        # in the very next list (DEF-2.2, CAT-1.3) and an unchanged run reads the same list (DEF-4.1, DEF-4.2);
        # a tool the policy excludes is never active, so never here (POL-1.2).
        tools = [discovery_definition()] if self.discovery_registered else []
        tools += [self.catalog.entries[i].definition() for i in self._active]
        return tools

    def request_definitions(self) -> list[Definition]:
        """Base tools followed by the toolset's definitions: everything a request carries."""
        # DEF-1.3: base tools as given, first; BUD-1.1: the first round fits 96 with them (BUD-1.2).
        return [tool.copy() for tool in self._base_tools] + self.definitions()

    def can_execute(self, name: str) -> bool:
        return name in self._active_by_name

    async def call(self, name: str, arguments: Any = None) -> ToolResult:
        """Run one tool call through the execution gate. Never raises for a refused or failed call."""
        if name == DISCOVERY_TOOL and self.discovery_registered:
            # DSC-9.1: discovery runs here, on the catalog alone: it calls no server's tool.
            return self.search(arguments if arguments is not None else {})
        entry = self._active_by_name.get(name)
        if entry is None:
            # DEF-5.4: a base tool's name never reaches a server (ID-6).
            if any(tool["name"] == name for tool in self._base_tools):
                return error_result(f"{shown(name)} is a base tool; base tools run outside the MCP toolset")
            # GATE-1.1, POL-1.3: any name not active is refused with an error result (GATE-4.1), and no server is
            # called (GATE-1.2). GATE-2.1, GATE-2.2: the hint names discovery only when it is registered.
            hint = (
                f" Call {DISCOVERY_TOOL} with a description of what you need; tools it activates are "
                "available on your next turn."
                if self.discovery_registered
                else ""
            )
            return error_result(f"Tool {shown(name)} is not active in this run and cannot be executed.{hint}")
        if arguments is not None and not isinstance(arguments, Mapping):
            return error_result(f"arguments for {name!r} must be an object, got {shown(arguments)}")
        # CAT-4.1, CAT-4.2, CAT-4.3: to the server the prefix names, under the original name, with the arguments
        # as given; GATE-3.1: a tool discovery activated is in _active_by_name from then on.
        result = await self._connections[entry.server_id].call(entry.name, arguments or {})
        # EVC-3.2: a call that came back without the error flag is a use of the tool.
        if not result.get("isError") and self._active_by_name.get(name) is entry:
            # A call that succeeded is a use: eviction takes the least recently used first.
            self._recency.use([entry.qualified_name])
        return result

    async def settled(self) -> None:
        """Wait until every re-listing of a refresh that began before now has been applied."""
        for connection in self._connections.values():
            await connection.settled()

    def search(self, arguments: Any) -> ToolResult:
        """The discovery tool: activate the best matching candidates for the next turn."""
        try:
            args = parse_arguments(arguments, frozenset(self._policies))
        except InvalidDiscoveryArguments as error:
            # DSC-7.1, DSC-7.2, DSC-7.3, DSC-7.4: an error result, before anything is activated.
            return error_result(f"{DISCOVERY_TOOL}: {error}")
        entries = self.catalog.entries
        # DSC-8.1: an empty server_ids is no scope, like a missing one (ID-14).
        scope = set(args.server_ids)
        # DSC-5.4, BUD-2.1, BUD-2.2: nothing is activated past the dynamic capacity (with eviction,
        # the tools that may make room count as room, least recently used first).
        # EVC-1.2, EVC-5.3: in a run with eviction, the tools it may evict count as room (DSC-5.4 gives way).
        evictable = self._evictable() if self.eviction is not None else []
        room = self.budgets.dynamic_capacity - len(self._active) + len(evictable)
        matched: list[str] = []
        examined: dict[str, int] = {}
        activated: list[int] = []
        evicted: list[CatalogEntry] = []
        skipped: dict[str, str] = {}
        # DSC-10.1, DSC-10.2, DSC-10.3: candidates with a relevance signal from the query, best first; so a
        # call may activate fewer tools than its bounds allow, even none (DSC-5.6).
        for i in self._index.matches(args.query):
            entry = entries[i]
            # DSC-4.3, DSC-4.1: in the scope, of an auto server; a server not in auto mode finds nothing (DSC-8.2).
            if (scope and entry.server_id not in scope) or entry.server_id not in self._eligibility.auto_servers:
                continue
            # DSC-4.2, POL-1.4: not active yet, and admitted by its server's policy whatever its score.
            if i in self._active_set or not self._eligibility.is_eligible(i) or entry in evicted:
                continue
            # DSC-5.1, DSC-5.4: at most limit, at most what fits.
            if len(activated) >= min(args.limit, room):
                break
            matched.append(entry.qualified_name)
            examined[entry.qualified_name] = i
            # SEL-3.1: never past the server's maxActiveTools; the first round's cap of 12 does not
            # apply here (SEL-1.3).
            if self._per_server[entry.server_id] >= self._policies[entry.server_id].max_active_tools:
                skipped[entry.qualified_name] = "server at maxActiveTools"
            else:
                # EVC-1.1, EVC-1.2: one eviction per activation past the dynamic capacity, and none before it; a call
                # that activates nothing evicts nothing (EVC-1.3). After the maxActiveTools check above (EVC-5.2).
                if len(self._active) >= self.budgets.dynamic_capacity:
                    evicted.append(self._evict(evictable.pop(0)))
                self._activate(i)
                activated.append(i)
        # EVC-3.3: the tools one discovery call activates share a moment.
        self._recency.use(entries[i].qualified_name for i in activated)
        index, query = self._index, args.query
        # ISO-3.1 (MAY): what the call matched, activated and skipped, and why.
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
        # DSC-6.1, DSC-9.2: only the tools this call activated, in ranking order (DSC-10.3).
        found = [{"name": entries[i].exposed_name, "description": entries[i].description} for i in activated]
        remaining = self.budgets.dynamic_capacity - len(self._active)
        lines = [f"- {tool['name']}: {tool['description']}" for tool in found]
        text = (
            # DSC-6.4: the text names each by the name the model will call.
            "Activated these tools; they are available on your next turn:\n" + "\n".join(lines)
            if found
            else "No matching tool could be activated."
        )
        if evicted:
            # EVC-4.2: the text names each evicted tool.
            text += "\nDeactivated to make room; these can no longer be called:\n" + "\n".join(
                f"- {entry.exposed_name}" for entry in evicted
            )
        text += f"\nActive MCP tools: {len(self._active)}; remaining capacity: {remaining}."
        # PRO-6.2: the discovery schema's fields.
        structured: dict[str, Any] = {
            "activated": found,
            # DSC-6.2, DSC-6.3: the MCP tools active after the call, and the dynamic capacity left.
            "activeCount": len(self._active),
            "remainingCapacity": remaining,
        }
        if evicted:
            # EVC-4.1, EVC-4.3: evicted, under the names the model called them by, only when the call evicted.
            structured["evicted"] = [{"name": entry.exposed_name} for entry in evicted]
        # DSC-5.7: activating nothing is a success too.
        return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": structured}

    def _activate(self, i: int) -> None:
        entry = self.catalog.entries[i]
        self._active.append(i)
        self._active_set.add(i)
        self._per_server[entry.server_id] += 1
        self._active_by_name[entry.exposed_name] = entry

    def _required(self) -> set[int]:
        return {i for indexes in self._eligibility.required.values() for i in indexes}

    def _evictable(self) -> list[int]:
        """Active tools a discovery call may evict, least recently used first: never a required one (EVC-3.1),
        never one the call itself activates (taken before it activates any)."""
        required = self._required()
        by_name = {self.catalog.entries[i].qualified_name: i for i in self._active if i not in required}
        return [by_name[name] for name in self._recency.least_recent(by_name)]

    def _evict(self, i: int) -> CatalogEntry:
        """Take a tool out of the active set: out of the definitions and the gate at once (EVC-2.1, EVC-2.2).

        It is a discovery candidate again for later calls (EVC-5.1): only the active set held it out.
        """
        entry = self.catalog.entries[i]
        self._active.remove(i)
        self._active_set.discard(i)
        self._per_server[entry.server_id] -= 1
        del self._active_by_name[entry.exposed_name]
        self._recency.forget(entry.qualified_name)
        return entry

    # -- refresh (the catalog follows notifications/tools/list_changed) --------------------------

    def apply_listing(self, server_id: str, tools: Sequence[Any]) -> bool:
        """A server listed its tools again: rebuild the catalog from it and carry the active set over.

        Returns False, with a notice, when the new listing cannot be used (a malformed or
        colliding tool, a tool named like a base tool): the server keeps its last good
        catalog (ID-18).
        """
        if self._builder is None:
            raise RuntimeError("this toolset was not opened with refresh")
        listings = {sid: (tools if sid == server_id else c.tools) for sid, c in self._connections.items()}
        try:
            # RFR-1.2: the new listing replaces what the catalog held for the server, for every later read.
            catalog, eligibility, index = self._builder.rebuild(listings)
        except ToolsetError as error:
            # RFR-5.2, RFR-5.3: an unusable listing leaves the run open and the server its last good catalog (ID-18).
            self.listing_failed(server_id, error.message)
            return False
        # RFR-1.3: catalog, eligibility and active set change together, between two requests: the definitions
        # and the gate read the one active set.
        previous = [self.catalog.entries[i] for i in self._active]
        self.catalog, self._eligibility, self._index = catalog, eligibility, index
        self._active, self._active_set, self._active_by_name = [], set(), {}
        self._per_server = dict.fromkeys(self._per_server, 0)
        for old in previous:
            new = catalog.by_qualified.get(old.qualified_name)
            # RFR-2.1, RFR-2.2, RFR-2.3: a tool no longer listed leaves the active set and the catalog; RFR-4.2: so
            # does one a change made ineligible; RFR-4.3: a renamed one is the old name gone and a new one judged.
            if new is None or not eligibility.is_eligible(new.index):
                self._recency.forget(old.qualified_name)  # removed, renamed, or no longer admitted
                continue
            # RFR-2.4: every other active tool is carried over; RFR-4.1: with its new definition; RFR-3.2, RFR-4.4:
            # new eligible tools wait for discovery.
            self._activate(new.index)
        self._activate_required()
        return True

    def _activate_required(self) -> None:
        """Activate the required tools a refresh brought, where they fit; say so where they do not."""
        added = []
        # RFR-3.3: a refresh activates a new tool only when the policy makes it required.
        for i in sorted(self._required() - self._active_set):
            entry = self.catalog.entries[i]
            cap = self._policies[entry.server_id].max_active_tools
            # RFR-3.4: where maxActiveTools and the dynamic capacity leave room; RFR-3.5: otherwise inactive, and said.
            if self._per_server[entry.server_id] < cap and len(self._active) < self.budgets.dynamic_capacity:
                self._activate(i)
                added.append(entry.qualified_name)
                continue
            where = (
                f"its maxActiveTools of {cap}"
                if self._per_server[entry.server_id] >= cap
                else f"the dynamic capacity of {self.budgets.dynamic_capacity}"
            )
            self._notice(
                "required_tool_inactive",
                entry.server_id,
                f"server {entry.server_id!r} lists the required tool {entry.name!r}, but {where} leaves no room "
                "for it; it stays inactive",
                [entry.exposed_name],
            )
        self._recency.use(added)

    def listing_failed(self, server_id: str, reason: str) -> None:
        """A re-listing failed: the server keeps the catalog of its last good listing (ID-18, RFR-5.3),
        and the run says so in a notice naming it (RFR-5.4)."""
        self._notice(
            "listing_failed_kept",
            server_id,
            f"server {server_id!r} could not be listed again ({reason}); it keeps its last good catalog",
        )

    def _notice(self, kind: NoticeKind, server_id: str, message: str, tools: Sequence[str] = ()) -> None:
        notice: Notice = {"kind": kind, "server": server_id, "message": message}
        if tools:
            notice["tools"] = list(tools)
        if notice not in self.notices[-len(self._connections) :]:
            _log.warning("%s", message)
            self.notices.append(notice)

    def eligible(self, qualified_name: str) -> bool:
        """Whether the policy admits a tool (for inspection; the gate uses the active set)."""
        entry = self.catalog.by_qualified.get(qualified_name)
        return entry is not None and self._eligibility.is_eligible(entry.index)


async def _open_connections(
    task_group: anyio.abc.TaskGroup, connections: Sequence[Connection]
) -> ServerConnectionError | None:
    for connection in connections:
        # CAT-1.1: every configured server is started and listed, all at once.
        task_group.start_soon(connection.run)
    for connection in connections:
        await connection.ready.wait()
    # Report the first failure in configuration order, so the message is stable.
    # ERR-5.1, ERR-5.2: a server that cannot be started, reached or listed in time fails the run, named.
    return next((c.error for c in connections if c.error is not None), None)


@asynccontextmanager
async def open_toolset(
    servers: Sequence[ServerConfig],
    *,
    base_tools: Sequence[Definition] = (),
    user_message: str = "",
    system_prompt: str = "",
    ranker: Ranker | None = None,
    list_timeout: float = DEFAULT_LIST_TIMEOUT,
    call_timeout: float | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    eviction: str | None = None,
    refresh: bool = False,
) -> AsyncIterator[AdaptiveToolset]:
    """Connect, build the catalog, apply policy, select the first round; close on exit.

    ``eviction="lru"`` lets the active set roll within the dynamic capacity (SPEC.md EVC);
    ``refresh=True`` re-lists a server on ``notifications/tools/list_changed`` (SPEC.md RFR).
    Every connection opened is closed when the block ends (ERR-7.1), and also when opening
    fails, before the error propagates (ERR-6.1). What a caller leaves out counts as none and
    as empty (SEL-4.4).
    """
    # ERR-3.1 to ERR-3.6, DEF-5.2, DEF-5.5: the configuration fails before any server is contacted.
    validate_servers(servers)
    base = _check_base_tools(base_tools)
    connections = {
        server.id: Connection(
            server,
            list_timeout=list_timeout,
            call_timeout=call_timeout,
            connect_timeout=connect_timeout,
            refresh=refresh,
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
            # DEF-5.1: before any tool is exposed.
            _check_base_collisions(base, catalog)
            eligibility = resolve_policies(servers, catalog)
            docs = [ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only) for e in catalog.entries]
            chosen = ranker or LexicalRanker()
            index = chosen.index(docs, system_prompt)
            # BUD-1.2, BUD-2.2: d is 1 when the discovery tool is registered (DSC-1.1).
            budgets = Budgets(base_tools=len(base), discovery_tools=1 if eligibility.auto_servers else 0)
            builder = _Builder(tuple(servers), base, chosen, system_prompt) if refresh else None
            toolset = AdaptiveToolset(
                servers,
                connections,
                catalog,
                eligibility,
                index,
                budgets,
                base,
                user_message,
                eviction=eviction,
                builder=builder,
            )
            if refresh:
                for connection in connections.values():
                    connection.follow(toolset)
            yield toolset
        except Exception as error:  # re-raised below, once every connection is closed
            failure = error
        finally:
            # ERR-6.1, ERR-7.1: every connection ends, whether the run closed or failed to open; the error
            # is raised once they have.
            for connection in connections.values():
                connection.stop.set()
    if failure is not None:
        raise failure
