"""The first round: required tools first, then one global ranking under fairness caps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

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
    # Eligible tools of a server not yet taken. A server is open while it has room and
    # such tools; the count is only needed from the first tool the walk takes from the
    # server on, so it is made then, and the cost of a walk does not grow with the catalog.
    left: dict[str, int] = {}
    open_servers = 0
    excluded, required_by, by_server = eligibility.excluded, eligibility.required, catalog.by_server
    for server_id in eligibility.auto_servers:
        cap = min(FAIRNESS_CAP, policies[server_id].max_active_tools) - len(required_by[server_id])
        room[server_id] = cap if cap > 0 else 0
        if cap > 0:
            for entry in by_server.get(server_id, ()):
                if entry.index not in excluded and entry.index not in required_set:
                    open_servers += 1
                    break
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
        if server_id not in left:
            # Counting beyond the server's room changes nothing: it closes when either runs out.
            takeable = (e for e in catalog.by_server[server_id] if _takeable(e.index, eligibility, required_set))
            left[server_id] = sum(1 for _ in islice(takeable, room[server_id]))
        active.append(i)
        outcomes[i] = _trace.SELECTED
        slots -= 1
        room[server_id] -= 1
        left[server_id] -= 1
        if room[server_id] == 0 or left[server_id] == 0:
            open_servers -= 1
    return FirstRound(active=tuple(active), outcomes=outcomes)


def _takeable(i: int, eligibility: Eligibility, required: set[int]) -> bool:
    return eligibility.is_eligible(i) and i not in required
