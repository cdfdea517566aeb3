"""Defects of discovery (DSC-*): registration and schema of the discovery tool, its
candidates and bounds, its result, invalid arguments, scoping, and lexical relevance."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reference_impl import Definition, ToolResult, _discovery, _toolset
from reference_impl._budgets import Budgets
from reference_impl._connections import error_result
from reference_impl._discovery import DiscoveryArguments, InvalidDiscoveryArguments
from reference_impl._policy import Eligibility
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import ReferenceDriver
from tests.conformance.defects._hooks import (
    AlteredIndex,
    MaxActive,
    after_search,
    during_search,
    ranker_of_its_own,
    wrap_parse,
)
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []

Parse = Callable[[Any, frozenset[str]], DiscoveryArguments]


# Registration and schema --------------------------------------------------------------------


@defect("DSC-1.1", "the discovery tool is registered only when an auto server has an eligible tool")
def discovery_tool_needs_an_eligible_tool() -> None:
    def registered(self: AdaptiveToolset) -> bool:
        auto = self._eligibility.auto_servers
        return any(e.server_id in auto and self._eligibility.is_eligible(e.index) for e in self.catalog.entries)

    _swap(AdaptiveToolset, "discovery_registered", property(registered))


@defect("DSC-1.2", "the discovery tool is registered when no server is configured")
def discovery_tool_without_servers() -> None:
    _swap(
        AdaptiveToolset,
        "discovery_registered",
        property(lambda self: bool(self._eligibility.auto_servers) or not self.servers),
    )


def _edit_schema(edit: Callable[[dict[str, Any]], None]) -> None:
    original = _discovery.discovery_definition

    def definition() -> Definition:
        tool = original()
        edit(tool["inputSchema"])
        return tool

    _swap(_toolset, "discovery_definition", definition)


@defect("DSC-2.1", "the discovery tool's schema does not require query")
def query_not_required() -> None:
    _edit_schema(lambda schema: schema.update(required=[]))


@defect("DSC-2.2", "the discovery tool's schema types server_ids as a string")
def server_ids_typed_as_string() -> None:
    _edit_schema(lambda schema: schema["properties"].update(server_ids={"type": "string"}))


@defect("DSC-2.3", "the discovery tool's schema types limit as a number")
def limit_typed_as_number() -> None:
    _edit_schema(lambda schema: schema["properties"]["limit"].update(type="number"))


@defect("DSC-2.4", "the discovery tool's schema gives limit a minimum of 2, though 1 is accepted")
def limit_minimum_two() -> None:
    _edit_schema(lambda schema: schema["properties"]["limit"].update(minimum=2))


# Candidates -----------------------------------------------------------------------------------


def _eligibility_without(reason: Callable[[str], bool]) -> None:
    """Discovery ignores the exclusions whose reason ``reason`` accepts."""

    def eligibility(toolset: AdaptiveToolset) -> Eligibility:
        e = toolset._eligibility
        return Eligibility(
            excluded={i: why for i, why in e.excluded.items() if not reason(why)},
            required=e.required,
            auto_servers=e.auto_servers,
        )

    during_search(eligibility=eligibility)


@defect("DSC-4.1", "discovery searches allowlist servers as if they were auto")
def allowlist_servers_searched_as_auto() -> None:
    """An allowlist server's tools outside its list become candidates. (An auto server's
    allowedTools still binds: to ignore it is POL-4.2's defect.)"""

    def eligibility(toolset: AdaptiveToolset) -> Eligibility:
        e = toolset._eligibility
        listing = {s.id for s in toolset.servers if s.policy.mode == "allowlist"}
        entries = toolset.catalog.entries
        return Eligibility(
            excluded={
                i: why
                for i, why in e.excluded.items()
                if not (why == "not in allowedTools" and entries[i].server_id in listing)
            },
            required=e.required,
            auto_servers=e.auto_servers | listing,
        )

    during_search(eligibility=eligibility)


@defect("DSC-4.2", "discovery activates active tools again and reports them")
def active_tools_reactivated() -> None:
    original_search = AdaptiveToolset.search
    original_activate = AdaptiveToolset._activate

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        active = self._active_set
        self._active_set = set()
        try:
            return original_search(self, arguments)
        finally:
            active |= self._active_set
            self._active_set = active

    def activate(self: AdaptiveToolset, i: int) -> None:
        if i not in self._active:
            original_activate(self, i)

    _swap(AdaptiveToolset, "search", search)
    _swap(AdaptiveToolset, "_activate", activate)


