"""Defects of selection (SEL-*): the first round's caps, fill and walk, maxActiveTools
across the run, and determinism."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reference_impl import Definition, _selection, _trace
from reference_impl._budgets import DEFAULT_MAX_ACTIVE_TOOLS, FAIRNESS_CAP
from reference_impl._config import ServerConfig, ToolPolicy
from reference_impl._policy import Eligibility
from reference_impl._selection import FirstRound
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import ReferenceDriver
from tests.conformance.defects._hooks import (
    AlteredIndex,
    FirstRoundCall,
    MaxActive,
    during_search,
    listing_positions,
    mcp_order,
    per_toolset,
    ranker_of_its_own,
    wrap_first_round,
)
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []


def _with_cap(cap: int, call: FirstRoundCall) -> FirstRound:
    """The reference's first round under another per-server cap than 12."""
    saved = getattr(_selection, "FAIRNESS_CAP")  # noqa: B009 - not exported
    _swap(_selection, "FAIRNESS_CAP", cap)
    try:
        return call.select()
    finally:
        _swap(_selection, "FAIRNESS_CAP", saved)


def _required_total(call: FirstRoundCall) -> int:
    return sum(len(call.eligibility.required[s.id]) for s in call.servers)


@defect("SEL-1.2", "the cap of 12 applies only when the eligible tools do not all fit the capacity")
def fairness_cap_only_when_crowded() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        required = {i for s in call.servers for i in call.eligibility.required[s.id]}
        ranked = sum(
            1
            for e in call.catalog.entries
            if e.server_id in call.eligibility.auto_servers
            and call.eligibility.is_eligible(e.index)
            and e.index not in required
        )
        if ranked <= call.budgets.first_round_capacity - _required_total(call):
            return _with_cap(10**9, call)
        return call.select()

    wrap_first_round(select)


@defect("SEL-1.3", "discovery holds every server to the first round's cap of 12")
def discovery_caps_servers_at_12() -> None:
    during_search(
        policies=lambda _t, _s, p: dataclasses.replace(p, max_active_tools=min(FAIRNESS_CAP, p.max_active_tools))
    )


@defect("SEL-2.1", "the first round stops one tool before its capacity is used up")
def first_round_one_short() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        chosen = call.select()
        ranked = [i for i in chosen.active if chosen.outcomes[i] == _trace.SELECTED]
        if ranked and len(chosen.active) == call.budgets.first_round_capacity:
            last = ranked[-1]
            outcomes = {i: outcome for i, outcome in chosen.outcomes.items() if i != last}
            return FirstRound(active=tuple(i for i in chosen.active if i != last), outcomes=outcomes)
        return chosen

    wrap_first_round(select)


@defect("SEL-2.2", "the first round takes only tools that score above zero")
def zero_scores_left_out() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        def positive(order: Iterator[int], query: str) -> Iterator[int]:
            return (i for i in order if call.index.breakdown(i, query).total > 0)

        return call.select(index=AlteredIndex(call.index, order=positive))

    wrap_first_round(select)


@defect("SEL-2.3", "servers not in auto mode are ranked under the cap of 12 instead of taken whole")
def non_auto_servers_ranked() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        e = call.eligibility
        eligibility = Eligibility(
            excluded=e.excluded,
            required={s.id: e.required[s.id] if s.policy.mode == "auto" else () for s in call.servers},
            auto_servers=frozenset(s.id for s in call.servers),
        )
        return call.select(eligibility=eligibility)

    wrap_first_round(select)


@defect("ERR-1.1", "required tools are not checked against maxActiveTools when the run opens")
def required_unchecked_against_max_active() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        servers = []
        for server in call.servers:
            required = len(call.eligibility.required[server.id])
            policy = server.policy
            if required > policy.max_active_tools:
                policy = dataclasses.replace(policy, max_active_tools=required)
            servers.append(dataclasses.replace(server, policy=policy))
        return call.select(servers=servers)

    wrap_first_round(select)


@defect("SEL-3.3", "maxActiveTools 0 is read as 'not set': the default of 24")
def max_active_zero_means_default() -> None:
    original = ToolPolicy.from_wire.__func__  # type: ignore[attr-defined]

    def from_wire(cls: type[ToolPolicy], data: Any, where: str = "policy") -> ToolPolicy:
        if isinstance(data, Mapping):
            value = data.get("maxActiveTools")
            if value == 0 and not isinstance(value, bool):
                data = {**data, "maxActiveTools": DEFAULT_MAX_ACTIVE_TOOLS}
        policy: ToolPolicy = original(cls, data, where)
        return policy

    _swap(ToolPolicy, "from_wire", classmethod(from_wire))


@defect("SEL-3.3", "discovery reads maxActiveTools 0 as no limit")
def discovery_ignores_max_active_zero() -> None:
    during_search(policies=lambda _t, _s, p: MaxActive(10**6) if p.max_active_tools == 0 else p)


