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
    """Check the required tools against every limit, then fill the capacity by rank.

    With the default budgets this gives the worked example of SEL-6.1: four ``auto`` servers
    of 40 tools and three base tools fill 12 slots each, 48 in all, under a capacity of 92.
    """
    capacity = budgets.first_round_capacity
    # BUD-4.1, BUD-4.2: checked before anything else, so also when no MCP server is configured;
    # a capacity of exactly zero is allowed (BUD-4.3).
    if capacity < 0:
        raise SelectionError(
            f"{budgets.base_tools} non-MCP tools and {budgets.discovery_tools} discovery tool leave "
            f"{capacity} first-round slots under the 96 watermark; remove non-MCP tools"
        )
    policies = {server.id: server.policy for server in servers}
    required_total = 0
    for server in servers:
        required = eligibility.required[server.id]
        # ERR-1.1: required tools over maxActiveTools name the server; exactly at it is allowed (ERR-1.2).
        if len(required) > server.policy.max_active_tools:
            raise SelectionError(
                f"server {server.id!r} has {len(required)} required tools but maxActiveTools is "
                f"{server.policy.max_active_tools}; shrink the allowlist or pinned tools, or use auto mode"
            )
        required_total += len(required)
    # ERR-2.1: required tools must fit the first-round capacity; filling it exactly is allowed (ERR-2.2).
    if required_total > capacity:
        raise SelectionError(
            f"{required_total} required tools do not fit the first-round capacity of {capacity} "
            f"(96 minus {budgets.base_tools} non-MCP tools and {budgets.discovery_tools} discovery tool); "
            "shrink the allowlists or use auto mode"
        )

    active: list[int] = []
    outcomes: dict[int, str] = {}
    # Catalog indexes follow qualified names, so sorting keeps the order independent of
    # the order in which servers were configured: the same inputs, the same round (SEL-4.1).
    # POL-6.2, POL-6.3: every required tool is active before any ranked tool takes a slot.
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
        # SEL-1.1: the cap of 12 counts the required tools (ID-10), and binds whatever capacity is left
        # (SEL-1.2); a maxActiveTools of 0 leaves no room (SEL-3.3). Only auto servers have room (SEL-2.3).
        cap = min(FAIRNESS_CAP, policies[server_id].max_active_tools) - len(required_by[server_id])
        room[server_id] = cap if cap > 0 else 0
        if cap > 0:
            for entry in by_server.get(server_id, ()):
                if entry.index not in excluded and entry.index not in required_set:
                    open_servers += 1
                    break
    slots = capacity - required_total
    tools = catalog.entries
    # SEL-5.1: one global ranking of every tool, score descending, ties by qualified name.
    ranked = index.order(user_message) if slots > 0 and open_servers > 0 else iter(())
    for i in ranked:
        # SEL-2.1: stop only when the capacity is used up or every auto server is closed.
        if slots == 0 or open_servers == 0:
            break
        server_id = tools[i].server_id
        # POL-1.1, RNK-6.6: a tool the policy excludes is never taken, whatever its score (read intent included).
        if server_id not in room or i in required_set or not eligibility.is_eligible(i):
            continue
        # SEL-5.2: a tool whose server is at its cap is skipped, and the walk goes on.
        if room[server_id] == 0:
            outcomes[i] = _trace.SERVER_CAP
            continue
        if server_id not in left:
            # Counting beyond the server's room changes nothing: it closes when either runs out.
            takeable = (e for e in catalog.by_server[server_id] if _takeable(e.index, eligibility, required_set))
            left[server_id] = sum(1 for _ in islice(takeable, room[server_id]))
        active.append(i)
        # SEL-2.2: taken whatever its score, zero or less: how many are taken never depends on the ranker.
        outcomes[i] = _trace.SELECTED
        slots -= 1
        room[server_id] -= 1
        left[server_id] -= 1
        if room[server_id] == 0 or left[server_id] == 0:
            open_servers -= 1
    return FirstRound(active=tuple(active), outcomes=outcomes)


def _takeable(i: int, eligibility: Eligibility, required: set[int]) -> bool:
    return eligibility.is_eligible(i) and i not in required
