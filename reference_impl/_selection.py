"""The first round: required tools first, then one global ranking under fairness caps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import _trace
from ._budgets import FAIRNESS_CAP, Budgets
from ._catalog import Catalog
from ._config import ServerConfig
from ._errors import SelectionError
from ._policy import Eligibility
from ._ranking import RankingIndex

__all__ = ["FirstRound", "select_first_round"]


@dataclass(frozen=True, slots=True)
class FirstRound:
    """The tools active after the first round, in activation order, and why."""

    active: tuple[int, ...]
    outcomes: Mapping[int, str]


def select_first_round(
    servers: Sequence[ServerConfig],
    catalog: Catalog,
    eligibility: Eligibility,
    index: RankingIndex,
    budgets: Budgets,
    user_message: str,
) -> FirstRound:
    """Check the required tools against every limit, then fill the capacity by rank."""
    capacity = budgets.first_round_capacity
    if capacity < 0:
        raise SelectionError(
            f"{budgets.base_tools} non-MCP tools and {budgets.discovery_tools} discovery tool leave "
            f"{capacity} first-round slots under the 96 watermark; remove non-MCP tools"
        )
    policies = {server.id: server.policy for server in servers}
    required_total = 0
    for server in servers:
        required = eligibility.required[server.id]
        if len(required) > server.policy.max_active_tools:
            raise SelectionError(
                f"server {server.id!r} has {len(required)} required tools but maxActiveTools is "
                f"{server.policy.max_active_tools}; shrink the allowlist or pinned tools, or use auto mode"
            )
        required_total += len(required)
    if required_total > capacity:
        raise SelectionError(
            f"{required_total} required tools do not fit the first-round capacity of {capacity} "
            f"(96 minus {budgets.base_tools} non-MCP tools and {budgets.discovery_tools} discovery tool); "
            "shrink the allowlists or use auto mode"
        )

    active: list[int] = []
    outcomes: dict[int, str] = {}
    # Catalog indexes follow qualified names, so sorting keeps the order independent of
    # the order in which servers were configured.
    for i in sorted(i for server in servers for i in eligibility.required[server.id]):
        active.append(i)
        outcomes[i] = _trace.REQUIRED
    required_set = set(active)
    room: dict[str, int] = {}
    left: dict[str, int] = {}
    for server_id in eligibility.auto_servers:
        policy = policies[server_id]
        cap = min(FAIRNESS_CAP, policy.max_active_tools)
        room[server_id] = max(0, cap - len(eligibility.required[server_id]))
        left[server_id] = sum(
            1
            for entry in catalog.by_server.get(server_id, ())
            if eligibility.is_eligible(entry.index) and entry.index not in required_set
        )
    open_servers = sum(1 for s in room if room[s] > 0 and left[s] > 0)
    slots = capacity - required_total
    tools = catalog.entries
    ranked = index.order(user_message) if slots > 0 and open_servers > 0 else iter(())
    for i in ranked:
        if slots == 0 or open_servers == 0:
            break
        server_id = tools[i].server_id
        if server_id not in room or i in required_set or not eligibility.is_eligible(i):
            continue
        if room[server_id] == 0:
            outcomes[i] = _trace.SERVER_CAP
            continue
        active.append(i)
        outcomes[i] = _trace.SELECTED
        slots -= 1
        room[server_id] -= 1
        left[server_id] -= 1
        if room[server_id] == 0 or left[server_id] == 0:
            open_servers -= 1
    return FirstRound(active=tuple(active), outcomes=outcomes)
