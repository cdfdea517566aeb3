"""Defects of the catalog (CAT-*): servers left unlisted, pages left unread, definitions and
annotations not kept, qualified names, and calls routed or passed on wrongly."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from reference_impl import ToolResult, _catalog, _connections, _policy, _toolset
from reference_impl._catalog import Catalog, CatalogEntry
from reference_impl._config import StdioTarget
from reference_impl._toolset import AdaptiveToolset
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []


@defect("CAT-1.1", "only the first configured server is listed")
def lists_first_server_only() -> None:
    """Every server is connected, but only the first one configured is asked for its tools."""
    open_connections = _toolset._open_connections
    list_all = _connections.Connection._list_all
    unlisted: set[int] = set()

    async def _open_connections(task_group: Any, connections: Sequence[_connections.Connection]) -> Any:
        unlisted.update(id(connection) for connection in connections[1:])
        return await open_connections(task_group, connections)

    async def _list_all(self: _connections.Connection, client: Any) -> list[Any]:
        return [] if id(self) in unlisted else await list_all(self, client)

    _swap(_toolset, "_open_connections", _open_connections)
    _swap(_connections.Connection, "_list_all", _list_all)


@defect("CAT-1.2", "the catalog keeps no annotations")
def annotations_dropped() -> None:
    """Tools are kept without their annotations, so none of them counts as read-only."""
    entry_from_raw = _catalog._entry_from_raw

    def _entry_from_raw(server_id: str, position: int, raw: Any, index: int) -> CatalogEntry:
        return dataclasses.replace(entry_from_raw(server_id, position, raw, index), annotations=None)

    _swap(_catalog, "_entry_from_raw", _entry_from_raw)


@defect("CAT-1.3", "tools left out of the first round are dropped from the catalog")
def left_out_tools_forgotten() -> None:
    """After the first round, tools it did not select can never be activated."""
    init = AdaptiveToolset.__init__

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        forgotten = {i: "not selected" for i in range(len(self.catalog.entries)) if i not in self._active_set}
        excluded = {**forgotten, **self._eligibility.excluded}
        self._eligibility = dataclasses.replace(self._eligibility, excluded=excluded)

    _swap(AdaptiveToolset, "__init__", __init__)


@defect("CAT-1.4", "a stdio server is started without the env it is configured with")
def stdio_env_ignored() -> None:
    """The server inherits the host's environment; the variables configured for it are lost."""
    client_for = _connections.Connection._client_for

    def _client_for(self: _connections.Connection) -> Any:
        target = self.config.target
        if isinstance(target, StdioTarget) and target.env is not None:
            self.config = dataclasses.replace(self.config, target=dataclasses.replace(target, env=None))
        return client_for(self)

    _swap(_connections.Connection, "_client_for", _client_for)


@defect("CAT-1.4", "a stdio server configured without args is started with a default argument")
def stdio_default_args() -> None:
    """``args or ["--stdio"]``: a server configured with no arguments gets one the host thought
    of; its configured environment reaches it all the same."""
    client_for = _connections.Connection._client_for

    def _client_for(self: _connections.Connection) -> Any:
        target = self.config.target
        if isinstance(target, StdioTarget) and not target.args:
            self.config = dataclasses.replace(self.config, target=dataclasses.replace(target, args=("--stdio",)))
        return client_for(self)

    _swap(_connections.Connection, "_client_for", _client_for)


def _list_pages(stop: Any) -> None:
    """Replace listing with a loop that ends when ``stop(page, cursor)`` says so."""

    async def _list_all(self: _connections.Connection, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for page_index in range(_connections.MAX_PAGES):
            self._raw_pages.clear()
            try:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            except ValidationError as error:
                raise self._malformed(error) from None
            page_tools = self._raw_tools(page)
            _LISTED_AT[self.config.id] = _LISTED_AT.get(self.config.id, {}) if page_index else {}
            _LISTED_AT[self.config.id].update(
                {t["name"]: page_index for t in page_tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}
            )
            tools.extend(page_tools)
            cursor = page.next_cursor
            if stop(page, cursor):
                return tools
        return tools

    _swap(_connections.Connection, "_list_all", _list_all)


# The page on which each tool of each server was last listed: server id -> name -> page.
_LISTED_AT: dict[str, dict[str, int]] = {}


@defect("CAT-2.1", "only the first tools/list page is read")
def pagination_ignored() -> None:
    """Only the first ``tools/list`` page is read."""
    _list_pages(lambda page, cursor: True)


@defect("CAT-2.1", 'a nextCursor "" is followed like any other cursor')
def empty_cursor_is_a_cursor() -> None:
    """Only an absent or null ``nextCursor`` ends the listing; ``""`` is sent back as a cursor."""
    _list_pages(lambda page, cursor: cursor is None)


@defect("CAT-2.1", "listing gives up after 999 pages")
def pagination_bounded_below_1000() -> None:
    """A bound on pages, as CAT-2.4 allows, set one page short of the least it may be."""
    _swap(_connections, "MAX_PAGES", 999)


@variant("ID-8", "listing stops at a bound of 1,000 pages", clauses=("CAT-2",))
def pagination_bounded_at_1000() -> None:
    """Past 1,000 pages a server fails the run with a connection error naming it."""
    _swap(_connections, "MAX_PAGES", 1000)


@defect("CAT-2.3", "an empty page ends the listing, whatever its cursor")
def empty_page_ends_listing() -> None:
    """A page without tools is taken for the last one."""
    _list_pages(lambda page, cursor: not cursor or not page.tools)


@defect("CAT-2.2", "tools listed after the first page are never required")
def later_pages_never_required() -> None:
    """Tools from pages after the first are kept, but policy never makes them required."""
    _list_pages(lambda page, cursor: not cursor)
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[Any], catalog: Catalog) -> _policy.Eligibility:
        eligibility = resolve(servers, catalog)
        entries = catalog.entries
        required = {
            sid: tuple(i for i in indexes if _LISTED_AT.get(sid, {}).get(entries[i].name, 0) == 0)
            for sid, indexes in eligibility.required.items()
        }
        return dataclasses.replace(eligibility, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)


