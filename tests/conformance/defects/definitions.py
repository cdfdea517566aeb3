"""Defects of the definitions (DEF-*): what a list holds, requests made anew, an active set
that only grows, a deterministic order, and base tools that collide with tools of the run."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from reference_impl import Definition, ToolResult, _catalog, _selection, _toolset
from reference_impl._catalog import Catalog, CatalogEntry
from reference_impl._discovery import DISCOVERY_TOOL
from reference_impl._errors import ConfigurationError
from reference_impl._selection import FirstRound
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import _session
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []


Definitions = list[Definition]


def _mcp_definitions_rearranged(rearrange: Callable[[AdaptiveToolset, Definitions], Definitions]) -> None:
    """The active MCP tools' definitions come in the order ``rearrange(toolset, definitions)`` gives."""
    definitions = AdaptiveToolset.definitions

    def _definitions(self: AdaptiveToolset) -> list[Definition]:
        tools = definitions(self)
        head = 1 if self.discovery_registered else 0
        return tools[:head] + rearrange(self, tools[head:])

    _swap(AdaptiveToolset, "definitions", _definitions)


@defect("DEF-1.1", "a pinned tool of an auto server is listed twice")
def pinned_listed_twice() -> None:
    """The first round puts a required tool of an auto server into the active list twice."""
    select = _selection.select_first_round

    def select_first_round(servers: Sequence[Any], catalog: Catalog, eligibility: Any, *args: Any) -> FirstRound:
        first = select(servers, catalog, eligibility, *args)
        auto = [i for s in servers if s.policy.mode == "auto" for i in eligibility.required[s.id]]
        return FirstRound(active=first.active + tuple(auto[:1]), outcomes=first.outcomes)

    _swap(_toolset, "select_first_round", select_first_round)


@defect("DEF-1.2", "definitions drop the descriptions inside input schemas")
def schema_descriptions_dropped() -> None:
    """To save tokens, the properties of an input schema lose their descriptions."""

    def definition(self: CatalogEntry) -> dict[str, Any]:
        schema = dict(self.input_schema)
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            schema["properties"] = {
                key: {k: v for k, v in value.items() if k != "description"} if isinstance(value, Mapping) else value
                for key, value in properties.items()
            }
        return {"name": self.exposed_name, "description": self.description, "inputSchema": schema}

    _swap(_catalog.CatalogEntry, "definition", definition)


@defect("DEF-1.2", "a tool listed without a description is given one made from its name")
def missing_description_invented() -> None:
    """A tool whose listing has no ``description`` field is described as "Runs NAME." so that
    the model has something to read."""
    entry_from_raw = _catalog._entry_from_raw

    def _entry_from_raw(server_id: str, position: int, raw: Any, index: int) -> CatalogEntry:
        entry = entry_from_raw(server_id, position, raw, index)
        if raw.get("description") is None:
            return dataclasses.replace(entry, description=f"Runs {entry.name}.")
        return entry

    _swap(_catalog, "_entry_from_raw", _entry_from_raw)


@defect("DEF-1.3", "base tools are cut down to name, description and inputSchema")
def base_tools_trimmed() -> None:
    """Base tools lose every field but the three a definition needs."""
    check = _toolset._check_base_tools

    def _check_base_tools(base_tools: Sequence[Mapping[str, Any]]) -> list[Definition]:
        keep = ("name", "description", "inputSchema")

        def trimmed(tool: Mapping[str, Any]) -> Definition:
            return cast(Definition, {k: tool[k] for k in keep if k in tool})

        return [trimmed(tool) for tool in check(base_tools)]

    _swap(_toolset, "_check_base_tools", _check_base_tools)


