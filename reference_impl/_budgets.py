"""The three watermarks and the capacities derived from them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DYNAMIC_LIMIT", "FAIRNESS_CAP", "FIRST_ROUND_LIMIT", "REQUEST_LIMIT", "Budgets"]

FIRST_ROUND_LIMIT = 96  # BUD-1.1: definitions of a first request
DYNAMIC_LIMIT = 112  # BUD-2.1: definitions of a run after any discovery
REQUEST_LIMIT = 128  # BUD-3.1: definitions of any request, whoever adds them
FAIRNESS_CAP = 12  # SEL-1.1: active tools of one server after the first round
DEFAULT_MAX_ACTIVE_TOOLS = 24  # POL-9.3: an omitted maxActiveTools
MAX_ACTIVE_TOOLS_LIMIT = 96  # ERR-3.3: a larger maxActiveTools is a configuration error (ID-17)


@dataclass(frozen=True, slots=True)
class Budgets:
    """MCP capacities of one run, given its base tools and whether discovery is registered."""

    base_tools: int
    discovery_tools: int

    @property
    def first_round_capacity(self) -> int:
        # BUD-1.2: 96 minus the base tools minus the discovery tool when registered.
        return FIRST_ROUND_LIMIT - self.base_tools - self.discovery_tools

    @property
    def dynamic_capacity(self) -> int:
        # BUD-2.2: discovery grows the active set up to 112 minus the same.
        return DYNAMIC_LIMIT - self.base_tools - self.discovery_tools
