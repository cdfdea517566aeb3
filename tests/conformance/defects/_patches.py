"""The patches, one function per defect; each is applied alone, in a driver process.

Every patch replaces the narrowest piece of reference_impl that carries the behaviour it
breaks, so that the defect shows on its own clause and nowhere else by accident.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from reference_impl import _budgets, _catalog, _connections, _policy, _ranking, _selection, _toolset
from reference_impl._catalog import Catalog, CatalogEntry
from reference_impl._config import ToolPolicy
from reference_impl._ranking import LexicalIndex
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import _session

__all__: list[str] = []

Budgets = _budgets.Budgets


# Budgets ---------------------------------------------------------------------------------


def first_round_97() -> None:
    """First-round capacity computed from 97 instead of 96."""
    Budgets.first_round_capacity = property(  # type: ignore[method-assign,assignment]
        lambda self: _budgets.FIRST_ROUND_LIMIT + 1 - self.base_tools - self.discovery_tools
    )


def dynamic_113() -> None:
    """Dynamic capacity computed from 113 instead of 112."""
    Budgets.dynamic_capacity = property(  # type: ignore[method-assign,assignment]
        lambda self: _budgets.DYNAMIC_LIMIT + 1 - self.base_tools - self.discovery_tools
    )


def no_final_check() -> None:
    """``run.request`` assembles the request without the 128 check."""

    def assemble_request(
        definitions: Sequence[Mapping[str, Any]], extra_tools: Sequence[Mapping[str, Any]] = ()
    ) -> list[dict[str, Any]]:
        return [dict(tool) for tool in definitions] + [dict(tool) for tool in extra_tools]

    _session.assemble_request = assemble_request  # type: ignore[assignment]


# Policy ----------------------------------------------------------------------------------


def _patch_read_only(read_only: Any) -> None:
    original = _policy.exclusion_reason

    def exclusion_reason(entry: CatalogEntry, policy: ToolPolicy) -> str | None:
        if policy.side_effects == "readOnly" and read_only(entry.annotations):
            # Judge the rest of the policy as if the tool were read-only.
            return original(entry, _allow_side_effects(policy))
        return original(entry, policy)

    _policy.exclusion_reason = exclusion_reason
    _toolset.exclusion_reason = exclusion_reason  # type: ignore[attr-defined]


def _allow_side_effects(policy: ToolPolicy) -> ToolPolicy:
    from dataclasses import replace

    return replace(policy, side_effects="allow")


def missing_annotation_is_read_only() -> None:
    """A tool without annotations counts as read-only (fails open)."""
    _patch_read_only(lambda annotations: annotations is None or annotations.get("readOnlyHint") is True)


def string_true_is_true() -> None:
    """``readOnlyHint`` judged by truthiness: ``"true"`` and ``1`` pass."""
    _patch_read_only(lambda annotations: annotations is not None and bool(annotations.get("readOnlyHint")))


def pinned_beats_deny() -> None:
    """A pinned tool escapes ``deniedTools``."""
    original = _policy.exclusion_reason

    def exclusion_reason(entry: CatalogEntry, policy: ToolPolicy) -> str | None:
        if entry.name in policy.denied_tools and entry.name in policy.pinned_tools:
            from dataclasses import replace

            denied = tuple(name for name in policy.denied_tools if name != entry.name)
            return original(entry, replace(policy, denied_tools=denied))
        return original(entry, policy)

    _policy.exclusion_reason = exclusion_reason
    _toolset.exclusion_reason = exclusion_reason  # type: ignore[attr-defined]


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


def gate_checks_prefix_only() -> None:
    """The gate runs any name whose server prefix names a server of the run."""
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> dict[str, Any]:
        target = _split_prefix(self, name) if _refused_by_gate(self, name) else None
        if target is not None and (arguments is None or isinstance(arguments, Mapping)):
            server_id, tool = target
            return await self._connections[server_id].call(tool, arguments or {})
        return await original(self, name, arguments)

    AdaptiveToolset.call = call  # type: ignore[method-assign]


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

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> dict[str, Any]:
        if _refused_by_gate(self, name):
            target = resemble(self, name)
            if target is not None:
                server_id, tool = target
                args = arguments if isinstance(arguments, Mapping) else {}
                await self._connections[server_id].call(tool, args)
        return await original(self, name, arguments)

    AdaptiveToolset.call = call  # type: ignore[method-assign]


# Definitions -----------------------------------------------------------------------------


def definitions_frozen() -> None:
    """Definitions are copied when the run opens; discovered tools never appear in them."""
    original_init = AdaptiveToolset.__init__
    original_definitions = AdaptiveToolset.definitions

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._frozen_definitions = original_definitions(self)  # type: ignore[attr-defined]

    def definitions(self: AdaptiveToolset) -> list[dict[str, Any]]:
        return [dict(tool) for tool in self._frozen_definitions]  # type: ignore[attr-defined]

    AdaptiveToolset.__init__ = __init__  # type: ignore[method-assign]
    AdaptiveToolset.definitions = definitions  # type: ignore[method-assign]


# Cleanup ---------------------------------------------------------------------------------

# Connection tasks of failed opens, kept so that nothing closes them.
_LEAKED: list[asyncio.Task[None]] = []


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
        list_timeout: float = _toolset.DEFAULT_LIST_TIMEOUT,
        call_timeout: float | None = None,
    ) -> AsyncIterator[AdaptiveToolset]:
        _toolset.validate_servers(servers)
        base = _toolset._check_base_tools(base_tools)
        connections = {
            server.id: _connections.Connection(server, list_timeout=list_timeout, call_timeout=call_timeout)
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
            eligibility = _policy.resolve_policies(servers, catalog)
            docs = [
                _toolset.ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only)
                for e in catalog.entries
            ]
            index = (ranker or _toolset.LexicalRanker()).index(docs, system_prompt)
            budgets = Budgets(base_tools=len(base), discovery_tools=1 if eligibility.auto_servers else 0)
            toolset = AdaptiveToolset(servers, connections, catalog, eligibility, index, budgets, base, user_message)
        except BaseException:
            _LEAKED.extend(tasks)  # the defect: no connection is told to stop
            raise
        try:
            yield toolset
        finally:
            for connection in connections.values():
                connection.stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

    _session.open_toolset = open_toolset  # type: ignore[assignment]


# Ranking ---------------------------------------------------------------------------------

# Listing position of every qualified name of the catalog built last (servers in their
# configured order, then each server's tools in listed order).
_LISTING_POSITION: dict[str, int] = {}


def ties_by_listing_order() -> None:
    """Equal scores are ordered by listing position instead of qualified name.

    The ranker breaks ties on the ``qualified_name`` of its documents and uses that field
    for nothing else, so the documents get a listing-position key in its place.
    """
    original_from_listings = Catalog.from_listings.__func__  # type: ignore[attr-defined]
    original_doc = _toolset.ToolDoc

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        catalog = original_from_listings(cls, listings)
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

    Catalog.from_listings = classmethod(from_listings)  # type: ignore[method-assign,assignment]
    _toolset.ToolDoc = tool_doc  # type: ignore[assignment,misc]


def _rank_ties_by(key: Any) -> None:
    """Break equal scores by ``key(qualified name)`` instead of the qualified name itself.

    The ranker uses a document's ``qualified_name`` for ties and nothing else, so the
    documents get ``key(name)`` in its place, made unique by the name itself.
    """
    original_doc = _toolset.ToolDoc

    def tool_doc(qualified: str, server_id: str, name: str, description: str, read_only: bool) -> Any:
        return original_doc(f"{key(qualified)}\0{qualified}", server_id, name, description, read_only)

    _toolset.ToolDoc = tool_doc  # type: ignore[assignment,misc]


def ties_casefolded() -> None:
    """Equal scores are ordered by casefolded qualified name (``Linear`` after ``github``)."""
    _rank_ties_by(str.casefold)


def write_penalty_31() -> None:
    """Under read intent a write-shaped tool loses 31 instead of 32."""
    _ranking.WRITE_PENALTY = -31


def underscore_in_words() -> None:
    """Words are runs of ``\\w``: the underscore no longer separates them."""
    _ranking._WORD = re.compile(r"\w+")


def ascii_triggers_as_substrings() -> None:
    """Aliases and read signals fire anywhere in the message: ``pr`` inside ``project``."""
    _ranking.fires = lambda trigger, text, text_words: trigger in text


def read_signal_from_the_prompt() -> None:
    """A read signal in the system prompt turns read intent on."""
    original_init = LexicalIndex.__init__
    original_parse = LexicalIndex._parse

    def __init__(self: LexicalIndex, tools: Sequence[Any], system_prompt: str) -> None:
        original_init(self, tools, system_prompt)
        prompt = system_prompt.casefold()
        words = frozenset(_ranking.words(prompt))
        self._prompt_reads = any(_ranking.fires(s, prompt, words) for s in _ranking.READ_SIGNALS)  # type: ignore[attr-defined]

    def _parse(self: LexicalIndex, query: str) -> Any:
        parsed = original_parse(self, query)
        if self._prompt_reads and not parsed.read_intent:  # type: ignore[attr-defined]
            parsed = replace(parsed, read_intent=True)
            self._last = parsed
        return parsed

    LexicalIndex.__init__ = __init__  # type: ignore[method-assign]
    LexicalIndex._parse = _parse  # type: ignore[method-assign]


# Catalog ---------------------------------------------------------------------------------


def pagination_ignored() -> None:
    """Only the first ``tools/list`` page is read."""

    async def _list_all(self: _connections.Connection, client: Any) -> list[Any]:
        self._raw_pages.clear()
        try:
            page = await client.list_tools(cursor=None, cache_mode="refresh")
        except ValidationError as error:
            raise self._malformed(error) from None
        return self._raw_tools(page)

    _connections.Connection._list_all = _list_all  # type: ignore[method-assign]


# Selection -------------------------------------------------------------------------------


def no_fairness_cap() -> None:
    """The first round caps a server only by its maxActiveTools, not by 12."""
    _selection.FAIRNESS_CAP = 10**9  # type: ignore[attr-defined]


class _Unbounded:
    max_active_tools = 10**9


def discovery_ignores_max_active() -> None:
    """Discovery activates tools of a server that is at its maxActiveTools."""
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> dict[str, Any]:
        policies = self._policies
        self._policies = {server_id: _Unbounded() for server_id in policies}  # type: ignore[misc]
        try:
            return original(self, arguments)
        finally:
            self._policies = policies

    AdaptiveToolset.search = search  # type: ignore[method-assign]


# Isolation -------------------------------------------------------------------------------

# Open runs by fleet: the servers and the catalog they listed.
_OPEN_BY_FLEET: dict[tuple[Any, ...], list[AdaptiveToolset]] = {}


def _fleet_key(toolset: AdaptiveToolset) -> tuple[Any, ...]:
    servers = tuple((server.id, repr(server.target)) for server in toolset.servers)
    return servers, tuple(entry.qualified_name for entry in toolset.catalog.entries)


def shared_active_set() -> None:
    """Runs open at the same time over the same fleet share one active set."""
    original = _session.open_toolset

    @asynccontextmanager
    async def open_toolset(*args: Any, **kwargs: Any) -> AsyncIterator[AdaptiveToolset]:
        async with original(*args, **kwargs) as toolset:
            key = _fleet_key(toolset)
            group = _OPEN_BY_FLEET.setdefault(key, [])
            if group:
                shared = group[0]
                for i in toolset._active:
                    if i not in shared._active_set:
                        shared._activate(i)
                toolset._active = shared._active
                toolset._active_set = shared._active_set
                toolset._per_server = shared._per_server
                toolset._active_by_name = shared._active_by_name
            group.append(toolset)
            try:
                yield toolset
            finally:
                group.remove(toolset)
                if not group:
                    del _OPEN_BY_FLEET[key]

    _session.open_toolset = open_toolset  # type: ignore[assignment]