@defect("DEF-2.1", "a request's extra tools stay in every later request of the run")
def sticky_extra_tools() -> None:
    """``run.request`` keeps the extra tools of every earlier request of the run."""
    request = _session.ReferenceDriver.request
    carried: dict[Any, list[Any]] = {}

    async def _request(self: _session.ReferenceDriver, run_id: Any, extra_tools: Any = ()) -> list[Definition]:
        tools = await request(self, run_id, extra_tools)
        earlier = carried.setdefault(run_id, [])
        stale = [tool for tool in earlier if tool not in tools]
        earlier += [tool for tool in extra_tools if tool not in earlier]
        return tools + stale

    _swap(_session.ReferenceDriver, "request", _request)


@defect("DEF-2.2", "definitions are fixed at open; discovered tools never appear")
def definitions_frozen() -> None:
    """Definitions are copied when the run opens; discovered tools never appear in them."""
    original_init = AdaptiveToolset.__init__
    original_definitions = AdaptiveToolset.definitions
    frozen: dict[int, list[Definition]] = {}

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        frozen[id(self)] = original_definitions(self)

    def definitions(self: AdaptiveToolset) -> list[Definition]:
        return [tool.copy() for tool in frozen[id(self)]]

    _swap(AdaptiveToolset, "__init__", __init__)
    _swap(AdaptiveToolset, "definitions", definitions)


@defect("DEF-3.1", "each discovery call replaces the tools the previous one activated")
def discovery_replaces_previous() -> None:
    """Tools activated by one discovery call are deactivated by the next."""
    search = AdaptiveToolset.search
    last: dict[int, list[int]] = {}

    def _search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        # Only those still active: an id of a closed run may come back for a new one.
        for i in last.pop(id(self), []):
            if i in self._active_set:
                self._evict(i)
        before = len(self._active)
        result = search(self, arguments)
        last[id(self)] = self._active[before:]
        return result

    _swap(AdaptiveToolset, "search", _search)


@defect("DEF-4.1", "each run lists its MCP tools in an order of its own")
def order_shuffled_per_run() -> None:
    """Every run shuffles its MCP tools with a seed drawn when it opens (repeated reads agree)."""
    seeds: dict[int, float] = {}

    def rearrange(toolset: AdaptiveToolset, tools: Definitions) -> Definitions:
        seed = seeds.setdefault(id(toolset), random.random())
        return sorted(tools, key=lambda tool: random.Random(f"{seed}:{tool['name']}").random())

    _mcp_definitions_rearranged(rearrange)


@defect("DEF-4.2", "every second read lists the MCP tools in reverse")
def reads_alternate_order() -> None:
    """Reading the definitions flips the order of the MCP tools for the next read."""
    reads: dict[int, int] = {}

    def rearrange(toolset: AdaptiveToolset, tools: Definitions) -> Definitions:
        reads[id(toolset)] = reads.get(id(toolset), 0) + 1
        return tools[::-1] if reads[id(toolset)] % 2 == 0 else tools

    _mcp_definitions_rearranged(rearrange)


@defect("DEF-5.1", "a base tool named like an MCP tool of the run is accepted")
def base_tools_shadow_mcp_tools() -> None:
    """A base tool named like an MCP tool of the run is accepted."""
    _swap(_toolset, "_check_base_collisions", lambda base_tools, catalog: None)


@defect("DEF-5.1", "a base tool named like the mapped name of an MCP tool is accepted")
def base_tools_shadow_mapped_names() -> None:
    """Base tools are checked against qualified names only, not against the names that tools
    whose qualified names break the provider rule are exposed under."""

    def _check_base_collisions(base_tools: Sequence[Mapping[str, Any]], catalog: Catalog) -> None:
        for i, tool in enumerate(base_tools):
            entry = catalog.by_qualified.get(tool["name"])
            if entry is not None:
                raise ConfigurationError(
                    f"baseTools[{i}] {tool['name']!r} collides with the MCP tool {entry.name!r} of server "
                    f"{entry.server_id!r}; rename the base tool"
                )

    _swap(_toolset, "_check_base_collisions", _check_base_collisions)


