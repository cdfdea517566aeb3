"""Where the selection, budget and discovery defects take hold of the reference.

Each helper replaces one seam of reference_impl (the first round, the ranking a walk
reads, the policies a discovery call sees, the definitions a run lists, a discovery
result) with a wrapper, so that a defect states only what it gets wrong.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reference_impl import Definition, ToolResult, _toolset
from reference_impl._budgets import Budgets
from reference_impl._catalog import Catalog
from reference_impl._config import ServerConfig, ToolPolicy
from reference_impl._discovery import DiscoveryArguments
from reference_impl._policy import Eligibility
from reference_impl._ranking import RankingIndex, ScoreBreakdown
from reference_impl._selection import FirstRound
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import ReferenceDriver
from reference_impl.driver._session import InitializeResult
from tests.conformance.defects._patches import _swap

__all__ = [
    "AlteredIndex",
    "FirstRoundCall",
    "MaxActive",
    "after_search",
    "during_search",
    "listing_positions",
    "mcp_order",
    "per_toolset",
    "ranker_of_its_own",
    "wrap_first_round",
    "wrap_parse",
]

Select = Callable[[Sequence[ServerConfig], Catalog, Eligibility, RankingIndex, Budgets, str], FirstRound]


class FirstRoundCall:
    """The arguments of one first-round selection, and the reference's own selection."""

    def __init__(
        self,
        select: Select,
        servers: Sequence[ServerConfig],
        catalog: Catalog,
        eligibility: Eligibility,
        index: RankingIndex,
        budgets: Budgets,
        user_message: str,
    ) -> None:
        self._select = select
        self.servers, self.catalog, self.eligibility = servers, catalog, eligibility
        self.index, self.budgets, self.user_message = index, budgets, user_message

    def select(
        self,
        *,
        servers: Sequence[ServerConfig] | None = None,
        eligibility: Eligibility | None = None,
        index: RankingIndex | None = None,
        budgets: Budgets | None = None,
    ) -> FirstRound:
        """The reference's first round, with any of its inputs replaced."""
        return self._select(
            self.servers if servers is None else servers,
            self.catalog,
            self.eligibility if eligibility is None else eligibility,
            self.index if index is None else index,
            self.budgets if budgets is None else budgets,
            self.user_message,
        )

    def server_of(self, i: int) -> str:
        return self.catalog.entries[i].server_id


def wrap_first_round(defective: Callable[[FirstRoundCall], FirstRound]) -> None:
    """Select every run's first round with ``defective``."""
    original: Select = getattr(_toolset, "select_first_round")  # noqa: B009 - not exported

    def select(*args: Any) -> FirstRound:
        return defective(FirstRoundCall(original, *args))

    _swap(_toolset, "select_first_round", select)


Reorder = Callable[[Iterator[int], str], Iterator[int]]


class AlteredIndex:
    """A ranking index whose ``order`` (what the first round walks) and ``matches`` (what
    discovery walks) go through the given functions."""

    def __init__(self, index: RankingIndex, *, order: Reorder | None = None, matches: Reorder | None = None) -> None:
        self._index = index
        self._order = order
        self._matches = matches

    def order(self, query: str) -> Iterator[int]:
        ranked = self._index.order(query)
        return ranked if self._order is None else self._order(ranked, query)

    def matches(self, query: str) -> Iterator[int]:
        found = self._index.matches(query)
        return found if self._matches is None else self._matches(found, query)

    def breakdown(self, tool: int, query: str) -> ScoreBreakdown:
        return self._index.breakdown(tool, query)


@dataclass(frozen=True, slots=True)
class MaxActive:
    """All a discovery call reads of a server's policy, for a defect to set at will."""

    max_active_tools: int