@defect("DSC-4.3", "server_ids is checked, then ignored")
def scope_ignored() -> None:
    wrap_parse(lambda parse, arguments, known: dataclasses.replace(parse(arguments, known), server_ids=()))


@defect("POL-1.4", "discovery activates denied tools")
def denied_tools_discovered() -> None:
    _eligibility_without(lambda why: why == "denied")


@defect("POL-1.4", "discovery ignores sideEffects: readOnly")
def read_only_ignored_by_discovery() -> None:
    _eligibility_without(lambda why: why.startswith("read-only"))


@defect("SEL-3.1", "discovery lets a server at its maxActiveTools take one more tool")
def server_at_max_takes_one_more() -> None:
    during_search(
        policies=lambda t, sid, p: MaxActive(p.max_active_tools + 1) if t._per_server[sid] >= p.max_active_tools else p
    )


# Bounds ---------------------------------------------------------------------------------------


def _limit(edit: Callable[[Any, DiscoveryArguments], int]) -> None:
    """Discovery uses ``edit(limit argument, checked arguments)`` as the call's limit."""

    def parse(original: Parse, arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        checked = original(arguments, known)
        return dataclasses.replace(checked, limit=edit(arguments.get("limit"), checked))

    wrap_parse(parse)


@defect("DSC-5.1", "one call activates one tool more than its limit")
def limit_off_by_one() -> None:
    _limit(lambda _given, checked: checked.limit + 1)


@defect("DSC-5.2", "a missing or null limit counts as 12")
def missing_limit_means_12() -> None:
    _limit(lambda given, checked: 12 if given is None else checked.limit)


@defect("DSC-5.2", "a missing or null limit counts as 5")
def missing_limit_means_5() -> None:
    """Within 6, so only a comparison with an explicit limit of 6 shows it."""
    _limit(lambda given, checked: 5 if given is None else checked.limit)


@defect("DSC-5.3", "a limit above 12 counts as 11")
def large_limit_means_11() -> None:
    _limit(lambda given, checked: 11 if isinstance(given, int) and given > 12 else checked.limit)


@defect("DSC-5.3", "a limit above 12 is not cut to 12")
def limit_not_clamped() -> None:
    _limit(lambda given, checked: given if isinstance(given, int) and given > 12 else checked.limit)


@defect("DSC-5.3", "a limit above 12 is refused after the call has activated 12 tools")
def large_limit_refused_after_activating() -> None:
    """The refusal DSC-5.3 allows, given too late: the tools stay active."""
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        result = original(self, arguments)
        limit = arguments.get("limit") if isinstance(arguments, Mapping) else None
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 12 and not result["isError"]:
            return error_result(f"search_mcp_tools: 'limit' must be at most 12, got {limit}")
        return result

    _swap(AdaptiveToolset, "search", search)


def _refused(when: Callable[[Any], bool], message: str) -> None:
    """Refuse the discovery calls whose ``limit`` argument ``when`` accepts (ID-11, ID-12)."""

    def parse(original: Parse, arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        if isinstance(arguments, Mapping) and "limit" in arguments and when(arguments["limit"]):
            raise InvalidDiscoveryArguments(f"'limit' {message}, got {arguments['limit']!r}")
        return original(arguments, known)

    wrap_parse(parse)


@variant(
    "ID-11",
    "a limit above 12 is refused with an error result",
    clauses=("DSC-2", "DSC-5"),
    tests=("test_discovery.py",),
)
def limit_above_12_refused() -> None:
    _refused(lambda limit: isinstance(limit, int) and not isinstance(limit, bool) and limit > 12, "is at most 12")


@variant(
    "ID-12",
    "a null limit is refused with an error result",
    clauses=("DSC-5",),
    tests=("test_discovery.py::test_each_call_activates_at_most_its_limit",),
)
def null_limit_refused() -> None:
    _refused(lambda limit: limit is None, "must be a positive integer when given (leave it out for 6)")


@defect("DSC-5.4", "the dynamic capacity is checked before the call, not per tool")
def room_checked_only_before_the_call() -> None:
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        budgets = self.budgets
        if budgets.dynamic_capacity - len(self._active) <= 0:
            return original(self, arguments)
        self.budgets = Budgets(base_tools=budgets.base_tools - 10**6, discovery_tools=budgets.discovery_tools)
        try:
            result = original(self, arguments)
        finally:
            self.budgets = budgets
        content = result.get("structuredContent")
        if isinstance(content, dict):
            content["remainingCapacity"] = max(0, budgets.dynamic_capacity - len(self._active))
        return result

    _swap(AdaptiveToolset, "search", search)


@defect("SEL-3.1", "a server below its maxActiveTools when a discovery call starts is not held to it during the call")
def server_room_checked_once_per_call() -> None:
    during_search(policies=lambda t, sid, p: MaxActive(10**6) if t._per_server[sid] < p.max_active_tools else p)


def _edit_result(edit: Callable[[AdaptiveToolset, Any, ToolResult, list[str]], None]) -> None:
    """Edit every successful discovery result in place."""

    def edited(toolset: AdaptiveToolset, arguments: Any, result: ToolResult, before: list[str]) -> ToolResult:
        if not result["isError"]:
            edit(toolset, arguments, result, before)
        return result

    after_search(edited)


@defect("DSC-5.7", "a call that activates nothing is an error")
def nothing_found_is_an_error() -> None:
    def edit(_t: AdaptiveToolset, _a: Any, result: ToolResult, _b: list[str]) -> None:
        if not result["structuredContent"]["activated"]:
            result["isError"] = True

    _edit_result(edit)


@defect("DSC-5.8", "discovery looks the query up as part of the tools' original names")
def query_looked_up_in_names() -> None:
    """A host with a ranker of its own, whose discovery matches the query inside names:
    under the lexical profile such matching breaks the formula's relevance (DSC-10.2) first."""
    ranker_of_its_own()

    def index(toolset: AdaptiveToolset, base: Any) -> AlteredIndex:
        entries = toolset.catalog.entries

        def in_names(_found: Iterator[int], query: str) -> Iterator[int]:
            return (i for i in base.order(query) if query.casefold() in entries[i].name.casefold())

        return AlteredIndex(base, matches=in_names)

    during_search(index=index)


@defect("DSC-5.8", "discovery activates nothing when the room left is below the limit")
def nothing_when_room_below_limit() -> None:
    def short(toolset: AdaptiveToolset, arguments: Any) -> bool:
        try:
            limit = _discovery.parse_arguments(arguments, frozenset(toolset._policies)).limit
        except InvalidDiscoveryArguments:
            return False
        return toolset.budgets.dynamic_capacity - len(toolset._active) < limit

    def nothing(toolset: AdaptiveToolset) -> Eligibility:
        return dataclasses.replace(toolset._eligibility, auto_servers=frozenset())

    during_search(eligibility=nothing, when=short)


@defect("DSC-5.8", "a scoped discovery call stops at the first match outside its scope")
def scoped_walk_stops_outside_the_scope() -> None:
    """The walk of the ranked matches ends, instead of skipping, at a tool of a server the
    call's ``server_ids`` leaves out."""
    search = AdaptiveToolset.search

    def scoped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        scope = arguments.get("server_ids") if isinstance(arguments, Mapping) else None
        if not isinstance(scope, list) or not scope:
            return search(self, arguments)
        entries, index = self.catalog.entries, self._index
        self._index = AlteredIndex(
            index, matches=lambda found, _q: itertools.takewhile(lambda i: entries[i].server_id in scope, found)
        )
        try:
            return search(self, arguments)
        finally:
            self._index = index

    _swap(AdaptiveToolset, "search", scoped)


# Result ---------------------------------------------------------------------------------------


@defect("DSC-6.1", "activated lists only the first tool the call activated")
def activated_lists_only_the_first() -> None:
    def edit(_t: AdaptiveToolset, _a: Any, result: ToolResult, _b: list[str]) -> None:
        result["structuredContent"]["activated"] = result["structuredContent"]["activated"][:1]

    _edit_result(edit)


@defect("DSC-6.2", "activeCount is the count before the call")
def active_count_before_the_call() -> None:
    def edit(_t: AdaptiveToolset, _a: Any, result: ToolResult, before: list[str]) -> None:
        result["structuredContent"]["activeCount"] = len(before)

    _edit_result(edit)


@defect("DSC-6.3", "remainingCapacity leaves the base tools out")
def remaining_capacity_ignores_base_tools() -> None:
    def edit(toolset: AdaptiveToolset, _a: Any, result: ToolResult, _b: list[str]) -> None:
        result["structuredContent"]["remainingCapacity"] += toolset.budgets.base_tools

    _edit_result(edit)


@defect("DSC-6.4", "the text of a discovery result gives only the counts, not the tools")
def text_without_the_activated_tools() -> None:
    def edit(_t: AdaptiveToolset, _a: Any, result: ToolResult, _b: list[str]) -> None:
        content = result["structuredContent"]
        result["content"] = [
            {
                "type": "text",
                "text": f"Active MCP tools: {content['activeCount']}; remaining capacity: {content['remainingCapacity']}.",
            }
        ]

    _edit_result(edit)


# Arguments ------------------------------------------------------------------------------------


def _rewrite(rewrite: Callable[[dict[str, Any], frozenset[str]], dict[str, Any]]) -> None:
    """Discovery checks ``rewrite(arguments, server ids)`` in place of the arguments given."""

    def parse(original: Parse, arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        if isinstance(arguments, Mapping):
            return original(rewrite(dict(arguments), known), known)
        return original(arguments, known)

    wrap_parse(parse)


@defect("DSC-7.1", "a query of white space alone is accepted")
def blank_query_accepted() -> None:
    def parse(original: Parse, arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        query = arguments.get("query") if isinstance(arguments, Mapping) else None
        if isinstance(query, str) and query and not query.strip():
            return dataclasses.replace(original({**arguments, "query": "blank"}, known), query=query)
        return original(arguments, known)

    wrap_parse(parse)


@defect("DSC-7.2", "a boolean limit is taken as the integer 1 or 0")
def boolean_limit_taken_as_integer() -> None:
    _rewrite(lambda a, _known: {**a, "limit": int(a["limit"])} if isinstance(a.get("limit"), bool) else a)


@defect("DSC-7.3", "a string server_ids is taken as a list of that one id")
def string_server_ids_taken_as_one_id() -> None:
    _rewrite(lambda a, _known: {**a, "server_ids": [a["server_ids"]]} if isinstance(a.get("server_ids"), str) else a)


def _strangers_dropped(arguments: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The arguments without the ``server_ids`` entries that name no server of the run."""
    ids = arguments.get("server_ids")
    if isinstance(ids, list) and all(isinstance(i, str) for i in ids):
        return {**arguments, "server_ids": [i for i in ids if i in known]}
    return arguments


def _names_only_strangers(toolset: AdaptiveToolset, arguments: Any) -> bool:
    ids = arguments.get("server_ids") if isinstance(arguments, Mapping) else None
    return isinstance(ids, list) and bool(ids) and all(isinstance(i, str) and i not in toolset._policies for i in ids)


@defect("DSC-7.4", "server_ids entries that name no server are dropped, and a list left empty scopes nothing")
def unknown_server_ids_widen_the_scope() -> None:
    """``["nope"]`` becomes ``[]``, which means every server: the entry widened the scope."""
    _rewrite(_strangers_dropped)


@variant(
    "ID-13",
    "a server_ids entry that names no server of the run adds no server to the scope",
    clauses=("DSC-7", "DSC-8"),
)
def unknown_server_ids_scope_nothing() -> None:
    """Entries naming no server are left out of the scope; a list of nothing but such
    entries is a scope of no server, which activates nothing (a success)."""
    _rewrite(_strangers_dropped)
    during_search(
        eligibility=lambda t: dataclasses.replace(t._eligibility, auto_servers=frozenset()), when=_names_only_strangers
    )


# Scope ----------------------------------------------------------------------------------------


@defect("DSC-8.1", "an empty server_ids is refused")
def empty_scope_refused() -> None:
    def parse(original: Parse, arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        if isinstance(arguments, Mapping) and arguments.get("server_ids") == []:
            raise InvalidDiscoveryArguments("'server_ids' must name at least one server")
        return original(arguments, known)

    wrap_parse(parse)


@defect("DSC-8.1", "a null server_ids scopes the call to no server")
def null_scope_finds_nothing() -> None:
    during_search(
        eligibility=lambda t: dataclasses.replace(t._eligibility, auto_servers=frozenset()),
        when=lambda _t, arguments: (
            isinstance(arguments, Mapping) and "server_ids" in arguments and arguments["server_ids"] is None
        ),
    )


@variant("ID-14", "an empty server_ids is a scope of no server", clauses=("DSC-8",))
def empty_server_ids_scope_nothing() -> None:
    during_search(
        eligibility=lambda t: dataclasses.replace(t._eligibility, auto_servers=frozenset()),
        when=lambda _t, arguments: isinstance(arguments, Mapping) and arguments.get("server_ids") == [],
    )


@defect("DSC-8.2", "naming a server that is not in auto mode is an error")
def non_auto_scope_refused() -> None:
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        ids = arguments.get("server_ids") if isinstance(arguments, Mapping) else None
        auto = self._eligibility.auto_servers
        if isinstance(ids, list) and any(isinstance(i, str) and i in self._policies and i not in auto for i in ids):
            return error_result("search_mcp_tools: 'server_ids' may only name servers in auto mode")
        return original(self, arguments)

    _swap(AdaptiveToolset, "search", search)


# What discovery touches and says --------------------------------------------------------------


@defect("DSC-9.1", "discovery calls each tool it activates once, to check that it answers")
def discovery_calls_what_it_activates() -> None:
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        result = await original(self, name, arguments)
        if name == _discovery.DISCOVERY_TOOL and not result["isError"]:
            for found in result["structuredContent"]["activated"]:
                entry = self._active_by_name[found["name"]]
                await self._connections[entry.server_id].call(entry.name, {})
        return result

    _swap(AdaptiveToolset, "call", call)


@defect("DSC-9.2", "the result also names matching tools the call did not activate")
def result_names_matches_it_left() -> None:
    def edit(toolset: AdaptiveToolset, arguments: Any, result: ToolResult, _b: list[str]) -> None:
        entries = toolset.catalog.entries
        left = [
            entries[i].exposed_name for i in toolset._index.matches(arguments["query"]) if i not in toolset._active_set
        ]
        if left:
            result["content"][0]["text"] += "\nAlso matching: " + ", ".join(left[:3])

    _edit_result(edit)


@defect("DSC-9.2", "the result describes, by original name and description, matching tools it did not activate")
def result_describes_matches_it_left() -> None:
    """No qualified name of a tool it left is said, but its definition is: its words."""

    def edit(toolset: AdaptiveToolset, arguments: Any, result: ToolResult, _b: list[str]) -> None:
        entries = toolset.catalog.entries
        left = [entries[i] for i in toolset._index.matches(arguments["query"]) if i not in toolset._active_set]
        if left:
            told = "; ".join(f"{entry.name}: {entry.description}" for entry in left[:3])
            result["content"][0]["text"] += "\nAlso matching: " + told

    _edit_result(edit)


# Lexical relevance and order -------------------------------------------------------------------


@defect("DSC-10.2", "discovery counts any positive score as relevance")
def positive_score_is_relevance() -> None:
    def index(_toolset: AdaptiveToolset, base: Any) -> AlteredIndex:
        def positive(_found: Iterator[int], query: str) -> Iterator[int]:
            return (i for i in base.order(query) if base.breakdown(i, query).total > 0)

        return AlteredIndex(base, matches=positive)

    during_search(index=index)


@defect("DSC-10.3", "activated lists the tools by name, not in ranking order")
def activated_listed_by_name() -> None:
    def edit(_t: AdaptiveToolset, _a: Any, result: ToolResult, _b: list[str]) -> None:
        result["structuredContent"]["activated"].sort(key=lambda found: found["name"])

    _edit_result(edit)


@defect("DSC-10.3", "discovery takes the relevant candidates in catalog order, not the best-ranked")
def first_matches_in_catalog_order() -> None:
    def index(_toolset: AdaptiveToolset, base: Any) -> AlteredIndex:
        return AlteredIndex(base, matches=lambda found, _query: iter(sorted(found)))

    during_search(index=index)


# Permitted variants (not defects) ------------------------------------------------------------


# The clauses whose checks need discovery to activate something: a host whose discovery
# activates little must pass them all, never leave them in error.
_NEEDS_ACTIVATION: tuple[str, ...] = (
    *("CAT-4", "POL-1", "POL-4", "SEL-1", "SEL-3", "DEF-2", "DEF-3", "GATE-3", "BUD-2", "BUD-3", "ISO-1", "ISO-2"),
    *("DSC-4", "DSC-5", "DSC-6", "DSC-8", "DSC-9"),
)


@variant(
    "DSC-5.6",
    "discovery activates a candidate only when the query is its qualified name; it claims only core",
    clauses=_NEEDS_ACTIVATION,
)
def activates_only_what_it_must() -> None:
    """DSC-5.6 permits a call to activate fewer tools than its bounds allow, even none:
    this discovery activates a candidate only when the query is its qualified name, the one
    activation DSC-5.8 demands. An implementation doing so claims only the core profile."""
    initialize = ReferenceDriver.initialize

    async def core_only(self: ReferenceDriver, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {**await initialize(self, params), "profiles": ["core"]}

    _swap(ReferenceDriver, "initialize", core_only)

    def index(toolset: AdaptiveToolset, base: Any) -> AlteredIndex:
        entries = toolset.catalog.entries

        def exact(found: Iterator[int], query: str) -> Iterator[int]:
            return (i for i in found if entries[i].qualified_name == query.strip())

        return AlteredIndex(base, matches=exact)

    during_search(index=index)