def _discovery_name_for_base_tools() -> None:
    """Let base tools be named ``search_mcp_tools``; every other base tool check holds."""
    check = _toolset._check_base_tools

    def _check_base_tools(base_tools: Sequence[Mapping[str, Any]]) -> list[Definition]:
        named = [
            cast(Definition, dict(t)) for t in base_tools if isinstance(t, Mapping) and t.get("name") == DISCOVERY_TOOL
        ]
        return (
            check([t for t in base_tools if not (isinstance(t, Mapping) and t.get("name") == DISCOVERY_TOOL)]) + named
        )

    _swap(_toolset, "_check_base_tools", _check_base_tools)


@defect("DEF-5.2", "a base tool may be named search_mcp_tools")
def base_tool_named_like_discovery() -> None:
    """``search_mcp_tools`` is accepted as a base tool name, discovery tool or not."""
    _discovery_name_for_base_tools()


@variant(
    "ID-15",
    "a base tool may be named search_mcp_tools in a run without the discovery tool",
    clauses=("DEF-5",),
)
def discovery_name_free_without_discovery() -> None:
    """Without an auto server there is no discovery tool, so no collision: the base tool is
    kept as given. With one, the run fails as the reference's does."""
    _discovery_name_for_base_tools()
    init = AdaptiveToolset.__init__

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if self.discovery_registered and any(t["name"] == DISCOVERY_TOOL for t in self._base_tools):
            raise ConfigurationError(
                f"a base tool is named {DISCOVERY_TOOL!r}, like the discovery tool this run registers; "
                "rename the base tool"
            )

    _swap(AdaptiveToolset, "__init__", __init__)


@defect("DEF-5.5", "two base tools of one name are both accepted")
def duplicate_base_tools_accepted() -> None:
    """Every other base tool check holds; a name given twice goes through twice."""
    check = _toolset._check_base_tools

    def _check_base_tools(base_tools: Sequence[Mapping[str, Any]]) -> list[Definition]:
        seen: set[Any] = set()
        first: list[Mapping[str, Any]] = []
        again: list[Mapping[str, Any]] = []
        for tool in base_tools:
            name = tool.get("name") if isinstance(tool, Mapping) else None
            (again if name is not None and name in seen else first).append(tool)
            seen.add(name)
        return check(first) + [cast(Definition, dict(tool)) for tool in again]

    _swap(_toolset, "_check_base_tools", _check_base_tools)


@defect("DEF-5.3", "a base tool collision is refused without naming either tool")
def vague_collision_message() -> None:
    """The configuration error says that a base tool collides, not which one nor with what."""

    def _check_base_collisions(base_tools: Sequence[Mapping[str, Any]], catalog: Catalog) -> None:
        if any(tool["name"] in catalog.by_qualified or tool["name"] in catalog.by_exposed for tool in base_tools):
            raise ConfigurationError("a base tool collides with an MCP tool of this run; rename it")

    _swap(_toolset, "_check_base_collisions", _check_base_collisions)


@defect("DEF-5.4", "a call by a base tool name with a server's prefix goes to that server")
def base_prefix_forwarded() -> None:
    """A base tool named ``server__name`` is run as the tool ``name`` of that server."""
    call = AdaptiveToolset.call

    async def _call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        server_id, sep, tool = name.partition(_catalog.SEPARATOR)
        base = any(t["name"] == name for t in self._base_tools)
        if base and sep and server_id in self._connections and isinstance(arguments, Mapping | None):
            return await self._connections[server_id].call(tool, arguments or {})
        return await call(self, name, arguments)

    _swap(AdaptiveToolset, "call", _call)


@variant(
    "ID-1",
    "every definition, base tools and the discovery tool included, in name order",
    clauses=("DEF-4", "SEL-4"),
)
def definitions_in_name_order() -> None:
    """A request lists its definitions sorted by name."""
    request_definitions = AdaptiveToolset.request_definitions

    def _request_definitions(self: AdaptiveToolset) -> list[Definition]:
        return sorted(request_definitions(self), key=lambda tool: str(tool["name"]))

    _swap(AdaptiveToolset, "request_definitions", _request_definitions)