@defect("SEL-4.1", "each run's discovery tool carries the run's number in its description")
def discovery_description_numbers_the_run() -> None:
    """The same input gives other definitions in every run: the tools are the same, the
    discovery tool's text is not (and a provider's prompt cache never holds)."""
    opened = itertools.count(1)
    number = per_toolset(lambda _toolset: next(opened))
    original = AdaptiveToolset.definitions

    def definitions(self: AdaptiveToolset) -> list[Definition]:
        tools = original(self)
        if self.discovery_registered:
            head = tools[0]
            tools[0] = {**head, "description": f"{head['description']} (run {number(self)})"}
        return tools

    _swap(AdaptiveToolset, "definitions", definitions)


@defect("SEL-4.2", "equal scores are ordered by the servers' configured order, then by qualified name")
def ties_by_configured_server() -> None:
    """Where a cap or the capacity cuts between equal scores, the servers configured first
    win. A host with a ranker of its own: under the lexical profile the tie order is RNK-8.1's."""
    ranker_of_its_own()

    def select(call: FirstRoundCall) -> FirstRound:
        position = {server.id: k for k, server in enumerate(call.servers)}

        def reordered(order: Iterator[int], query: str) -> Iterator[int]:
            def key(i: int) -> tuple[float, int, str]:
                entry = call.catalog.entries[i]
                return (-call.index.breakdown(i, query).total, position[entry.server_id], entry.qualified_name)

            return iter(sorted(order, key=key))

        return call.select(index=AlteredIndex(call.index, order=reordered))

    wrap_first_round(select)


@defect("SEL-4.3", "the first round walks the tools in the order their servers listed them")
def first_round_in_listing_order() -> None:
    """A host with a ranker of its own that ranks by listing position: under the lexical
    profile any ranking but the formula's breaks its sentences (RNK, SEL-5) first."""
    ranker_of_its_own()
    positions = listing_positions()

    def select(call: FirstRoundCall) -> FirstRound:
        where = positions.get(id(call.catalog), {})

        def listed(order: Iterator[int], _query: str) -> Iterator[int]:
            return iter(sorted(order, key=lambda i: where.get(call.catalog.entries[i].qualified_name, 0)))

        return call.select(index=AlteredIndex(call.index, order=listed))

    wrap_first_round(select)


@variant(
    "ID-1",
    "active tools listed in configuration order: server by server as configured, each as its server listed them",
    clauses=("SEL-4",),
    warns=("SEL-4.5",),
    tests=("test_selection.py::test_same_input_same_definitions_whatever_the_order",),
)
def definitions_in_configuration_order() -> None:
    """The same tools as the reference, in an order that follows the configuration: a
    reading R10 allows but does not recommend (SEL-4.5), since reordering servers or
    listings then changes the definitions a provider caches."""
    positions = listing_positions()

    def configured(toolset: AdaptiveToolset, mcp: list[Definition]) -> list[Definition]:
        server_position = {server.id: k for k, server in enumerate(toolset.servers)}
        where = positions.get(id(toolset.catalog), {})
        entry = {e.exposed_name: e for e in toolset.catalog.entries}
        return sorted(
            mcp,
            key=lambda d: (server_position[entry[d["name"]].server_id], where.get(entry[d["name"]].qualified_name, 0)),
        )

    mcp_order(configured)


def _ranked_first_round(call: FirstRoundCall, ranked_room: Callable[[ServerConfig, int], int]) -> FirstRound:
    """The reference's required tools and checks, then the walk with each auto server
    taking ``ranked_room(server, its required tools)`` ranked tools at most."""
    chosen = call.select()
    e = call.eligibility
    active = [i for i in chosen.active if chosen.outcomes[i] == _trace.REQUIRED]
    outcomes = dict.fromkeys(active, _trace.REQUIRED)
    room = {s.id: ranked_room(s, len(e.required[s.id])) for s in call.servers if s.id in e.auto_servers}
    slots = call.budgets.first_round_capacity - len(active)
    for i in call.index.order(call.user_message):
        if slots <= 0:
            break
        server_id = call.server_of(i)
        if room.get(server_id, 0) <= 0 or i in outcomes or not e.is_eligible(i):
            continue
        active.append(i)
        outcomes[i] = _trace.SELECTED
        room[server_id] -= 1
        slots -= 1
    return FirstRound(active=tuple(active), outcomes=outcomes)


@variant(
    "ID-10",
    "the first-round cap of 12 counts only the ranked tools, not the required ones",
    clauses=("SEL-1",),
    tests=("test_selection.py::test_first_round_fills_to_the_policy_determined_count",),
)
def cap_of_12_counts_ranked_tools_only() -> None:
    """A server takes up to 12 ranked tools after its required ones, within its maxActiveTools."""
    wrap_first_round(
        lambda call: _ranked_first_round(
            call, lambda s, required: min(FAIRNESS_CAP, s.policy.max_active_tools - required)
        )
    )