@defect("CAT-3.1", "tools are named serverId_toolName, with one underscore")
def qualified_with_one_underscore() -> None:
    """Qualified names join the server id and the tool name with a single underscore."""
    _swap(_catalog, "qualified_name", lambda server_id, tool_name: f"{server_id}_{tool_name}")


@defect("CAT-3.1", "a qualified name of exactly 64 characters is mapped like a longer one")
def names_at_the_limit_mapped() -> None:
    """Names are mapped from 64 characters on, not from 65: one too early."""
    exposed_name = _catalog.exposed_name

    def _exposed_name(qualified: str) -> str:
        return exposed_name(qualified if len(qualified) < 64 else qualified + "_")

    _swap(_catalog, "exposed_name", _exposed_name)


@defect("CAT-3.2", "a tool name offered by two servers is kept once, for the first")
def same_name_kept_once() -> None:
    """A tool whose original name an earlier server already offers is left out of the catalog."""
    from_listings = Catalog.from_listings.__func__  # type: ignore[attr-defined]

    def _from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        seen: set[Any] = set()
        kept: dict[str, list[Any]] = {}
        for server_id, tools in listings.items():
            names = [t.get("name") if isinstance(t, Mapping) else None for t in tools]
            kept[server_id] = [t for t, name in zip(tools, names, strict=True) if name is None or name not in seen]
            seen.update(names)
        catalog: Catalog = from_listings(cls, kept)
        return catalog

    _swap(Catalog, "from_listings", classmethod(_from_listings))


@defect("CAT-4.1", "a call goes to the first server that offers the tool's original name")
def routed_by_original_name() -> None:
    """Calls are routed by the original name alone, to the first server configured that has it."""
    call = AdaptiveToolset.call

    async def _call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self._active_by_name.get(name)
        if entry is None or not isinstance(arguments, Mapping | None):
            return await call(self, name, arguments)
        first = next(
            s.id for s in self.servers if _catalog.qualified_name(s.id, entry.name) in self.catalog.by_qualified
        )
        return await self._connections[first].call(entry.name, arguments or {})

    _swap(AdaptiveToolset, "call", _call)


@defect("CAT-4.2", "the server is called with the qualified name")
def server_gets_qualified_name() -> None:
    """``tools/call`` carries the qualified name instead of the server's own name for the tool."""
    call = _connections.Connection.call

    async def _call(self: _connections.Connection, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return await call(self, _catalog.qualified_name(self.config.id, name), arguments)

    _swap(_connections.Connection, "call", _call)


@defect("CAT-4.3", "arguments the input schema does not declare are dropped")
def arguments_filtered_to_schema() -> None:
    """Arguments are cut down to the properties of the tool's input schema before the call."""
    call = AdaptiveToolset.call

    async def _call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self._active_by_name.get(name)
        if entry is not None and isinstance(arguments, Mapping):
            declared = entry.input_schema.get("properties") or {}
            arguments = {key: value for key, value in arguments.items() if key in declared}
        return await call(self, name, arguments)

    _swap(AdaptiveToolset, "call", _call)


@defect("CAT-4.4", "the server's structuredContent is dropped from the result")
def structured_content_dropped() -> None:
    """Only the content blocks and the error flag of a server's result reach the caller."""
    call = _connections.Connection.call

    async def _call(self: _connections.Connection, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        result = await call(self, name, arguments)
        return {key: value for key, value in result.items() if key != "structuredContent"}

    _swap(_connections.Connection, "call", _call)


@defect("CAT-5.2", "mapped names are cut short without a digest: two long names that share a prefix fail the run")
def mapped_names_without_digest() -> None:
    """A name that breaks the provider rule becomes its first 55 mapped characters and ``_x``,
    so two tools whose qualified names agree that far are refused as colliding."""

    def _exposed_name(qualified: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", qualified):
            return qualified
        return re.sub(r"[^A-Za-z0-9_-]", "_", qualified)[:55] + "_x"

    _swap(_catalog, "exposed_name", _exposed_name)


@variant(
    "ID-2",
    "tools whose qualified names break the provider rule are left out, not mapped",
    clauses=("CAT-5", "DEF-5"),
)
def bad_names_left_out() -> None:
    """A tool whose qualified name breaks ``^[A-Za-z0-9_-]{1,64}$`` is never active."""
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[Any], catalog: Catalog) -> _policy.Eligibility:
        eligibility = resolve(servers, catalog)
        bad = {
            e.index: "its name breaks the provider rule" for e in catalog.entries if e.exposed_name != e.qualified_name
        }
        required = {sid: tuple(i for i in indexes if i not in bad) for sid, indexes in eligibility.required.items()}
        return dataclasses.replace(eligibility, excluded={**bad, **eligibility.excluded}, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)
