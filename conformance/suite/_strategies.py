"""Hypothesis strategies and settings for the suite's properties.

Properties generate what they need rather than filter: a drawn fleet, its policies and a
number of base tools are made into the nearest run that must open (:func:`opening`),
instead of discarding the draws whose run the oracle refuses. Filtering those out (about
half of the draws) made Hypothesis give up on some seeds, ending a certification in
``error`` for a reason of the suite's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import strategies as st

from conformance._properties import property_settings
from conformance._wire_types import ToolPolicy
from conformance.suite._fleets import tools_of
from conformance.suite._predictions import FIRST_ROUND, server_model
from mock_servers import FleetSpec, ServerSpec
from mock_servers.strategies import fleet_specs, tool_policies

__all__ = ["FleetAndPolicies", "examples", "fleets_with_policies", "opening", "server_policies"]

_F = TypeVar("_F", bound=Callable[..., Any])
FleetAndPolicies = tuple[FleetSpec, dict[str, ToolPolicy]]


def _deny_a_pinned_tool(policy: ToolPolicy, deny: bool) -> ToolPolicy:
    """``policy`` with its first pinned tool also denied, when ``deny`` (POL-2.2, POL-7.2)."""
    pinned = policy.get("pinnedTools") or []
    if not deny or not pinned:
        return policy
    denied = list(policy.get("deniedTools") or [])
    return {**policy, "deniedTools": [*denied, pinned[0]] if pinned[0] not in denied else denied}


def server_policies(server: ServerSpec, *, unknown_names: bool = False) -> st.SearchStrategy[ToolPolicy]:
    """A wire policy for ``server``; now and then a tool is both pinned and denied."""
    return st.tuples(tool_policies(server, unknown_names=unknown_names), st.booleans()).map(
        lambda drawn: _deny_a_pinned_tool(*drawn)
    )


def fleets_with_policies(*, unknown_names: bool = False, **fleet_kwargs: Any) -> st.SearchStrategy[FleetAndPolicies]:
    """A fleet and a wire policy for each of its servers."""
    return fleet_specs(**fleet_kwargs).flatmap(
        lambda spec: st.tuples(
            st.just(spec),
            st.fixed_dictionaries({s.id: server_policies(s, unknown_names=unknown_names) for s in spec.servers}),
        )
    )


def examples(n: int) -> Callable[[_F], _F]:
    """Settings for a property over served fleets that draws ``n`` examples at default thoroughness.

    Explicit ``@example`` cases always run first; the run's thoroughness scales ``n``.
    """
    return property_settings(n)


def opening(fleet: FleetAndPolicies, base_count: int, *, discovery: bool = False) -> tuple[FleetAndPolicies, int]:
    """The run nearest to ``(fleet, base_count)`` that the specification lets open, and
    that registers the discovery tool when ``discovery`` asks for it.

    A run that opens as drawn comes back unchanged (explicit examples included). Otherwise,
    in this order: the first server runs in ``auto`` mode when ``discovery`` needs one and
    none does; servers outside ``auto`` mode whose required tools together exceed the 96
    definitions rank their tools instead, the largest first (ERR-2); a server whose
    required tools exceed its ``maxActiveTools`` gets exactly that many (ERR-1); and the
    base tools are cut to what the first round leaves room for (BUD-4, ERR-2), which makes
    the boundary where required tools fill the capacity exactly a common case.
    """
    spec, drawn = fleet
    tools = tools_of(spec)
    policies = {sid: policy.copy() for sid, policy in drawn.items()}
    ids = [s.id for s in spec.servers]
    if discovery and ids and all(policies.get(sid, ToolPolicy()).get("mode", "auto") != "auto" for sid in ids):
        policies[ids[0]] = {**policies.get(ids[0], ToolPolicy()), "mode": "auto"}
    while True:
        models = [server_model(sid, tools[sid], policies.get(sid, ToolPolicy())) for sid in ids]
        room = FIRST_ROUND - int(any(m.mode == "auto" for m in models))
        required = sum(len(m.required) for m in models)
        outside_auto = [m for m in models if m.mode != "auto"]
        if required <= room or not outside_auto:
            break
        largest = max(outside_auto, key=lambda m: len(m.required))
        policies[largest.id] = {**policies.get(largest.id, ToolPolicy()), "mode": "auto"}
    for m in models:
        if len(m.required) > m.max_active:
            policies[m.id] = {**policies.get(m.id, ToolPolicy()), "maxActiveTools": len(m.required)}
    return (spec, policies), max(0, min(base_count, room - required))