@defect("SEL-1.1", "12 ranked tools after the required ones, past maxActiveTools")
def ranked_cap_past_max_active() -> None:
    """The other reading of the cap of 12 (ID-10) without its bound: maxActiveTools. (A
    server of maxActiveTools 0 still gets nothing: SEL-3.3 names that case apart.)"""
    wrap_first_round(
        lambda call: _ranked_first_round(call, lambda s, _required: FAIRNESS_CAP if s.policy.max_active_tools else 0)
    )


@defect("SEL-4.4", "a run opened without a userMessage is ranked against a stock text, not an empty message")
def missing_user_message_ranked_as_a_default_text() -> None:
    """A left-out user message becomes a stock text that names tools, not the empty one."""
    open_run = ReferenceDriver.open_run

    async def _open_run(self: ReferenceDriver, params: Mapping[str, Any]) -> str:
        if "userMessage" not in params:
            params = {**params, "userMessage": "search list create update delete get issue pull request"}
        return await open_run(self, params)

    _swap(ReferenceDriver, "open_run", _open_run)


@defect("SEL-4.4", "a run opened without a userMessage is ranked against 'None', str() of the missing value")
def missing_user_message_ranked_as_none() -> None:
    """``str(params.get("userMessage"))`` where the message is left out: the words of a
    generated fleet never include "none", so only a fleet with a tool named for the
    placeholder tells. (A message given, of whatever type, is read as the reference reads it.)"""
    open_run = ReferenceDriver.open_run

    async def _open_run(self: ReferenceDriver, params: Mapping[str, Any]) -> str:
        if "userMessage" not in params:
            params = {**params, "userMessage": str(params.get("userMessage"))}
        return await open_run(self, params)

    _swap(ReferenceDriver, "open_run", _open_run)


@defect("SEL-5.1", "the first round ranks each server apart and walks the servers one after another, by id")
def first_round_server_by_server() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        # By id, not in the configuration's order: the walk stays the same whatever order the
        # servers come in (SEL-4.2), so that only the global ranking is missing.
        def by_server(order: Iterator[int], _query: str) -> Iterator[int]:
            return iter(sorted(order, key=call.server_of))

        return call.select(index=AlteredIndex(call.index, order=by_server))

    wrap_first_round(select)


def _ranked_room(call: FirstRoundCall) -> tuple[set[int], dict[str, int]]:
    """The required tools of the run, and how many ranked tools each `auto` server may take."""
    e = call.eligibility
    required = {i for s in call.servers for i in e.required[s.id]}
    room = {
        s.id: max(0, min(FAIRNESS_CAP, s.policy.max_active_tools) - len(e.required[s.id]))
        for s in call.servers
        if s.id in e.auto_servers
    }
    return required, room


@defect("SEL-2.1", "the first-round walk stops at the first tool whose server is at its cap")
def walk_stops_at_a_capped_server() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        e = call.eligibility
        required, room = _ranked_room(call)

        def stopping(order: Iterator[int], _query: str) -> Iterator[int]:
            for i in order:
                server_id = call.server_of(i)
                if server_id in room and i not in required and e.is_eligible(i):
                    if room[server_id] == 0:
                        return
                    room[server_id] -= 1
                yield i

        return call.select(index=AlteredIndex(call.index, order=stopping))

    wrap_first_round(select)


@defect("SEL-5.2", "past a tool whose server is at its cap, the walk puts the next tool off to its end")
def walk_defers_the_tool_after_a_capped_one() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        e = call.eligibility
        required, room = _ranked_room(call)

        # Every tool is still walked, only later: the first round fills as it would, and
        # only which tools it takes differs.
        def deferring(order: Iterator[int], _query: str) -> Iterator[int]:
            deferred: list[int] = []
            defer_next = False
            for i in order:
                server_id = call.server_of(i)
                if server_id in room and i not in required and e.is_eligible(i):
                    if defer_next:
                        deferred.append(i)
                        defer_next = False
                        continue
                    if room[server_id] == 0:
                        defer_next = True
                    else:
                        room[server_id] -= 1
                yield i
            yield from deferred

        return call.select(index=AlteredIndex(call.index, order=deferring))

    wrap_first_round(select)


@defect("SEL-1.2", "the per-server first-round cap is a fair share of the capacity, not 12")
def fair_share_cap() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        auto = len(call.eligibility.auto_servers)
        if not auto:
            return call.select()
        return _with_cap(max(1, call.budgets.first_round_capacity // auto), call)

    wrap_first_round(select)


@defect("SEL-6.1", "with four auto servers or more, each keeps a first-round place free: 11 tools, not 12")
def a_place_kept_free_per_server() -> None:
    """The worked example's own shape (four auto servers) is the only one it changes: the
    properties draw at most three servers, so only the worked example shows it."""

    def select(call: FirstRoundCall) -> FirstRound:
        if len(call.eligibility.auto_servers) >= 4:
            return _with_cap(FAIRNESS_CAP - 1, call)
        return call.select()

    wrap_first_round(select)
