"""Defects of runs with eviction (EVC-*), one function each.

Each first turns the ``eviction`` profile on (the reference driver with ``--eviction lru``),
then breaks one sentence in the narrowest piece of :class:`AdaptiveToolset` that carries it:
the search that evicts, the recency that orders, the gate, or the result that tells.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from reference_impl import ToolResult
from reference_impl._budgets import Budgets
from reference_impl._catalog import CatalogEntry
from reference_impl._eviction import Recency
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import _session
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = ["claiming"]


def claiming(*, eviction: str | None = None, refresh: bool = False) -> None:
    """Make every reference driver of this process claim (and turn on) the given profiles."""
    init = _session.ReferenceDriver.__init__

    def __init__(self: _session.ReferenceDriver, **options: Any) -> None:
        # The command line leaves them off (None, False); the defect turns them on.
        options["eviction"] = options.get("eviction") or eviction
        options["refresh"] = options.get("refresh") or refresh
        init(self, **options)

    _swap(_session.ReferenceDriver, "__init__", __init__)


def unclaimed(profile: str) -> None:
    """Leave ``profile`` out of the driver's claims, whatever it has turned on."""
    initialize = _session.ReferenceDriver.initialize

    async def claims(self: _session.ReferenceDriver, params: Any = None) -> _session.InitializeResult:
        result = await initialize(self, params)
        return {**result, "profiles": [p for p in result["profiles"] if p != profile]}

    _swap(_session.ReferenceDriver, "initialize", claims)


def asked_by_every_run(field: str, value: Any) -> None:
    """A run opened without ``field`` reads it as ``value``, the driver's own setting, not as off."""
    original = _session.ReferenceDriver.open_run

    async def open_run(self: _session.ReferenceDriver, params: Mapping[str, Any]) -> str:
        if isinstance(params, Mapping) and field not in params:
            params = {**params, field: value}
        return await original(self, params)

    _swap(_session.ReferenceDriver, "open_run", open_run)


def _evicting() -> None:
    claiming(eviction="lru")


def _search_wrapped(after: Any) -> None:
    """``after(toolset, result)`` rewrites each discovery result of a run with eviction."""
    search = AdaptiveToolset.search

    def wrapped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        result = search(self, arguments)
        return after(self, result) if self.eviction is not None and not result["isError"] else result

    _swap(AdaptiveToolset, "search", wrapped)


@defect("EVC-1.1", "a run with eviction fills one tool past the dynamic capacity before it evicts")
def eviction_one_past_the_capacity() -> None:
    """The search of a run with eviction counts the room against 113, not 112."""
    _evicting()
    search = AdaptiveToolset.search

    def wrapped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        if self.eviction is None:
            return search(self, arguments)
        budgets = self.budgets
        self.budgets = Budgets(base_tools=budgets.base_tools - 1, discovery_tools=budgets.discovery_tools)
        try:
            return search(self, arguments)
        finally:
            self.budgets = budgets

    _swap(AdaptiveToolset, "search", wrapped)


@defect("EVC-1.2", "eviction starts while four slots of the capacity are still free")
def eviction_before_it_is_needed() -> None:
    """Room is made ahead of need: a discovery call with four slots or fewer left evicts first."""
    _evicting()
    search = AdaptiveToolset.search

    def wrapped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        evictable = self._evictable() if self.eviction is not None else []
        early = None
        if evictable and self.budgets.dynamic_capacity - len(self._active) <= 4:
            early = self._evict(evictable[0])
        result = search(self, arguments)
        if early is None or result["isError"]:
            return result
        content = dict(result["structuredContent"])
        content["evicted"] = [{"name": early.exposed_name}, *content.get("evicted", [])]
        text = result["content"][0]["text"] + f"\nDeactivated to make room:\n- {early.exposed_name}"
        return {**result, "content": [{"type": "text", "text": text}], "structuredContent": content}

    _swap(AdaptiveToolset, "search", wrapped)


