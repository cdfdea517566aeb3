"""Defects of runs with refresh (RFR-*), one function each, and a variant that drops a server.

Each first turns the ``refresh`` profile on (the reference driver with ``--refresh``), then
breaks one sentence where the reference carries it: the listing a notification starts, how a
new listing is applied to the catalog and the active set, the gate, discovery, or what a
failed listing does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from reference_impl import Definition, StdioTarget, ToolResult, _connections, _policy, _toolset
from reference_impl._budgets import Budgets
from reference_impl._catalog import Catalog
from reference_impl._policy import Eligibility
from reference_impl._ranking import RankingIndex, ToolDoc
from reference_impl._toolset import AdaptiveToolset
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant
from tests.conformance.defects.eviction import asked_by_every_run, claiming, unclaimed

__all__: list[str] = []

Listing = Sequence[Any]


def _refreshing() -> None:
    claiming(refresh=True)


def _name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, Mapping) else None


def _apply_wrapped(around: Any) -> None:
    """``around(original, toolset, server_id, tools)`` takes the place of ``apply_listing``."""
    apply = AdaptiveToolset.apply_listing

    def wrapped(self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        return bool(around(apply, self, server_id, tools))

    _swap(AdaptiveToolset, "apply_listing", wrapped)


def _opened_with(toolset: AdaptiveToolset) -> set[str]:
    """The qualified names of the catalog the run opened with (remembered on first use)."""
    return toolset.__dict__.setdefault("_opened_with", {e.qualified_name for e in toolset.catalog.entries})  # type: ignore[no-any-return]


def _remember_the_open_catalog() -> None:
    init = AdaptiveToolset.__init__

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _opened_with(self)

    _swap(AdaptiveToolset, "__init__", __init__)


@defect("RFR-1.1", "a notification makes the run list the server's first page again, and no other")
def relists_the_first_page_only() -> None:
    """The refresh reads page 0 and takes it for the whole catalog."""
    _refreshing()
    list_all = _connections.Connection._list_all

    async def first_page_later(self: _connections.Connection, client: Any) -> list[Any]:
        if not self.ready.is_set():
            return await list_all(self, client)
        page = await client.list_tools(cursor=None, cache_mode="refresh")
        return self._raw_tools(page)

    _swap(_connections.Connection, "_list_all", first_page_later)


@defect("RFR-1.2", "only the first refresh of a server is applied; later listings are read and dropped")
def only_the_first_refresh_counts() -> None:
    _refreshing()

    def once(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        done: set[str] = self.__dict__.setdefault("_refreshed", set())
        if server_id in done:
            return True
        done.add(server_id)
        return bool(apply(self, server_id, tools))

    _apply_wrapped(once)


def _connection_keeps(answer: bool) -> None:
    """``apply_listing`` answers ``answer`` whatever became of the listing: the connection
    keeps the new listing for later rebuilds (True) or the one it had (False)."""

    def fixed(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        apply(self, server_id, tools)
        return answer

    _apply_wrapped(fixed)


@defect("RFR-1.2", "a listing the run could not use is kept as its server's, so every later rebuild fails")
def unusable_listing_kept() -> None:
    """The server keeps its last good catalog, but its connection keeps the bad listing, which
    every later refresh of any server rebuilds with: no other server's change is followed again."""
    _refreshing()
    _connection_keeps(True)


@defect("RFR-1.2", "a listing applied is not kept as its server's: the next refresh of another server reverts it")
def applied_listing_not_kept() -> None:
    """The catalog follows the new listing, but the connection keeps the one it opened with,
    which the next rebuild (another server's refresh) reads again."""
    _refreshing()
    _connection_keeps(False)


