"""Hypothesis strategies and settings for the suite's properties."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import strategies as st

from conformance._properties import property_settings
from mock_servers import FleetSpec, ServerSpec
from mock_servers.strategies import fleet_specs, tool_policies

__all__ = ["FleetAndPolicies", "examples", "fleets_with_policies", "server_policies"]

_F = TypeVar("_F", bound=Callable[..., Any])
FleetAndPolicies = tuple[FleetSpec, dict[str, dict[str, Any]]]


def _deny_a_pinned_tool(policy: dict[str, Any], deny: bool) -> dict[str, Any]:
    """``policy`` with its first pinned tool also denied, when ``deny`` (POL-2.2, POL-7.2)."""
    pinned = policy.get("pinnedTools") or []
    if not deny or not pinned:
        return policy
    denied = list(policy.get("deniedTools") or [])
    return {**policy, "deniedTools": [*denied, pinned[0]] if pinned[0] not in denied else denied}


def server_policies(server: ServerSpec, *, unknown_names: bool = False) -> st.SearchStrategy[dict[str, Any]]:
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