@defect("EVC-1.3", "a discovery call that finds nothing at the capacity still evicts the least recently used")
def eviction_on_an_empty_call() -> None:
    """A call that activates nothing in a full run evicts a tool anyway, "to make room"."""
    _evicting()

    def evict_anyway(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        content = dict(result["structuredContent"])
        evictable = self._evictable()
        if content["activated"] or len(self._active) < self.budgets.dynamic_capacity or not evictable:
            return result
        gone = self._evict(evictable[0])
        content["evicted"] = [{"name": gone.exposed_name}]
        content["activeCount"] = len(self._active)
        content["remainingCapacity"] += 1
        text = result["content"][0]["text"] + f"\nDeactivated to make room:\n- {gone.exposed_name}"
        return {**result, "content": [{"type": "text", "text": text}], "structuredContent": content}

    _search_wrapped(evict_anyway)


@defect("EVC-2.1", "an evicted tool is refused but stays in the definitions")
def evicted_tool_still_listed() -> None:
    """Eviction reaches the gate; the definitions keep showing what was evicted."""
    _evicting()
    evict = AdaptiveToolset._evict
    definitions = AdaptiveToolset.definitions

    def _evict(self: AdaptiveToolset, i: int) -> CatalogEntry:
        entry = evict(self, i)
        self.__dict__.setdefault("_ghosts", []).append(entry)
        return entry

    def listed(self: AdaptiveToolset) -> list[dict[str, Any]]:
        ghosts = [
            e.definition() for e in self.__dict__.get("_ghosts", []) if e.exposed_name not in self._active_by_name
        ]
        return definitions(self) + ghosts

    _swap(AdaptiveToolset, "_evict", _evict)
    _swap(AdaptiveToolset, "definitions", listed)


@defect("EVC-2.2", "an evicted tool leaves the definitions but the gate still runs it")
def evicted_tool_still_executable() -> None:
    """The definition gate forgets an evicted tool; the execution gate does not."""
    _evicting()
    evict = AdaptiveToolset._evict
    call = AdaptiveToolset.call

    def _evict(self: AdaptiveToolset, i: int) -> CatalogEntry:
        entry = evict(self, i)
        self.__dict__.setdefault("_still_callable", {})[entry.exposed_name] = entry
        return entry

    async def gate(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self.__dict__.get("_still_callable", {}).get(name)
        if entry is not None and name not in self._active_by_name:
            return await self._connections[entry.server_id].call(entry.name, arguments or {})
        return await call(self, name, arguments)

    _swap(AdaptiveToolset, "_evict", _evict)
    _swap(AdaptiveToolset, "call", gate)


@defect("EVC-3.1", "required tools are evicted like any other")
def required_tools_evicted() -> None:
    """Eviction does not set the required tools aside: the pinned tools of the first round go first."""
    _evicting()
    _swap(AdaptiveToolset, "_required", lambda self: set())


@defect("EVC-3.2", "a successful call does not count as a use: eviction follows activation order only")
def calls_are_not_uses() -> None:
    """Recency is the moment of activation; calling a tool does not keep it."""
    _evicting()
    call = AdaptiveToolset.call

    async def forgetful(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        use = self._recency.use
        self._recency.use = lambda names: None  # type: ignore[method-assign]
        try:
            return await call(self, name, arguments)
        finally:
            self._recency.use = use  # type: ignore[method-assign]

    _swap(AdaptiveToolset, "call", forgetful)


@defect("EVC-3.3", "tools last used together are evicted last qualified name first")
def ties_by_descending_name() -> None:
    """Among tools of the same last use, the greatest qualified name goes first."""
    _evicting()

    def least_recent(self: Recency, names: Iterable[str]) -> list[str]:
        by_moment = sorted(names, reverse=True)
        return sorted(by_moment, key=lambda name: self._last.get(name, 0))

    _swap(Recency, "least_recent", least_recent)


# Runs of this driver process, counted: the tie-break flips from one run to the next.
_RUNS = itertools.count()


@defect("EVC-3.4", "ties are broken one way in one run and the other way in the next")
def ties_alternate_between_runs() -> None:
    """Each toolset picks its tie-break direction by a run counter: the same calls, other evictions."""
    _evicting()
    init = AdaptiveToolset.__init__

    def __init__(self: AdaptiveToolset, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.__dict__["_descending"] = next(_RUNS) % 2 == 1

    evictable = AdaptiveToolset._evictable

    def _evictable(self: AdaptiveToolset) -> list[int]:
        order = evictable(self)
        if not self.__dict__.get("_descending"):
            return order
        moment = self._recency._last
        names = {i: self.catalog.entries[i].qualified_name for i in order}
        descending = sorted(order, key=lambda i: names[i], reverse=True)
        return sorted(descending, key=lambda i: moment.get(names[i], 0))

    _swap(AdaptiveToolset, "__init__", __init__)
    _swap(AdaptiveToolset, "_evictable", _evictable)


@defect("EVC-4.1", "the discovery result of a call that evicted does not carry evicted")
def evicted_not_reported() -> None:
    """The result says what was activated, not what had to go for it."""
    _evicting()

    def silent(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        content = {k: v for k, v in result["structuredContent"].items() if k != "evicted"}
        return {**result, "structuredContent": content}

    _search_wrapped(silent)


@defect("EVC-4.2", "the text of a discovery result does not name the evicted tools")
def evicted_not_in_the_text() -> None:
    """``structuredContent`` has ``evicted``; the text a model reads says nothing of it."""
    _evicting()

    def quiet(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        text = result["content"][0]["text"].split("\nDeactivated to make room")[0]
        return {**result, "content": [{"type": "text", "text": text}]}

    _search_wrapped(quiet)


@defect("EVC-4.2", "the text lists each evicted tool with its bullet glued to the name")
def evicted_names_glued_to_their_bullets() -> None:
    """``-s1__a`` where ``- s1__a`` was meant: the text holds each name, but as part of another
    (a tool name may begin with ``-``), so a model cannot tell what it lost."""
    _evicting()

    def glued(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        evicted = [e["name"] for e in result["structuredContent"].get("evicted", [])]
        if not evicted:
            return result
        text = result["content"][0]["text"].split("\nDeactivated to make room")[0]
        text += "\nDeactivated to make room; these can no longer be called:\n" + "\n".join(f"-{n}" for n in evicted)
        return {**result, "content": [{"type": "text", "text": text}]}

    _search_wrapped(glued)


@defect("DSC-6.4", "the text of a discovery call that evicted names what left and not what came")
def evicting_text_names_only_the_evicted() -> None:
    """When a call evicts, the lines on eviction take the place of the text, not their place after
    it: a model that reads only the text learns what it can no longer call, not what it now can."""
    _evicting()

    def lost_the_gain(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        text = result["content"][0]["text"]
        if "\nDeactivated to make room" not in text:
            return result
        text = "Deactivated to make room" + text.split("\nDeactivated to make room", 1)[1]
        return {**result, "content": [{"type": "text", "text": text}]}

    _search_wrapped(lost_the_gain)


@variant("ID-19", "a call of an active tool that comes back with the error flag counts as a use", clauses=("EVC-3",))
def failed_calls_are_uses() -> None:
    _evicting()
    call = AdaptiveToolset.call

    async def counted(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self._active_by_name.get(name)
        result = await call(self, name, arguments)
        if result.get("isError") and entry is not None and self._active_by_name.get(name) is entry:
            self._recency.use([entry.qualified_name])
        return result

    _swap(AdaptiveToolset, "call", counted)


@defect("EVC-4.3", "a call that evicted nothing names the next tool to go as evicted")
def next_to_go_named_as_evicted() -> None:
    """When nothing was evicted, ``evicted`` holds the tool that would go next, as a warning."""
    _evicting()

    def warn(self: AdaptiveToolset, result: dict[str, Any]) -> dict[str, Any]:
        content = dict(result["structuredContent"])
        evictable = self._evictable()
        if content.get("evicted") or not evictable:
            return result
        content["evicted"] = [{"name": self.catalog.entries[evictable[0]].exposed_name}]
        return {**result, "structuredContent": content}

    _search_wrapped(warn)


@defect("EVC-5.1", "a tool once evicted is never a discovery candidate again")
def evicted_tools_are_gone_for_good() -> None:
    """Eviction also bans the tool from the rest of the run."""
    _evicting()
    evict = AdaptiveToolset._evict
    search = AdaptiveToolset.search

    def _evict(self: AdaptiveToolset, i: int) -> CatalogEntry:
        entry = evict(self, i)
        self.__dict__.setdefault("_banned", set()).add(entry.qualified_name)
        return entry

    def wrapped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        banned = self.__dict__.get("_banned", set())
        eligibility = self._eligibility
        hidden = {e.index for e in self.catalog.entries if e.qualified_name in banned}
        self._eligibility = _Without(eligibility, hidden)  # type: ignore[assignment]
        try:
            return search(self, arguments)
        finally:
            self._eligibility = eligibility

    _swap(AdaptiveToolset, "_evict", _evict)
    _swap(AdaptiveToolset, "search", wrapped)


class _Without:
    """An eligibility that also excludes some tools."""

    def __init__(self, inner: Any, hidden: set[int]) -> None:
        self._inner = inner
        self._hidden = hidden

    def is_eligible(self, index: int) -> bool:
        return index not in self._hidden and bool(self._inner.is_eligible(index))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@defect("EVC-5.2", "in a run with eviction a server's maxActiveTools is not checked")
def eviction_ignores_the_server_cap() -> None:
    """Eviction is taken to make every limit roll, the per-server cap included."""
    _evicting()
    search = AdaptiveToolset.search

    def wrapped(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        if self.eviction is None:
            return search(self, arguments)
        policies = self._policies
        self._policies = {sid: _Uncapped(p) for sid, p in policies.items()}  # type: ignore[misc]
        try:
            return search(self, arguments)
        finally:
            self._policies = policies

    _swap(AdaptiveToolset, "search", wrapped)


class _Uncapped:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.max_active_tools = 96

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _count_on_eviction(change: int) -> None:
    """An eviction moves its server's count of active tools by ``change`` instead of -1."""
    evict = AdaptiveToolset._evict

    def _evict(self: AdaptiveToolset, i: int) -> CatalogEntry:
        entry = evict(self, i)
        self._per_server[entry.server_id] += 1 + change
        return entry

    _swap(AdaptiveToolset, "_evict", _evict)


@defect("EVC-5.1", "an evicted tool still counts against its server's maxActiveTools")
def evicted_tools_keep_their_servers_room() -> None:
    """The active set lets the tool go; its server's count does not, so a capped server whose
    tools were all evicted has no room left to find them again."""
    _evicting()
    _count_on_eviction(0)


@defect("EVC-5.2", "an eviction counts its server down twice, past its maxActiveTools on the way back")
def evictions_counted_twice() -> None:
    """Each evicted tool frees two places of its server's cap: a capped server rolled out and
    found again ends with more active tools than its maxActiveTools."""
    _evicting()
    _count_on_eviction(-2)


@defect("EVC-5.3", "a run with eviction refuses to grow at the capacity, as a run without it does")
def eviction_never_happens() -> None:
    """The driver claims eviction and turns it on, but discovery never evicts."""
    _evicting()
    _swap(AdaptiveToolset, "_evictable", lambda self: [])


@defect("EVC-2.1", "the request keeps the tools it carried while the number of active tools stays the same")
def request_cached_while_the_count_holds() -> None:
    """A request kept for the provider's prompt cache and made anew only when the active count
    changes: an eviction that swaps tools for as many others leaves the evicted ones in it."""
    _evicting()
    original = _session.ReferenceDriver.request
    kept: dict[Any, tuple[int, list[Any]]] = {}

    async def request(self: _session.ReferenceDriver, run_id: Any, extra_tools: Any = ()) -> list[Any]:
        made = await original(self, run_id, extra_tools)
        if run_id in kept and kept[run_id][0] == len(made):
            return kept[run_id][1]
        kept[run_id] = (len(made), made)
        return made

    _swap(_session.ReferenceDriver, "request", request)


@defect("DEF-3.1", "a driver with eviction evicts in every run, also one opened without it")
def eviction_for_every_run() -> None:
    """``eviction`` left out reads as the driver's own setting, not as growth only."""
    _evicting()
    asked_by_every_run("eviction", "lru")


@defect("DEF-3.1", "a driver that does not claim eviction evicts in the runs that ask for it")
def eviction_without_the_claim() -> None:
    """The eviction of a run that asks for it is on, but the driver's claims leave it out."""
    _evicting()
    unclaimed("eviction")