def during_search(
    *,
    policies: Callable[[AdaptiveToolset, str, ToolPolicy], ToolPolicy | MaxActive] | None = None,
    eligibility: Callable[[AdaptiveToolset], Eligibility] | None = None,
    index: Callable[[AdaptiveToolset, RankingIndex], RankingIndex] | None = None,
    when: Callable[[AdaptiveToolset, Any], bool] | None = None,
) -> None:
    """Let discovery calls (those ``when`` accepts: all by default) see other per-server
    policies, eligibility or ranking index."""
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        if when is not None and not when(self, arguments):
            return original(self, arguments)
        saved = self._policies, self._eligibility, self._index
        if policies is not None:
            # A discovery call reads only maxActiveTools of a policy.
            _swap(self, "_policies", {sid: policies(self, sid, p) for sid, p in saved[0].items()})
        if eligibility is not None:
            self._eligibility = eligibility(self)
        if index is not None:
            self._index = index(self, saved[2])
        try:
            return original(self, arguments)
        finally:
            self._policies, self._eligibility, self._index = saved

    _swap(AdaptiveToolset, "search", search)


def wrap_parse(
    defective: Callable[[Callable[[Any, frozenset[str]], DiscoveryArguments], Any, frozenset[str]], DiscoveryArguments],
) -> None:
    """Check every discovery call's arguments with ``defective(reference check, arguments, server ids)``."""
    original = getattr(_toolset, "parse_arguments")  # noqa: B009 - not exported

    def parse(arguments: Any, known: frozenset[str]) -> DiscoveryArguments:
        return defective(original, arguments, known)

    _swap(_toolset, "parse_arguments", parse)


def after_search(edit: Callable[[AdaptiveToolset, Any, ToolResult, list[str]], ToolResult]) -> None:
    """Pass every discovery result through ``edit(toolset, arguments, result, activated before)``."""
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        before = list(self.active_names)
        return edit(self, arguments, original(self, arguments), before)

    _swap(AdaptiveToolset, "search", search)


def mcp_order(reorder: Callable[[AdaptiveToolset, list[Definition]], list[Definition]]) -> None:
    """List every run's active MCP tools in the order ``reorder`` gives them."""
    original = AdaptiveToolset.definitions

    def definitions(self: AdaptiveToolset) -> list[Definition]:
        tools = original(self)
        head = 1 if self.discovery_registered else 0
        return tools[:head] + reorder(self, tools[head:])

    _swap(AdaptiveToolset, "definitions", definitions)


def per_toolset(default: Callable[[AdaptiveToolset], Any]) -> Callable[[AdaptiveToolset], Any]:
    """A value kept per run, made by ``default`` the first time it is asked for."""
    values: weakref.WeakKeyDictionary[AdaptiveToolset, Any] = weakref.WeakKeyDictionary()

    def get(toolset: AdaptiveToolset) -> Any:
        if toolset not in values:
            values[toolset] = default(toolset)
        return values[toolset]

    return get


def listing_positions() -> Mapping[int, dict[str, int]]:
    """Record, for every catalog built from now on, each tool's position in its server's listing.

    Keyed by ``id(catalog)``, with qualified names inside.
    """
    positions: dict[int, dict[str, int]] = {}
    original = Catalog.from_listings.__func__  # type: ignore[attr-defined]

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        catalog: Catalog = original(cls, listings)
        where: dict[str, int] = {}
        for server_id, tools in listings.items():
            for position, raw in enumerate(tools):
                name = raw.get("name") if isinstance(raw, Mapping) else None
                if isinstance(name, str):
                    where.setdefault(f"{server_id}__{name}", position)
        positions[id(catalog)] = where
        return catalog

    _swap(Catalog, "from_listings", classmethod(from_listings))
    return positions


def ranker_of_its_own() -> None:
    """Claim the ``core`` profile without ``lexical``: the host ranks as it chooses (ID-4),
    so that a defect of a sentence every ranker must keep is not also one of the lexical
    formula, which pins the order of every tie and every score."""
    initialize = ReferenceDriver.initialize

    async def _initialize(self: ReferenceDriver, params: Mapping[str, object] | None = None) -> InitializeResult:
        hello = await initialize(self, params)
        return {**hello, "profiles": [profile for profile in hello["profiles"] if profile != "lexical"]}

    _swap(ReferenceDriver, "initialize", _initialize)