@defect("RFR-1.3", "the definitions follow a refresh one refresh late; the gate follows it at once")
def definitions_lag_the_gate() -> None:
    _refreshing()
    definitions = AdaptiveToolset.definitions

    def late(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        self.__dict__["_shown"] = definitions(self)
        return bool(apply(self, server_id, tools))

    def shown(self: AdaptiveToolset) -> list[Definition]:
        return list(self.__dict__.get("_shown") or definitions(self))

    _apply_wrapped(late)
    _swap(AdaptiveToolset, "definitions", shown)


def _with_vanished(self: AdaptiveToolset, server_id: str, tools: Listing) -> tuple[list[Any], list[str]]:
    """The new listing plus the tools of the last one it no longer has, and their names."""
    names = {_name(t) for t in tools}
    vanished = [t for t in self._connections[server_id].tools if _name(t) not in names]
    return [*tools, *vanished], [f"{server_id}__{_name(t)}" for t in vanished]


@defect("RFR-2.1", "a tool its server no longer lists stays in the catalog and the active set")
def removed_tools_stay_active() -> None:
    """The refresh adds and changes tools, and never takes one away."""
    _refreshing()
    _apply_wrapped(
        lambda apply, self, server_id, tools: apply(self, server_id, _with_vanished(self, server_id, tools)[0])
    )


@defect("RFR-2.1", "a listing that no longer offers a tool the policy names is refused, and the tool kept")
def named_tools_outlive_their_removal() -> None:
    """A refresh checks the policy's names as strictly as the run's opening did: a server that
    stops listing a pinned or allowlisted tool fails its re-listing, and keeps its last one."""
    _refreshing()
    resolve = _policy.resolve_policies

    def strictly(servers: Any, catalog: Catalog, *, strict: bool = True) -> Eligibility:
        return resolve(servers, catalog, strict=True)

    _swap(_toolset, "resolve_policies", strictly)


@defect("RFR-2.2", "the gate sends calls of a tool its server removed to the server, which refuses them")
def removed_tools_reach_the_server() -> None:
    _refreshing()
    call = AdaptiveToolset.call

    def keep_routes(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        # Only the tools the server no longer lists: one that a change made ineligible is
        # refused as it should be (RFR-4.2's).
        _, vanished = _with_vanished(self, server_id, tools)
        before = dict(self._active_by_name)
        applied = bool(apply(self, server_id, tools))
        routes = self.__dict__.setdefault("_routes", {})
        routes.update({name: before[name] for name in vanished if name in before and name not in self._active_by_name})
        return applied

    async def gate(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self.__dict__.get("_routes", {}).get(name)
        if entry is not None and name not in self._active_by_name:
            return await self._connections[entry.server_id].call(entry.name, arguments or {})
        return await call(self, name, arguments)

    _apply_wrapped(keep_routes)
    _swap(AdaptiveToolset, "call", gate)


@defect("RFR-2.3", "a tool its server removed leaves the active set but stays in the catalog for discovery")
def removed_tools_stay_discoverable() -> None:
    _refreshing()

    def keep_in_catalog(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        merged, vanished = _with_vanished(self, server_id, tools)
        applied = bool(apply(self, server_id, merged))
        for qualified in vanished:
            entry = self.catalog.by_qualified.get(qualified)
            if entry is not None and entry.index in self._active_set:
                self._evict(entry.index)
        return applied

    _apply_wrapped(keep_in_catalog)


def _rebuild_wrapped(change: Any) -> None:
    """``change(toolset, catalog, eligibility)`` rewrites the eligibility of each refreshed catalog."""
    rebuild = _toolset._Builder.rebuild
    apply = AdaptiveToolset.apply_listing
    applying: list[AdaptiveToolset] = []

    def rebuilt(builder: Any, listings: Mapping[str, Listing]) -> tuple[Catalog, Eligibility, RankingIndex]:
        catalog, eligibility, index = rebuild(builder, listings)
        return catalog, change(applying[-1], catalog, eligibility), index

    def wrapped(self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        applying.append(self)
        try:
            return bool(apply(self, server_id, tools))
        finally:
            applying.pop()

    _swap(_toolset._Builder, "rebuild", rebuilt)
    _swap(AdaptiveToolset, "apply_listing", wrapped)


@defect("RNK-8.1", "a catalog a refresh rebuilt ranks equal scores in listing order, not by qualified name")
def ties_in_listing_order_after_a_refresh() -> None:
    """The run's opening ranks as RNK-8.1 says; a refresh's rebuild breaks ties by each tool's
    place in its server's listing."""
    _refreshing()
    rebuild = _toolset._Builder.rebuild

    def rebuilt(
        builder: _toolset._Builder, listings: Mapping[str, Listing]
    ) -> tuple[Catalog, Eligibility, RankingIndex]:
        catalog, eligibility, _ = rebuild(builder, listings)
        place = {(sid, _name(tool)): k for sid, tools in listings.items() for k, tool in enumerate(tools)}
        docs = [
            ToolDoc(
                f"{place[e.server_id, e.name]:06d}\0{e.qualified_name}", e.server_id, e.name, e.description, e.read_only
            )
            for e in catalog.entries
        ]
        return catalog, eligibility, builder.ranker.index(docs, builder.system_prompt)

    _swap(_toolset._Builder, "rebuild", rebuilt)


@defect(
    "RFR-2.4",
    "in a run with eviction, a refresh evicts the least recently used tool to make room for a new required tool",
)
def refresh_evicts_for_required_tools() -> None:
    """The eviction of discovery calls reused where a refresh brings a required tool that the
    dynamic capacity leaves no room for: a tool goes, and no result says so."""
    claiming(eviction="lru", refresh=True)
    activate_required = AdaptiveToolset._activate_required

    def _activate_required(self: AdaptiveToolset) -> None:
        if self.eviction is not None:
            for i in sorted(self._required() - self._active_set):
                server_id = self.catalog.entries[i].server_id
                room = self._per_server[server_id] < self._policies[server_id].max_active_tools
                evictable = self._evictable()
                if room and len(self._active) >= self.budgets.dynamic_capacity and evictable:
                    self._evict(evictable[0])
        activate_required(self)

    _swap(AdaptiveToolset, "_activate_required", _activate_required)


@defect("RFR-2.4", "a refresh that takes a tool out drops every tool activated after it")
def refresh_drops_the_tools_after_a_removed_one() -> None:
    """Carrying the active set over stops at the first tool the new listing no longer holds."""
    _refreshing()

    def truncated(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        before = [self.catalog.entries[i].qualified_name for i in self._active]
        if not apply(self, server_id, tools):
            return False
        listed = {e.qualified_name for e in self.catalog.entries}
        gone = next((k for k, name in enumerate(before) if name not in listed), None)
        if gone is not None:
            for name in before[gone + 1 :]:
                entry = self.catalog.by_qualified.get(name)
                if entry is not None and entry.index in self._active_set:
                    self._evict(entry.index)
        return True

    _apply_wrapped(truncated)


@defect("RFR-3.1", "a tool a refresh brings is admitted without its server's policy")
def new_tools_skip_the_policy() -> None:
    _refreshing()
    _remember_the_open_catalog()

    def admit_new(self: AdaptiveToolset, catalog: Catalog, eligibility: Eligibility) -> Eligibility:
        opened = _opened_with(self)
        excluded = {i: why for i, why in eligibility.excluded.items() if catalog.entries[i].qualified_name in opened}
        return Eligibility(excluded=excluded, required=eligibility.required, auto_servers=eligibility.auto_servers)

    _rebuild_wrapped(admit_new)


@defect("RFR-3.2", "discovery looks for candidates among the tools of the catalog the run opened with")
def discovery_searches_the_first_snapshot() -> None:
    _refreshing()
    _remember_the_open_catalog()
    search = AdaptiveToolset.search

    def from_the_snapshot(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        opened = _opened_with(self)
        hidden = {e.index for e in self.catalog.entries if e.qualified_name not in opened}
        eligibility = self._eligibility
        excluded = {**eligibility.excluded, **dict.fromkeys(hidden, "not in the first snapshot")}
        self._eligibility = Eligibility(excluded, eligibility.required, eligibility.auto_servers)
        try:
            return search(self, arguments)
        finally:
            self._eligibility = eligibility

    _swap(AdaptiveToolset, "search", from_the_snapshot)


@defect("RFR-3.3", "a refresh activates every new eligible tool, where there is room")
def refresh_activates_new_tools() -> None:
    _refreshing()

    def activate_new(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        before = {e.qualified_name for e in self.catalog.entries}
        applied = bool(apply(self, server_id, tools))
        for entry in self.catalog.entries:
            new = entry.qualified_name not in before and self._eligibility.is_eligible(entry.index)
            if new and entry.index not in self._active_set and len(self._active) < self.budgets.dynamic_capacity:
                self._activate(entry.index)
        return applied

    _apply_wrapped(activate_new)


@defect("RFR-3.4", "a required tool a refresh brings is never activated")
def new_required_tools_left_out() -> None:
    _refreshing()
    _swap(AdaptiveToolset, "_activate_required", lambda self: None)


@defect("RFR-3.4", "a refresh activates the first required tool it brings and forgets the others")
def only_the_first_new_required_tool() -> None:
    _refreshing()

    def the_first(self: AdaptiveToolset) -> None:
        # Those that do not fit are still reported (RFR-3.5 holds): only the second of two that fit is lost.
        for i in sorted(self._required() - self._active_set):
            entry = self.catalog.entries[i]
            cap = self._policies[entry.server_id].max_active_tools
            if self._per_server[entry.server_id] < cap and len(self._active) < self.budgets.dynamic_capacity:
                self._activate(i)
                return
            self._notice("required_tool_inactive", entry.server_id, "no room", [entry.exposed_name])

    _swap(AdaptiveToolset, "_activate_required", the_first)


@defect("RFR-3.5", "a required tool a refresh brings is activated past its server's maxActiveTools")
def new_required_tools_past_the_cap() -> None:
    _refreshing()

    def activate_all(self: AdaptiveToolset) -> None:
        for i in sorted(self._required() - self._active_set):
            self._activate(i)

    _swap(AdaptiveToolset, "_activate_required", activate_all)


@defect("RFR-3.5", "a required tool a refresh brings is measured against one place past the dynamic capacity")
def new_required_tools_one_past_the_capacity() -> None:
    """The refresh's room check counts against 113 definitions, not 112: a run at its dynamic
    capacity takes one more required tool, its server's maxActiveTools permitting."""
    _refreshing()
    activate_required = AdaptiveToolset._activate_required

    def one_more(self: AdaptiveToolset) -> None:
        budgets = self.budgets
        self.budgets = Budgets(base_tools=budgets.base_tools - 1, discovery_tools=budgets.discovery_tools)
        try:
            activate_required(self)
        finally:
            self.budgets = budgets

    _swap(AdaptiveToolset, "_activate_required", one_more)


@defect("RFR-4.1", "the definitions keep each tool's description and schema as first listed")
def definitions_keep_the_first_listing() -> None:
    _refreshing()
    definitions = AdaptiveToolset.definitions

    def first_seen(self: AdaptiveToolset) -> list[Definition]:
        seen: dict[str, Definition] = self.__dict__.setdefault("_first_seen", {})
        tools = definitions(self)
        for tool in tools:
            seen.setdefault(tool["name"], tool)
        return [seen[tool["name"]] for tool in tools]

    _swap(AdaptiveToolset, "definitions", first_seen)


@defect("RFR-4.2", "an active tool stays active whatever a refresh says of it, read-only mark included")
def active_tools_keep_their_eligibility() -> None:
    _refreshing()

    def keep_active(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        before = [self.catalog.entries[i].qualified_name for i in self._active]
        applied = bool(apply(self, server_id, tools))
        for qualified in before:
            entry = self.catalog.by_qualified.get(qualified)
            if entry is not None and entry.index not in self._active_set:
                self._activate(entry.index)
        return applied

    _apply_wrapped(keep_active)


@defect("RFR-4.3", "a tool renamed by its server stays active under its new name, whatever the policy says of it")
def renamed_tools_carry_over() -> None:
    _refreshing()

    def follow_renames(apply: Any, self: AdaptiveToolset, server_id: str, tools: Listing) -> bool:
        before = {self.catalog.entries[i].qualified_name: self.catalog.entries[i] for i in self._active}
        applied = bool(apply(self, server_id, tools))
        for qualified, old in before.items():
            if qualified in self.catalog.by_qualified:
                continue
            for entry in self.catalog.by_server.get(old.server_id, []):
                same = entry.description == old.description and entry.input_schema == old.input_schema
                if same and entry.qualified_name not in before and entry.index not in self._active_set:
                    self._activate(entry.index)
                    break
        return applied

    _apply_wrapped(follow_renames)


@defect("RFR-4.4", "a tool excluded when the run opened stays excluded after a refresh admits it")
def exclusions_never_lift() -> None:
    _refreshing()

    def keep_excluded(self: AdaptiveToolset, catalog: Catalog, eligibility: Eligibility) -> Eligibility:
        first: set[str] = self.__dict__.setdefault(
            "_first_excluded", {self.catalog.entries[i].qualified_name for i in self._eligibility.excluded}
        )
        excluded = dict(eligibility.excluded)
        excluded.update({e.index: "excluded when the run opened" for e in catalog.entries if e.qualified_name in first})
        return Eligibility(excluded=excluded, required=eligibility.required, auto_servers=eligibility.auto_servers)

    _rebuild_wrapped(keep_excluded)


@defect("RFR-5.1", "a server that sends more than 10 notifications is taken to misbehave and no longer followed")
def storms_end_the_following() -> None:
    _refreshing()
    heard = _connections.Connection._heard_one

    def _heard_one(self: _connections.Connection) -> None:
        if self._heard < 10:
            heard(self)

    _swap(_connections.Connection, "_heard_one", _heard_one)


@defect("RFR-5.2", "a server whose listing fails takes every server's tools out of the run")
def failed_listing_empties_the_run() -> None:
    _refreshing()
    failed = AdaptiveToolset.listing_failed

    def listing_failed(self: AdaptiveToolset, server_id: str, reason: str) -> None:
        failed(self, server_id, reason)
        for i in list(self._active):
            self._evict(i)

    _swap(AdaptiveToolset, "listing_failed", listing_failed)


@defect("RFR-5.3", "a server whose listing fails leaves the definitions but its tools still run")
def failed_listing_half_drops() -> None:
    _refreshing()
    failed = AdaptiveToolset.listing_failed
    definitions = AdaptiveToolset.definitions

    def listing_failed(self: AdaptiveToolset, server_id: str, reason: str) -> None:
        failed(self, server_id, reason)
        self.__dict__.setdefault("_hidden", set()).add(server_id)

    def shown(self: AdaptiveToolset) -> list[Definition]:
        hidden = self.__dict__.get("_hidden", set())
        return [d for d in definitions(self) if d["name"].split("__", 1)[0] not in hidden]

    _swap(AdaptiveToolset, "listing_failed", listing_failed)
    _swap(AdaptiveToolset, "definitions", shown)


@defect("RFR-5.3", "a listen stream that ends with an error takes its server's connection down, its tools still listed")
def broken_listen_stream_ends_the_connection() -> None:
    """The error of a stream the server acknowledged escapes the listener into the task group
    that holds the server's connection, which closes it: every later call of its tools fails."""
    _refreshing()

    async def _listen(
        self: _connections.Connection, client: Any, *, task_status: Any = anyio.TASK_STATUS_IGNORED
    ) -> None:
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            task_status.started()
            return
        acknowledged = False
        try:
            async with client.listen(tools_list_changed=True) as events:
                task_status.started()
                acknowledged = True
                async for _event in events:
                    self._heard_one()
        except Exception:
            if acknowledged:
                raise
            task_status.started()

    _swap(_connections.Connection, "_listen", _listen)


@variant("ID-18", "a server whose listing fails is dropped with all its tools, and the run says so", clauses=("RFR-5",))
def failed_listing_drops_the_server() -> None:
    _refreshing()

    def listing_failed(self: AdaptiveToolset, server_id: str, reason: str) -> None:
        self._connections[server_id].tools = []
        AdaptiveToolset.apply_listing(self, server_id, [])
        self._notice(
            "listing_failed_dropped",
            server_id,
            f"server {server_id!r} could not be listed again ({reason}); it is dropped with its tools",
        )

    _swap(AdaptiveToolset, "listing_failed", listing_failed)


@defect("DEF-3.1", "a driver with refresh refreshes every run, also one opened without it")
def refresh_for_every_run() -> None:
    """``refresh`` left out reads as the driver's own setting, not as false."""
    _refreshing()
    asked_by_every_run("refresh", True)


@defect("DEF-3.1", "a driver that does not claim refresh refreshes the runs that ask for it")
def refresh_without_the_claim() -> None:
    """The run's ``refresh`` is honoured whatever the driver claims: ``and`` read as ``or``."""
    _refreshing()
    unclaimed("refresh")


@defect("RFR-1.1", "a host with refresh hears of changes only on listen streams, not on a handshake-era connection")
def changes_heard_only_on_listen_streams() -> None:
    """Written for the 2026-07-28 revision alone: a server that speaks only the ``initialize``
    handshake sends its notifications on the connection, and nobody reads them."""
    _refreshing()

    async def _on_message(self: _connections.Connection, message: Any) -> None:
        return None

    _swap(_connections.Connection, "_on_message", _on_message)


@defect("RFR-1.1", "a host with refresh hears of changes only from the servers it reaches over HTTP")
def changes_heard_only_over_http() -> None:
    """Written for servers behind a URL: a server the host starts over stdio is never listened
    to, on a listen stream or on its connection, so its changes go unheard in either era."""
    _refreshing()
    listen, on_message = _connections.Connection._listen, _connections.Connection._on_message

    async def _listen(self: _connections.Connection, client: Any, **kwargs: Any) -> None:
        if isinstance(self.config.target, StdioTarget):
            kwargs.get("task_status", anyio.TASK_STATUS_IGNORED).started()
            return
        await listen(self, client, **kwargs)

    async def _on_message(self: _connections.Connection, message: Any) -> None:
        if not isinstance(self.config.target, StdioTarget):
            await on_message(self, message)

    _swap(_connections.Connection, "_listen", _listen)
    _swap(_connections.Connection, "_on_message", _on_message)


@defect("RFR-1.2", "a run with refresh answers a request without waiting for the listings begun before it")
def requests_before_listings_end() -> None:
    """P39 left out: what the catalog holds when the request arrives is what it reads."""
    _refreshing()

    async def settled(self: AdaptiveToolset) -> None:
        return None

    _swap(AdaptiveToolset, "settled", settled)


@defect("RFR-5.2", "a re-listing has no time limit: a server that stops answering holds every later request")
def relisting_unbounded() -> None:
    """Only the listing at open is bounded; the requests that wait for a re-listing (P39)
    wait for one that never ends."""
    _refreshing()
    follow = _connections.Connection.follow

    def wrapped(self: _connections.Connection, listener: Any) -> None:
        self.list_timeout = math.inf
        follow(self, listener)

    _swap(_connections.Connection, "follow", wrapped)
